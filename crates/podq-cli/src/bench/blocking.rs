//! The `blocking` workload: flood's open loop with a mix of short items and items that block.
//!
//! Each producer thread (pinned, released together) queues all of its items as fast as it can.
//! One item in [`Mix::every`] blocks: it sleeps for [`Mix::block`] in `std::thread::sleep`, a
//! real blocking call, as an item waiting on a file, a socket or a lock would; the others are
//! short (they burn `--work-ns`). Blocking items are queued through
//! [`Executor::spawn_blocking`] (tokio's `spawn_blocking`; the same queue as the short items
//! on every other system), short ones through [`Executor::spawn`].
//!
//! Reported: items/sec executed (all items over the wall time until the last one has run), the
//! queue call's latency, every item's queue-to-start time, and the short items' alone: the
//! figure that shows whether blocked items hold up other work. The items count the ones that
//! blocked; the run fails if that count is not the mix's.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use super::executor::Executor;
use super::harness::{merge_histograms, nanos, new_histogram, run_producers, StartGate};
use super::measurement::{Measurement, Percentiles};
use super::tally::Tally;
use crate::error::CliError;

/// One item in this many blocks when `--block-every` is not given.
pub(crate) const DEFAULT_BLOCK_EVERY: u64 = 10;

/// The largest `--block-every`: one blocking item in a million is already a flood with a rare
/// stall; a larger gap leaves no blocking item at all in any run of a sane length.
pub(crate) const MAX_BLOCK_EVERY: u64 = 1_000_000;

/// How long a blocking item sleeps when `--block-us` is not given, in microseconds: 1 ms, a
/// disk read or a round trip to a nearby server.
pub(crate) const DEFAULT_BLOCK_US: u64 = 1_000;

/// The largest `--block-us`: 100 ms. With the default items, a producer's blocking items sleep
/// 5,000 times this in all, so a larger value only stretches the run to hours of sleep on a
/// fixed-size pool without showing anything a shorter block does not.
pub(crate) const MAX_BLOCK_US: u64 = 100_000;

/// Which items block, and for how long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mix {
    /// One item in this many blocks: item `n` of a producer blocks when `(n + 1) % every` is
    /// 0, so the first item is always short. At least 2, so some items are short.
    pub(crate) every: u64,
    /// How long a blocking item sleeps.
    pub(crate) block: Duration,
}

impl Default for Mix {
    /// [`DEFAULT_BLOCK_EVERY`] and [`DEFAULT_BLOCK_US`].
    fn default() -> Mix {
        Mix {
            every: DEFAULT_BLOCK_EVERY,
            block: Duration::from_micros(DEFAULT_BLOCK_US),
        }
    }
}

impl Mix {
    /// Whether item `n` of a producer blocks.
    pub(crate) fn blocks(self, n: usize) -> bool {
        (n as u64 + 1).is_multiple_of(self.every)
    }

    /// How many of a producer's `items` block.
    pub(crate) fn blocking_items(self, items: u64) -> u64 {
        items / self.every
    }

    /// The sleep of a blocking item, in whole microseconds.
    pub(crate) fn block_us(self) -> u64 {
        u64::try_from(self.block.as_micros()).unwrap_or(u64::MAX)
    }
}

/// One producer's items: their start times and countdown, and how many blocked.
struct Mixed {
    /// Every item's queue-to-start time, and the items not yet run.
    tally: Tally,
    /// Blocking items that have slept, counted by each before it counts itself done.
    blocked: AtomicU64,
}

