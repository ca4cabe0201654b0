//! What one run of one configuration measured, and the summary over several runs.

use std::time::Duration;

use hdrhistogram::Histogram;

use super::locality::reuse::CpuReuse;

/// Latency percentiles of a histogram, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Percentiles {
    /// Median.
    pub(crate) p50: u64,
    /// 90th percentile.
    pub(crate) p90: u64,
    /// 95th percentile.
    pub(crate) p95: u64,
    /// 99th percentile.
    pub(crate) p99: u64,
}

impl Percentiles {
    /// The percentiles of `histogram`.
    pub(crate) fn of(histogram: &Histogram<u64>) -> Percentiles {
        Percentiles {
            p50: histogram.value_at_quantile(0.50),
            p90: histogram.value_at_quantile(0.90),
            p95: histogram.value_at_quantile(0.95),
            p99: histogram.value_at_quantile(0.99),
        }
    }
}

/// One run of one configuration.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Measurement {
    /// All items divided by the wall time from release to the end of the final flush.
    pub(crate) items_per_sec: f64,
    /// The queue call alone.
    pub(crate) queue: Percentiles,
    /// From just before the queue call to the item starting (the open loops), or to the next
    /// hop starting (rpc).
    pub(crate) queue_to_start: Option<Percentiles>,
    /// From just before the queue call to the start, of the short items alone (blocking
    /// only).
    pub(crate) short_start: Option<Percentiles>,
    /// Round trips completed, counted by the items (rpc only).
    pub(crate) round_trips: Option<u64>,
    /// Items that blocked, counted by the items (blocking only).
    pub(crate) blocking_items: Option<u64>,
    /// Pools serving the workqueue (podq only).
    pub(crate) pools: Option<usize>,
    /// Worker threads created during the run (podq), or started for it (peers).
    pub(crate) workers: Option<u64>,
    /// Times a pool lock was found held by another thread (podq only).
    pub(crate) lock_contended: Option<u64>,
    /// Items run by a worker of another pool than the one they were queued on (podq only).
    pub(crate) pulled: Option<u64>,
    /// Times a busy worker was seen blocked in its item (podq only).
    pub(crate) seen_blocked: Option<u64>,
    /// Workers started because busy ones were blocked (podq only).
    pub(crate) started_for_blocked: Option<u64>,
    /// Each item's own run time, from its start to its end (locality only).
    pub(crate) run_time: Option<Percentiles>,
    /// Groups whose items were queued (locality only).
    pub(crate) groups: Option<usize>,
    /// The process's CPU time over the run divided by the wall time of the usable CPUs
    /// (locality only).
    pub(crate) cpu_busy: Option<f64>,
    /// Grouped items that ran on their group's home pod, those sent elsewhere, and the
    /// groups' home changes (podq, locality only).
    pub(crate) steering: Option<Steering>,
    /// How many items ran on the CPU of their group's previous item, and the run time of those
    /// that did and of those that moved (locality only).
    pub(crate) cpu_reuse: Option<CpuReuse>,
    /// Items run in all (every producer's), as [`Measurement::of_run`] counts them.
    pub(crate) items: u64,
    /// The share of the items that the worker of the item that queued them ran (podq only).
    pub(crate) by_queuer: Option<f64>,
    /// The share of the items that a worker took from the queue with the one before them and
    /// ran after it (`PoolStats::ran_ahead`; podq only).
    pub(crate) ahead: Option<f64>,
    /// Acquisitions of the pools' locks (lanes, heads, pool locks) per item (podq only).
    pub(crate) locks_per_item: Option<f64>,
}

/// podq's steering counts of one run (`WorkqueueStats::grouped_at_home`, `grouped_elsewhere`,
/// `home_changes`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Steering {
    /// Grouped items queued to their group's home pod.
    pub(crate) at_home: u64,
    /// Grouped items queued elsewhere (no home yet, the home loaded, or steering off).
    pub(crate) elsewhere: u64,
    /// Times a group's home moved.
    pub(crate) home_changes: u64,
}

impl Measurement {
    /// A run in which `producers` threads queued `items` items each, all of which had run
    /// `wall` after the producers' release, with the queue calls' latencies in `latency`.
    pub(crate) fn of_run(
        items: u64,
        producers: usize,
        wall: Duration,
        latency: &Histogram<u64>,
    ) -> Measurement {
        let total = items as f64 * producers as f64;
        Measurement {
            items_per_sec: total / wall.as_secs_f64(),
            items: items.saturating_mul(producers as u64),
            queue: Percentiles::of(latency),
            ..Measurement::default()
        }
    }
}

