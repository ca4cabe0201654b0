//! podq's own threads, and what happens when the machine refuses one.
//!
//! Besides each pool's workers, podq runs a few process-wide helper threads: the
//! `podq/rescuer` (one per worker stack size: it runs the waiting items of pools that cannot
//! start a worker, steps M1-M5 of `src/pool/README.md`), the `podq/timer` (delayed work), the
//! `podq/watchdog` (workers for blocked ones), the `podq/reaper` (a workqueue dropped from one
//! of its own items) and, for workqueues that follow the CPUs allowed, the `podq/limits`
//! follower. [`WorkqueueBuilder::build`](crate::WorkqueueBuilder::build) starts every one
//! that the workqueue needs and that is not running yet, and fails with
//! [`Error::ThreadRefused`](crate::Error::ThreadRefused) (or
//! [`Error::WorkerStackSize`](crate::Error::WorkerStackSize) for a rescuer of the workqueue's
//! stack size) when the OS refuses one; a workqueue that was built therefore never needs a new
//! thread to run what is queued to it.
//!
//! Workers are different: a pool starts them on demand, and the OS may refuse them later (the
//! process's `RLIMIT_NPROC`, a container's pids limit, memory). A refused pool counts it
//! ([`PoolStats::spawn_failures`](crate::PoolStats::spawn_failures), since when:
//! [`PoolStats::workers_refused_since`](crate::PoolStats::workers_refused_since)), hands its
//! waiting items to its rescuer, and tries again every [`RETRY_INTERVAL`]. Nothing queued ever
//! runs on the thread that queued it.
//!
//! [`ThreadStarts`], given to
//! [`WorkqueueBuilder::thread_starts`](crate::WorkqueueBuilder::thread_starts), stands between
//! podq and the OS for the threads started on a workqueue's behalf; tests refuse starts with
//! it, as [`crate::limits::CpuLimits`] changes the CPUs allowed.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// How long a pool whose worker was refused waits before it asks the OS again: 100 ms, the
/// kernel's `MAYDAY_INTERVAL` (the period of its pool's mayday timer). Within it, the starts
/// that the pool's protocol asks for are refused at once, without a system call, so that a
/// flood of pushes to a refused pool does not pay for a failed `clone` each.
pub const RETRY_INTERVAL: Duration = Duration::from_millis(100);

/// A gate that every thread started on a workqueue's behalf passes before the OS is asked.
///
/// ```
/// use std::io;
/// use podq::threads::ThreadStarts;
///
/// /// Refuses every worker, as a process at its thread limit would.
/// #[derive(Debug)]
/// struct NoWorkers;
///
/// impl ThreadStarts for NoWorkers {
///     fn check(&self, name: &str) -> io::Result<()> {
///         if name.starts_with("podq/") && !name.starts_with("podq/rescuer") {
///             return Err(io::Error::new(io::ErrorKind::WouldBlock, "no more threads"));
///         }
///         Ok(())
///     }
/// }
/// ```
pub trait ThreadStarts: Send + Sync + fmt::Debug + 'static {
    /// Whether the thread named `name` (`podq/` and a pool's name for a worker, `podq/rescuer`,
    /// `podq/timer`, `podq/watchdog`, `podq/reaper`, `podq/limits` for the helpers) may be
    /// started now.
    ///
    /// # Errors
    ///
    /// The refusal, which podq treats as the OS's.
    fn check(&self, name: &str) -> io::Result<()>;
}

/// A workqueue's gate, in its pools' attributes: equal only to itself (the same `Arc`), so
/// that workqueues with different gates never share pools.
#[derive(Clone)]
pub(crate) struct Gate(pub(crate) Arc<dyn ThreadStarts>);

impl Gate {
    /// Asks `gate`, if there is one, whether `name` may start.
    pub(crate) fn check(gate: Option<&Gate>, name: &str) -> io::Result<()> {
        match gate {
            Some(gate) => gate.0.check(name),
            None => Ok(()),
        }
    }
}

impl PartialEq for Gate {
    fn eq(&self, other: &Gate) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Gate {}

impl Hash for Gate {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // The address alone, as `eq` compares (the vtable part of the pointer is left out).
        (Arc::as_ptr(&self.0) as *const () as usize).hash(state);
    }
}

impl fmt::Debug for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Gate({:?})", self.0)
    }
}

/// Whether a process-wide helper thread runs; it is started by the first caller of
/// [`Helper::ensure`] that the gate and the OS let through, and tried again by the next caller
/// after a refusal.
#[derive(Debug, Default)]
pub(crate) struct Helper {
    /// L: whether the thread was started. The lock makes two first callers start one thread.
    started: Mutex<bool>,
    /// A: the same, read without the lock by the callers that find it started (a timer arm,
    /// a watch). Relaxed: the helper's state has locks of its own.
    running: AtomicBool,
}

impl Helper {
    /// A helper not started yet.
    pub(crate) const fn new() -> Self {
        Helper {
            started: Mutex::new(false),
            running: AtomicBool::new(false),
        }
    }

    /// Starts the helper `name` running `body` on the process's CPUs, unless it runs already.
    ///
    /// # Errors
    ///
    /// The gate's or the OS's refusal; a later call tries again.
    pub(crate) fn ensure(
        &self,
        name: &str,
        gate: Option<&Gate>,
        body: impl FnOnce() + Send + 'static,
    ) -> io::Result<()> {
        self.ensure_sized(name, None, gate, body)
    }

    /// As [`Helper::ensure`], with a stack of `stack` bytes (`None`: the standard library's).
    ///
    /// # Errors
    ///
    /// The gate's or the OS's refusal; a later call tries again.
    pub(crate) fn ensure_sized(
        &self,
        name: &str,
        stack: Option<usize>,
        gate: Option<&Gate>,
        body: impl FnOnce() + Send + 'static,
    ) -> io::Result<()> {
        if self.running.load(Ordering::Relaxed) {
            return Ok(());
        }
        let mut started = self.started.lock().unwrap_or_else(PoisonError::into_inner);
        if *started {
            return Ok(());
        }
        Gate::check(gate, name)?;
        crate::launch::spawn_helper(name, stack, body)?;
        *started = true;
        self.running.store(true, Ordering::Relaxed);
        Ok(())
    }
}
