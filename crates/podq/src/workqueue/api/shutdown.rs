//! [`Workqueue::shutdown_timeout`]: a drop bounded in time (E7 of `workqueue/README.md`).

use std::time::Duration;

use crate::workqueue::api::flush::until_empty_by;
use crate::workqueue::api::workqueue::Workqueue;
use crate::workqueue::item::flush::Flush;
use crate::workqueue::task::timer;

impl Workqueue {
    /// Shuts the workqueue down within `timeout`: stops taking work (its groups answer
    /// `false`, other queue calls as during a [`Workqueue::drain`]), queues its delayed items
    /// now, runs what is queued for at most `timeout`, and returns whether everything ran.
    ///
    /// When `timeout` passes first, every execution that has not started is cancelled: a
    /// spawned closure's handle gives [`JoinError::Cancelled`](crate::JoinError), a
    /// [`Work`](crate::Work) is no longer pending, a plain closure is dropped unrun; each is
    /// counted as cancelled in the statistics. Items running then go on, and are not waited
    /// for (what they queue meanwhile still runs); the pools go once they are done. Dropping
    /// the workqueue instead waits for everything, without a bound.
    ///
    /// Called from one of the workqueue's own items, it cannot finish before that item: it
    /// returns `false` after `timeout`. In a child process of `fork()`, for a workqueue its
    /// parent built, it returns `false` at once (as the drop, it runs nothing there).
    ///
    /// ```
    /// use std::time::Duration;
    /// use podq::Workqueue;
    ///
    /// let wq = Workqueue::builder("bounded-stop").build()?;
    /// let handle = wq.spawn(|| 6 * 7);
    /// assert!(wq.shutdown_timeout(Duration::from_secs(5)));
    /// assert_eq!(handle.join().unwrap(), 42);
    /// # Ok::<(), podq::Error>(())
    /// ```
    pub fn shutdown_timeout(mut self, timeout: Duration) -> bool {
        if self.foreign() {
            return false;
        }
        let deadline = timer::deadline_after(timeout);
        // G7, then no re-formation, then the delayed items, as the drop.
        if let Some(gate) = self.owned.get() {
            drop(gate.close());
        }
        self.layouts.reform_state().closed = true;
        for fire in timer::take_for(self.shared.id) {
            fire.fire();
        }
        self.shared.flush.start_drain();
        if until_empty_by(&self.shared, &self.layouts, Some(deadline)) {
            // Everything ran: the drop's own drain returns at once.
            Flush::wait_for_leavers(self.layouts.counters());
            self.shared.flush.end_drain();
            return true;
        }
        // E7: the executions that have not started. The `max_active` FIFO first, so that an
        // execution it activates meanwhile is in a pool when the pools are emptied.
        let id = self.shared.id;
        if let Some(active) = &self.shared.active {
            while let Some(task) = active.remove_if(|_| true) {
                task.cancel_unstarted();
            }
        }
        for set in self.shared.pools.iter() {
            for (_, task) in set.take_all_if(|task| task.is_of(id)) {
                task.cancel_unstarted();
            }
        }
        // The running items go on; the reaper waits for them and lets the pools go, and the
        // drop below does nothing more.
        super::helpers::reap(self.shared.clone(), self.layouts.clone());
        self.inert = true;
        false
    }
}
