//! [`Outcome`]: what one simulated run measured, in the bench's terms.

/// Latency percentiles, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Percentiles {
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 95th percentile.
    pub p95: u64,
    /// 99th percentile.
    pub p99: u64,
}

impl Percentiles {
    /// The percentiles of `samples` (reordered in place); all 0 when empty.
    pub fn of(samples: &mut [u32]) -> Percentiles {
        let mut at = |q: f64| -> u64 {
            if samples.is_empty() {
                return 0;
            }
            let rank = ((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len()) - 1;
            u64::from(*samples.select_nth_unstable(rank).1)
        };
        Percentiles {
            p50: at(0.50),
            p90: at(0.90),
            p95: at(0.95),
            p99: at(0.99),
        }
    }
}

/// What pull did in one run, summed over the pools (all 0 without pull): the counts of
/// `podq::PoolStats`' pull fields, and the offers and kicks behind them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PullCounts {
    /// Items queued on one pool that a worker of another pool took and ran.
    pub pulled: u64,
    /// Offers made: a pool's bit set in the summary (O1).
    pub offers: u64,
    /// Siblings that woke or started a worker for an offer (O2).
    pub kicks: u64,
    /// Idle entries of workers that asked their siblings (O4).
    pub idle_entries: u64,
    /// Searches of a level (the gate let the worker search and the domain had room).
    pub searches: u64,
    /// Searches that found an item.
    pub found: u64,
    /// Levels with work offered that the gate did not let a worker search.
    pub gated: u64,
    /// Idle entries that did not search because their cache domain had its cap of searchers.
    pub capped: u64,
}

/// What the `locality` workload saw: its pace, its items' own run times, and where steering
/// sent them (the counts of `podq::WorkqueueStats`' steering fields; 0 without steering).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LocalityCounts {
    /// Groups.
    pub groups: usize,
    /// The pace: one unsteered item's expected run time on the machine, in ns (`engine/pace.rs`).
    pub item_ns: u64,
    /// The hot walk and the item's work, in ns ([`Caches::walk_ns`](crate::Caches::walk_ns)):
    /// the bench's first pace, reported as the bench does.
    pub walk_ns: u64,
    /// The CPUs' busy fraction over the run: the time threads ran, spun or switched in on
    /// them over the run's time x CPUs, as the bench's `cpu_busy`.
    pub cpu_busy: f64,
    /// Each item's own run time: its walk of its group's set and its work.
    pub run_time: Percentiles,
    /// The items' mean run time, in ns: what the pace ([`LocalityCounts::item_ns`]) expects
    /// of an unsteered run.
    pub run_mean_ns: u64,
    /// Grouped items that started on their group's home pod.
    pub at_home: u64,
    /// Grouped items that started elsewhere, or while their group had no home.
    pub elsewhere: u64,
    /// Moves of a group's home from one pod to another.
    pub home_changes: u64,
    /// Queue calls that steering sent to their group's home pod, other than the pod where a
    /// plain item issued there goes.
    pub steered: u64,
    /// Queue calls of a group with a home that steering sent where plain items go, because the
    /// home pod had as many of the group's items as CPUs or was busier than
    /// `podq::policy::steer::BUSY_LIMIT`.
    pub refused: u64,
    /// Items run by the pool that ran the most: how much of the work one pod took.
    pub most_on_one_pod: u64,
    /// Items whose worker ran on a CPU outside its pool's pod (a non-strict worker the
    /// scheduler placed there).
    pub outside_pod: u64,
    /// Items' walks by where their set was.
    pub walks_from: WalksFrom,
}

/// Items' walks by where their group's set was when they started (`locality`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalksFrom {
    /// In the running core's private cache: hot.
    pub private: u64,
    /// In a peer core's private cache, in the same cache domain.
    pub peer: u64,
    /// Only in the domain's last-level cache.
    pub llc: u64,
    /// In another cache domain.
    pub other_cache: u64,
    /// In no cache.
    pub memory: u64,
}

/// What the held slots did in one run (all 0 without them): the counts of `podq::PoolStats`'
/// `ran_by_queuer`, `ran_ahead` and `taken_from_queuer`, and the held items the bound sent to
/// the queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeldCounts {
    /// Items held by the worker whose running item queued them, and run by it (H3).
    pub ran_by_queuer: u64,
    /// Items a worker took from its pool's head ahead, with the one it took (H8), and ran.
    pub ran_ahead: u64,
    /// Held items that another worker took after its spin (H5) or the watchdog pushed (H6),
    /// and items held ahead that a sibling's worker stole (O4).
    pub taken_from_queuer: u64,
    /// Of those, the ones the watchdog took (H6) rather than a worker (H5, O4).
    pub taken_by_watchdog: u64,
    /// Held items that went to the back of the queue because their holder had run
    /// `podq::policy::held::MAX_IN_A_ROW` in a row while others waited (H3).
    pub bounded: u64,
    /// The most held items one worker ran in a row while items waited in its pool's queue:
    /// at most `MAX_IN_A_ROW` when the bound holds.
    pub most_in_a_row_while_waiting: u32,
}

/// One simulated run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Outcome {
    /// All items over the simulated time from the release to the last item's end (queue: the
    /// last producer seeing its last item done).
    pub items_per_sec: f64,
    /// The queue call alone.
    pub queue: Percentiles,
    /// From just before the queue call to the item starting (flood only).
    pub queue_to_start: Option<Percentiles>,
    /// Pools (pods) of the scope.
    pub pools: usize,
    /// Workers started during the run, the initial one per pool included.
    pub workers: u64,
    /// Lock acquisitions (`podq::PoolStats::lock_acquisitions`: the first request of each).
    pub lock_acquisitions: u64,
    /// Lock acquisitions that found the lock held.
    pub lock_contended: u64,
    /// Simulated time of the run, in nanoseconds.
    pub simulated_ns: u64,
    /// Events processed.
    pub events: u64,
    /// What pull did.
    pub pull: PullCounts,
    /// What the `locality` workload saw (`None` for the others).
    pub locality: Option<LocalityCounts>,
    /// What the held slots did.
    pub held: HeldCounts,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_pick_the_nearest_rank() {
        let mut samples: Vec<u32> = (1..=100).rev().collect();
        let p = Percentiles::of(&mut samples);
        assert_eq!((p.p50, p.p90, p.p95, p.p99), (50, 90, 95, 99));
        assert_eq!(Percentiles::of(&mut []), Percentiles::default());
    }
}
