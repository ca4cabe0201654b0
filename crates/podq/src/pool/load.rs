//! [`LoadSignal`]: a pool's load for steering (`policy::steer`): its waiting tasks, its busy
//! workers and its recent busy fraction, read by anyone with a few relaxed loads and no lock.
//!
//! This file owns the signal: when a sample is taken, from which counters, and how it is
//! published. What a busy fraction is, how samples are averaged and where an item goes given
//! the load are `policy::steer`'s decisions.
//!
//! Nothing here is written per task. The numbers are samples, taken by a reader that finds the
//! last sample older than [`SAMPLE_INTERVAL`] (one reader per interval wins the sample, with a
//! compare-exchange of the sample's time), from counters the pool keeps anyway: the lanes'
//! lengths as last stored and the workers' probes (odd while a worker runs a task, see
//! `probe.rs`). The busy fraction is the moving mean of the samples over `LOAD_WINDOW`
//! ([`policy::busy_mean`]).
//!
//! Every value is a hint: two samplers in a row, or a reader between a sampler's stores, see
//! a mix of two samples, each of them a valid load. This file uses only `crate::sync` and the
//! pure policy, so that `crates/podq-loom` checks it (`tests/steer.rs`).

use std::time::Duration;

use crate::policy::steer::{self as policy, Busy, BusyMean, PodLoad, SAMPLE_INTERVAL};
use crate::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// What one sample of a pool saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Sample {
    /// Tasks waiting in the pool's queue.
    pub(crate) waiting: usize,
    /// Workers running a task; `None` where the pool's workers have no probes (then the
    /// sample counts every CPU busy while tasks wait, and none otherwise).
    pub(crate) busy_workers: Option<usize>,
}

/// A pool's load as last sampled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Load {
    /// Tasks waiting, at the last sample.
    pub(crate) waiting: usize,
    /// Workers running a task, at the last sample (estimated where there are no probes).
    pub(crate) busy_workers: usize,
    /// The pod's CPUs and recent busy fraction, for `policy::steer`.
    pub(crate) pod: PodLoad,
}

/// One pool's load: samples, written by whoever wins a sample, read by anyone.
///
/// A: every field, `Relaxed`: each is a hint whose every value is a valid load, and nothing
/// else is published through them.
#[derive(Debug)]
pub(crate) struct LoadSignal {
    /// I: the pod's CPUs.
    cpus: usize,
    /// A: when the last sample was taken (or claimed), in nanoseconds of the caller's clock;
    /// `u64::MAX` before the first. A reader that finds it older than [`SAMPLE_INTERVAL`]
    /// claims the next sample with a compare-exchange: one sampler per interval.
    sampled_ns: AtomicU64,
    /// A: the moving mean of the busy fraction, in [`Busy`]'s 65536ths.
    busy: AtomicU32,
    /// A: the time the mean's samples cover, in nanoseconds ([`BusyMean::covers`]).
    covers_ns: AtomicU64,
    /// A: busy workers at the last sample.
    busy_workers: AtomicUsize,
    /// A: waiting tasks at the last sample.
    waiting: AtomicUsize,
}

impl LoadSignal {
    /// The signal of a pod of `cpus` CPUs, idle and never sampled.
    pub(crate) fn new(cpus: usize) -> Self {
        Self {
            cpus,
            sampled_ns: AtomicU64::new(u64::MAX),
            busy: AtomicU32::new(Busy::IDLE.raw()),
            covers_ns: AtomicU64::new(0),
            busy_workers: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
        }
    }

    /// The load at `now` (on the caller's clock, which must not go backwards): the last
    /// sample's, after taking a new one with `sample` when the last is older than
    /// [`SAMPLE_INTERVAL`] and no other reader claimed it first. `sample` may return `None`
    /// (it could not look without waiting for a lock): the claim then stands and the old
    /// values stay until the next interval.
    pub(crate) fn read(&self, now: Duration, sample: impl FnOnce() -> Option<Sample>) -> Load {
        let now_ns = u64::try_from(now.as_nanos()).unwrap_or(u64::MAX - 1);
        let last = self.sampled_ns.load(Ordering::Relaxed);
        let due = last == u64::MAX || now_ns.saturating_sub(last) >= interval_ns();
        if due
            && self
                .sampled_ns
                .compare_exchange(last, now_ns, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            if let Some(s) = sample() {
                self.take(s, last, now_ns);
            }
        }
        self.now()
    }

    /// Stores one sample taken at `now_ns`, the previous one having been at `last_ns`.
    fn take(&self, s: Sample, last_ns: u64, now_ns: u64) {
        let busy_workers = s
            .busy_workers
            .unwrap_or(if s.waiting > 0 { self.cpus } else { 0 });
        // Before the first sample the mean covers nothing, and the interval does not matter.
        let since = Duration::from_nanos(now_ns.saturating_sub(last_ns));
        let old = BusyMean {
            mean: Busy::from_raw(self.busy.load(Ordering::Relaxed)),
            covers: Duration::from_nanos(self.covers_ns.load(Ordering::Relaxed)),
        };
        let new = policy::busy_mean(old, Busy::of(busy_workers, self.cpus), since);
        self.busy.store(new.mean.raw(), Ordering::Relaxed);
        self.covers_ns.store(
            u64::try_from(new.covers.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        self.busy_workers.store(busy_workers, Ordering::Relaxed);
        self.waiting.store(s.waiting, Ordering::Relaxed);
    }

    /// The load as last sampled, without sampling.
    pub(crate) fn now(&self) -> Load {
        Load {
            waiting: self.waiting.load(Ordering::Relaxed),
            busy_workers: self.busy_workers.load(Ordering::Relaxed),
            pod: PodLoad {
                cpus: self.cpus,
                busy: Busy::from_raw(self.busy.load(Ordering::Relaxed)),
            },
        }
    }
}

/// [`SAMPLE_INTERVAL`] in nanoseconds.
fn interval_ns() -> u64 {
    u64::try_from(SAMPLE_INTERVAL.as_nanos()).unwrap_or(u64::MAX)
}
