//! [`GroupSlot`]: where a [`Work`](crate::Work) item keeps the group ticket of its pending
//! execution, from the claim to the start (G4 of `workqueue/README.md`).
//!
//! Its part of steering is the ticket's hand-over only. What a ticket counts is
//! `task/steering.rs`'s, the steering decision `policy::steer`'s, the home pool's load
//! `pool/load.rs`'s, and the [`Group`](crate::Group) handle that queues is `api/group.rs`.
//!
//! This file uses only `crate::sync`, so that `crates/podq-loom` checks it
//! (`tests/steer.rs`).

use crate::sync::atomic::{AtomicBool, Ordering};
use crate::sync::Mutex;

/// Where a [`Work`](crate::Work) item keeps the ticket of its pending execution when a group
/// queued it (G4): put by the owner of the claim before the execution is pushed, taken by the
/// worker that starts it before the start clears PENDING (so a later claim puts the next
/// execution's), taken by a cancel that took the execution back. A ticket left in the slot
/// (an execution that never took it) is dropped by the next put, or with the slot.
#[derive(Debug)]
pub(crate) struct GroupSlot<T> {
    /// A: whether a ticket is in the slot, so that items no group queued take no lock. Written
    /// under `ticket`'s lock; read without it by the starting worker, which the pool's queue
    /// (its locks) orders after the put. Relaxed: a stale `false` only leaves the ticket for
    /// the next put or take, or the slot's drop.
    set: AtomicBool,
    /// The ticket.
    ticket: Mutex<Option<T>>,
}

impl<T> GroupSlot<T> {
    /// An empty slot.
    pub(crate) fn new() -> Self {
        Self {
            set: AtomicBool::new(false),
            ticket: Mutex::new(None),
        }
    }

    /// (G4) Puts the pending execution's ticket; a ticket left by an execution that never took
    /// it is dropped, outside the lock.
    pub(crate) fn put(&self, ticket: T) {
        let old = {
            let mut slot = self.ticket.lock();
            self.set.store(true, Ordering::Relaxed);
            slot.replace(ticket)
        };
        drop(old);
    }

    /// (G4, G5) Takes the ticket, if any.
    pub(crate) fn take(&self) -> Option<T> {
        if !self.set.load(Ordering::Relaxed) {
            return None;
        }
        let mut slot = self.ticket.lock();
        self.set.store(false, Ordering::Relaxed);
        slot.take()
    }
}
