//! Steering's state, carried by the tasks: a group's preference and runnable count
//! ([`GroupState`]), the ticket each of its queued executions carries ([`Ticket`]), and the
//! workqueue's steering counters ([`SteerShared`]).
//!
//! Its part of cache-aware placement is the record: a ticket counts its execution as runnable
//! from the queue call to its end (G1, G5 of `workqueue/README.md`), and the start of a
//! grouped execution counts it at home or elsewhere and votes for the pod it runs on,
//! publishing the group's home (G3). The decisions (where an item goes, when the home moves)
//! are `policy::steer`'s; the home pool's load is `pool/load.rs`'s; the [`Group`](crate::Group)
//! handle and its queue calls are `api/group.rs`; a work item keeps its pending execution's
//! ticket in `item/group_slot.rs` (G4).
//!
//! Nothing here is process-wide, and nothing is written per item outside the item's own group
//! (its runnable count, its preference) and the counters' stripe of the CPU that runs it.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_utils::CachePadded;

use crate::here;
use crate::policy::steer::{self as policy, Preference, Recorded, Snapshot};
use crate::pool;
use crate::sync::Mutex;

/// Stripes of a workqueue's steering counters at most: 64, so that CPUs of a big machine
/// rarely share one, while a workqueue spends at most 8 KiB on them.
const MAX_STRIPES: usize = 64;

/// The published home of a group with none.
const NO_HOME: usize = usize::MAX;

/// A workqueue's part of steering: how many pods it has, and the counters of its grouped
/// items, in stripes by CPU (each CPU writes its own line).
pub(crate) struct SteerShared {
    /// I: the pods of the workqueue's scope (pod ids are below this).
    pods: usize,
    /// A: whether the workqueue's groups steer now (`WorkqueueBuilder::steer`,
    /// `Workqueue::set_steer`). Relaxed: each queue call through a group reads it once and
    /// steers or not; a call that raced with a switch is steered as before it, and either way
    /// the execution is queued and counted once.
    on: AtomicBool,
    /// A: the counters, indexed by CPU id modulo the length (a power of two). Relaxed:
    /// statistics.
    stripes: Box<[CachePadded<SteerStripe>]>,
}

/// One stripe of [`SteerShared`]'s counters.
#[derive(Default)]
struct SteerStripe {
    /// Grouped executions that started on their group's home pod.
    at_home: AtomicU64,
    /// Grouped executions that started elsewhere, or while their group had no home.
    elsewhere: AtomicU64,
    /// Moves of a group's home from one pod to another.
    home_changes: AtomicU64,
}

/// A workqueue's steering counters, summed over the stripes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SteerTotals {
    /// See `WorkqueueStats::grouped_at_home`.
    pub(crate) at_home: u64,
    /// See `WorkqueueStats::grouped_elsewhere`.
    pub(crate) elsewhere: u64,
    /// See `WorkqueueStats::home_changes`.
    pub(crate) home_changes: u64,
}

impl SteerShared {
    /// The steering part of a workqueue of `cpus` CPUs over `pods` pods.
    pub(crate) fn new(pods: usize, cpus: usize) -> Self {
        let stripes = cpus
            .saturating_mul(2)
            .clamp(1, MAX_STRIPES)
            .next_power_of_two();
        Self {
            pods,
            on: AtomicBool::new(true),
            stripes: (0..stripes).map(|_| CachePadded::default()).collect(),
        }
    }

    /// Whether the workqueue's groups steer now.
    pub(crate) fn enabled(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// Turns steering on or off for the workqueue's groups.
    pub(crate) fn set_enabled(&self, on: bool) {
        self.on.store(on, Ordering::Relaxed);
    }

    /// The calling thread's stripe.
    fn mine(&self) -> &SteerStripe {
        &self.stripes[here::cpu_or_thread() & (self.stripes.len() - 1)]
    }

    /// The counters, summed.
    pub(crate) fn totals(&self) -> SteerTotals {
        let sum = |count: fn(&SteerStripe) -> &AtomicU64| {
            self.stripes
                .iter()
                .map(|s| count(s).load(Ordering::Relaxed))
                .sum()
        };
        SteerTotals {
            at_home: sum(|s| &s.at_home),
            elsewhere: sum(|s| &s.elsewhere),
            home_changes: sum(|s| &s.home_changes),
        }
    }
}

/// One group's state, shared by its handles and the tickets of its queued executions.
pub(crate) struct GroupState {
    /// I: the workqueue's steering part.
    pub(crate) steer: Arc<SteerShared>,
    /// A: executions of the group queued and not finished (G1, G5). Relaxed: a count that a
    /// decision reads as a hint.
    runnable: AtomicUsize,
    /// A: the home as last recorded ([`NO_HOME`]: none), for decisions to read without the
    /// lock (G3). Relaxed: a hint.
    home: AtomicUsize,
    /// A: when the group last voted (G3: a start, at most one per
    /// `policy::steer::VOTE_INTERVAL`), in nanoseconds on `pool::clock`. Relaxed: a hint.
    last_item_ns: AtomicU64,
    /// The preference, changed only by [`policy::record`]. Taken with `try_lock` by starting
    /// items: one that finds it held skips its vote (G3).
    pref: Mutex<Preference>,
}

impl GroupState {
    /// A new group of a workqueue with steering part `steer`: no home, nothing runnable.
    pub(crate) fn new(steer: Arc<SteerShared>) -> Self {
        Self {
            steer,
            runnable: AtomicUsize::new(0),
            home: AtomicUsize::new(NO_HOME),
            last_item_ns: AtomicU64::new(0),
            pref: Mutex::new(Preference::default()),
        }
    }

