//! Cancel and flush of one work item over its state word (C1-C5 of `workqueue/README.md`, and
//! an item's flush, which waits as C4 says).
//!
//! Where a pending execution waits (the runner's deferred slot, the timer, the `max_active`
//! FIFO, a pool's queue) is not known here: a cancel takes it back through a function its
//! caller gives (`task/work_item.rs`). This file uses only `crate::sync` and `std`.

use std::time::Instant;

use super::state::{self, ItemState, PENDING, RUNNING};
use crate::sync::thread;

/// What a wait with a deadline came to.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Waited {
    /// There was nothing to wait for.
    Nothing,
    /// It waited, and what it waited for happened.
    Done,
    /// The deadline passed first.
    TimedOut,
}

/// What an item's flush waits for: the generation of the execution pending or running now
/// (C4). `None` when nothing is pending or running, or when `skip` says not to wait (the
/// caller runs the item itself, or the item is stranded by a fork, K4); `skip` is asked only
/// when something is pending or running.
pub(crate) fn flush_target<D, X>(
    state: &ItemState<D, X>,
    skip: impl FnOnce() -> bool,
) -> Option<u64> {
    let s = state.load();
    (s & (PENDING | RUNNING) != 0 && !skip()).then(|| state::generation(s))
}

/// An item's flush: waits until the execution pending or running now has finished (C4), or
/// until `deadline` (`None`: never). Nothing to wait for when [`flush_target`] says so.
pub(crate) fn flush_until<D, X>(
    state: &ItemState<D, X>,
    skip: impl FnOnce() -> bool,
    deadline: Option<Instant>,
) -> Waited {
    let Some(target) = flush_target(state, skip) else {
        return Waited::Nothing;
    };
    if state.wait_until_deadline(|now| state::flushed(now, target), deadline) {
        Waited::Done
    } else {
        Waited::TimedOut
    }
}

/// C1-C5: cancels the item. Returns whether an execution was pending when the cancel began
/// (that execution never runs), or `None` when it gave up at `deadline` (`None`: never): it
/// gives up only while it waits, for another cancel of the item to end (then nothing changed),
/// or for the running execution to end (then the pending one is cancelled already, and the
/// cancel ends: the running execution finishes normally).
///
/// `own`: the caller is the item's own closure, which cancels a pending re-queue but does not
/// wait for itself. `take_back` (C2) takes the pending execution back from wherever it waits
/// and discards it; it returns `false` when it found it nowhere (the execution is moving
/// between two places). The claim of an execution it took back is released here.
pub(crate) fn cancel_until<D, X>(
    state: &ItemState<D, X>,
    own: bool,
    deadline: Option<Instant>,
    mut take_back: impl FnMut() -> bool,
) -> Option<bool> {
    let before = if own {
        match state.begin_cancel_or_join() {
            Ok(before) => before,
            Err(now) => {
                // Another cancel is in progress and waits for this very run: it discards the
                // pending execution (claims fail meanwhile); waiting for it would deadlock.
                // Wait only until nothing is pending, as a cancel from here does.
                if !state.wait_until_deadline(|s| s & PENDING == 0, deadline) {
                    return None;
                }
                return Some(now & PENDING != 0);
            }
        }
    } else {
        state.begin_cancel_until(deadline)?
    };
    // With CANCELING set no claim succeeds, and a worker that pops the pending execution
    // discards it: the execution pending at `before` never runs.
    while state.load() & PENDING != 0 {
        if take_back() {
            state.release_claim();
        } else {
            // Between two places (a queuer about to push, a worker about to start): short.
            thread::yield_now();
        }
    }
    let idle = own || state.wait_until_deadline(|s| s & (PENDING | RUNNING) == 0, deadline);
    state.end_cancel();
    idle.then_some(before & PENDING != 0)
}
