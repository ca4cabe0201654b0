//! The CPUs the process may use, and how workqueues follow them when they change.
//!
//! The CPUs a process may use change while it runs: `taskset -p` narrows or widens its main
//! thread's affinity, a cgroup's cpuset is changed, a CPU is taken offline or brought online.
//! Every workqueue built on this machine follows these limits: a `podq/limits` thread asks a
//! [`CpuLimits`] every [`LIMITS_POLL_INTERVAL`] (only while such a workqueue exists), and when
//! the answer differs from the CPUs a workqueue's pods were formed on, it re-forms them from
//! the CPUs now allowed (steps R1-R5 of `src/workqueue/README.md`):
//!
//! * new items go to the pools of the new pods, whose workers are pinned within the CPUs
//!   allowed when they start; `queue_on` a CPU no longer allowed returns
//!   [`Error::CpuNotAllowed`](crate::Error::CpuNotAllowed);
//! * nothing queued is lost: items that wait in the pools of the earlier pods move to the
//!   new pods' pools (the few that reach an earlier pool after the change run there), and
//!   `flush`, `drain`, `cancel_sync` and the drop reach them wherever they are;
//! * `max_active` and ordering hold across the change;
//! * podq never widens the affinity of a worker that runs: a narrower mask set on one of its
//!   workers stays.
//!
//! [`SystemLimits`] is the OS's answer; a workqueue given another with
//! [`WorkqueueBuilder::cpu_limits`](crate::WorkqueueBuilder::cpu_limits) follows that one
//! (tests drive cpuset and hotplug changes this way). [`Workqueue::stats`](crate::Workqueue::stats)
//! counts the re-formations.

use std::fmt;
use std::io;
use std::time::Duration;

use crate::cpuset::CpuSet;

pub use crate::sys::SystemLimits;

/// How often the `podq/limits` thread asks the limits of the workqueues that follow them:
/// 250 ms, so that a change is followed within a second (within one interval plus the time to
/// form the new pools) at the cost of a few file reads and one system call four times a
/// second. Measured on a 2-CPU VM, the main thread's affinity narrowed under a flood: followed
/// in 196-220 ms in 8 runs (`cargo test -p podq --test reform -- --nocapture`).
pub const LIMITS_POLL_INTERVAL: Duration = Duration::from_millis(250);

/// Where a workqueue learns which CPUs the process may use now.
///
/// ```
/// use std::sync::Mutex;
/// use podq::limits::CpuLimits;
/// use podq::CpuSet;
///
/// /// Limits a test changes by hand.
/// #[derive(Debug)]
/// struct Fixed(Mutex<CpuSet>);
///
/// impl CpuLimits for Fixed {
///     fn allowed(&self) -> std::io::Result<CpuSet> {
///         Ok(self.0.lock().unwrap().clone())
///     }
/// }
/// ```
pub trait CpuLimits: Send + Sync + fmt::Debug + 'static {
    /// The CPUs the process may use now.
    ///
    /// # Errors
    ///
    /// When they cannot be read; the workqueue then keeps its pods as they are.
    fn allowed(&self) -> io::Result<CpuSet>;
}

impl CpuLimits for SystemLimits {
    fn allowed(&self) -> io::Result<CpuSet> {
        SystemLimits::allowed(self)
    }
}
