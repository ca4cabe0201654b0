//! The `locality` workload: items of related groups, each group with a working set its items
//! walk, queued at a steady rate from every producer, so that where an item runs decides
//! whether its group's data is in that CPU's caches.
//!
//! Each group owns a working set of `--set-kb` KiB: cache lines linked in one random cycle (a
//! random permutation made with Sattolo's algorithm). An item walks the whole cycle once from a
//! random line, reading each line's link and writing its counter, so every access depends on the
//! one before it (as a hash-table lookup's does) and the hardware prefetcher cannot hide where
//! the data sits. Producers on every chosen CPU queue items of random groups at a steady rate,
//! set from the process's CPU time per unsteered item (the [`pace`], measured once per
//! invocation) so that the workload keeps the usable CPUs about `--load` percent busy when
//! nothing steers it; the CPU that queues an item therefore says nothing about where its data
//! is.
//!
//! podq queues each item through its group's handle (`Workqueue::group`, steered or not as the
//! workqueue is built); the peers, which have no groups, queue the same items as plain closures.
//! Reported: items/sec (all items over the wall time until the last has run), the queue call's
//! latency, each item's queue-to-start time, each item's own run time (its walk and work), how
//! busy the process kept the CPUs, and how many items ran on the CPU of their group's previous
//! item ([`reuse`]).

use std::hint::black_box;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use hdrhistogram::Histogram;
use podq_sim::Rng;

use super::executor::{burn, Executor};
use super::harness::{merge_histograms, nanos, new_histogram, run_producers, StartGate};
use super::machine::plural;
use super::measurement::{Measurement, Percentiles};
use super::tally::{record_slots, slots, Tally};
use crate::error::CliError;

mod cpu_time;
pub(crate) mod pace;
pub(crate) mod reuse;

use self::pace::Pace;
use self::reuse::{CpuReuse, Placed};

// The workload's defaults and bounds, one home for the bench and the simulator.
pub(crate) use podq_sim::scenario::{
    DEFAULT_LOAD, DEFAULT_SET_KB, GROUPS_PER_POD, MAX_GROUPS, MAX_SET_KB,
};

/// Bytes of a cache line, the unit of the working set.
const LINE_BYTES: usize = 64;

/// One cache line of a working set: the next line of the cycle, and a counter each walk
/// writes.
#[repr(align(64))]
struct Line {
    /// Index of the next line in the cycle.
    next: AtomicU32,
    /// Written by every walk that passes (a load and a store, not an atomic add: the items of
    /// a group may run at once, and a lost count does not matter).
    visits: AtomicU64,
}

/// One group's working set: its cache lines in one random cycle.
pub(crate) struct WorkingSet {
    /// The lines.
    lines: Box<[Line]>,
    /// The CPU of the last item that walked it ([`NO_CPU`]: none yet). On a line of its own:
    /// the sets lie side by side, and every item reads its set's `lines` pointer.
    last_cpu: CachePadded<AtomicUsize>,
}

/// [`WorkingSet::last_cpu`] before any item walked the set.
const NO_CPU: usize = usize::MAX;

impl WorkingSet {
    /// A set of `kb` KiB (at least one line) whose cycle `rng` draws.
    pub(crate) fn new(kb: u64, rng: &mut Rng) -> WorkingSet {
        let count = (usize::try_from(kb)
            .unwrap_or(usize::MAX)
            .saturating_mul(1024)
            / LINE_BYTES)
            .clamp(1, u32::MAX as usize);
        // Sattolo's algorithm: a uniformly random permutation with a single cycle.
        let mut next: Vec<u32> = (0..count as u32).collect();
        for i in (1..count).rev() {
            let j = (rng.next_u64() % i as u64) as usize;
            next.swap(i, j);
        }
        let lines = next
            .into_iter()
            .map(|n| Line {
                next: AtomicU32::new(n),
                visits: AtomicU64::new(0),
            })
            .collect();
        WorkingSet {
            lines,
            last_cpu: CachePadded::new(AtomicUsize::new(NO_CPU)),
        }
    }

    /// Records that an item of the set's group starts on the calling thread's CPU, and says
    /// whether that is the CPU of the group's previous item ([`reuse`]).
    pub(crate) fn walked_here(&self) -> Placed {
        let cpu = podq::affinity::current_cpu();
        let last = self.last_cpu.swap(cpu.unwrap_or(NO_CPU), Ordering::Relaxed);
        Placed::of(cpu, (last != NO_CPU).then_some(last))
    }

    /// Lines in the set.
    pub(crate) fn len(&self) -> usize {
        self.lines.len()
    }

