//! The `queue` workload: the kernel's test_workqueue, ported.
//!
//! One producer thread per chosen CPU, pinned, released together. Each owns one item and runs a
//! closed loop with one item in flight: take a timestamp, queue the item, take a timestamp, wait
//! until the item has run. The latency recorded is the queue call alone; items/sec is all items
//! over the wall time from the release to the end of the final flush. The item is reused, and
//! only queued again once it has run (the kernel module re-initialises it while it may still be
//! running, which this port does not copy).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::executor::{ClosedJob, Completion, Executor};
use super::harness::{merge_histograms, nanos, new_histogram, run_producers, StartGate};
use super::measurement::Measurement;
use crate::error::CliError;

/// Runs the closed loop on `executor`: `items` per thread, one thread per CPU of `cpus`, each
/// item busy for `work`.
///
/// # Errors
///
/// [`CliError::Failed`] when a producer cannot be started or pinned, or when the system refuses
/// to queue an item that has already run (a broken "pending at most once" rule).
pub(crate) fn run<E: Executor>(
    executor: &E,
    cpus: &[usize],
    items: u64,
    work: Duration,
) -> Result<Measurement, CliError> {
    let producer = |_index: usize, gate: &StartGate| {
        let done = Arc::new(Completion::for_current_thread());
        let item = executor.item(ClosedJob::new(Arc::clone(&done), work));
        let mut latency = new_histogram();
        gate.wait();
        for n in 0..items {
            let t0 = Instant::now();
            let queued = executor.queue_item(&item);
            let t1 = Instant::now();
            if !queued {
                return Err(CliError::Failed(format!(
                    "item {n} of a producer was refused although its previous queueing had run"
                )));
            }
            latency.saturating_record(nanos(t1 - t0));
            done.wait();
        }
        Ok(latency)
    };
    let (histograms, wall) = run_producers(executor, cpus, producer, |_| {})?;
    let latency = merge_histograms(&histograms)?;
    Ok(Measurement::of_run(items, cpus.len(), wall, &latency))
}