/// Several runs of one configuration: medians, and the spread of items/sec.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Summary {
    /// Runs summarised.
    pub(crate) runs: usize,
    /// Median items/sec.
    pub(crate) items_per_sec: f64,
    /// Lowest items/sec of any run.
    pub(crate) items_per_sec_min: f64,
    /// Highest items/sec of any run.
    pub(crate) items_per_sec_max: f64,
    /// Median of each queue-call percentile.
    pub(crate) queue: Percentiles,
    /// Median of each queue-to-start (or per-hop) percentile.
    pub(crate) queue_to_start: Option<Percentiles>,
    /// Median of each percentile of the short items' queue-to-start (blocking only).
    pub(crate) short_start: Option<Percentiles>,
    /// Median count of round trips (rpc only).
    pub(crate) round_trips: Option<u64>,
    /// Median count of items that blocked (blocking only).
    pub(crate) blocking_items: Option<u64>,
    /// Median pool count.
    pub(crate) pools: Option<usize>,
    /// Median worker count.
    pub(crate) workers: Option<u64>,
    /// Median count of contended pool-lock acquisitions.
    pub(crate) lock_contended: Option<u64>,
    /// Median count of pulled items.
    pub(crate) pulled: Option<u64>,
    /// Median count of busy workers seen blocked.
    pub(crate) seen_blocked: Option<u64>,
    /// Median count of workers started for blocked ones.
    pub(crate) started_for_blocked: Option<u64>,
    /// Median of each percentile of the items' own run time (locality only).
    pub(crate) run_time: Option<Percentiles>,
    /// Groups (locality only).
    pub(crate) groups: Option<usize>,
    /// Median busy fraction (locality only).
    pub(crate) cpu_busy: Option<f64>,
    /// Median of each steering count (podq, locality only).
    pub(crate) steering: Option<Steering>,
    /// Median of the fraction of items on their group's previous CPU, and of each side's run
    /// time p50 (locality only).
    pub(crate) cpu_reuse: Option<CpuReuse>,
    /// Median share of the items run by the worker of the item that queued them (podq only).
    pub(crate) by_queuer: Option<f64>,
    /// Median share of the items taken from the queue ahead (podq only).
    pub(crate) ahead: Option<f64>,
    /// Median of the pools' lock acquisitions per item (podq only).
    pub(crate) locks_per_item: Option<f64>,
}

impl Summary {
    /// Summarises `runs`; `None` when there are none.
    pub(crate) fn of(runs: &[Measurement]) -> Option<Summary> {
        let first = runs.first()?;
        let ips: Vec<f64> = runs.iter().map(|m| m.items_per_sec).collect();
        let percentiles = |pick: &dyn Fn(&Measurement) -> Option<Percentiles>| {
            let all: Vec<Percentiles> = runs.iter().filter_map(pick).collect();
            (!all.is_empty()).then(|| Percentiles {
                p50: median_u64(all.iter().map(|p| p.p50)),
                p90: median_u64(all.iter().map(|p| p.p90)),
                p95: median_u64(all.iter().map(|p| p.p95)),
                p99: median_u64(all.iter().map(|p| p.p99)),
            })
        };
        Some(Summary {
            runs: runs.len(),
            items_per_sec: median_f64(&ips),
            items_per_sec_min: ips.iter().copied().fold(f64::INFINITY, f64::min),
            items_per_sec_max: ips.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            queue: percentiles(&|m| Some(m.queue)).unwrap_or(first.queue),
            queue_to_start: percentiles(&|m| m.queue_to_start),
            short_start: percentiles(&|m| m.short_start),
            round_trips: median_of(runs, |m| m.round_trips),
            blocking_items: median_of(runs, |m| m.blocking_items),
            pools: median_of(runs, |m| m.pools.map(|p| p as u64)).map(|p| p as usize),
            workers: median_of(runs, |m| m.workers),
            lock_contended: median_of(runs, |m| m.lock_contended),
            pulled: median_of(runs, |m| m.pulled),
            seen_blocked: median_of(runs, |m| m.seen_blocked),
            started_for_blocked: median_of(runs, |m| m.started_for_blocked),
            run_time: percentiles(&|m| m.run_time),
            groups: first.groups,
            cpu_busy: first
                .cpu_busy
                .map(|_| median_f64(&runs.iter().filter_map(|m| m.cpu_busy).collect::<Vec<_>>())),
            steering: first.steering.map(|_| Steering {
                at_home: median_u64(runs.iter().filter_map(|m| m.steering).map(|s| s.at_home)),
                elsewhere: median_u64(runs.iter().filter_map(|m| m.steering).map(|s| s.elsewhere)),
                home_changes: median_u64(
                    runs.iter()
                        .filter_map(|m| m.steering)
                        .map(|s| s.home_changes),
                ),
            }),
            cpu_reuse: cpu_reuse(runs),
            by_queuer: first
                .by_queuer
                .map(|_| median_f64(&runs.iter().filter_map(|m| m.by_queuer).collect::<Vec<_>>())),
            ahead: first
                .ahead
                .map(|_| median_f64(&runs.iter().filter_map(|m| m.ahead).collect::<Vec<_>>())),
            locks_per_item: first.locks_per_item.map(|_| {
                median_f64(
                    &runs
                        .iter()
                        .filter_map(|m| m.locks_per_item)
                        .collect::<Vec<_>>(),
                )
            }),
        })
    }
}

