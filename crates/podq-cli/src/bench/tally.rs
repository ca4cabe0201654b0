//! What work items report into while a run goes on: a countdown that wakes the timer thread when
//! the last item is done, and per-item queue-to-start times.

use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::executor::burn;
use super::harness::nanos;
use crate::error::CliError;

/// Items (or chains of items) not yet done, and the timer thread that waits for none.
#[derive(Debug)]
pub(crate) struct Countdown {
    /// Not yet done. Decremented `AcqRel` by each; the `Acquire` load that sees 0 makes
    /// everything the items stored before counting down visible to the timer thread.
    remaining: AtomicU64,
    /// The timer thread, unparked by the last.
    timer: Thread,
}

impl Countdown {
    /// A countdown from `count`, waited on by `timer`.
    pub(crate) fn new(count: u64, timer: Thread) -> Countdown {
        Countdown {
            remaining: AtomicU64::new(count),
            timer,
        }
    }

    /// Counts one done; the last wakes the timer thread.
    pub(crate) fn done_one(&self) {
        self.done(1);
    }

    /// Counts `count` done at once (items that will never run because the system refused
    /// them); the last wakes the timer thread.
    pub(crate) fn done(&self, count: u64) {
        if count > 0 && self.remaining.fetch_sub(count, Ordering::AcqRel) == count {
            self.timer.unpark();
        }
    }

    /// Waits (on the timer thread) until all are done.
    pub(crate) fn wait(&self) {
        while self.remaining.load(Ordering::Acquire) != 0 {
            thread::park();
        }
    }
}

/// What one producer's (or one team's) items report into: when each started, and how many are
/// left.
pub(crate) struct Tally {
    /// Items not yet run; each counts down after storing its start time.
    remaining: Countdown,
    /// Queue-to-start time of item `n`, in nanoseconds.
    queue_to_start_ns: Box<[AtomicU64]>,
}

impl Tally {
    /// A tally for `items` items, or an error naming `workload` when their start times do not
    /// fit in memory.
    pub(crate) fn new(items: u64, timer: Thread, workload: &str) -> Result<Tally, CliError> {
        Ok(Tally {
            queue_to_start_ns: slots(items, workload, "queue-to-start times")?,
            remaining: Countdown::new(items, timer),
        })
    }

    /// How many items the tally counts.
    pub(crate) fn len(&self) -> usize {
        self.queue_to_start_ns.len()
    }

    /// Runs item `n`, queued at `queued`: records its start, burns `work`, counts it done.
    pub(crate) fn run_item(&self, n: usize, queued: Instant, work: Duration) {
        self.start(n, queued);
        burn(work);
        self.finish();
    }

    /// Records that item `n`, queued at `queued`, starts now.
    pub(crate) fn start(&self, n: usize, queued: Instant) {
        let started = Instant::now();
        self.queue_to_start_ns[n].store(nanos(started - queued), Ordering::Relaxed);
    }

    /// Counts one item done, after its [`Tally::start`].
    pub(crate) fn finish(&self) {
        self.remaining.done_one();
    }

    /// Counts `count` items done that will never run (the system refused them).
    pub(crate) fn skip(&self, count: u64) {
        self.remaining.done(count);
    }

    /// Waits (on the timer thread) until every item has run.
    pub(crate) fn wait_all_run(&self) {
        self.remaining.wait();
    }

    /// Records every item's queue-to-start time into `histogram`; call after
    /// [`Tally::wait_all_run`].
    pub(crate) fn record_into(&self, histogram: &mut Histogram<u64>) {
        record_slots(&self.queue_to_start_ns, histogram);
    }

    /// Records the queue-to-start time of every item `n` for which `keep(n)` holds into
    /// `histogram`; call after [`Tally::wait_all_run`].
    pub(crate) fn record_into_if(
        &self,
        histogram: &mut Histogram<u64>,
        keep: impl Fn(usize) -> bool,
    ) {
        for (n, slot) in self.queue_to_start_ns.iter().enumerate() {
            if keep(n) {
                histogram.saturating_record(slot.load(Ordering::Relaxed));
            }
        }
    }
}

/// `count` zeroed slots of one time each, in nanoseconds, or an error naming `workload` and
/// `what` they hold when they do not fit in memory.
pub(crate) fn slots(count: u64, workload: &str, what: &str) -> Result<Box<[AtomicU64]>, CliError> {
    let len = usize::try_from(count).unwrap_or(usize::MAX);
    let mut slots = Vec::new();
    slots.try_reserve_exact(len).map_err(|_| {
        CliError::Failed(format!(
            "--items: {workload} keeps 8 bytes per item for {what} ({count} of them) and \
             cannot allocate them; give fewer items"
        ))
    })?;
    slots.extend((0..len).map(|_| AtomicU64::new(0)));
    Ok(slots.into_boxed_slice())
}

/// Records every time of `slots` into `histogram`, once the items that wrote them are done.
pub(crate) fn record_slots(slots: &[AtomicU64], histogram: &mut Histogram<u64>) {
    for slot in slots {
        histogram.saturating_record(slot.load(Ordering::Relaxed));
    }
}
