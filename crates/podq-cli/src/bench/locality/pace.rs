//! The locality workload's pace: one item's cost, measured once per invocation before the runs
//! and shared by every system measured, so that their items/sec compare.
//!
//! `--load` says how busy the workload keeps the usable CPUs when nothing steers its items: an
//! item's cost is the CPU time the whole process spends per unsteered item, its run (the walk
//! and the work) and what it takes to produce, queue, wake for and finish it. A warm-up
//! measures it on the items themselves: it queues the same items (the run's groups, working
//! sets and producers) as plain closures to a pool of plain threads on one channel (the
//! channel peer's pool, which knows no groups), [`WARMUP_ROUNDS`] times, and divides the
//! process's CPU time over the last round by its items. The first round is paced from the
//! hot walk ([`walk_cost`]), each later one from the round before, so that the last one runs
//! near the load it measures for: an item's run time grows with the load (two walks sharing
//! the memory at once), and its overhead shrinks (a worker that finds the next item waiting
//! does not park). Where the process's CPU time cannot be read, the items' mean run time
//! ([`trimmed_mean`]) stands in.
//!
//! A steered system runs the same items at the same rate; where its items find their data hot
//! they take less time, and it is less busy than `--load`.
//!
//! `--load 100` ([`OVERLOAD`]) is the overload case, with no warm-up: the pace is the hot walk
//! itself, one item per hot walk on every usable CPU, more than any system can run (an item
//! takes at least its hot walk, and producing and queueing it cost more), so every system runs
//! as many items as it can and items/sec compares what each gets done. Paced by the unsteered
//! items instead, a system whose items run faster than plain threads' would keep up: with one
//! group, steered items have run at 0.33x the unsteered ones' run p50 on a 2-CPU VM
//! (`podq bench --workload locality --runs 5 --steer on,off --scopes cpu --load 100 --groups 1`),
//! so a group that is two CPUs' worth of unsteered items would fit its one-CPU pod, and the
//! case would no longer overload it.

use std::thread;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use podq_sim::Rng;

use super::{drive, Plan, WorkingSet, GROUPS_PER_POD};
use crate::bench::executor::Executor;
use crate::bench::peers::ChannelPeer;
use crate::error::CliError;

/// Rounds of walks timed for the hot walk's cost, each walking a pod's sets in turn (after one
/// untimed round); the median walk counts.
const COST_ROUNDS: usize = 3;

/// Warm-up rounds: 3. The first, paced from the hot walk, overloads the CPUs, and an
/// overloaded pool spends less CPU per item than one at `--load` (its workers find the next
/// item waiting and do not park); each later round runs nearer the load, from above. On the
/// 2-CPU VM the third round's pace kept the channel pool 33-34 % busy at `--load 40`
/// (`podq bench --workload locality --runs 1 --scopes cpu --peers channel --items 3000`, with
/// `--set-kb 64` and 256), near enough: a fourth round would move it by a few percent, less
/// than the VM's own swings between invocations.
pub(crate) const WARMUP_ROUNDS: usize = 3;

/// How long one warm-up round queues items for, at its pace: 300 ms, thousands of items at the
/// default load, and 30 ticks of the process's CPU time (10 ms each) per CPU at 100 % busy.
const WARMUP_TIME: Duration = Duration::from_millis(300);

/// The fewest items per producer in a warm-up round, whatever its pace: enough for the mean
/// of a slow item (a large `--set-kb` or a low `--load`) to mean something.
const WARMUP_MIN_ITEMS: u64 = 50;

/// The `--load` that is the overload case: 100 percent, paced by the hot walk (see the module's
/// docs).
pub(crate) const OVERLOAD: u64 = 100;

/// The pace of one invocation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Pace {
    /// The process's CPU time per unsteered item, as the last warm-up round measured it (at
    /// [`OVERLOAD`], the hot walk): the pace of the runs ([`Plan::interval`]).
    pub(crate) item: Duration,
    /// The unsteered items' mean run time in the last warm-up round ([`trimmed_mean`]): the
    /// part of [`Pace::item`] that the item itself takes; zero at [`OVERLOAD`], which has no
    /// warm-up.
    pub(crate) run: Duration,
    /// The hot walk ([`walk_cost`]) and the item's work: the first warm-up round's pace.
    pub(crate) walk: Duration,
}

