//! The thread-limit scenario, shared by `tests/thread_limit.rs` (which runs it in a child
//! process and checks what happens) and `examples/thread_limit.rs` (which prints the times):
//! an unprivileged process lowers `RLIMIT_NPROC` to its own thread count once a first
//! workqueue has run an item, then queues to workqueues built after that.
//!
//! Root ignores `RLIMIT_NPROC`, so a process running as root first drops to the unprivileged
//! user 65534 (`nobody`); where it cannot, or where the limit is not enforced, the scenario is
//! skipped with a message.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use podq::{AffinityScope, DelayedWork, Error, Workqueue};

/// How long any one wait of the scenario may take before it counts as a hang.
const HANG: Duration = Duration::from_secs(30);

/// What the scenario saw.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// It could not run here, and why.
    Skipped(String),
    /// It ran; the times measured (reported, not checked).
    Ran(Times),
}

/// The times the scenario measures.
#[derive(Debug)]
pub(crate) struct Times {
    /// How long `try_queue` of a 2-second item took to return.
    pub(crate) try_queue_return: Duration,
    /// How long after its 10 ms delay the delayed item started.
    pub(crate) delayed_late: Duration,
    /// The answer to a build with an impossible `worker_stack_size`, at the limit.
    pub(crate) huge_stack: String,
    /// How the workqueues built after the limit came out (built, or refused cleanly).
    pub(crate) builds: Vec<String>,
}

/// The user and group that the scenario drops to when it runs as root.
const NOBODY: u32 = 65534;

/// Drops root's privileges: `None` when done (or not root), else why not.
#[allow(unsafe_code)]
fn unprivileged() -> Option<String> {
    // SAFETY: `geteuid` reads the caller's effective user id; it has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    // SAFETY: `setgroups` with a count of 0 reads no memory; `setgid` and `setuid` take plain
    // ids. Each only changes this process's credentials.
    let dropped = unsafe {
        libc::setgroups(0, std::ptr::null()) == 0
            && libc::setgid(NOBODY) == 0
            && libc::setuid(NOBODY) == 0
    };
    (!dropped).then(|| {
        format!(
            "running as root, cannot drop to user {NOBODY}: {}",
            std::io::Error::last_os_error()
        )
    })
}

/// The threads of this process, from `/proc/self/status`.
fn own_threads() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
}