    /// Walks the whole cycle once from line `from`: each step reads the line's link and writes
    /// its counter. Returns where it ended (`from` again), so the walk is not optimised away.
    pub(crate) fn walk(&self, from: usize) -> usize {
        let mut at = from % self.lines.len();
        for _ in 0..self.lines.len() {
            let line = &self.lines[at];
            let visits = line.visits.load(Ordering::Relaxed);
            line.visits.store(visits.wrapping_add(1), Ordering::Relaxed);
            at = line.next.load(Ordering::Relaxed) as usize;
        }
        black_box(at)
    }
}

/// What a run of the workload is given: the checked `--groups`, `--set-kb` and `--load`, and
/// the pace they make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// `--groups`; `None`: [`GROUPS_PER_POD`] per pod of the measured scope.
    pub(crate) groups: Option<usize>,
    /// KiB of working set per group.
    pub(crate) set_kb: u64,
    /// Percent of the usable CPUs the workload keeps busy when its items are not steered
    /// ([`pace`]).
    pub(crate) load: u64,
    /// The pace ([`pace::measure`]); zero until measured.
    pub(crate) pace: Pace,
    /// CPU work each item burns after its walk (`--work-ns`).
    pub(crate) work: Duration,
}

impl Default for Plan {
    /// The defaults, not yet measured.
    fn default() -> Plan {
        Plan {
            groups: None,
            set_kb: DEFAULT_SET_KB,
            load: DEFAULT_LOAD,
            pace: Pace::default(),
            work: Duration::ZERO,
        }
    }
}

impl Plan {
    /// The heading's words for the items and their pace: the groups, their sets and the pace
    /// ([`Pace`]; at [`pace::OVERLOAD`], the hot walk).
    pub(crate) fn describe(&self) -> String {
        let groups = match self.groups {
            Some(groups) => plural(groups, "group"),
            None => format!("{GROUPS_PER_POD} groups per pod"),
        };
        let pace = &self.pace;
        let paced = if pace.run.is_zero() {
            format!(
                "paced by the hot walk ({} us per item): the overload case",
                pace.item.as_micros()
            )
        } else {
            format!(
                "paced for {} % load ({} us of CPU per item unsteered, {} us of it the item's \
                 run; hot walk {} us)",
                self.load,
                pace.item.as_micros(),
                pace.run.as_micros(),
                pace.walk.as_micros()
            )
        };
        format!("{groups} walking {} KiB each, {paced}", self.set_kb)
    }

    /// The time between two items of one of `producers` producers, so that they keep `cpus`
    /// CPUs [`Plan::load`] percent busy: one item's CPU time ([`Pace::item`]) x producers /
    /// (cpus x load).
    pub(crate) fn interval(&self, producers: usize, cpus: usize) -> Duration {
        let per_item = self.pace.item.as_nanos() as f64 * producers as f64 * 100.0
            / (cpus.max(1) as f64 * self.load.max(1) as f64);
        Duration::from_nanos(per_item.round() as u64)
    }
}

/// One producer's items: their queue-to-start times and countdown, and their run times.
struct Produced {
    /// Every item's queue-to-start time, and the items not yet run.
    tally: Tally,
    /// Every item's own run time (its walk), in nanoseconds.
    run_ns: Box<[AtomicU64]>,
    /// Where every item ran against its group's previous item ([`Placed::raw`]).
    placed: Box<[AtomicU64]>,
}

/// One item: a walk of its group's set, with what it reports into.
pub(crate) struct Item {
    /// Every group's set.
    sets: Arc<[WorkingSet]>,
    /// Its producer's report.
    produced: Arc<Produced>,
    /// Its group.
    group: usize,
    /// The line its walk starts from.
    from: usize,
    /// Its number among its producer's items.
    n: usize,
    /// When its queue call began.
    queued: Instant,
    /// CPU work after the walk (`--work-ns`).
    work: Duration,
}

impl Item {
    /// Runs the item: records its start and where it runs, walks its group's set and burns
    /// its work, records that time, and counts itself done.
    pub(crate) fn run(self) {
        let produced = &self.produced;
        produced.tally.start(self.n, self.queued);
        let set = &self.sets[self.group];
        let placed = set.walked_here();
        let t0 = Instant::now();
        set.walk(self.from);
        burn(self.work);
        produced.run_ns[self.n].store(nanos(t0.elapsed()), Ordering::Relaxed);
        produced.placed[self.n].store(placed.raw(), Ordering::Relaxed);
        produced.tally.finish();
    }
}

