//! [`WorkerOptions`]: how a pool's worker threads are made (stack size, nice value) and the
//! hooks that see each one start and stop, with the [`WorkerInfo`] they are given. Part of a
//! pool's attributes: pools whose options differ are never shared.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::io;
use std::sync::Arc;

use crate::cpuset::CpuSet;

/// What a worker hook ([`on_worker_start`], [`on_worker_stop`]) is told about the worker
/// thread it runs on.
///
/// [`on_worker_start`]: crate::WorkqueueBuilder::on_worker_start
/// [`on_worker_stop`]: crate::WorkqueueBuilder::on_worker_stop
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerInfo {
    /// The worker's pool, by its short name (`cs8-p2`); the thread is named `podq/` and this.
    pub pool: String,
    /// The pod the pool serves (its id under the workqueue's scope).
    pub pod: usize,
    /// The pod's CPUs, within the workqueue's CPUs: where the worker starts.
    pub cpus: CpuSet,
}

/// A hook run on a worker thread; equal only to itself (the same `Arc`).
#[derive(Clone)]
pub(crate) struct Hook(pub(crate) Arc<dyn Fn(&WorkerInfo) + Send + Sync + 'static>);

impl PartialEq for Hook {
    fn eq(&self, other: &Hook) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Hook {}

impl Hash for Hook {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // The address alone, as `eq` compares (the vtable part of the pointer is left out).
        (Arc::as_ptr(&self.0) as *const () as usize).hash(state);
    }
}

impl fmt::Debug for Hook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Hook({:p})", Arc::as_ptr(&self.0) as *const ())
    }
}

/// How a pool's workers are made, and who sees them start and stop.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct WorkerOptions {
    /// Each worker thread's stack, in bytes; `None`: the standard library's default.
    pub(crate) stack_size: Option<usize>,
    /// The nice value each worker sets on itself when it starts; `None`: inherited.
    pub(crate) nice: Option<i32>,
    /// Run on each worker thread as it starts, before it runs any item.
    pub(crate) on_start: Option<Hook>,
    /// Run on each worker thread as it ends, after its last item.
    pub(crate) on_stop: Option<Hook>,
    /// The gate each worker (and helper started for the workqueue) passes before the OS is
    /// asked; `None`: the OS alone.
    pub(crate) starts: Option<crate::threads::Gate>,
}

/// Whether a worker thread may set `nice` on itself here: tried on a thread made for the
/// purpose (a nice value belongs to one thread), which ends at once.
///
/// # Errors
///
/// What setting it returned (see `sys::set_current_thread_nice`), or the OS's refusal of the
/// probe thread.
pub(crate) fn check_nice(nice: i32) -> io::Result<()> {
    std::thread::Builder::new()
        .name("podq/nice-probe".into())
        .spawn(move || crate::sys::set_current_thread_nice(nice))?
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("the probe thread panicked")))
}
