//! The `flood` workload: an open loop. Each producer thread (pinned, released together) queues
//! all of its items as fast as it can; each item records when it started. Reported: items/sec
//! executed (all items over the wall time until the last one has run), the queue call's
//! latency, and the time from queueing to starting.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use super::executor::{burn, Executor};
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
    open_loop(
        executor,
        cpus,
        items,
        "flood",
        |_| (),
        |(), _| Ok(move || burn(work)),
    )
}

/// The open loop with items of the caller's making: each producer (the `index`-th) gets the
/// state `setup(index)`, and for its item `n`, `next(state, n)` prepares the item (on the
/// producer's thread, untimed) and returns what the item does when it runs; the queue call,
/// the start and the end of each item are timed as in [`run`].
///
/// # Errors
///
/// As [`run`], and whatever `next` returns.
pub(crate) fn open_loop<E, S, J>(
    executor: &E,
    cpus: &[usize],
    items: u64,
    workload: &str,
    setup: impl Fn(usize) -> S + Sync,
    next: impl Fn(&mut S, usize) -> Result<J, CliError> + Sync,
) -> Result<Measurement, CliError>
where
    E: Executor,
    J: FnOnce() + Send + 'static,
{
    let timer = thread::current();
    let producer = |index: usize, gate: &StartGate| {
        let tally = Tally::new(items, timer.clone(), workload);
        let mut latency = new_histogram();
        let tally = match tally {
            Ok(tally) => Arc::new(tally),
            Err(err) => {
                gate.wait();
                return Err(err);
            }
        };
        let mut state = setup(index);
        gate.wait();
        for n in 0..tally.len() {
            let job = next(&mut state, n)?;
            let mine = Arc::clone(&tally);
            let t0 = Instant::now();
            let queued = executor.spawn(move || {
                mine.start(n, t0);
                job();
                mine.finish();
            });
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
