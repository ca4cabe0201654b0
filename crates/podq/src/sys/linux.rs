//! Linux: `pthread_atfork`, `sched_getcpu`, `sched_getaffinity`, `sched_setaffinity`,
//! `setpriority` of one thread, and a thread's scheduler state from `/proc/thread-self/stat`.
#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::mem;
use std::os::unix::fs::FileExt;

/// Where another thread can read whether the thread that made it is asleep: its
/// `/proc/thread-self/stat`, opened by that thread (the file stays that thread's).
#[derive(Debug)]
pub(crate) struct ThreadProbe {
    stat: File,
}

impl ThreadProbe {
    /// The calling thread's probe; `None` where procfs cannot be read.
    pub(crate) fn of_current_thread() -> Option<ThreadProbe> {
        File::open("/proc/thread-self/stat")
            .ok()
            .map(|stat| ThreadProbe { stat })
    }

    /// Whether the thread sleeps now (state `S`, waiting for an event, or `D`, waiting for
    /// I/O), as opposed to running or runnable (`R`). One `pread` of the stat file; `false`
    /// when it cannot be read (an ended thread).
    pub(crate) fn is_sleeping(&self) -> bool {
        let mut buf = [0u8; 256];
        let Ok(n) = self.stat.read_at(&mut buf, 0) else {
            return false;
        };
        sleeping_state(&buf[..n])
    }
}

/// Whether a `/proc/.../stat` line says the thread sleeps: the state is the first field after
/// the command name, which is in parentheses and may itself hold spaces and parentheses.
fn sleeping_state(stat: &[u8]) -> bool {
    let Some(close) = stat.iter().rposition(|&b| b == b')') else {
        return false;
    };
    matches!(
        stat[close + 1..].iter().find(|b| !b.is_ascii_whitespace()),
        Some(b'S' | b'D')
    )
}

/// Has `handler` run in the child of every later `fork()` of this process, and of its
/// children (`pthread_atfork`'s child handler; no prepare or parent handler).
///
/// # Errors
///
/// The error `pthread_atfork` returns (`ENOMEM`).
pub(crate) fn on_fork_in_child(handler: extern "C" fn()) -> io::Result<()> {
    let child: unsafe extern "C" fn() = handler;
    // SAFETY: pthread_atfork only stores the function pointers; `handler` is a plain function
    // that lives as long as the program, and null prepare and parent handlers are allowed.
    let rc = unsafe { libc::pthread_atfork(None, None, Some(child)) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// The CPU the calling thread runs on now, or `None` when the kernel cannot tell.
///
/// The answer may be stale by the time the caller uses it (the thread can migrate at any
/// moment); podq only uses it to pick a pod, where a stale answer costs locality, not
/// correctness.
pub(crate) fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu takes no arguments, touches no memory of ours and only returns an
    // int (-1 on error).
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).ok()
}

/// How often the calling thread has been preempted (involuntary context switches, from
/// `getrusage(RUSAGE_THREAD)`), or `None` when the kernel cannot tell. One system call.
pub(crate) fn preemptions() -> Option<u64> {
    // SAFETY: rusage is plain integers; all zeroes is a valid value.
    let mut usage: libc::rusage = unsafe { mem::zeroed() };
    // SAFETY: `usage` is a live, writable rusage; RUSAGE_THREAD names the calling thread.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    if rc != 0 {
        return None;
    }
    u64::try_from(usage.ru_nivcsw).ok()
}

/// The CPUs the calling thread may run on (`sched_getaffinity`), ascending.
pub(crate) fn allowed_cpus() -> io::Result<Vec<usize>> {
    affinity_of(0)
}

/// The CPUs the process may run on, ascending: its main thread's affinity (`sched_getaffinity`
/// of the process id), which `taskset -p` and a cpuset change set; a thread the process
/// starts inherits the affinity of the thread that starts it, not this.
pub(crate) fn process_allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: getpid takes no arguments and cannot fail.
    let pid = unsafe { libc::getpid() };
    affinity_of(pid)
}

