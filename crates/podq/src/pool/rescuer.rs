//! The rescuer: forward progress for pools that cannot start a worker (steps M1-M5 of
//! `pool/README.md`), as the kernel's `WQ_MEM_RECLAIM` rescuer gives it.
//!
//! A pool starts its workers on demand, and the OS may refuse one (the process's
//! `RLIMIT_NPROC`, a container's pids limit, memory). Its waiting tasks then go to a
//! `podq/rescuer` thread that was started when the workqueue was built (one per worker stack
//! size in the process, shared by every pool whose workers have that stack size, started by
//! the first build that needs it), which runs them, oldest first, one task per pool in turn,
//! on the pool's CPUs, until the pool has workers again. The thread that queued never runs
//! them.
//!
//! The rescuer is one thread: an item that blocks in it holds up the rescued items of every
//! other pool of its stack size until it returns, or until one of their pools gets a worker
//! (each pool asks again every [`RETRY_INTERVAL`]; a push or the watchdog asks too).

use std::cell::Cell;
use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Instant, SystemTime};

use super::core::Stolen;
use super::{worker, Runnable, Shared};
use crate::fork::PerFork;
use crate::policy::pull::Kick;
use crate::threads::{Gate, Helper, RETRY_INTERVAL};

/// A pool the rescuer can run tasks of.
pub(crate) trait Rescued: Send + Sync {
    /// (M4, M5) Runs one of the pool's waiting tasks on the calling thread (the rescuer's),
    /// first asking the OS for a worker again when [`RETRY_INTERVAL`] has passed. Returns
    /// whether to come back to the pool: `false` when it found nothing waiting, or when the
    /// pool was handed to the rescuer again meanwhile (it is in the list already).
    fn rescue(self: Arc<Self>) -> bool;
}

/// One rescuer: its thread, and the pools waiting for it, in the order they asked.
struct Rescuer {
    /// I: the stack size of its thread (`None`: the standard library's).
    stack: Option<usize>,
    /// L: pools that asked (M2), the first to be served next.
    pools: Mutex<VecDeque<Arc<dyn Rescued>>>,
    /// Signalled when a pool asks.
    wake: Condvar,
    /// Its thread.
    thread: Helper,
}

/// The rescuers of this process by stack size, one per fork generation (`fork.rs`): a child
/// of `fork()` starts its own and never takes the parent's locks. Each lives for the rest of
/// the process (there are as many as the distinct worker stack sizes of its workqueues).
static RESCUERS: PerFork<Mutex<Vec<&'static Rescuer>>> = PerFork::new();

/// The rescuer of workers with `stack` bytes of stack, made (without its thread) if there is
/// none yet.
fn rescuer(stack: Option<usize>) -> &'static Rescuer {
    let mut all = RESCUERS
        .get(|| Mutex::new(Vec::new()))
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(found) = all.iter().find(|r| r.stack == stack) {
        return found;
    }
    let made: &'static Rescuer = Box::leak(Box::new(Rescuer {
        stack,
        pools: Mutex::new(VecDeque::new()),
        wake: Condvar::new(),
        thread: Helper::new(),
    }));
    all.push(made);
    made
}

/// Starts the rescuer of workers with `stack` bytes of stack unless it runs already (at a
/// workqueue's build).
///
/// # Errors
///
/// The gate's or the OS's refusal (out of threads or memory, or a stack it cannot give).
pub(crate) fn ensure(stack: Option<usize>, gate: Option<&Gate>) -> io::Result<()> {
    let rescuer = rescuer(stack);
    rescuer
        .thread
        .ensure_sized("podq/rescuer", stack, gate, move || run(rescuer))
}

/// (M2) Hands `pool`, whose workers have `stack` bytes of stack, to its rescuer. The rescuer
/// was started when the pool's workqueue was built; should it not run (a pool made without
/// a build, in the pool's own tests), it is started now, and the pool waits in its list for a
/// later start should the OS refuse it too.
fn mayday(stack: Option<usize>, gate: Option<&Gate>, pool: Arc<dyn Rescued>) {
    let rescuer = rescuer(stack);
    rescuer
        .pools
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push_back(pool);
    rescuer.wake.notify_one();
    drop(ensure(stack, gate));
}

/// The rescuer's thread: serves the pools in the order they asked, one task each in turn.
fn run(rescuer: &'static Rescuer) {
    // The pool served last, held so that its address (`PLACED_FOR`) is not reused by another.
    let mut _served: Option<Arc<dyn Rescued>> = None;
    loop {
        let mut pools = rescuer.pools.lock().unwrap_or_else(PoisonError::into_inner);
        let pool = loop {
            match pools.pop_front() {
                Some(pool) => break pool,
                None => {
                    pools = rescuer
                        .wake
                        .wait(pools)
                        .unwrap_or_else(PoisonError::into_inner)
                }
            }
        };
        drop(pools);
        if Arc::clone(&pool).rescue() {
            rescuer
                .pools
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push_back(Arc::clone(&pool));
        }
        _served = Some(pool);
    }
}

