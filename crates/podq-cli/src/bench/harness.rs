//! Producer threads: one per chosen CPU, each pinned to it, all released together, timed from
//! the release to the end of the system's final flush.

use std::sync::{Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use podq::CpuSet;

use super::executor::Executor;
use crate::error::CliError;

/// Largest latency a histogram records exactly: one hour in nanoseconds (larger values are
/// clamped to it).
const MAX_RECORDED_NS: u64 = 3_600_000_000_000;

/// Significant decimal digits the histograms keep: 0.1% resolution, as HdrHistogram's docs
/// suggest for latency.
const SIGNIFICANT_DIGITS: u8 = 3;

/// An empty latency histogram in nanoseconds.
pub(crate) fn new_histogram() -> Histogram<u64> {
    // The bounds are constants within HdrHistogram's limits, so this cannot fail.
    Histogram::new_with_bounds(1, MAX_RECORDED_NS, SIGNIFICANT_DIGITS)
        .unwrap_or_else(|_| unreachable!("constant histogram bounds are valid"))
}

/// The sum of `histograms`: every producer's latencies in one histogram.
///
/// # Errors
///
/// [`CliError::Failed`] when a histogram cannot be added (its range does not fit).
pub(crate) fn merge_histograms<'a>(
    histograms: impl IntoIterator<Item = &'a Histogram<u64>>,
) -> Result<Histogram<u64>, CliError> {
    let mut merged = new_histogram();
    for histogram in histograms {
        merged
            .add(histogram)
            .map_err(|err| CliError::Failed(format!("cannot merge latency histograms: {err}")))?;
    }
    Ok(merged)
}

/// Nanoseconds in `d`, saturating.
pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Releases the producers together: each reports ready and waits; the timer opens the gate
/// once all are ready (or at once when a producer could not be started, so nobody waits
/// forever).
#[derive(Default)]
pub(crate) struct StartGate {
    /// Producers waiting, and whether the gate is open.
    state: Mutex<GateState>,
    /// Signalled when a producer becomes ready and when the gate opens.
    changed: Condvar,
}

/// [`StartGate`]'s state, under its lock.
#[derive(Default)]
struct GateState {
    ready: usize,
    open: bool,
}

impl StartGate {
    /// Reports this producer ready and waits until the gate opens.
    pub(crate) fn wait(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.ready += 1;
        self.changed.notify_all();
        while !state.open {
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Waits until `producers` are ready, then opens the gate.
    fn open_when_ready(&self, producers: usize) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        while state.ready < producers {
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        state.open = true;
        self.changed.notify_all();
    }

    /// Opens the gate without waiting.
    fn open(&self) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .open = true;
        self.changed.notify_all();
    }
}

/// Runs `producer` on one thread per CPU of `cpus` (thread `i` pinned to the `i`-th), times
/// from the moment all pass their [`StartGate`] until all have returned, `after` has run on the
/// calling thread and `executor` has quiesced, and returns the producers' results and that time.
///
/// `producer` must call [`StartGate::wait`] exactly once, after its setup.
///
/// # Errors
///
/// [`CliError::Failed`] when a producer cannot be pinned or started, returns an error, or
/// panics.
pub(crate) fn run_producers<E, R>(
    executor: &E,
    cpus: &[usize],
    producer: impl Fn(usize, &StartGate) -> Result<R, CliError> + Sync,
    after: impl FnOnce(&[R]),
) -> Result<(Vec<R>, Duration), CliError>
where
    E: Executor,
    R: Send,
{
    let gate = StartGate::default();
    let producer = &producer;
    let gate = &gate;
    thread::scope(|scope| {
        let mut handles = Vec::with_capacity(cpus.len());
        for (index, &cpu) in cpus.iter().enumerate() {
            let handle = thread::Builder::new()
                .name(format!("producer-{cpu}"))
                .spawn_scoped(scope, move || {
                    let pinned = podq::affinity::pin_current_thread(&CpuSet::from_iter([cpu]))
                        .map_err(|err| {
                            CliError::Failed(format!(
                                "cannot pin a producer thread to CPU {cpu}: {err}"
                            ))
                        });
                    // Even when pinning failed, take part in the release so nobody waits forever.
                    let result = producer(index, gate);
                    pinned.and(result)
                });
            match handle {
                Ok(handle) => handles.push(handle),
                Err(err) => {
                    // Let the producers started so far run to their end rather than wait forever.
                    gate.open();
                    return Err(CliError::Failed(format!(
                        "cannot start a producer thread: {err}"
                    )));
                }
            }
        }
        gate.open_when_ready(cpus.len());
        let start = Instant::now();
        let mut results = Vec::with_capacity(handles.len());
        let mut first_error = None;
        for handle in handles {
            match handle.join() {
                Ok(Ok(result)) => results.push(result),
                Ok(Err(err)) => {
                    first_error.get_or_insert(err);
                }
                Err(_) => {
                    first_error
                        .get_or_insert(CliError::Failed("a producer thread panicked".into()));
                }
            }
        }
        if let Some(err) = first_error {
            return Err(err);
        }
        after(&results);
        executor.quiesce();
        Ok((results, start.elapsed()))
    })
}

/// Up to two usable CPUs of this machine, for tests that run producers.
#[cfg(test)]
pub(crate) fn test_cpus() -> Vec<usize> {
    let topology = podq::Topology::discover().expect("this machine's topology");
    topology.cpu_set().iter().take(2).collect()
}