/// Sets `RLIMIT_NPROC` (soft and hard) to `limit`.
#[allow(unsafe_code)]
fn limit_threads(limit: u64) -> std::io::Result<()> {
    let lim = libc::rlimit {
        rlim_cur: limit as libc::rlim_t,
        rlim_max: limit as libc::rlim_t,
    };
    // SAFETY: `lim` is a valid `rlimit` that lives across the call, which only reads it.
    if unsafe { libc::setrlimit(libc::RLIMIT_NPROC, &lim) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// A workqueue built after the limit, or the clean refusal of its build (`Err` with its
/// message; any other error is a failure).
fn build_after(
    name: &str,
    max_active: Option<usize>,
    builds: &mut Vec<String>,
) -> Result<Option<Workqueue>, String> {
    let mut builder = Workqueue::builder(name).scope(AffinityScope::System);
    if let Some(n) = max_active {
        builder = builder.max_active(n);
    }
    match builder.build() {
        Ok(wq) => {
            builds.push(format!("{name}: built"));
            Ok(Some(wq))
        }
        Err(e @ Error::ThreadRefused { .. }) => {
            builds.push(format!("{name}: refused at build: {e}"));
            Ok(None)
        }
        Err(e) => Err(format!("{name}: unexpected build error: {e}")),
    }
}

/// Runs the scenario in this process (which it leaves unprivileged and at its thread limit).
///
/// # Errors
///
/// What went wrong: an item that ran on the calling thread, a wait that hung, a build that
/// failed other than cleanly.
pub(crate) fn run() -> Result<Outcome, String> {
    if let Some(why) = unprivileged() {
        return Ok(Outcome::Skipped(why));
    }
    let first = Workqueue::builder("first")
        .scope(AffinityScope::System)
        .build()
        .map_err(|e| format!("first build: {e}"))?;
    let (ran, seen) = mpsc::channel::<()>();
    first.queue(move || {
        let _ = ran.send(());
    });
    seen.recv_timeout(HANG)
        .map_err(|_| "the first item never ran")?;
    let threads = own_threads().ok_or("cannot read /proc/self/status")?;
    limit_threads(threads).map_err(|e| format!("setrlimit(RLIMIT_NPROC, {threads}): {e}"))?;
    if let Ok(probe) = thread::Builder::new().spawn(|| {}) {
        let _ = probe.join();
        return Ok(Outcome::Skipped(format!(
            "RLIMIT_NPROC={threads} is not enforced on this process (a capability it keeps?)"
        )));
    }
    let caller = thread::current().id();
    let mut builds = Vec::new();

    // The three lines: A queues B, B queues C, on max_active(1).
    if let Some(wq) = build_after("chain", Some(1), &mut builds)? {
        let wq = Arc::new(wq);
        let (ran, seen) = mpsc::channel::<ThreadId>();
        let (wq_a, ran_a) = (Arc::clone(&wq), ran.clone());
        wq.queue(move || {
            let (wq_b, ran_b) = (Arc::clone(&wq_a), ran_a.clone());
            wq_a.queue(move || {
                let ran_c = ran_b.clone();
                wq_b.queue(move || {
                    let _ = ran_c.send(thread::current().id());
                });
                let _ = ran_b.send(thread::current().id());
            });
            let _ = ran_a.send(thread::current().id());
        });
        for item in ["A", "B", "C"] {
            let on = seen
                .recv_timeout(HANG)
                .map_err(|_| format!("max_active chain: {item} never ran"))?;
            if on == caller {
                return Err(format!("max_active chain: {item} ran on the caller"));
            }
        }
    }

    // try_queue of a 2-second item returns at once, without running it.
    let mut try_queue_return = Duration::ZERO;
    if let Some(wq) = build_after("try", None, &mut builds)? {
        let done = Arc::new(AtomicBool::new(false));
        let (ran, seen) = mpsc::channel::<ThreadId>();
        let item_done = Arc::clone(&done);
        let t0 = Instant::now();
        let queued = wq.try_queue(move || {
            let _ = ran.send(thread::current().id());
            thread::sleep(Duration::from_secs(2));
            item_done.store(true, Ordering::SeqCst);
        });
        try_queue_return = t0.elapsed();
        queued.map_err(|e| format!("try_queue: {e}"))?;
        if done.load(Ordering::SeqCst) {
            return Err("try_queue returned after running the item".into());
        }
        let on = seen
            .recv_timeout(HANG)
            .map_err(|_| "try_queue: the item never ran")?;
        if on == caller {
            return Err("try_queue: the item ran on the caller".into());
        }
        if !wq.flush() || !done.load(Ordering::SeqCst) {
            return Err("try_queue: the item did not complete".into());
        }
    }

    // queue while holding a lock that the item takes.
    if let Some(wq) = build_after("lock", None, &mut builds)? {
        let lock = Arc::new(Mutex::new(0u32));
        let (ran, seen) = mpsc::channel::<ThreadId>();
        let held = lock.lock().map_err(|_| "poisoned")?;
        let for_item = Arc::clone(&lock);
        wq.queue(move || {
            if let Ok(mut n) = for_item.lock() {
                *n += 1;
            }
            let _ = ran.send(thread::current().id());
        });
        drop(held);
        let on = seen
            .recv_timeout(HANG)
            .map_err(|_| "queue under a lock: never ran")?;
        if on == caller {
            return Err("queue under a lock: the item ran on the caller".into());
        }
    }

    // A 10 ms delayed item on the first workqueue.
    let delay = Duration::from_millis(10);
    let (fired, seen) = mpsc::channel::<(Instant, ThreadId)>();
    let d = DelayedWork::new(move || {
        let _ = fired.send((Instant::now(), thread::current().id()));
    });
    let armed = Instant::now();
    first.queue_delayed(&d, delay);
    let (at, on) = seen
        .recv_timeout(HANG)
        .map_err(|_| "the 10 ms delayed item never ran")?;
    if on == caller {
        return Err("the delayed item ran on the caller".into());
    }
    let delayed_late = at.saturating_duration_since(armed + delay);

    // An impossible stack size is refused at build, cleanly.
    let huge_stack = match Workqueue::builder("huge")
        .worker_stack_size(1 << 50)
        .build()
    {
        Ok(_) => return Err("a 1 PiB worker_stack_size was accepted".into()),
        Err(e @ (Error::WorkerStackSize { .. } | Error::ThreadRefused { .. })) => e.to_string(),
        Err(e) => return Err(format!("1 PiB stack: unexpected error: {e}")),
    };
    Ok(Outcome::Ran(Times {
        try_queue_return,
        delayed_late,
        huge_stack,
        builds,
    }))
}
