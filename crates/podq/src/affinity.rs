//! The calling thread's CPU and its affinity, for programs that place their own threads.
//!
//! A workqueue places its own workers; these helpers are for the threads a program runs
//! itself. A program that pins one producer thread per CPU (to queue from every pod, or to
//! measure a scope as `podq bench` does), a test that must run on a given CPU, or a tool that
//! shows where it runs uses them instead of calling the OS. They are the same calls the
//! workers use, so a program and podq agree on what "this CPU" and "the allowed CPUs" are.
//!
//! ```
//! use podq::affinity::{allowed_cpus, current_cpu, pin_current_thread};
//! use podq::CpuSet;
//!
//! # fn main() -> std::io::Result<()> {
//! # if cfg!(not(target_os = "linux")) { return Ok(()); }
//! // One producer thread per allowed CPU, each pinned to its CPU.
//! let producers: Vec<_> = allowed_cpus()?
//!     .iter()
//!     .map(|cpu| {
//!         std::thread::spawn(move || -> std::io::Result<()> {
//!             pin_current_thread(&CpuSet::from_iter([cpu]))?;
//!             assert_eq!(current_cpu(), Some(cpu));
//!             Ok(())
//!         })
//!     })
//!     .collect();
//! for producer in producers {
//!     producer.join().expect("producer panicked")?;
//! }
//! # Ok(())
//! # }
//! ```

use std::io;

use crate::cpuset::CpuSet;

/// The CPU the calling thread runs on now, or `None` where the OS cannot tell.
///
/// The answer can be stale as soon as it is returned: the thread may migrate at any time
/// unless it is pinned to one CPU.
///
/// ```
/// if let Some(cpu) = podq::affinity::current_cpu() {
///     println!("running on CPU {cpu}");
/// }
/// ```
#[must_use]
pub fn current_cpu() -> Option<usize> {
    crate::sys::current_cpu()
}

/// Restricts the calling thread to `cpus`.
///
/// ```
/// use podq::affinity::{allowed_cpus, current_cpu, pin_current_thread};
/// use podq::CpuSet;
///
/// # fn main() -> std::io::Result<()> {
/// # if cfg!(not(target_os = "linux")) { return Ok(()); }
/// let last = allowed_cpus()?.last().expect("at least one allowed CPU");
/// std::thread::spawn(move || -> std::io::Result<()> {
///     pin_current_thread(&CpuSet::from_iter([last]))?;
///     assert_eq!(current_cpu(), Some(last));
///     Ok(())
/// })
/// .join()
/// .expect("the pinned thread panicked")?;
/// # Ok(())
/// # }
/// ```
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
/// ```
/// # fn main() -> std::io::Result<()> {
/// # if cfg!(not(target_os = "linux")) { return Ok(()); }
/// let allowed = podq::affinity::allowed_cpus()?;
/// assert!(!allowed.is_empty());
/// # Ok(())
/// # }
/// ```
///
/// # Errors
///
/// The OS's error when the affinity cannot be read.
pub fn allowed_cpus() -> io::Result<CpuSet> {
    Ok(crate::sys::allowed_cpus()?.into_iter().collect())
}
