//! The stall watchdog's thread: looks at the pools whose workers are all busy at their eager
//! size, and has a pool whose busy workers sleep in their tasks, or whose queue makes no
//! progress, start more workers (steps D1-D4 of `pool/README.md`; the decisions are
//! `policy::stall`'s).
//!
//! A pool starts workers at once up to its eager size (its pod's CPU count): more threads than
//! CPUs only help when work items block, and starting them for work that merely keeps the CPUs
//! busy costs throughput (`pool/README.md`, "Why these choices", has the figure). Past the
//! eager size a pool asks this thread to watch it (D1). The thread looks for blocked workers
//! every [`BLOCK_CHECK_INTERVAL`] (every [`BLOCK_RECHECK_INTERVAL`] right after a look that
//! started workers, D2), and at the progress every [`STALL_CHECK_INTERVAL`] (D3-D4).
//!
//! One thread, `podq/watchdog`, serves every pool of the process. It is started by the first
//! workqueue's build ([`ensure`]; see `crate::threads`) and sleeps without a timeout while no
//! pool is watched.

use std::sync::Weak;
use std::thread;
use std::time::{Duration, Instant};

use crate::fork::PerFork;
use crate::policy::stall::{BLOCK_CHECK_INTERVAL, BLOCK_RECHECK_INTERVAL, STALL_CHECK_INTERVAL};
use crate::sync::{Arc, Condvar, Mutex};
use crate::threads::{Gate, Helper};

/// What one look at a watched pool did.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Checked {
    /// Whether to keep watching it.
    pub(crate) keep: bool,
    /// Whether it started workers for blocked ones (then the next look comes sooner).
    pub(crate) replaced: bool,
}

/// A pool the watchdog can look at.
pub(crate) trait Watched: Send + Sync {
    /// Looks once: for blocked busy workers (D2), and when `progress` also at the queue's
    /// progress (D3-D4), starting workers as decided.
    fn check(self: Arc<Self>, progress: bool) -> Checked;
}

/// The watched pools, and the condvar the watchdog sleeps on while there are none.
struct Watchdog {
    pools: Mutex<Vec<Weak<dyn Watched>>>,
    wake: Condvar,
    /// Its thread.
    thread: Helper,
}

/// The process's watchdog: one per fork generation (`fork.rs`), so that a child of `fork()`
/// starts its own thread and never takes the parent's list lock.
static WATCHDOG: PerFork<Watchdog> = PerFork::new();

/// The process's watchdog, without starting its thread.
fn watchdog() -> &'static Watchdog {
    WATCHDOG.get(|| Watchdog {
        pools: Mutex::new(Vec::new()),
        wake: Condvar::new(),
        thread: Helper::new(),
    })
}

/// Starts the watchdog's thread unless it runs (at a workqueue's build), through `gate`.
///
/// # Errors
///
/// The gate's or the OS's refusal.
pub(crate) fn ensure(gate: Option<&Gate>) -> std::io::Result<()> {
    let dog = watchdog();
    // On the process's CPUs, not the pin of whichever thread first needed it.
    dog.thread.ensure("podq/watchdog", gate, move || run(dog))
}

/// Has the watchdog watch `pool` until it reports an empty queue (D1). Its thread was started
/// at the first build; should it not run (a pool made without a build, in the pool's own
/// tests), it is tried now: without it, pools still run everything with their eager workers,
/// and only lose the extra workers for items that block.
pub(crate) fn watch(pool: Weak<dyn Watched>) {
    let dog = watchdog();
    drop(ensure(None));
    let mut pools = dog.pools.lock();
    pools.push(pool);
    drop(pools);
    dog.wake.notify_one();
}

/// The watchdog thread: looks at every watched pool each interval, forgets the ones that do
/// not need it any more, and sleeps while none does.
fn run(dog: &'static Watchdog) {
    // The blocked look needs a thread's state, which only some systems give.
    let probing = cfg!(target_os = "linux");
    let mut interval = if probing {
        BLOCK_CHECK_INTERVAL
    } else {
        STALL_CHECK_INTERVAL
    };
    let mut progress_due = Instant::now() + STALL_CHECK_INTERVAL;
    loop {
        let mut pools = dog.pools.lock();
        while pools.is_empty() {
            pools = dog.wake.wait(pools);
            progress_due = Instant::now() + STALL_CHECK_INTERVAL;
        }
        let watched = std::mem::take(&mut *pools);
        drop(pools);
        thread::sleep(interval);
        let now = Instant::now();
        let progress = !probing || now >= progress_due;
        if progress {
            progress_due = now + STALL_CHECK_INTERVAL;
        }
        // Look outside the list's lock: a look may start a thread.
        let mut replaced = false;
        let keep: Vec<Weak<dyn Watched>> = watched
            .into_iter()
            .filter(|pool| {
                pool.upgrade().is_some_and(|pool| {
                    let checked = pool.check(progress);
                    replaced |= checked.replaced;
                    checked.keep
                })
            })
            .collect();
        if probing {
            interval = next_interval(replaced);
        }
        dog.pools.lock().extend(keep);
    }
}

/// The wait before the next look: [`BLOCK_RECHECK_INTERVAL`] after a look that started
/// workers for blocked ones, else [`BLOCK_CHECK_INTERVAL`].
fn next_interval(replaced: bool) -> Duration {
    if replaced {
        BLOCK_RECHECK_INTERVAL
    } else {
        BLOCK_CHECK_INTERVAL
    }
}