/// Runs the workload on `executor`: `items` per producer, one producer per CPU of `cpus`, each
/// item of a random group of `groups` queued with `queue` (podq: through the group's handle;
/// the peers: a plain closure) and burning the plan's work after its walk, at the plan's pace
/// for `usable` CPUs ([`Plan::interval`]). The measurement has the process's busy fraction of
/// the `usable` CPUs ([`Ran::busy`]).
///
/// # Errors
///
/// [`CliError::Failed`] when a producer cannot be started or pinned, the times do not fit in
/// memory, or the system refuses an item.
pub(crate) fn run<E: Executor, G: Sync>(
    executor: &E,
    groups: &[G],
    queue: impl Fn(&G, Item) -> bool + Sync,
    cpus: &[usize],
    usable: usize,
    items: u64,
    plan: &Plan,
) -> Result<Measurement, CliError> {
    let interval = plan.interval(cpus.len(), usable);
    let ran = drive(executor, groups, queue, cpus, items, plan, interval)?;
    Ok(Measurement {
        run_time: Some(Percentiles::of(&ran.run_time)),
        cpu_busy: ran.busy(usable),
        ..ran.measurement
    })
}

/// What [`drive`] measured: the measurement without the run times' percentiles, the run times
/// themselves, and the wall time.
pub(crate) struct Ran {
    /// Items/sec, the queue call's latency, the queue-to-start times and the groups.
    pub(crate) measurement: Measurement,
    /// Every item's own run time, in nanoseconds.
    pub(crate) run_time: Histogram<u64>,
    /// From the producers' release until every item had run.
    pub(crate) wall: Duration,
    /// The CPU time the whole process used over the run (every producer's and every worker's,
    /// [`cpu_time`]); `None` where it cannot be read.
    pub(crate) cpu: Option<Duration>,
}

impl Ran {
    /// The process's busy fraction over the run: its CPU time over the wall time of `cpus` CPUs.
    pub(crate) fn busy(&self, cpus: usize) -> Option<f64> {
        let capacity = self.wall.as_secs_f64() * cpus.max(1) as f64;
        self.cpu
            .filter(|_| capacity > 0.0)
            .map(|cpu| cpu.as_secs_f64() / capacity)
    }
}

/// [`run`]'s loop, one item every `interval` per producer, for [`run`] and the pace's warm-up
/// ([`pace::measure`]).
///
/// # Errors
///
/// As [`run`].
pub(crate) fn drive<E: Executor, G: Sync>(
    executor: &E,
    groups: &[G],
    queue: impl Fn(&G, Item) -> bool + Sync,
    cpus: &[usize],
    items: u64,
    plan: &Plan,
    interval: Duration,
) -> Result<Ran, CliError> {
    let work = plan.work;
    if groups.is_empty() {
        return Err(CliError::Failed(
            "locality: no group to queue items of".into(),
        ));
    }
    let mut rng = Rng::new(0x5e75);
    let sets: Arc<[WorkingSet]> = groups
        .iter()
        .map(|_| WorkingSet::new(plan.set_kb, &mut rng))
        .collect();
    let timer = thread::current();
    let producers = cpus.len().max(1) as u32;
    let producer = |index: usize, gate: &StartGate| {
        let made = Tally::new(items, timer.clone(), "locality").and_then(|tally| {
            Ok(Produced {
                tally,
                run_ns: slots(items, "locality", "run times")?,
                placed: slots(items, "locality", "where items ran")?,
            })
        });
        let produced = match made {
            Ok(produced) => Arc::new(produced),
            Err(err) => {
                gate.wait();
                return Err(err);
            }
        };
        let mut latency = new_histogram();
        let mut rng = Rng::new(index as u64 + 1);
        gate.wait();
        // Producers start a fraction of an interval apart, so their items do not arrive in
        // bursts of one per producer.
        let mut due = Instant::now() + interval * index as u32 / producers;
        for n in 0..produced.tally.len() {
            let now = Instant::now();
            if due > now {
                thread::sleep(due - now);
            }
            due += interval;
            let group = (rng.next_u64() % groups.len() as u64) as usize;
            let from = (rng.next_u64() % sets[group].len() as u64) as usize;
            let t0 = Instant::now();
            let item = Item {
                sets: Arc::clone(&sets),
                produced: Arc::clone(&produced),
                group,
                from,
                n,
                queued: t0,
                work,
            };
            let queued = queue(&groups[group], item);
            let t1 = Instant::now();
            if !queued {
                return Err(CliError::Failed(format!(
                    "locality: item {n} of a producer was refused"
                )));
            }
            latency.saturating_record(nanos(t1 - t0));
        }
        Ok((latency, produced))
    };
    let wait_all = |results: &[(_, Arc<Produced>)]| {
        results
            .iter()
            .for_each(|(_, produced)| produced.tally.wait_all_run());
    };
    let cpu_before = cpu_time::process_cpu_time();
    let (results, wall) = run_producers(executor, cpus, producer, wait_all)?;
    let cpu = cpu_time::process_cpu_time()
        .zip(cpu_before)
        .map(|(after, before)| after.saturating_sub(before));

    let latency = merge_histograms(results.iter().map(|(histogram, _)| histogram))?;
    let mut queue_to_start = new_histogram();
    let mut run_time = new_histogram();
    for (_, produced) in &results {
        produced.tally.record_into(&mut queue_to_start);
        record_slots(&produced.run_ns, &mut run_time);
    }
    let cpu_reuse = CpuReuse::of(
        results
            .iter()
            .map(|(_, produced)| (&*produced.placed, &*produced.run_ns)),
    );
    Ok(Ran {
        measurement: Measurement {
            queue_to_start: Some(Percentiles::of(&queue_to_start)),
            groups: Some(groups.len()),
            cpu_reuse,
            ..Measurement::of_run(items, cpus.len(), wall, &latency)
        },
        run_time,
        wall,
        cpu,
    })
}