/// Measures the pace of `plan` (its `set_kb`, `load` and `work`; its own pace is ignored) for
/// `groups` groups queued by producers on `cpus` to `workers` threads on `workers` CPUs:
/// [`WARMUP_ROUNDS`] warm-up rounds on a channel pool (see the module's docs); at
/// [`OVERLOAD`], the hot walk alone.
///
/// # Errors
///
/// [`CliError::Failed`] when the channel pool or a producer cannot be started, or an item is
/// refused.
pub(crate) fn measure(
    plan: &Plan,
    groups: usize,
    cpus: &[usize],
    workers: usize,
) -> Result<Pace, CliError> {
    let per_pod = plan.groups.unwrap_or(GROUPS_PER_POD);
    let walk = walk_cost(plan.set_kb, per_pod, workers) + plan.work;
    let mut pace = Pace {
        item: walk.max(Duration::from_nanos(1)),
        run: walk,
        walk,
    };
    if plan.load >= OVERLOAD {
        return Ok(Pace {
            run: Duration::ZERO,
            ..pace
        });
    }
    let plain = vec![(); groups.max(1)];
    for _ in 0..WARMUP_ROUNDS {
        let paced = Plan { pace, ..*plan };
        let interval = paced.interval(cpus.len(), workers);
        let per_producer = u64::try_from(WARMUP_TIME.as_nanos() / interval.as_nanos().max(1))
            .unwrap_or(u64::MAX)
            .max(WARMUP_MIN_ITEMS);
        let pool = ChannelPeer::new(workers)?;
        let ran = drive(
            &pool,
            &plain,
            |_, it| pool.spawn(move || it.run()),
            cpus,
            per_producer,
            &paced,
            interval,
        )?;
        let items = u32::try_from(per_producer.saturating_mul(cpus.len() as u64))
            .unwrap_or(u32::MAX)
            .max(1);
        let run = trimmed_mean(&ran.run_time).unwrap_or(pace.run);
        pace = Pace {
            item: ran
                .cpu
                .map_or(run, |cpu| cpu / items)
                .max(Duration::from_nanos(1)),
            run,
            walk,
        };
    }
    Ok(pace)
}

/// The mean of the values of `histogram` up to its 99th percentile: the items' mean run time
/// without the slowest 1 %, which on a shared machine are the items another process preempted
/// (one 4 ms time slice in a hundred 50 us items would almost double the mean); `None` for an
/// empty histogram.
pub(crate) fn trimmed_mean(histogram: &Histogram<u64>) -> Option<Duration> {
    if histogram.is_empty() {
        return None;
    }
    let p99 = histogram.value_at_quantile(0.99);
    let (sum, count) = histogram
        .iter_recorded()
        .filter(|v| v.value_iterated_to() <= p99)
        .fold((0u128, 0u64), |(sum, count), v| {
            let n = v.count_at_value();
            (
                sum + u128::from(histogram.median_equivalent(v.value_iterated_to()))
                    * u128::from(n),
                count + n,
            )
        });
    let mean = sum.checked_div(u128::from(count))?;
    Some(Duration::from_nanos(
        u64::try_from(mean).unwrap_or(u64::MAX),
    ))
}

/// The hot walk: one item's walk as a pod that runs only its own groups' items sees it while
/// every CPU of the run does the same. The median walk when each of `cpus` threads at once
/// walks `groups` fresh `set_kb` KiB sets of its own in turn (at most [`GROUPS_PER_POD`];
/// [`COST_ROUNDS`] rounds, after one untimed round), so each walk finds its set where the last
/// walk of it left it, after the pod's other groups. The warm-up's first pace; the items run
/// slower where their data was last written elsewhere.
pub(crate) fn walk_cost(set_kb: u64, groups: usize, cpus: usize) -> Duration {
    let cpus = cpus.max(1);
    let start = std::sync::Barrier::new(cpus);
    let mut times: Vec<Duration> = thread::scope(|s| {
        let walkers: Vec<_> = (0..cpus)
            .map(|k| {
                let start = &start;
                s.spawn(move || {
                    let mut rng = Rng::new(0x10ca_1157 + k as u64);
                    let sets: Vec<WorkingSet> = (0..groups.clamp(1, GROUPS_PER_POD))
                        .map(|_| WorkingSet::new(set_kb, &mut rng))
                        .collect();
                    start.wait();
                    sets.iter().for_each(|set| {
                        set.walk(0);
                    });
                    (0..COST_ROUNDS)
                        .flat_map(|_| {
                            sets.iter().map(|set| {
                                let t0 = Instant::now();
                                set.walk(0);
                                t0.elapsed()
                            })
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        walkers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_default())
            .collect()
    });
    if times.is_empty() {
        return Duration::ZERO;
    }
    times.sort_unstable();
    times[times.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::harness::{new_histogram, test_cpus};

    #[test]
    fn the_trimmed_mean_leaves_out_the_slowest_hundredth() {
        let mut h = new_histogram();
        assert_eq!(trimmed_mean(&h), None);
        for _ in 0..99 {
            h.record(1000).expect("in range");
        }
        h.record(1_000_000_000).expect("in range");
        let mean = trimmed_mean(&h).expect("a mean").as_nanos();
        assert!((999..=1001).contains(&mean), "{mean}");
    }

    #[test]
    fn the_pace_comes_from_the_items_run_on_plain_threads() {
        let plan = Plan {
            set_kb: 8,
            ..Plan::default()
        };
        let cpus = test_cpus();
        let pace = measure(&plan, 3, &cpus, cpus.len()).expect("a pace");
        assert!(pace.walk > Duration::ZERO && pace.run > Duration::ZERO);
        assert!(pace.item > Duration::ZERO);
        let overload = Plan {
            load: OVERLOAD,
            ..plan
        };
        let pace = measure(&overload, 1, &cpus, cpus.len()).expect("a pace");
        assert_eq!(
            pace.item, pace.walk,
            "the overload case runs at the hot walk's pace"
        );
        assert_eq!(pace.run, Duration::ZERO, "and has no warm-up");
        assert!(walk_cost(4, 2, 2) > Duration::ZERO);
    }
}
