//! The `flood` workload: an open loop. Each producer thread (pinned, released together) queues
//! all of its items as fast as it can; each item records when it started. Reported: items/sec
//! executed (all items over the wall time until the last one has run), the queue call's
//! latency, and the time from queueing to starting.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use super::executor::Executor;
use super::harness::{merge_histograms, nanos, new_histogram, run_producers, StartGate};
use super::measurement::{Measurement, Percentiles};
use super::tally::Tally;
use crate::error::CliError;

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
        let tally = Tally::new(items, timer.clone(), "flood");
        let mut latency = new_histogram();
        let tally = match tally {
            Ok(tally) => Arc::new(tally),
            Err(err) => {
                gate.wait();
                return Err(err);
            }
        };
        gate.wait();
        for n in 0..tally.len() {
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
        tally.record_into(&mut queue_to_start);
    }
    Ok(Measurement {
        queue_to_start: Some(Percentiles::of(&queue_to_start)),
        ..Measurement::of_run(items, cpus.len(), wall, &latency)
    })
}
