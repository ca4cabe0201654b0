//! Worker threads: start, placement on the pod's CPUs, the run loop, and exit.
//!
//! A worker is a detached thread named `podq/{pool}`. Nothing ever joins it: it holds its own
//! handle on the pool's shared state and ends by itself when the core tells it to (retired
//! after `idle_timeout`, or shut down with an empty queue). [`super::Pool`]'s drop waits for
//! the workers to be gone through the core's worker count, never by joining, and not at all on
//! a worker of the same pool.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::thread;

use super::core::{Grow, Next, WorkerSlot};
use super::{Runnable, Shared};
use crate::cpuset::CpuSet;
use crate::sync::atomic::Ordering;
use crate::sync::Arc;

thread_local! {
    /// The address of the pool state this thread works for; 0 on threads that are not podq
    /// workers. Only compared, never dereferenced.
    static WORKER_OF: Cell<usize> = const { Cell::new(0) };
}

/// Whether the calling thread is a worker of the pool whose state is `shared`.
pub(super) fn is_worker_of<T>(shared: &Arc<Shared<T>>) -> bool {
    let addr = Arc::as_ptr(shared) as usize;
    WORKER_OF.with(|w| w.get() == addr)
}

/// Starts one worker for the pool, as the core asked. If the OS refuses the thread, the core
/// takes the worker back; should that leave queued tasks and no worker at all, the calling
/// thread runs them, so that nothing queued is lost.
pub(super) fn start<T: Runnable>(shared: &Arc<Shared<T>>) {
    let for_worker = Arc::clone(shared);
    let spawned = thread::Builder::new()
        .name(format!("podq/{}", shared.name))
        .spawn(move || run(&for_worker));
    if let Err(_error) = &spawned {
        #[cfg(feature = "tracing")]
        crate::trace::spawn_failed(&shared.name, _error);
        shared.spawn_failures.fetch_add(1, Ordering::Relaxed);
        if shared.core.spawn_failed() {
            while let Some(task) = shared.core.pop() {
                run_task(shared, task);
            }
        }
    }
}

/// Acts on what the core asked for when work waits with every worker busy: start a worker now,
/// or have the stall watchdog watch the pool.
pub(super) fn grow_pool<T: Runnable>(shared: &Arc<Shared<T>>, grow: Grow) {
    match grow {
        Grow::No => {}
        Grow::Spawn => {
            #[cfg(feature = "tracing")]
            crate::trace::pool_grows(&shared.name, "busy");
            start(shared);
        }
        Grow::Watch => {
            let weak: std::sync::Weak<Shared<T>> = Arc::downgrade(shared);
            super::watchdog::watch(weak);
        }
    }
}

/// The worker thread's body.
fn run<T: Runnable>(shared: &Arc<Shared<T>>) {
    WORKER_OF.with(|w| w.set(Arc::as_ptr(shared) as usize));
    place(shared);
    #[cfg(feature = "tracing")]
    crate::trace::worker_started(&shared.name);
    let mut slot = WorkerSlot::new();
    // Leaves on `Next::Exit` (retired when idle, or shut down with nothing queued): either way
    // nothing waits that another worker, or one that the next push starts, will not run.
    while let Next::Run { item, grow } = shared.core.next(&mut slot, || shared.lanes.here()) {
        grow_pool(shared, grow);
        if run_task(shared, item) {
            slot.ran_one();
        }
    }
    #[cfg(feature = "tracing")]
    crate::trace::worker_exits(&shared.name);
    WORKER_OF.with(|w| w.set(0));
}

/// Runs one task, containing a panic that escapes it (a task is not supposed to unwind; the
/// worker goes on either way). Returns whether it ran to the end.
fn run_task<T: Runnable>(shared: &Shared<T>, task: T) -> bool {
    match panic::catch_unwind(AssertUnwindSafe(|| task.run())) {
        Ok(()) => true,
        Err(payload) => {
            shared.worker_panics.fetch_add(1, Ordering::Relaxed);
            // Dropping a payload can itself panic (a payload whose Drop panics); contain that
            // too rather than lose the worker.
            let _ = panic::catch_unwind(AssertUnwindSafe(move || drop(payload)));
            false
        }
    }
}

/// Puts the calling worker on its pod: strict workers stay on the pod's CPUs; non-strict ones
/// move there first (so they start near the queue's data) and are then allowed the whole
/// workqueue's CPUs, where the OS may move them. A pin that fails (a CPU of a synthetic
/// topology that this machine lacks, a cpuset that changed) leaves the worker where it is,
/// counted once per worker in `pin_failures`.
fn place<T>(shared: &Shared<T>) {
    let home = if shared.pod.cpus.is_empty() {
        &shared.cpus
    } else {
        &shared.pod.cpus
    };
    let mut failed = pin(home).is_err();
    if !shared.strict && *home != shared.cpus {
        failed |= pin(&shared.cpus).is_err();
    }
    if failed {
        shared.pin_failures.fetch_add(1, Ordering::Relaxed);
    }
}

fn pin(cpus: &CpuSet) -> std::io::Result<()> {
    let ids: Vec<usize> = cpus.iter().collect();
    crate::sys::pin_current_thread(&ids)
}
