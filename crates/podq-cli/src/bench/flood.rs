//! The `flood` workload: an open loop. Each producer thread (pinned, released together) queues
//! all of its items as fast as it can; each item records when it started. Reported: items/sec
//! executed (all items over the wall time until the last one has run), the queue call's
//! latency, and the time from queueing to starting.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use super::executor::{burn, Executor};
use super::harness::{merge_histograms, nanos, new_histogram, run_producers, StartGate};
use super::measurement::{Measurement, Percentiles};
use crate::error::CliError;

/// What one producer's items report into.
struct Tally {
    /// Items not yet run. Decremented `AcqRel` by each item after storing its start time;
    /// the `Acquire` load that sees 0 makes every start time visible to the timer thread.
    remaining: AtomicU64,
    /// Queue-to-start time of item `n`, in nanoseconds.
    queue_to_start_ns: Box<[AtomicU64]>,
    /// The timer thread, unparked by the last item.
    timer: Thread,
}

impl Tally {
    /// A tally for `items` items, or an error when their start times do not fit in memory.
    fn new(items: u64, timer: Thread) -> Result<Tally, CliError> {
        let len = usize::try_from(items).unwrap_or(usize::MAX);
        let mut slots = Vec::new();
        slots.try_reserve_exact(len).map_err(|_| {
            CliError::Failed(format!(
                "--items {items}: flood keeps 8 bytes per item for queue-to-start times and \
                 cannot allocate them; give fewer items"
            ))
        })?;
        slots.extend((0..len).map(|_| AtomicU64::new(0)));
        Ok(Tally {
            remaining: AtomicU64::new(items),
            queue_to_start_ns: slots.into_boxed_slice(),
            timer,
        })
    }

    /// Runs item `n`, queued at `queued`.
    fn run_item(&self, n: usize, queued: Instant, work: Duration) {
        let started = Instant::now();
        self.queue_to_start_ns[n].store(nanos(started - queued), Ordering::Relaxed);
        burn(work);
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.timer.unpark();
        }
    }

    /// Waits (on the timer thread) until every item has run.
    fn wait_all_run(&self) {
        while self.remaining.load(Ordering::Acquire) != 0 {
            thread::park();
        }
    }
}

/// Runs the open loop on `executor`: `items` per thread, one thread per CPU of `cpus`, each
/// item busy for `work`.
///
/// # Errors
///
/// [`CliError::Failed`] when a producer cannot be started or pinned, the start times do not fit
/// in memory, or the system refuses an item.
pub(crate) fn run<E: Executor>(
    executor: &E,
    cpus: &[usize],
    items: u64,
    work: Duration,
) -> Result<Measurement, CliError> {
    let timer = thread::current();
    let producer = |_index: usize, gate: &StartGate| {
        let tally = Tally::new(items, timer.clone());
        let mut latency = new_histogram();
        let tally = match tally {
            Ok(tally) => Arc::new(tally),
            Err(err) => {
                gate.wait();
                return Err(err);
            }
        };
        gate.wait();
        for n in 0..tally.queue_to_start_ns.len() {
            let mine = Arc::clone(&tally);
            let t0 = Instant::now();
            let queued = executor.spawn(move || mine.run_item(n, t0, work));
            let t1 = Instant::now();
            if !queued {
                return Err(CliError::Failed(format!(
                    "item {n} of a producer was refused"
                )));
            }
            latency.saturating_record(nanos(t1 - t0));
        }
        Ok((latency, tally))
    };
    let wait_all = |results: &[(_, Arc<Tally>)]| results.iter().for_each(|(_, t)| t.wait_all_run());
    let (results, wall) = run_producers(executor, cpus, producer, wait_all)?;

    let latency = merge_histograms(results.iter().map(|(histogram, _)| histogram))?;
    let mut queue_to_start = new_histogram();
    for (_, tally) in &results {
        for slot in tally.queue_to_start_ns.iter() {
            queue_to_start.saturating_record(slot.load(Ordering::Relaxed));
        }
    }
    Ok(Measurement {
        queue_to_start: Some(Percentiles::of(&queue_to_start)),
        ..Measurement::of_run(items, cpus.len(), wall, &latency)
    })
}
