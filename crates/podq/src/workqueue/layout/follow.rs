//! The `podq/limits` thread: asks the [`CpuLimits`] of every workqueue that follows them, every
//! [`LIMITS_POLL_INTERVAL`], and re-forms a workqueue's layout when the CPUs the process may use
//! differ from those its pods were formed on (R1 of `workqueue/README.md`).
//!
//! One thread serves the process. It is started by the build of the first workqueue that follows limits
//! ([`ensure`]) and sleeps without a timeout while none lives. Limits that several workqueues share (every
//! workqueue on this machine shares the [`SystemLimits`] of `/`) are asked once per look.
//!
//! [`SystemLimits`]: crate::limits::SystemLimits

use std::sync::{Arc, Weak};
use std::thread;

use crate::cpuset::CpuSet;
use crate::fork::PerFork;
use crate::limits::{CpuLimits, LIMITS_POLL_INTERVAL};
use crate::sync::{Condvar, Mutex};
use crate::threads::{Gate, Helper};

use crate::workqueue::layout::{Layouts, Shape};

/// The workqueues that follow limits, and the condvar the thread sleeps on while there are none.
struct Follower {
    /// L: their layouts; an entry whose workqueue is gone is dropped at the next look.
    layouts: Mutex<Vec<Weak<Layouts>>>,
    /// Signalled when an entry is added.
    wake: Condvar,
    /// Its thread.
    thread: Helper,
}

/// The process's follower: one per fork generation (`fork.rs`), so that a child of `fork()`
/// starts its own thread and never takes the parent's list lock.
static FOLLOWER: PerFork<Follower> = PerFork::new();

/// The process's follower, without starting its thread.
fn follower() -> &'static Follower {
    FOLLOWER.get(|| Follower {
        layouts: Mutex::new(Vec::new()),
        wake: Condvar::new(),
        thread: Helper::new(),
    })
}

/// Starts the `podq/limits` thread unless it runs (at the build of a workqueue that follows
/// limits), through `gate`.
///
/// # Errors
///
/// The gate's or the OS's refusal.
pub(crate) fn ensure(gate: Option<&Gate>) -> std::io::Result<()> {
    let follower = follower();
    // On the process's CPUs, not the pin of whichever thread built the first workqueue.
    follower
        .thread
        .ensure("podq/limits", gate, move || run(follower))
}

/// Has the `podq/limits` thread follow the limits of the workqueue of `layouts`. The thread
/// was started at the workqueue's build; should it not run, it is tried again now (without
/// it, workqueues keep the pods they were built with: everything still runs; only a change of
/// the allowed CPUs goes unfollowed).
pub(crate) fn follow(layouts: &Arc<Layouts>) {
    let follower = follower();
    drop(ensure(None));
    follower.layouts.lock().push(Arc::downgrade(layouts));
    follower.wake.notify_one();
}

/// The thread: every [`LIMITS_POLL_INTERVAL`], looks at every workqueue that follows limits.
fn run(follower: &'static Follower) {
    loop {
        let mut list = follower.layouts.lock();
        while list.is_empty() {
            list = follower.wake.wait(list);
        }
        drop(list);
        thread::sleep(LIMITS_POLL_INTERVAL);
        let held: Vec<Arc<Layouts>> = {
            let mut list = follower.layouts.lock();
            list.retain(|w| w.strong_count() > 0);
            list.iter().filter_map(Weak::upgrade).collect()
        };
        look(&held);
    }
}

/// One look: re-forms each workqueue whose allowed CPUs changed. Each [`CpuLimits`] is asked
/// once; one that cannot answer leaves its workqueues as they are.
fn look(held: &[Arc<Layouts>]) {
    let mut answers: Vec<(Arc<dyn CpuLimits>, Option<CpuSet>)> = Vec::new();
    for layouts in held {
        let Some(limits) = layouts.reform_state().limits.clone() else {
            continue;
        };
        let answer = match answers.iter().find(|(l, _)| Arc::ptr_eq(l, &limits)) {
            Some((_, answer)) => answer.clone(),
            None => {
                let answer = limits.allowed().ok();
                answers.push((limits, answer.clone()));
                answer
            }
        };
        if let Some(allowed) = answer {
            follow_now(layouts, &allowed);
        }
    }
}

/// Re-forms the layout of `layouts` for the CPUs `allowed` now, when they differ from those
/// of its current layout (within its machine, which is read again when a CPU it lacks is
/// allowed, as after one is brought online; none of them allowed leaves it as it is).
pub(crate) fn follow_now(layouts: &Layouts, allowed: &CpuSet) {
    let mut reform = layouts.reform_state();
    if !allowed.is_subset(&reform.machine.cpu_set()) {
        if let Some(machine) = reform.rediscover.and_then(|read| read().ok()) {
            reform.machine = machine;
        }
    }
    let allowed = allowed.intersection(&reform.machine.cpu_set());
    if allowed.is_empty() {
        return;
    }
    let shape = Shape {
        allowed,
        ..layouts.current().shape.clone()
    };
    // An error (no pools could be formed) leaves the current layout: everything still runs.
    let _ = layouts.reform(&reform, shape);
}

/// The limits every workqueue on this machine follows unless its builder was given others:
/// [`SystemLimits`](crate::limits::SystemLimits) of `/`, one per process, so that the thread
/// asks them once per look.
pub(crate) fn system_limits() -> Arc<dyn CpuLimits> {
    static SYSTEM: PerFork<Arc<dyn CpuLimits>> = PerFork::new();
    Arc::clone(SYSTEM.get(|| Arc::new(crate::limits::SystemLimits::this_machine())))
}
