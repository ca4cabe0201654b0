//! Flush and drain of a whole workqueue, with a deadline or without: [`Workqueue::flush`],
//! [`Workqueue::drain`], [`Workqueue::flush_timeout`], [`Workqueue::drain_timeout`], and the
//! process's table of flush waits (F1-F3 of `workqueue/README.md`). An item's own flush is in
//! `work.rs`; the flush colours are `item/flush.rs`'s.

use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use crate::fork::PerFork;
use crate::workqueue::api::workqueue::Workqueue;
use crate::workqueue::item::flush::FlushWait;
use crate::workqueue::layout::Layouts;
use crate::workqueue::task::shared::WqShared;
use crate::workqueue::task::timer;

/// Entries of the table of flush waits: workqueue `id` sleeps on entry `id % FLUSH_WAITS`.
/// Enough that workqueues flushing at once rarely share one.
pub(crate) const FLUSH_WAITS: usize = 64;

/// The process's flush waits (see [`FlushWait`]): leaked on purpose, because a finisher may
/// use its workqueue's entry after the workqueue is gone. One table per fork generation
/// (`fork.rs`): a child's workqueues never share a wait lock with the parent's threads.
static FLUSH_WAIT_TABLE: PerFork<Box<[CachePadded<FlushWait>]>> = PerFork::new();

/// The flush wait of workqueue `id`.
pub(super) fn flush_wait(id: u64) -> &'static FlushWait {
    let table = FLUSH_WAIT_TABLE.get(|| (0..FLUSH_WAITS).map(|_| CachePadded::default()).collect());
    // The remainder is below FLUSH_WAITS, so it fits.
    &table[(id % FLUSH_WAITS as u64) as usize]
}

impl Workqueue {
    /// Waits until every item queued before the call has finished. Items queued after it
    /// (including re-queues by the items themselves) do not hold it up.
    ///
    /// Delayed items whose delay has not ended are not waited for (they are not queued yet).
    ///
    /// Returns `true` once everything queued before the call has finished. Called from one of
    /// this workqueue's own items it would wait for that very item (the kernel deadlocks
    /// there), so it returns `false` at once and waits for nothing; so does it in a child
    /// process of `fork()` for a workqueue its parent built (its items never run here).
    pub fn flush(&self) -> bool {
        if self.called_from_own_item() || self.foreign() {
            return false;
        }
        flush_all(&self.shared, &self.layouts, None)
    }

    /// Flushes until the workqueue is empty. While it runs, only this workqueue's own running
    /// items may queue more work on it; other queue calls return `false` and queue nothing.
    ///
    /// Returns `true` once the workqueue was empty; `false` at once, having waited for nothing,
    /// when called from one of this workqueue's own items, or in a child process for a
    /// workqueue its parent built (as [`Workqueue::flush`]).
    pub fn drain(&self) -> bool {
        if self.called_from_own_item() || self.foreign() {
            return false;
        }
        self.shared.flush.start_drain();
        until_empty(&self.shared, &self.layouts);
        self.shared.flush.end_drain();
        true
    }

    /// [`Workqueue::flush`], waiting at most `timeout`. Returns whether everything queued
    /// before the call finished in time.
    ///
    /// When `timeout` passes first it returns `false`, and nothing is cancelled: the items go
    /// on and finish normally, and a later flush waits for those that are still queued (they
    /// were queued before it). It also returns `false` at once where [`Workqueue::flush`]
    /// does: called from one of this workqueue's own items, or in a child process of
    /// `fork()` for a workqueue its parent built.
    pub fn flush_timeout(&self, timeout: Duration) -> bool {
        if self.called_from_own_item() || self.foreign() {
            return false;
        }
        let deadline = timer::deadline_after(timeout);
        flush_all(&self.shared, &self.layouts, Some(deadline))
    }

    /// [`Workqueue::drain`], waiting at most `timeout`. Returns whether the workqueue was
    /// empty in time.
    ///
    /// When `timeout` passes first it returns `false` and the drain ends: queue calls are
    /// accepted again from every thread, and the items still queued run normally. It also
    /// returns `false` at once where [`Workqueue::drain`] does.
    pub fn drain_timeout(&self, timeout: Duration) -> bool {
        if self.called_from_own_item() || self.foreign() {
            return false;
        }
        let deadline = timer::deadline_after(timeout);
        self.shared.flush.start_drain();
        let empty = until_empty_by(&self.shared, &self.layouts, Some(deadline));
        self.shared.flush.end_drain();
        empty
    }
}

/// Flushes until every pod's counts are zero, in every layout (F2), giving up at
/// `deadline` (`None`: never). Returns whether they were all zero.
pub(super) fn until_empty_by(wq: &WqShared, layouts: &Layouts, deadline: Option<Instant>) -> bool {
    loop {
        if !flush_all(wq, layouts, deadline) {
            return false;
        }
        if layouts.counters().all(|p| p.in_flight() == 0) {
            return true;
        }
    }
}

/// F1 over every layout: waits for every execution of the workqueue counted before the
/// call, in whichever layout it was counted, giving up at `deadline` (`None`: never). Returns
/// whether it waited for all of them.
fn flush_all(wq: &WqShared, layouts: &Layouts, deadline: Option<std::time::Instant>) -> bool {
    wq.flush.flush_until(
        |colour| layouts.counters().any(|p| p.in_flight_of(colour) != 0),
        deadline,
    )
}

/// Flushes until every pod's counts are zero, in every layout (F2).
pub(super) fn until_empty(wq: &WqShared, layouts: &Layouts) {
    until_empty_by(wq, layouts, None);
}
