//! [`OneShot`]: the slot between a spawned closure and its [`JoinHandle`](crate::JoinHandle):
//! the closure until a worker takes it, then its outcome until the handle takes it, and the
//! handle's waker or sleeping thread (J1-J4 of `workqueue/README.md`).
//!
//! One lock holds the whole state, so that the outcome, the waker and the sleeper never miss
//! each other: a completion and a poll are ordered by the lock, whichever comes first, and a
//! waker replaced between two polls is replaced under it. The lock is taken twice by the
//! worker (take the closure, put the outcome) and once by the handle (take the outcome), each
//! time uncontended but for the one moment the two meet.
//!
//! This file uses only `crate::sync` and `std`, so that `podq-loom` compiles it against loom
//! (`crates/podq-loom/tests/join.rs`): no lost wake-up whether the outcome comes before, during
//! or after a poll, with a waker replaced between polls, or with a thread asleep in a join.

use std::task::{Context, Poll, Waker};

use crate::sync::atomic::{AtomicBool, Ordering};
use crate::sync::{Condvar, Mutex, MutexGuard};

/// Where the spawned execution is.
enum Stage<F, O> {
    /// Queued: the closure waits for a worker.
    Func(F),
    /// A worker took the closure and runs it.
    Running,
    /// The outcome waits for the handle.
    Done(O),
    /// The handle took the outcome.
    Taken,
}

/// The state under the slot's lock.
struct State<F, O> {
    /// L: where the execution is.
    stage: Stage<F, O>,
    /// L: the waker of the last poll that found no outcome.
    waker: Option<Waker>,
    /// L: a thread sleeps on `done` in [`OneShot::wait`].
    sleeping: bool,
    /// L: the handle is gone: an outcome is dropped at once rather than kept.
    detached: bool,
}

/// A spawned closure `F` and its outcome `O`, handed once from the queuer to a worker and once
/// from the worker to the handle.
pub(crate) struct OneShot<F, O> {
    /// The state; also the sleeper's lock.
    state: Mutex<State<F, O>>,
    /// Where [`OneShot::wait`] sleeps; notified under `state` when `sleeping` is set.
    done: Condvar,
    /// A: set once the outcome is in (or the handle is gone); `Release` after the outcome is
    /// stored under the lock, read `Acquire` by [`OneShot::is_finished`], which takes no lock.
    finished: AtomicBool,
}

impl<F, O> OneShot<F, O> {
    /// A slot holding the closure `f`, waiting for a worker (J1).
    pub(crate) fn new(f: F) -> Self {
        OneShot {
            state: Mutex::new(State {
                stage: Stage::Func(f),
                waker: None,
                sleeping: false,
                detached: false,
            }),
            done: Condvar::new(),
            finished: AtomicBool::new(false),
        }
    }

    /// J2: a worker takes the closure to run it. `None` when it was taken already (the
    /// slot was cancelled).
    pub(crate) fn take_func(&self) -> Option<F> {
        let mut state = self.state.lock();
        match std::mem::replace(&mut state.stage, Stage::Running) {
            Stage::Func(f) => Some(f),
            other => {
                state.stage = other;
                None
            }
        }
    }

    /// J3: the worker that ran the closure puts its outcome in and wakes the handle.
    /// Returns the outcome back when the handle is gone, for the caller to drop (outside the
    /// lock: its drop may run any code).
    pub(crate) fn complete(&self, outcome: O) -> Option<O> {
        let state = self.state.lock();
        self.publish(state, outcome)
    }

    /// J3, for an execution dropped unrun: when the closure is still in the slot, the
    /// outcome becomes `cancelled` and the handle is woken. Returns the closure (and the
    /// outcome when the handle is gone), for the caller to drop outside the lock; `None`
    /// when a worker took the closure already.
    pub(crate) fn cancel(&self, cancelled: O) -> Option<(F, Option<O>)> {
        let mut state = self.state.lock();
        if !matches!(state.stage, Stage::Func(_)) {
            return None;
        }
        let Stage::Func(f) = std::mem::replace(&mut state.stage, Stage::Running) else {
            return None;
        };
        Some((f, self.publish(state, cancelled)))
    }

    /// Puts `outcome` in and wakes the handle, or hands the outcome back when the handle is
    /// gone.
    fn publish(&self, mut state: MutexGuard<'_, State<F, O>>, outcome: O) -> Option<O> {
        if state.detached {
            state.stage = Stage::Taken;
            return Some(outcome);
        }
        state.stage = Stage::Done(outcome);
        // Release: pairs with `is_finished`'s Acquire; the outcome itself is read under the
        // lock.
        self.finished.store(true, Ordering::Release);
        let waker = state.waker.take();
        if state.sleeping {
            self.done.notify_all();
        }
        drop(state);
        if let Some(waker) = waker {
            waker.wake();
        }
        None
    }

    /// J4: the handle's poll: the outcome if it is in, else the waker is kept (replacing
    /// the one of an earlier poll unless it wakes the same task) and `Pending`.
    ///
    /// # Panics
    ///
    /// When the outcome was taken by an earlier poll.
    pub(crate) fn poll(&self, cx: &mut Context<'_>) -> Poll<O> {
        let mut state = self.state.lock();
        if let Some(out) = take_outcome(&mut state.stage) {
            return Poll::Ready(out);
        }
        match &state.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => state.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// J4: the handle's blocking join: looks at [`OneShot::is_finished`] with backoff for
    /// `spin_rounds` rounds (most joins of a short closure end within microseconds, and a
    /// sleep costs the worker a futex wake-up), then sleeps until the outcome is in, and takes
    /// it.
    ///
    /// # Panics
    ///
    /// When the outcome was taken by a poll.
    pub(crate) fn wait(&self, spin_rounds: u32) -> O {
        crate::sync::spin_until(spin_rounds, || self.is_finished());
        let mut state = self.state.lock();
        loop {
            if let Some(out) = take_outcome(&mut state.stage) {
                return out;
            }
            state.sleeping = true;
            state = self.done.wait(state);
        }
    }

    /// Whether the outcome is in (or was taken).
    pub(crate) fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }

    /// The handle is dropped: a later outcome is handed back to its worker to drop. Returns
    /// the outcome that is in already, for the caller to drop outside the lock.
    pub(crate) fn detach(&self) -> Option<O> {
        let mut state = self.state.lock();
        state.detached = true;
        state.waker = None;
        match state.stage {
            Stage::Done(_) => take_outcome(&mut state.stage),
            _ => None,
        }
    }
}

/// Takes the outcome out of `stage` when it is in; `None` while the closure waits or runs.
///
/// # Panics
///
/// When the outcome was taken already.
fn take_outcome<F, O>(stage: &mut Stage<F, O>) -> Option<O> {
    match stage {
        Stage::Func(_) | Stage::Running => None,
        Stage::Done(_) => match std::mem::replace(stage, Stage::Taken) {
            Stage::Done(out) => Some(out),
            _ => None,
        },
        Stage::Taken => panic!("a JoinHandle's outcome was taken twice (polled after Ready)"),
    }
}
