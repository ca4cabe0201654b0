//! The spinners' mailbox (P1 and W5-W6 of `pool/README.md`): a pusher hands its task straight
//! to a spinning worker, on one pair of cache lines, instead of through a lane and the head.
//!
//! Through a lane, a task that a spinner takes moves the lane's count, the lines of its slot,
//! the head lock's line and the spinner counts between the two CPUs, and the producer's wait
//! often runs past its spin and pays a futex round trip (`pool/README.md`, "A mailbox for the
//! spinner", says what that costs). Here the pusher and the spinner share the state word and
//! the slot beside it: one pair of lines (128 bytes, which the adjacent-line prefetcher moves
//! together), which the test of `workqueue/task/mod.rs` keeps the workqueue's task within.
//!
//! One spinner at a time owns the mailbox: it opens it when it starts to spin and closes it
//! when it stops. A pusher whose own lane is empty (so the task cannot overtake one queued
//! before it on that CPU) claims an open mailbox with one compare-and-swap, writes its task
//! and marks it full. An owner that finds its close refused waits for the task, which is on
//! its way, and takes it: a claimed mailbox is never left behind.
//!
//! The slot is a bare cell, not a lock: the state word already makes each access exclusive,
//! and a lock would add two locked instructions to each side of every hand-off. This file uses
//! only `crate::sync`, so that `crates/podq-loom` checks it with the pool, with loom's cell,
//! which fails a model whose accesses to the slot could overlap. With `chain.rs`,
//! `held_slot.rs` and `lane_lock.rs` beside it, it is one of the four files of the pool that
//! may use `unsafe`.
#![allow(unsafe_code)]

use crate::sync::atomic::{AtomicUsize, Ordering};
use crate::sync::cell::UnsafeCell;
use crate::sync::thread;

/// Nobody owns the mailbox.
const CLOSED: usize = 0;
/// A pusher claimed the open mailbox and is writing its task.
const WRITING: usize = 1;
/// The task is in the slot, for the owner to take.
const FULL: usize = 2;
/// Owned by a spinner, which waits for a task; the bits above say its lane.
const OPEN: usize = 3;
/// The bits of the state word that say which of the above it is.
const TAG: usize = 3;
/// Where the owner's lane starts in an `OPEN` state word.
const LANE_SHIFT: u32 = 2;

/// Backoff rounds of an owner waiting for a pusher to finish writing, between yields.
const WAIT_ROUNDS: u32 = 6;

/// A one-task hand-off from pushers to one spinning worker.
#[derive(Debug)]
pub(crate) struct Mailbox<T> {
    /// A: [`CLOSED`], [`WRITING`], [`FULL`], or [`OPEN`] with the owner's lane above [`TAG`].
    /// A spinner moves it from `CLOSED` to `OPEN` (and so becomes the owner); the owner from
    /// `OPEN` or `FULL` back to `CLOSED`; a pusher from `OPEN` to `WRITING` and on to `FULL`.
    state: AtomicUsize,
    /// The handed task: filled by the pusher between `WRITING` and `FULL`, emptied by the owner
    /// after `FULL`; the states make every access exclusive.
    slot: UnsafeCell<Option<T>>,
}

// SAFETY: the slot is the only field that is not `Sync`, and only two parties ever reach it,
// one at a time, as the state word hands it on: the pusher whose claim moved `OPEN` to
// `WRITING`, until it stores `FULL` (Release), and then the owner that reads `FULL` (Acquire),
// until it stores `CLOSED` (Release), which the next claim reads (Acquire) through the next
// `OPEN`. The task moves between threads, hence `T: Send`.
unsafe impl<T: Send> Sync for Mailbox<T> {}

impl<T> Mailbox<T> {
    /// A closed, empty mailbox.
    pub(crate) fn new() -> Self {
        Self {
            state: AtomicUsize::new(CLOSED),
            slot: UnsafeCell::new(None),
        }
    }

    /// A spinner on lane `lane` tries to own the mailbox; `true` when it does and must
    /// [`Mailbox::close`] it before it stops spinning.
    pub(crate) fn open(&self, lane: usize) -> bool {
        self.state.load(Ordering::Relaxed) == CLOSED
            && self
                .state
                .compare_exchange(
                    CLOSED,
                    OPEN | (lane << LANE_SHIFT),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok()
    }

    /// A pusher on lane `lane`, whose lane is empty, hands `task` to the owner; gives it back
    /// when the mailbox is not open, or is owned by a spinner on the same lane (that is, on the
    /// pusher's own CPU: it has been preempted by the pusher and cannot take the task before
    /// the pusher blocks).
    pub(crate) fn hand(&self, lane: usize, task: T) -> Result<(), T> {
        let state = self.state.load(Ordering::Relaxed);
        if state & TAG != OPEN || state >> LANE_SHIFT == lane {
            return Err(task);
        }
        // Acquire: the owner before this one emptied the slot and then stored CLOSED (Release);
        // this claim reads the OPEN that followed, in that store's release sequence, so the
        // slot is empty when the task goes in.
        if self
            .state
            .compare_exchange(state, WRITING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return Err(task);
        }
        // SAFETY: this pusher's claim made the state `WRITING`, which only it leaves (by the
        // store below), and no owner reads the slot before it reads `FULL`: nobody else
        // reaches the slot until then.
        self.slot.with_mut(|slot| unsafe { *slot = Some(task) });
        // Release: the owner that sees FULL (Acquire) finds the task in the slot.
        self.state.store(FULL, Ordering::Release);
        Ok(())
    }

    /// Whether a pusher on lane `lane` may hand its task over now (what [`Mailbox::hand`]
    /// looks at first): a spinner on another lane owns the mailbox and waits.
    pub(crate) fn open_to(&self, lane: usize) -> bool {
        let state = self.state.load(Ordering::Relaxed);
        state & TAG == OPEN && state >> LANE_SHIFT != lane
    }

    /// Whether a task waits for the owner (its spin's stop condition).
    pub(crate) fn is_full(&self) -> bool {
        self.state.load(Ordering::Relaxed) == FULL
    }

    /// The owner stops spinning: closes the mailbox, or takes the task a pusher claimed it for
    /// (waiting for the pusher to finish writing it, which it is doing now). `None` on a
    /// mailbox that is not open (nobody owns it).
    pub(crate) fn close(&self) -> Option<T> {
        let mut state = self.state.load(Ordering::Acquire);
        loop {
            match state & TAG {
                OPEN => match self.state.compare_exchange_weak(
                    state,
                    CLOSED,
                    Ordering::Acquire,
                    Ordering::Acquire,
                ) {
                    Ok(_) => return None,
                    Err(now) => state = now,
                },
                FULL => {
                    // SAFETY: only the owner reads `FULL`, and only a pusher's store of it
                    // (Release, after its write) ends that pusher's access; no claim can come
                    // before the `CLOSED` below.
                    let task = self.slot.with_mut(|slot| unsafe { (*slot).take() });
                    debug_assert!(task.is_some(), "a full mailbox holds a task");
                    // Release: the slot is empty before the next owner opens the mailbox.
                    self.state.store(CLOSED, Ordering::Release);
                    return task;
                }
                WRITING => {
                    // The pusher is between its claim and its store of FULL, a few
                    // instructions unless it was preempted there.
                    if !crate::sync::spin_until(WAIT_ROUNDS, || self.is_full()) {
                        thread::yield_now();
                    }
                    state = self.state.load(Ordering::Acquire);
                }
                // Not open: there is nothing to close or take (only an owner calls this).
                _ => return None,
            }
        }
    }
}
