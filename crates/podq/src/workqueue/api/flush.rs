//! Waits with a deadline on a whole workqueue: [`Workqueue::flush_timeout`] and
//! [`Workqueue::drain_timeout`] (F1 and F2 of `README.md` in this folder, giving up at a
//! deadline; the item's own waits with a deadline are in `work.rs`).

use std::time::{Duration, Instant};

use crate::workqueue::{flush_all, timer, Layouts, Workqueue, WqShared};

impl Workqueue {
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
pub(crate) fn until_empty_by(wq: &WqShared, layouts: &Layouts, deadline: Option<Instant>) -> bool {
    loop {
        if !flush_all(wq, layouts, deadline) {
            return false;
        }
        if layouts.counters().all(|p| p.in_flight() == 0) {
            return true;
        }
    }
}
