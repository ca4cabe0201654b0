//! The stall watchdog's thread: looks at the pools whose workers are all busy at their eager
//! size, and has a pool whose queue makes no progress start one more worker (steps D1-D3 of
//! `pool/README.md`; the decision is `policy::stall`'s).
//!
//! A pool starts workers at once up to its eager size (its pod's CPU count): more threads than
//! CPUs only help when work items block, and starting them for work that merely keeps the CPUs
//! busy costs throughput (without the watchdog, the flood workload started 12 to 22 workers on
//! a 2-CPU pod). Past the eager size a pool asks this thread to watch it; every
//! [`STALL_CHECK_INTERVAL`] the thread looks, and if items waited the whole interval and none
//! was taken from the queue, it starts one more worker.
//!
//! One thread, `podq/watchdog`, serves every pool of the process. It is started on first use
//! and sleeps without a timeout while no pool is watched.

use std::sync::{OnceLock, Weak};
use std::thread;

use crate::policy::stall::STALL_CHECK_INTERVAL;
use crate::sync::{Arc, Condvar, Mutex};

/// A pool the watchdog can look at.
pub(crate) trait Watched: Send + Sync {
    /// Looks once (D2-D3), starting a worker if the pool is stalled; returns whether to keep
    /// watching.
    fn check(self: Arc<Self>) -> bool;
}

/// The watched pools, and the condvar the watchdog sleeps on while there are none.
struct Watchdog {
    pools: Mutex<Vec<Weak<dyn Watched>>>,
    wake: Condvar,
}

static WATCHDOG: OnceLock<Watchdog> = OnceLock::new();

/// Has the watchdog watch `pool` until it reports an empty queue (D1).
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
    let mut pools = dog.pools.lock();
    pools.push(pool);
    drop(pools);
    dog.wake.notify_one();
}

/// The watchdog thread: looks at every watched pool each interval, forgets the ones that do
/// not need it any more, and sleeps while none does.
fn run() {
    let dog = loop {
        // `watch` stores the state right after spawning this thread.
        if let Some(dog) = WATCHDOG.get() {
            break dog;
        }
        thread::yield_now();
    };
    loop {
        let mut pools = dog.pools.lock();
        while pools.is_empty() {
            pools = dog.wake.wait(pools);
        }
        let watched = std::mem::take(&mut *pools);
        drop(pools);
        thread::sleep(STALL_CHECK_INTERVAL);
        // Look outside the list's lock: a look may start a thread.
        let keep: Vec<Weak<dyn Watched>> = watched
            .into_iter()
            .filter(|pool| pool.upgrade().is_some_and(Watched::check))
            .collect();
        dog.pools.lock().extend(keep);
    }
}
