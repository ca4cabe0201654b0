//! Systems other than Linux: no CPU ids, no affinity. podq still runs, with one pod.

use std::io;

/// Not followed here: podq keeps no fork generations on systems other than Linux, so a child
/// of `fork()` must not use podq state made before the fork.
pub(crate) fn on_fork_in_child(_handler: extern "C" fn()) -> io::Result<()> {
    Ok(())
}

/// Unknown on this system.
pub(crate) fn current_cpu() -> Option<usize> {
    None
}

/// Unknown on this system.
pub(crate) fn preemptions() -> Option<u64> {
    None
}

/// Every CPU the standard library reports, numbered from 0.
pub(crate) fn allowed_cpus() -> io::Result<Vec<usize>> {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    Ok((0..n).collect())
}

/// Every CPU the standard library reports, as for [`allowed_cpus`].
pub(crate) fn process_allowed_cpus() -> io::Result<Vec<usize>> {
    allowed_cpus()
}

/// Pinning is not supported here.
pub(crate) fn pin_current_thread(_cpus: &[usize]) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "thread affinity is only supported on Linux",
    ))
}

/// Pinning is not supported here.
pub(crate) fn pin_thread<T>(
    _thread: &std::thread::JoinHandle<T>,
    _cpus: &[usize],
) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "thread affinity is only supported on Linux",
    ))
}

/// A thread's nice value cannot be set here.
pub(crate) fn set_current_thread_nice(_nice: i32) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "a worker's nice value is only supported on Linux",
    ))
}

/// A thread's scheduler state cannot be read here: no probe, so blocked workers are found only
/// by the stall watchdog's progress check.
#[derive(Debug)]
pub(crate) struct ThreadProbe;

impl ThreadProbe {
    /// Always `None` here.
    pub(crate) fn of_current_thread() -> Option<ThreadProbe> {
        None
    }

    /// Never reached (there is no probe).
    pub(crate) fn is_sleeping(&self) -> bool {
        false
    }
}
