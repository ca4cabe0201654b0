//! The calling thread's CPU and its affinity, for programs that place their own threads (for
//! instance a benchmark that pins one producer per CPU).

use std::io;

use crate::CpuSet;

/// The CPU the calling thread runs on now, or `None` where the OS cannot tell.
///
/// The answer can be stale as soon as it is returned: the thread may migrate at any time.
pub fn current_cpu() -> Option<usize> {
    crate::sys::current_cpu()
}

/// Restricts the calling thread to `cpus`.
///
/// # Errors
///
/// `InvalidInput` when `cpus` is empty; the OS's error when none of `cpus` may be used by this
/// process; `Unsupported` on systems other than Linux.
pub fn pin_current_thread(cpus: &CpuSet) -> io::Result<()> {
    let ids: Vec<usize> = cpus.iter().collect();
    crate::sys::pin_current_thread(&ids)
}

/// The CPUs the calling thread may run on now (`sched_getaffinity` on Linux).
///
/// # Errors
///
/// The OS's error when the affinity cannot be read.
pub fn allowed_cpus() -> io::Result<CpuSet> {
    Ok(crate::sys::allowed_cpus()?.into_iter().collect())
}
