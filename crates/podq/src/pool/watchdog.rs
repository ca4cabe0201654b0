//! The stall watchdog: adds a worker to a pool whose workers are all busy while its queue makes
//! no progress (steps W1-W3 of `pool/README.md`).
//!
//! A pool starts workers at once up to its eager size (its pod's CPU count): more threads than
//! CPUs only help when work items block, and starting them for work that merely keeps the CPUs
//! busy costs throughput (measured: 12 to 22 workers on a 2-CPU pod in the flood workload
//! before this existed). Past the eager size a pool asks this thread to watch it; every
//! [`STALL_CHECK_INTERVAL`] the thread looks, and if items waited the whole interval and none
//! was taken from the queue, it starts one more worker. That is the job of the kernel's mayday
//! timer and manager for unbound pools, whose workers may block.
//!
//! One thread, `podq/watchdog`, serves every pool of the process. It is started on first use
//! and sleeps without a timeout while no pool is watched.

use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::thread;
use std::time::Duration;

/// How often a watched pool is looked at: 10 ms, the kernel's first mayday timeout
/// (`MAYDAY_INITIAL_TIMEOUT`). An item that blocks delays the items queued behind it (with every
/// worker busy) by one to two intervals before a worker is added. A shorter interval misfires
/// when the CPUs are oversubscribed: busy workers that are merely preempted for a millisecond
/// or more look stalled, and the extra worker only adds to the oversubscription (seen with 1 ms
/// in the flood workload on 2 CPUs).
pub(crate) const STALL_CHECK_INTERVAL: Duration = Duration::from_millis(10);

/// A pool the watchdog can look at.
pub(crate) trait Watched: Send + Sync {
    /// Looks once (W2-W3), starting a worker if the pool is stalled; returns whether to keep
    /// watching.
    fn check(self: Arc<Self>) -> bool;
}

/// The watched pools, and the condvar the watchdog sleeps on while there are none.
struct Watchdog {
    pools: Mutex<Vec<Weak<dyn Watched>>>,
    wake: Condvar,
}

static WATCHDOG: OnceLock<Watchdog> = OnceLock::new();

/// Has the watchdog watch `pool` until it reports an empty queue (W1).
pub(crate) fn watch(pool: Weak<dyn Watched>) {
    let dog = WATCHDOG.get_or_init(|| {
        let spawned = thread::Builder::new()
            .name("podq/watchdog".into())
            .spawn(run);
        // Without the thread, pools still run everything with their eager workers; they only
        // lose the extra workers for items that block. Nothing queued is lost.
        drop(spawned);
        Watchdog {
            pools: Mutex::new(Vec::new()),
            wake: Condvar::new(),
        }
    });
    let mut pools = dog.pools.lock().unwrap_or_else(|e| e.into_inner());
    pools.push(pool);
    drop(pools);
    dog.wake.notify_one();
}

/// The watchdog thread: looks at every watched pool each interval, forgets the ones that no
/// longer need it, and sleeps while none does.
fn run() {
    let dog = loop {
        // `watch` stores the state right after spawning this thread.
        if let Some(dog) = WATCHDOG.get() {
            break dog;
        }
        thread::yield_now();
    };
    loop {
        let mut pools = dog.pools.lock().unwrap_or_else(|e| e.into_inner());
        while pools.is_empty() {
            pools = dog.wake.wait(pools).unwrap_or_else(|e| e.into_inner());
        }
        let watched = std::mem::take(&mut *pools);
        drop(pools);
        thread::sleep(STALL_CHECK_INTERVAL);
        // Look outside the list's lock: a look may start a thread.
        let keep: Vec<Weak<dyn Watched>> = watched
            .into_iter()
            .filter(|pool| pool.upgrade().is_some_and(Watched::check))
            .collect();
        dog.pools
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(keep);
    }
}