/// Runs the mix on `executor`: `items` per thread, one thread per CPU of `cpus`, short items
/// busy for `work`, blocking ones as `mix` says.
///
/// # Errors
///
/// [`CliError::Failed`] when a producer cannot be started or pinned, the start times do not fit
/// in memory, the system refuses an item, or the items that blocked are not the mix's count.
pub(crate) fn run<E: Executor>(
    executor: &E,
    cpus: &[usize],
    items: u64,
    work: Duration,
    mix: Mix,
) -> Result<Measurement, CliError> {
    let timer = thread::current();
    let producer = |_index: usize, gate: &StartGate| {
        let tally = Tally::new(items, timer.clone(), "blocking");
        let mut latency = new_histogram();
        let mixed = match tally {
            Ok(tally) => Arc::new(Mixed {
                tally,
                blocked: AtomicU64::new(0),
            }),
            Err(err) => {
                gate.wait();
                return Err(err);
            }
        };
        gate.wait();
        for n in 0..mixed.tally.len() {
            let mine = Arc::clone(&mixed);
            let t0 = Instant::now();
            let queued = if mix.blocks(n) {
                executor.spawn_blocking(move || {
                    mine.tally.start(n, t0);
                    thread::sleep(mix.block);
                    mine.blocked.fetch_add(1, Ordering::Relaxed);
                    mine.tally.finish();
                })
            } else {
                executor.spawn(move || mine.tally.run_item(n, t0, work))
            };
            let t1 = Instant::now();
            if !queued {
                return Err(CliError::Failed(format!(
                    "blocking: item {n} of a producer was refused"
                )));
            }
            latency.saturating_record(nanos(t1 - t0));
        }
        Ok((latency, mixed))
    };
    let wait_all = |results: &[(_, Arc<Mixed>)]| {
        results
            .iter()
            .for_each(|(_, mixed)| mixed.tally.wait_all_run());
    };
    let (results, wall) = run_producers(executor, cpus, producer, wait_all)?;

    let latency = merge_histograms(results.iter().map(|(histogram, _)| histogram))?;
    let mut queue_to_start = new_histogram();
    let mut short_start = new_histogram();
    let mut blocked = 0;
    for (_, mixed) in &results {
        mixed.tally.record_into(&mut queue_to_start);
        mixed
            .tally
            .record_into_if(&mut short_start, |n| !mix.blocks(n));
        blocked += mixed.blocked.load(Ordering::Relaxed);
    }
    let expected = mix.blocking_items(items) * cpus.len() as u64;
    if blocked != expected {
        return Err(CliError::Failed(format!(
            "blocking: {blocked} items blocked, expected {expected} (one in {} of {items} items \
             from each of {} producers)",
            mix.every,
            cpus.len()
        )));
    }
    Ok(Measurement {
        queue_to_start: Some(Percentiles::of(&queue_to_start)),
        short_start: Some(Percentiles::of(&short_start)),
        blocking_items: Some(blocked),
        ..Measurement::of_run(items, cpus.len(), wall, &latency)
    })
}

#[cfg(test)]
mod tests {
    use podq::AffinityScope;

    use super::*;
    use crate::bench::harness::test_cpus;
    use crate::bench::peers::{ChannelPeer, RayonPeer, TokioPeer};
    use crate::bench::workqueue::PodqExecutor;

    /// A mix that blocks one item in 4 for 200 us: quick, and still a real sleep.
    const MIX: Mix = Mix {
        every: 4,
        block: Duration::from_micros(200),
    };

    #[test]
    fn one_item_in_every_blocks_and_the_first_never_does() {
        let blocking: Vec<usize> = (0..10).filter(|&n| MIX.blocks(n)).collect();
        assert_eq!(blocking, [3, 7]);
        assert_eq!(MIX.blocking_items(10), 2);
        assert_eq!(MIX.blocking_items(3), 0);
        assert_eq!(Mix::default().block_us(), DEFAULT_BLOCK_US);
        assert_eq!(Mix::default().every, DEFAULT_BLOCK_EVERY);
    }

    #[test]
    fn every_item_runs_and_the_mix_blocks_on_podq() {
        let cpus = test_cpus();
        let podq = PodqExecutor::new(AffinityScope::CacheShard, 8, true).expect("a workqueue");
        let measured = run(&podq, &cpus, 42, Duration::ZERO, MIX).expect("the run");
        let producers = cpus.len() as u64;
        assert_eq!(podq.completed(), producers * 42, "every item ran once");
        assert_eq!(measured.blocking_items, Some(producers * 10));
        let short = measured.short_start.expect("the short items' starts");
        assert!(short.p50 <= short.p99);
        assert!(measured.queue_to_start.is_some());
    }

    #[test]
    fn every_peer_runs_the_mix() {
        let cpus = test_cpus();
        let expected = Some(cpus.len() as u64 * 5);
        let work = Duration::from_nanos(100);
        let tokio = run(&TokioPeer::new(2).expect("tokio"), &cpus, 20, work, MIX);
        assert_eq!(tokio.expect("tokio run").blocking_items, expected);
        let rayon = run(&RayonPeer::new(2).expect("rayon"), &cpus, 20, work, MIX);
        assert_eq!(rayon.expect("rayon run").blocking_items, expected);
        let channel = run(&ChannelPeer::new(2).expect("channel"), &cpus, 20, work, MIX);
        assert_eq!(channel.expect("channel run").blocking_items, expected);
    }
}