#[cfg(test)]
mod tests {
    use podq::AffinityScope;

    use super::*;
    use crate::bench::harness::test_cpus;
    use crate::bench::peers::ChannelPeer;
    use crate::bench::workqueue::PodqExecutor;

    #[test]
    fn a_walk_visits_every_line_once_and_returns_to_its_start() {
        let set = WorkingSet::new(4, &mut Rng::new(3));
        assert_eq!(set.len(), 4 * 1024 / LINE_BYTES);
        assert_eq!(set.walk(5), 5, "one cycle through every line");
        assert!(
            set.lines
                .iter()
                .all(|line| line.visits.load(Ordering::Relaxed) == 1),
            "every line visited once"
        );
        // One cycle: following the links from 0 meets every line before 0 again.
        let mut seen = vec![false; set.len()];
        let mut at = 0;
        for _ in 0..set.len() {
            assert!(!seen[at], "line {at} came twice");
            seen[at] = true;
            at = set.lines[at].next.load(Ordering::Relaxed) as usize;
        }
        assert_eq!(at, 0);
    }

    #[test]
    fn the_interval_keeps_the_cpus_at_the_load() {
        let plan = Plan {
            load: 40,
            pace: Pace {
                item: Duration::from_micros(20),
                ..Pace::default()
            },
            ..Plan::default()
        };
        // 2 producers on 2 CPUs at 40 %: one 20 us item every 50 us from each.
        assert_eq!(plan.interval(2, 2), Duration::from_micros(50));
        // 1 producer feeding 4 CPUs at 100 %: one every 5 us.
        let full = Plan { load: 100, ..plan };
        assert_eq!(full.interval(1, 4), Duration::from_micros(5));
    }

    #[test]
    fn every_item_runs_once_on_podq_groups_and_on_a_peer() {
        let cpus = test_cpus();
        let plan = Plan {
            set_kb: 8,
            ..Plan::default()
        };
        let usable = cpus.len();
        let plan = Plan {
            pace: Pace {
                item: Duration::from_micros(4),
                ..Pace::default()
            },
            ..plan
        };
        let podq = PodqExecutor::new(AffinityScope::Cpu, 8, true).expect("a workqueue");
        let wq = podq.workqueue();
        let groups: Vec<podq::Group> = (0..3).map(|_| wq.group()).collect();
        let measured = run(
            &podq,
            &groups,
            |group, item| group.queue(move || item.run()),
            &cpus,
            usable,
            30,
            &plan,
        )
        .expect("the podq run");
        let total = cpus.len() as u64 * 30;
        assert_eq!(podq.completed(), total, "every item ran once");
        let stats = wq.stats();
        assert_eq!(stats.grouped_at_home + stats.grouped_elsewhere, total);
        assert_eq!(measured.groups, Some(3));
        let run_time = measured.run_time.expect("run times");
        assert!(run_time.p50 > 0 && run_time.p50 <= run_time.p99);

        let channel = ChannelPeer::new(2).expect("channel");
        let plain = [(); 2];
        let measured = run(
            &channel,
            &plain,
            |_, item| channel.spawn(move || item.run()),
            &cpus,
            usable,
            20,
            &Plan {
                work: Duration::from_nanos(100),
                ..plan
            },
        )
        .expect("the channel run");
        assert!(measured.queue_to_start.is_some() && measured.items_per_sec > 0.0);
        assert!(measured.cpu_busy.is_some_and(|busy| busy >= 0.0));
    }
}
