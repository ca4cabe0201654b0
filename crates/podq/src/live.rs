//! The process's list of live workqueues, for [`dump()`](crate::dump()) and the `metrics`
//! feature's `publish`: weak handles, registered once when a workqueue is built, so that the
//! list keeps nothing alive and costs nothing per work item.

use std::sync::{Arc, Weak};

use crate::fork::PerFork;
use crate::stats::WorkqueueStats;
use crate::sync::Mutex;
use crate::workqueue::{stats_of, Layouts, WqShared};

/// A live workqueue, as the list reaches it: weak handles, so that registering keeps nothing
/// alive.
struct Entry {
    /// The workqueue's shared part.
    shared: Weak<WqShared>,
    /// Its layouts (its parts of the pods).
    layouts: Weak<Layouts>,
}

/// Strong handles of a live workqueue's parts, for one reading.
type Held = (Arc<WqShared>, Arc<Layouts>);

impl Entry {
    /// Strong handles of the workqueue's parts, or `None` once it is gone.
    fn upgrade(&self) -> Option<Held> {
        let shared = self.shared.upgrade()?;
        let layouts = self.layouts.upgrade()?;
        Some((shared, layouts))
    }
}

/// Every workqueue built since the process started that may still be live, in build order;
/// entries of dropped workqueues are removed by the next [`stats_of_live`]. One list per fork
/// generation (`fork.rs`): a child of `fork()` sees its own workqueues only, and never takes a
/// lock that a parent's thread may have held.
static LIVE: PerFork<Mutex<Vec<Entry>>> = PerFork::new();

/// This process's list of live workqueues (see [`LIVE`]).
fn live() -> &'static Mutex<Vec<Entry>> {
    LIVE.get(|| Mutex::new(Vec::new()))
}

/// Registers a new workqueue (called once, when it is built).
pub(crate) fn register(shared: &Arc<WqShared>, layouts: &Arc<Layouts>) {
    let entry = Entry {
        shared: Arc::downgrade(shared),
        layouts: Arc::downgrade(layouts),
    };
    live().lock().push(entry);
}

/// The statistics of every live workqueue, in build order (what
/// [`Workqueue::stats`](crate::Workqueue::stats) returns for each). The list's lock is held
/// only to take strong handles, not while the statistics are read.
pub(crate) fn stats_of_live() -> Vec<WorkqueueStats> {
    let held: Vec<Held> = {
        let mut live = live().lock();
        let mut held = Vec::with_capacity(live.len());
        live.retain(|entry| match entry.upgrade() {
            Some(handles) => {
                held.push(handles);
                true
            }
            None => false,
        });
        held
    };
    let stats = held
        .iter()
        .map(|(shared, layouts)| stats_of(shared, layouts))
        .collect();
    // Should a workqueue have been dropped meanwhile, these were the last handles of its
    // parts: its pools shut down here, on the calling thread, outside the lock.
    drop(held);
    stats
}