/// The medians of the runs' [`CpuReuse`]: of the fraction, and of each side's p50 over the runs
/// that had items on that side; `None` when no run has one.
fn cpu_reuse(runs: &[Measurement]) -> Option<CpuReuse> {
    let all: Vec<CpuReuse> = runs.iter().filter_map(|m| m.cpu_reuse).collect();
    let side = |pick: fn(&CpuReuse) -> Option<u64>| {
        let values: Vec<u64> = all.iter().filter_map(pick).collect();
        (!values.is_empty()).then(|| median_u64(values.into_iter()))
    };
    (!all.is_empty()).then(|| CpuReuse {
        same: median_f64(&all.iter().map(|r| r.same).collect::<Vec<_>>()),
        same_p50: side(|r| r.same_p50),
        moved_p50: side(|r| r.moved_p50),
    })
}

/// The median of the count `pick` finds in the runs; `None` when the first run has none.
fn median_of(runs: &[Measurement], pick: impl Fn(&Measurement) -> Option<u64>) -> Option<u64> {
    let first = runs.first().and_then(&pick);
    first.map(|_| median_u64(runs.iter().filter_map(pick)))
}

/// The median; the mean of the two middle values for an even count.
fn median_f64(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

/// The median (the lower middle value for an even count, so it is a measured value); 0 when
/// empty.
fn median_u64(values: impl Iterator<Item = u64>) -> u64 {
    let mut sorted: Vec<u64> = values.collect();
    sorted.sort_unstable();
    match sorted.len() {
        0 => 0,
        n => sorted[(n - 1) / 2],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(items_per_sec: f64, p50: u64) -> Measurement {
        Measurement {
            items_per_sec,
            queue: Percentiles {
                p50,
                p90: p50 * 2,
                p95: p50 * 3,
                p99: p50 * 4,
            },
            workers: Some(p50),
            pulled: Some(p50 / 10),
            ..Measurement::default()
        }
    }

    #[test]
    fn summary_takes_medians_and_the_spread() {
        let summary =
            Summary::of(&[run(300.0, 30), run(100.0, 10), run(200.0, 50)]).expect("three runs");
        assert_eq!(summary.runs, 3);
        assert_eq!(summary.items_per_sec, 200.0);
        assert_eq!(summary.items_per_sec_min, 100.0);
        assert_eq!(summary.items_per_sec_max, 300.0);
        assert_eq!(summary.queue.p50, 30);
        assert_eq!(summary.queue.p99, 120);
        assert_eq!(summary.workers, Some(30));
        assert_eq!(summary.pulled, Some(3));
        assert_eq!(summary.pools, None);
        assert_eq!(summary.queue_to_start, None);
    }

    #[test]
    fn even_counts_average_the_middle_items_per_sec() {
        let summary = Summary::of(&[run(100.0, 10), run(200.0, 20)]).expect("two runs");
        assert_eq!(summary.items_per_sec, 150.0);
        assert_eq!(summary.queue.p50, 10);
        assert!(Summary::of(&[]).is_none());
    }

    #[test]
    fn percentiles_come_from_the_histogram() {
        let mut histogram = crate::bench::harness::new_histogram();
        for value in 1..=1000 {
            histogram.record(value).expect("in range");
        }
        let p = Percentiles::of(&histogram);
        assert!((499..=501).contains(&p.p50), "{p:?}");
        assert!((989..=991).contains(&p.p99), "{p:?}");
        assert!(p.p50 <= p.p90 && p.p90 <= p.p95 && p.p95 <= p.p99);
    }
}
