//! The helper threads a workqueue's build starts (see `crate::threads`), and the reaper, one
//! of them.

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use crate::error::{Error, Result};
use crate::fork::PerFork;
use crate::pool::{self, WorkerOptions};
use crate::threads::Helper;
use crate::workqueue::api::flush::until_empty;
use crate::workqueue::item::flush::Flush;
use crate::workqueue::layout::{follow, Layouts};
use crate::workqueue::task::shared::WqShared;
use crate::workqueue::task::timer;

/// Starts every helper thread a workqueue with `worker`'s options needs and that does not
/// run yet, through its gate: the rescuer of its workers' stack size, the timer, the
/// watchdog, the reaper, and when it `follows` limits the limits follower.
///
/// # Errors
///
/// [`Error::WorkerStackSize`] when the rescuer of a `worker_stack_size` is refused while a
/// thread with the default stack starts, [`Error::ThreadRefused`] for any other refusal.
pub(super) fn ensure(worker: &WorkerOptions, follows: bool) -> Result<()> {
    let gate = worker.starts.as_ref();
    pool::ensure_rescuer(worker.stack_size, gate).map_err(|e| match worker.stack_size {
        // glibc answers `EAGAIN` both at the thread limit and for a stack it cannot map: a
        // thread with the default stack, started and ended at once, tells them apart.
        Some(bytes) if default_stack_starts() => Error::WorkerStackSize {
            bytes,
            reason: e.to_string(),
        },
        _ => refused("podq/rescuer", &e),
    })?;
    timer::ensure(gate).map_err(|e| refused("podq/timer", &e))?;
    pool::ensure_watchdog(gate).map_err(|e| refused("podq/watchdog", &e))?;
    ensure_reaper(gate).map_err(|e| refused("podq/reaper", &e))?;
    if follows {
        follow::ensure(gate).map_err(|e| refused("podq/limits", &e))?;
    }
    Ok(())
}

/// Whether the OS starts a thread with the standard library's stack now (one that ends at
/// once).
fn default_stack_starts() -> bool {
    std::thread::Builder::new()
        .name("podq/stack-probe".into())
        .spawn(|| {})
        .is_ok_and(|probe| probe.join().is_ok())
}

fn refused(thread: &str, error: &io::Error) -> Error {
    Error::ThreadRefused {
        thread: thread.to_owned(),
        reason: error.to_string(),
    }
}

/// A workqueue dropped from one of its own items, for the reaper to finish.
type Reaped = (Arc<WqShared>, Arc<Layouts>);

/// The reaper: workqueues dropped from their own items, and its thread.
struct Reaper {
    /// L: those the thread has not finished yet, oldest first.
    queue: Mutex<VecDeque<Reaped>>,
    /// Signalled when one is added.
    wake: Condvar,
    /// Its thread.
    thread: Helper,
}

/// The process's reaper: one per fork generation (`fork.rs`).
static REAPER: PerFork<Reaper> = PerFork::new();

fn reaper() -> &'static Reaper {
    REAPER.get(|| Reaper {
        queue: Mutex::new(VecDeque::new()),
        wake: Condvar::new(),
        thread: Helper::new(),
    })
}

fn ensure_reaper(gate: Option<&crate::threads::Gate>) -> io::Result<()> {
    let reaper = reaper();
    reaper.thread.ensure("podq/reaper", gate, move || loop {
        let mut queue = reaper.queue.lock().unwrap_or_else(PoisonError::into_inner);
        let (wq, layouts) = loop {
            match queue.pop_front() {
                Some(next) => break next,
                None => {
                    queue = reaper
                        .wake
                        .wait(queue)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            }
        };
        drop(queue);
        until_empty(&wq, &layouts);
        Flush::wait_for_leavers(layouts.counters());
    })
}

/// The drop of a workqueue from one of its own items: the `podq/reaper` thread (started at
/// the first build) waits until its executions are done, as the drop would, and then lets
/// the layouts go. Should the thread not run (refused at every build since), it is tried
/// again now, and the workqueue waits in the reaper's list for a later start; its layouts'
/// memory stays meanwhile, so the executions still run safely.
pub(super) fn reap(wq: Arc<WqShared>, layouts: Arc<Layouts>) {
    let reaper = reaper();
    reaper
        .queue
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push_back((wq, layouts));
    reaper.wake.notify_one();
    drop(ensure_reaper(None));
}
