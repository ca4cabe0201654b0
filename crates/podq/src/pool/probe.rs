//! Worker probes: how the stall watchdog sees whether a pool's busy workers sleep in their
//! tasks (step D2 of `pool/README.md`). Each worker registers one when it starts (where the OS
//! lets a thread's state be read) and marks in it when it runs a task; the watchdog reads the
//! marks and the threads' states.

use super::Shared;
use crate::sync::atomic::{AtomicU64, Ordering};
use crate::sync::{Arc, CachePadded, Mutex};
use crate::sys::ThreadProbe;

/// One worker's probe.
#[derive(Debug)]
pub(crate) struct WorkerProbe {
    /// A: the tasks the worker started and ended, so odd while it runs one. Written only by
    /// its worker, with `Relaxed` stores: the watchdog's reading is a heuristic that a moment's
    /// staleness only delays.
    runs: AtomicU64,
    /// I: the worker thread's scheduler state.
    thread: ThreadProbe,
    /// A: `runs` when the watchdog last counted this worker as blocked, so that a task that
    /// sleeps for many looks is counted once. Written only by the watchdog.
    counted: AtomicU64,
}

impl WorkerProbe {
    /// Marks the start or the end of a task: `runs` is the worker's own count, odd after a
    /// start.
    #[inline]
    pub(super) fn mark(&self, runs: u64) {
        self.runs.store(runs, Ordering::Relaxed);
    }
}

/// The probes of one pool's workers.
#[derive(Debug, Default)]
pub(crate) struct Probes {
    /// The live workers' probes.
    list: Mutex<Vec<Arc<CachePadded<WorkerProbe>>>>,
}

/// What one look at a pool's probes found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Seen {
    /// Workers running a task.
    pub(crate) busy: usize,
    /// Busy workers whose thread sleeps.
    pub(crate) blocked: usize,
    /// Blocked workers not counted blocked in this task before.
    pub(crate) newly_blocked: usize,
}

impl Probes {
    /// Registers the calling worker thread; `None` where its state cannot be read.
    pub(super) fn register(&self) -> Option<Arc<CachePadded<WorkerProbe>>> {
        let probe = Arc::new(CachePadded::new(WorkerProbe {
            runs: AtomicU64::new(0),
            thread: ThreadProbe::of_current_thread()?,
            counted: AtomicU64::new(0),
        }));
        self.list.lock().push(Arc::clone(&probe));
        Some(probe)
    }

    /// Forgets a worker's probe when it exits.
    pub(super) fn remove(&self, probe: &Arc<CachePadded<WorkerProbe>>) {
        self.list.lock().retain(|p| !Arc::ptr_eq(p, probe));
    }

    /// Workers running a task now, for the load signal (`load.rs`): `None` when the list's lock
    /// is held (a worker starting or exiting, the watchdog looking: a sample never waits),
    /// `Some(None)` when no live worker has a probe.
    pub(super) fn busy(&self) -> Option<Option<usize>> {
        let list = self.list.try_lock()?;
        if list.is_empty() {
            return Some(None);
        }
        let busy = list
            .iter()
            .filter(|p| p.runs.load(Ordering::Relaxed) % 2 == 1)
            .count();
        Some(Some(busy))
    }

    /// Whether every live worker runs a task now (false when none has a probe, or when the
    /// list's lock is held: the caller then acts as if one were about to be free).
    pub(super) fn all_busy(&self) -> bool {
        self.list.try_lock().is_some_and(|list| {
            !list.is_empty() && list.iter().all(|p| p.runs.load(Ordering::Relaxed) % 2 == 1)
        })
    }

    /// Busy workers whose thread sleeps now (blocked in a task), for statistics: as [`look`],
    /// without counting anything as seen.
    ///
    /// [`look`]: Probes::look
    pub(super) fn blocked(&self) -> usize {
        let list = self.list.lock();
        list.iter()
            .filter(|p| {
                let runs = p.runs.load(Ordering::Relaxed);
                runs % 2 == 1 && p.thread.is_sleeping() && p.runs.load(Ordering::Relaxed) == runs
            })
            .count()
    }

    /// Looks at every busy worker: how many run a task, how many of those sleep. Under the
    /// list's lock, which only a worker's start and exit also take.
    pub(super) fn look(&self) -> Seen {
        let list = self.list.lock();
        let mut seen = Seen::default();
        for probe in list.iter() {
            let runs = probe.runs.load(Ordering::Relaxed);
            if runs % 2 == 0 {
                continue;
            }
            seen.busy += 1;
            if probe.thread.is_sleeping() && probe.runs.load(Ordering::Relaxed) == runs {
                seen.blocked += 1;
                if probe.counted.swap(runs, Ordering::Relaxed) != runs {
                    seen.newly_blocked += 1;
                }
            }
        }
        seen
    }
}

/// (D2) Looks at `shared`'s busy workers and starts workers for the blocked ones, as the core
/// decides; returns how many it started.
pub(super) fn replace_blocked<T: super::Runnable>(shared: &Arc<Shared<T>>) -> usize {
    let seen = shared.probes.look();
    if seen.blocked == 0 {
        return 0;
    }
    shared
        .workers_seen_blocked
        .fetch_add(seen.newly_blocked as u64, Ordering::Relaxed);
    let n = shared.core.replace_blocked(seen.busy, seen.blocked);
    #[cfg(feature = "tracing")]
    if n > 0 {
        crate::trace::pool_grows(&shared.name, "blocked");
    }
    for _ in 0..n {
        super::worker::start(shared);
    }
    shared
        .workers_started_for_blocked
        .fetch_add(n as u64, Ordering::Relaxed);
    n
}
