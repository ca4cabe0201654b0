//! Statistics: [`Workqueue::stats`], and the same for [`crate::dump()`] and the `metrics`
//! feature, which hold a workqueue's parts rather than its handle (`live.rs`).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::fork;
use crate::stats::WorkqueueStats;
use crate::workqueue::api::workqueue::Workqueue;
use crate::workqueue::item::flush::Stripe;
use crate::workqueue::layout::Layouts;
use crate::workqueue::task::shared::WqShared;

impl Workqueue {
    /// Counters of this workqueue and the state of its pools, now. In a child process of
    /// `fork()`, a workqueue its parent built shows its counters as they were at the fork and no
    /// pools.
    pub fn stats(&self) -> WorkqueueStats {
        stats_of(&self.shared, &self.layouts)
    }
}

/// Counters of the workqueue of `shared` and `layouts` and the state of its pools now (what
/// [`Workqueue::stats`] returns, what [`crate::dump()`] shows and what the `metrics` feature
/// publishes). The counts add up
/// the pods of every layout it has had; the pools are those of its current layout.
pub(crate) fn stats_of(shared: &WqShared, layouts: &Layouts) -> WorkqueueStats {
    let current = layouts.current();
    let mut stats = WorkqueueStats {
        name: shared.name.clone(),
        scope: current.shape.scope,
        shard_size: current.shape.shard_size,
        pull: current.shape.pull,
        steer: shared.steer.enabled(),
        max_active: shared.max_active,
        max_backlog: shared.backlog.as_ref().map(|b| b.limit()),
        started: 0,
        completed: 0,
        in_flight: 0,
        panicked: 0,
        cancelled: 0,
        drop_panics: shared.drop_panics.load(Ordering::Relaxed),
        waiting_for_slot: shared.active.as_ref().map_or(0, |a| a.waiting() as u64),
        grouped_at_home: 0,
        grouped_elsewhere: 0,
        home_changes: 0,
        backlog: shared.backlog.as_ref().map_or(0, |b| b.waiting()),
        reformations: layouts.reformations(),
        pools: Vec::new(),
    };
    let steer = shared.steer.totals();
    stats.grouped_at_home = steer.at_home;
    stats.grouped_elsewhere = steer.elsewhere;
    stats.home_changes = steer.home_changes;
    // Panicked, then completed, then started (see `PodCounters::total`): a snapshot taken
    // while items run keeps `panicked <= completed <= started`.
    let total = |count: fn(&Stripe) -> &AtomicU64| -> u64 {
        layouts.counters().map(|pod| pod.total(count)).sum()
    };
    stats.panicked = total(|s| &s.panicked);
    stats.completed = total(|s| &s.completed);
    stats.started = total(|s| &s.started);
    stats.cancelled = total(|s| &s.cancelled);
    stats.in_flight = layouts.counters().map(|pod| pod.in_flight() as u64).sum();
    // A parent's pools, in a child of `fork()`, have no workers here and their locks may be
    // held by the parent's threads: none is shown.
    if !fork::is_foreign(shared.id) {
        if let Some(pools) = shared.pools.get(current.set) {
            stats.pools = pools.stats();
        }
    }
    stats
}
