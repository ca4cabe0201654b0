//! A closure queued with `Workqueue::spawn`, as its task holds it (`Job::Spawned`). The slot
//! that the closure shares with its `JoinHandle`, and the handle, are the user's side
//! (`api/join.rs`, J1-J4 of `workqueue/README.md`): a task knows the slot only as
//! [`Spawned`].

use std::sync::Arc;

use crate::workqueue::item::flush::Stripe;

/// The queued task's view of a spawned closure's slot.
pub(crate) trait Spawned: Send + Sync {
    /// Runs the closure (a panic caught), counts its end in `counters` as a one-shot closure's
    /// is counted, and puts the outcome in (J2, J3). Returns whether dropping an outcome nobody
    /// waits for panicked (the caller counts it as a drop panic).
    fn run(&self, counters: &Stripe) -> bool;
    /// Drops the closure unrun and puts a cancelled outcome in, unless it ran (J2).
    fn cancel(&self);
}

/// A spawned closure as a queued task holds it: dropped unrun, it cancels the closure.
pub(crate) struct SpawnJob {
    /// The slot; taken when the task runs it.
    cell: Option<Arc<dyn Spawned>>,
}

impl SpawnJob {
    /// The job of the slot `cell`.
    pub(crate) fn new(cell: Arc<dyn Spawned>) -> SpawnJob {
        SpawnJob { cell: Some(cell) }
    }

    /// Runs the closure (see [`Spawned::run`]).
    pub(crate) fn run(mut self, counters: &Stripe) -> bool {
        self.cell.take().is_some_and(|cell| cell.run(counters))
    }
}

impl Drop for SpawnJob {
    fn drop(&mut self) {
        if let Some(cell) = self.cell.take() {
            cell.cancel();
        }
    }
}