    /// What a steering decision reads (G2): the published home and last start.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let home = self.home.load(Ordering::Relaxed);
        Snapshot {
            home: (home != NO_HOME).then_some(home),
            last_item: Duration::from_nanos(self.last_item_ns.load(Ordering::Relaxed)),
        }
    }

    /// Executions of the group queued and not finished.
    pub(crate) fn runnable(&self) -> usize {
        self.runnable.load(Ordering::Relaxed)
    }

    /// (G3) One of the group's executions starts on a worker of pod `ran_on` at `now`: counts
    /// it at home or elsewhere, and votes for its pod, unless the group voted less than
    /// `policy::steer::VOTE_INTERVAL` ago or another start holds the preference's lock.
    fn started(&self, ran_on: usize, now: Duration) {
        let stripe = self.steer.mine();
        let snapshot = self.snapshot();
        if snapshot.home_at(now) == Some(ran_on) {
            stripe.at_home.fetch_add(1, Ordering::Relaxed);
        } else {
            stripe.elsewhere.fetch_add(1, Ordering::Relaxed);
        }
        if snapshot.home.is_some() && !policy::votes(snapshot.last_item, now) {
            return;
        }
        let Some(mut pref) = self.pref.try_lock() else {
            return;
        };
        // Another start may have recorded a later time first: time never goes back.
        let now = now.max(pref.last_item);
        if let Recorded::Moved { .. } = policy::record(&mut pref, ran_on, now) {
            stripe.home_changes.fetch_add(1, Ordering::Relaxed);
        }
        self.home
            .store(pref.home.unwrap_or(NO_HOME), Ordering::Relaxed);
        self.last_item_ns
            .store(duration_ns(pref.last_item), Ordering::Relaxed);
    }
}

/// Nanoseconds of `d`, saturated.
fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// One queued execution of a group: counted in the group's runnable items from its queue call
/// (G1) until it is dropped (G5): when the execution finishes, or is discarded or cancelled.
pub(crate) struct Ticket(Arc<GroupState>);

impl Ticket {
    /// (G1) Counts one more runnable execution of `group`.
    pub(crate) fn new(group: &Arc<GroupState>) -> Ticket {
        group.runnable.fetch_add(1, Ordering::Relaxed);
        Ticket(Arc::clone(group))
    }

    /// (G3) The execution starts on the calling thread: if it is a worker of one of the
    /// workqueue's pools, or the rescuer running one of their tasks (M4 of
    /// `pool/README.md`), the group learns where its item ran.
    pub(crate) fn started(&self) {
        let Some(pod) = pool::worker_pod().filter(|&p| p < self.0.steer.pods) else {
            return;
        };
        self.0.started(pod, pool::clock());
    }
}

impl Drop for Ticket {
    /// (G5) The execution is over (run, discarded or cancelled).
    fn drop(&mut self) {
        self.0.runnable.fetch_sub(1, Ordering::Relaxed);
    }
}

impl fmt::Debug for GroupState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupState")
            .field("home", &self.snapshot().home)
            .field("runnable", &self.runnable())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::steer::{EXPIRY, HOME_HOLD};

    fn group() -> Arc<GroupState> {
        Arc::new(GroupState::new(Arc::new(SteerShared::new(4, 2))))
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn starts_count_at_home_or_elsewhere_and_publish_the_home() {
        let g = group();
        g.started(2, ms(1));
        assert_eq!(g.snapshot().home, Some(2));
        assert_eq!(g.snapshot().last_item, ms(1));
        g.started(2, ms(2));
        g.started(3, ms(3));
        let t = g.steer.totals();
        // The first start had no home to be at.
        assert_eq!((t.at_home, t.elsewhere, t.home_changes), (1, 2, 0));
        // Starts elsewhere every 10 ms outvote the home, which moves once the hold has passed.
        let mut t = ms(3);
        while g.snapshot().home == Some(2) {
            t += ms(10);
            g.started(3, t);
        }
        assert!(t >= HOME_HOLD && t < HOME_HOLD + ms(10), "{t:?}");
        assert_eq!(g.snapshot().home, Some(3));
        assert_eq!(g.steer.totals().home_changes, 1);
        // After the expiry the published home is gone for decisions.
        assert_eq!(g.snapshot().home_at(t + EXPIRY), None);
    }

    #[test]
    fn a_start_that_finds_the_preference_held_counts_but_does_not_vote() {
        let g = group();
        g.started(1, ms(1));
        let held = g.pref.lock();
        g.started(0, ms(200));
        drop(held);
        assert_eq!(g.snapshot().home, Some(1));
        assert_eq!(g.snapshot().last_item, ms(1));
        assert_eq!(g.steer.totals().elsewhere, 2);
    }

    #[test]
    fn tickets_count_runnable_executions_until_dropped() {
        let g = group();
        let a = Ticket::new(&g);
        let b = Ticket::new(&g);
        assert_eq!(g.runnable(), 2);
        drop(a);
        assert_eq!(g.runnable(), 1);
        // Off a worker thread, a start learns nothing.
        b.started();
        assert_eq!(g.snapshot().home, None);
        drop(b);
        assert_eq!(g.runnable(), 0);
    }
}