/// The affinity of thread `tid` (0: the calling thread), ascending.
fn affinity_of(tid: libc::pid_t) -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is a plain bit array; all zeroes is a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
    // SAFETY: `set` is a live, writable cpu_set_t and we pass its exact size; `tid` is 0 (the
    // calling thread) or the process id (its main thread).
    let rc = unsafe { libc::sched_getaffinity(tid, mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let max = 8 * mem::size_of::<libc::cpu_set_t>();
    Ok((0..max)
        // SAFETY: `cpu` is below CPU_SETSIZE (the bit size of cpu_set_t), as CPU_ISSET requires.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect())
}

/// Restricts the calling thread to `cpus` (`sched_setaffinity`).
///
/// # Errors
///
/// `InvalidInput` when `cpus` is empty or names a CPU beyond `CPU_SETSIZE`; otherwise the
/// kernel's error (for instance when none of `cpus` is allowed to this process).
pub(crate) fn pin_current_thread(cpus: &[usize]) -> io::Result<()> {
    let set = cpu_set_of(cpus)?;
    // SAFETY: `set` is a valid cpu_set_t of the size we pass; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Restricts `thread`, a thread this process started and has not yet detached or joined, to
/// `cpus` (`pthread_setaffinity_np`). When the CPU it waits on is not among `cpus`, the kernel
/// moves it at once.
///
/// # Errors
///
/// As for [`pin_current_thread`].
pub(crate) fn pin_thread<T>(thread: &std::thread::JoinHandle<T>, cpus: &[usize]) -> io::Result<()> {
    use std::os::unix::thread::JoinHandleExt;
    let set = cpu_set_of(cpus)?;
    // SAFETY: the handle is borrowed, so the thread is neither joined nor detached and its
    // pthread_t stays valid for the call, even if the thread has already ended; `set` is a valid
    // cpu_set_t of the size we pass.
    let rc = unsafe {
        libc::pthread_setaffinity_np(
            thread.as_pthread_t(),
            mem::size_of::<libc::cpu_set_t>(),
            &set,
        )
    };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// The `cpu_set_t` of `cpus`; `InvalidInput` when `cpus` is empty or names a CPU beyond
/// `CPU_SETSIZE`.
fn cpu_set_of(cpus: &[usize]) -> io::Result<libc::cpu_set_t> {
    let max = 8 * mem::size_of::<libc::cpu_set_t>();
    if cpus.is_empty() || cpus.iter().any(|&c| c >= max) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("cannot pin to CPUs {cpus:?}: need 1 to {max} CPU ids below {max}"),
        ));
    }
    // SAFETY: all zeroes is a valid empty cpu_set_t.
    let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
    for &cpu in cpus {
        // SAFETY: `cpu < max` was checked above, so CPU_SET stays inside the bit array.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    Ok(set)
}

/// Sets the calling thread's nice value (`setpriority` on its thread id: on Linux a nice
/// value belongs to a thread, not to the whole process).
///
/// # Errors
///
/// `InvalidInput` for a value outside -20 to 19 (the kernel would clamp it silently);
/// otherwise the kernel's error: `EACCES` (`PermissionDenied`) for a value below the thread's
/// own without `CAP_SYS_NICE` or room in `RLIMIT_NICE`.
pub(crate) fn set_current_thread_nice(nice: i32) -> io::Result<()> {
    if !(-20..=19).contains(&nice) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("nice {nice} is outside -20 to 19"),
        ));
    }
    // SAFETY: the gettid system call takes no arguments, touches no memory and cannot fail.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) };
    let Ok(tid) = libc::id_t::try_from(tid) else {
        return Err(io::Error::other(format!("thread id {tid} out of range")));
    };
    // SAFETY: setpriority only reads its three integer arguments; `tid` is the calling
    // thread's id, so PRIO_PROCESS with it names this thread alone.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, nice) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_thread_runs_on_an_allowed_cpu() {
        let allowed = allowed_cpus().expect("sched_getaffinity");
        assert!(!allowed.is_empty());
        if let Some(cpu) = current_cpu() {
            assert!(
                allowed.contains(&cpu),
                "running on {cpu}, allowed {allowed:?}"
            );
        }
    }

    #[test]
    fn pinning_to_one_cpu_keeps_the_thread_there() {
        let allowed = allowed_cpus().expect("sched_getaffinity");
        let last = *allowed.last().unwrap();
        std::thread::spawn(move || {
            pin_current_thread(&[last]).expect("pin");
            assert_eq!(allowed_cpus().unwrap(), vec![last]);
            assert_eq!(current_cpu(), Some(last));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_probe_tells_a_sleeping_thread_from_a_running_one() {
        assert!(sleeping_state(b"12 (podq/cs8 (p0)) S 1 2"));
        assert!(sleeping_state(b"12 (x) D 1"));
        assert!(!sleeping_state(b"12 (a) b) R 1"));
        assert!(!sleeping_state(b"garbage"));
        let (tx, rx) = std::sync::mpsc::channel();
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let sleeper = std::thread::spawn(move || {
            tx.send(ThreadProbe::of_current_thread()).unwrap();
            wait.recv().unwrap();
        });
        let probe = rx.recv().unwrap().expect("procfs");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !probe.is_sleeping() {
            assert!(std::time::Instant::now() < deadline, "never seen asleep");
            std::thread::yield_now();
        }
        // The calling thread runs while it reads its own state.
        assert!(!ThreadProbe::of_current_thread().unwrap().is_sleeping());
        go.send(()).unwrap();
        sleeper.join().unwrap();
    }

    #[test]
    fn a_thread_raises_its_own_nice_value_and_out_of_range_is_refused() {
        std::thread::spawn(|| {
            set_current_thread_nice(19).expect("raising one's nice value is always allowed");
            // SAFETY: getpriority reads its integer arguments only; 0 is the calling thread.
            let now = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
            assert_eq!(now, 19);
        })
        .join()
        .unwrap();
        assert_eq!(
            set_current_thread_nice(20).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
    }

    #[test]
    fn pinning_to_nothing_is_refused() {
        assert_eq!(
            pin_current_thread(&[]).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        assert!(pin_current_thread(&[usize::MAX]).is_err());
    }
}