thread_local! {
    /// On a rescuer's thread: the pool (by address) whose CPUs the thread was last placed on,
    /// so that it is placed again only when it moves to another pool.
    static PLACED_FOR: Cell<usize> = const { Cell::new(0) };
}

/// A pool's side of refusals and rescue: whether it is in its rescuer's list, since when its
/// workers are refused, and the tasks rescued.
#[derive(Debug, Default)]
pub(crate) struct Refusals {
    /// A: whether the pool is in its rescuer's list (or being served). Set by M2, cleared by
    /// M4 before it looks for a task; `AcqRel` both ways, so that a rescuer that clears it
    /// sees every task pushed before the refusal whose M2 found it set.
    listed: AtomicBool,
    /// L: the first refusal since a worker last started (monotonic and wall clock), and the
    /// last one; `None` while workers start.
    since: Mutex<Option<Since>>,
    /// A: tasks the rescuer ran for this pool. Relaxed: a statistic.
    rescued: AtomicU64,
}

/// When a pool's run of refusals began, and its latest refusal.
#[derive(Clone, Copy, Debug)]
struct Since {
    /// The first refusal since a worker last started, on the wall clock (for stats).
    wall: SystemTime,
    /// The latest refusal that asked the OS.
    last: Instant,
}

impl Refusals {
    /// (M3) Whether a start asked for now is refused without asking the OS: the last refusal
    /// was less than [`RETRY_INTERVAL`] ago.
    pub(crate) fn backing_off(&self) -> bool {
        self.since()
            .is_some_and(|since| since.last.elapsed() < RETRY_INTERVAL)
    }

    /// (M1) The OS (or the gate) refused a worker now.
    pub(crate) fn refused(&self) {
        let now = Instant::now();
        let mut since = self.since.lock().unwrap_or_else(PoisonError::into_inner);
        match &mut *since {
            Some(since) => since.last = now,
            None => {
                *since = Some(Since {
                    wall: SystemTime::now(),
                    last: now,
                });
            }
        }
    }

    /// A worker started: the pool's run of refusals is over.
    pub(crate) fn worker_started(&self) {
        let mut since = self.since.lock().unwrap_or_else(PoisonError::into_inner);
        if since.is_some() {
            *since = None;
        }
    }

    /// When the OS began refusing the pool's workers, if it refuses them still (no worker
    /// started since).
    pub(crate) fn refused_since(&self) -> Option<SystemTime> {
        self.since().map(|since| since.wall)
    }

    /// How long the pool has been refused workers (0 when it is not).
    #[cfg(feature = "tracing")]
    pub(crate) fn refused_for(&self) -> std::time::Duration {
        self.refused_since()
            .and_then(|since| since.elapsed().ok())
            .unwrap_or_default()
    }

    /// Tasks the rescuer ran for the pool.
    pub(crate) fn rescued(&self) -> u64 {
        self.rescued.load(Ordering::Relaxed)
    }

    fn since(&self) -> Option<Since> {
        *self.since.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the run of refusals is old enough to ask the OS again (M5).
    fn retry_due(&self) -> bool {
        self.since()
            .is_some_and(|since| since.last.elapsed() >= RETRY_INTERVAL)
    }
}

/// (M1, M2) A worker of `shared` was refused (the core has taken it back): its waiting tasks
/// go to its rescuer, unless the pool is in the rescuer's list already.
pub(super) fn refused<T: Runnable>(shared: &Arc<Shared<T>>) {
    if !shared.refusals.listed.swap(true, Ordering::AcqRel) {
        let pool: Arc<dyn Rescued> = Arc::clone(shared) as Arc<dyn Rescued>;
        mayday(
            shared.worker.stack_size,
            shared.worker.starts.as_ref(),
            pool,
        );
    }
}

impl<T: Runnable> Rescued for Shared<T> {
    fn rescue(self: Arc<Self>) -> bool {
        // (M4) Cleared before the look, so that a refusal after the look lists the pool again.
        self.refusals.listed.swap(false, Ordering::AcqRel);
        // (M5) Ask the OS again, as a kick would (wake a parked worker, or count a new one).
        if self.refusals.retry_due() && self.core.kick() == Kick::Spawn {
            worker::start_retry(&self);
        }
        let Stolen::Took { item, grow, .. } = self.core.steal() else {
            return false;
        };
        let me = Arc::as_ptr(&self) as usize;
        if PLACED_FOR.with(Cell::get) != me {
            worker::place(&self);
            PLACED_FOR.with(|p| p.set(me));
        }
        worker::grow_pool(&self, grow);
        worker::run_rescued(&self, item);
        self.refusals.rescued.fetch_add(1, Ordering::Relaxed);
        !self.refusals.listed.swap(true, Ordering::AcqRel)
    }
}
