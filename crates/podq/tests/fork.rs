//! podq in a child process of `fork()`: the parent's workers, timer and watchdog threads do not
//! exist there. The child builds workqueues of its own (with the parent's attributes too) and
//! uses them fully; the parent's workqueues and items refuse work and return at once; the
//! parent goes on as before.
//!
//! A broken runtime hangs in the child rather than failing, so the parent waits for each child
//! with a deadline, kills it when the deadline passes and fails. All cases run in one test, one
//! after the other, so that no other test thread of this file runs while the process forks.
//!
//! The forks are made while the parent's workers, timer and watchdog may be running or parked:
//! the child must not depend on what they were doing.
#![cfg(target_os = "linux")]
#![allow(unsafe_code)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use podq::{DelayedWork, Error, JoinError, QueueError, Work, Workqueue};

/// Long enough never to pass on a busy machine when nothing is wrong; a hung child costs this.
const DEADLINE: Duration = Duration::from_secs(20);

/// The exit code of a child whose check panicked.
const PANICKED: i32 = 101;

/// Forks; the child runs `check` and exits with its code ([`PANICKED`] if it panics). Returns
/// the child's exit code, failing the test when the child has not exited within [`DEADLINE`]
/// (the child is killed) or was killed by a signal.
fn in_child(what: &str, check: impl FnOnce() -> i32) -> i32 {
    // SAFETY: fork has no memory preconditions; the child runs only `check` and `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let code = catch_unwind(AssertUnwindSafe(check)).unwrap_or(PANICKED);
        // SAFETY: _exit ends the child without running the parent's atexit handlers or
        // destructors, whose threads and locks the child does not have.
        unsafe { libc::_exit(code) };
    }
    let start = Instant::now();
    let mut status = 0;
    loop {
        // SAFETY: `status` is a live, writable int; `pid` is our child.
        let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        assert!(rc >= 0, "waitpid: {}", std::io::Error::last_os_error());
        if rc == pid {
            break;
        }
        if start.elapsed() > DEADLINE {
            // SAFETY: `pid` is our child, not yet reaped.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            panic!("{what}: the child hung for {DEADLINE:?} and was killed");
        }
        thread::sleep(Duration::from_millis(5));
    }
    assert!(
        libc::WIFEXITED(status),
        "{what}: the child ended by signal {}",
        libc::WTERMSIG(status)
    );
    libc::WEXITSTATUS(status)
}

/// Waits in the child until `done` reaches `want`; `false` after [`DEADLINE`] / 2.
fn reaches(done: &AtomicUsize, want: usize) -> bool {
    let start = Instant::now();
    while done.load(Ordering::SeqCst) < want {
        if start.elapsed() > DEADLINE / 2 {
            return false;
        }
        thread::sleep(Duration::from_millis(1));
    }
    true
}

/// A workqueue with the attributes both the parent and the child build.
fn shared_attrs() -> Workqueue {
    Workqueue::builder("fork-shared")
        .max_workers(2)
        .build()
        .expect("build")
}

/// The child builds a workqueue equal to one its parent holds: it gets pools of its own, runs
/// its items, flushes and drops.
fn child_builds_the_parents_attributes() -> i32 {
    let wq = shared_attrs();
    let done = Arc::new(AtomicUsize::new(0));
    for _ in 0..100 {
        let done = Arc::clone(&done);
        if !wq.queue(move || {
            done.fetch_add(1, Ordering::SeqCst);
        }) {
            return 2;
        }
    }
    if !wq.flush() || done.load(Ordering::SeqCst) != 100 {
        return 3;
    }
    drop(wq);
    0
}

/// The child's delayed work fires, and `DelayedWork::flush` runs a far one at once.
fn child_delayed_work_fires() -> i32 {
    let wq = Workqueue::builder("fork-child-timer")
        .build()
        .expect("build");
    let done = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&done);
    let soon = DelayedWork::new(move || {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    if !wq.queue_delayed(&soon, Duration::from_millis(5)) {
        return 2;
    }
    if !reaches(&done, 1) {
        return 3;
    }
    let counter = Arc::clone(&done);
    let far = DelayedWork::new(move || {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    wq.queue_delayed(&far, Duration::from_secs(3600));
    if !far.flush() || done.load(Ordering::SeqCst) != 2 {
        return 4;
    }
    drop(wq);
    0
}

/// The parent's workqueue and items, in the child: every call answers at once.
fn child_uses_the_parents_workqueue(
    parent: &mut Option<Workqueue>,
    running: &Work,
    pending: &Work,
    delayed: &DelayedWork,
) -> i32 {
    let wq = parent.take().expect("the parent's workqueue");
    if wq.queue(|| {}) {
        return 2;
    }
    let cpu = wq.cpus().iter().next().expect("a CPU");
    match wq.queue_on(cpu, || {}) {
        Err(Error::ParentProcess { workqueue }) if workqueue == "fork-parent" => {}
        _ => return 3,
    }
    if !matches!(
        wq.queue_work_on(cpu, &Work::new(|| {})),
        Err(Error::ParentProcess { .. })
    ) {
        return 4;
    }
    if wq.queue_delayed(&DelayedWork::new(|| {}), Duration::from_millis(1)) {
        return 5;
    }
    if wq.flush() || wq.drain() {
        return 6;
    }
    // Results, backpressure and deadlines answer at once too: a spawned closure is dropped
    // unrun, and a wait with a deadline has nothing to wait for.
    if !matches!(wq.spawn(|| 1).join(), Err(JoinError::Cancelled))
        || wq.try_queue(|| {}).map_err(QueueError::from) != Err(QueueError::ParentProcess)
        || wq.flush_timeout(DEADLINE)
        || wq.drain_timeout(DEADLINE)
        || pending.flush_timeout(DEADLINE)
    {
        return 11;
    }
    // Pending in the parent at the fork: never runs here, so there is nothing to wait for.
    if pending.flush() || !pending.cancel_sync() {
        return 7;
    }
    if delayed.flush() || !delayed.cancel_sync() {
        return 8;
    }
    if !wq.stats().pools.is_empty() {
        return 9;
    }
    // Running in the parent at the fork: its runner is not here. A queue call on a workqueue
    // of the child refuses it, and there is nothing to wait for.
    let own = shared_attrs();
    if own.queue_work(running) || running.flush() || running.cancel_sync() {
        return 10;
    }
    if own.try_queue_work(running) != Err(QueueError::ParentProcess) {
        return 12;
    }
    drop(own);
    drop(wq);
    // The child's own workqueue still works after all that.
    child_builds_the_parents_attributes()
}

#[test]
fn a_child_of_fork_uses_podq_and_never_hangs() {
    // The parent's state at the fork: busy workers, an item pending behind a blocked one, a
    // delayed item armed on the timer thread, workers of the attributes the child builds.
    let shared = shared_attrs();
    assert!(shared.queue(|| {}));
    assert!(shared.flush());
    let mut parent = Some(Workqueue::ordered("fork-parent").expect("build"));
    let wq = parent.as_ref().unwrap();
    let (release, blocked) = mpsc::channel::<()>();
    let running = Work::new(move || {
        // Ends when the parent releases it, or when the sender is dropped.
        let _ = blocked.recv();
    });
    assert!(wq.queue_work(&running));
    let start = Instant::now();
    while !running.is_running() {
        assert!(
            start.elapsed() < DEADLINE,
            "the blocking item never started"
        );
        thread::sleep(Duration::from_millis(1));
    }
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&ran);
    let pending = Work::new(move || {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    assert!(wq.queue_work(&pending));
    let counter = Arc::clone(&ran);
    let delayed = DelayedWork::new(move || {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    assert!(wq.queue_delayed(&delayed, Duration::from_secs(3600)));
    // And a producer that keeps the parent's workers locking, waking and parking while it
    // forks.
    let shared = Arc::new(shared);
    let stop = Arc::new(AtomicBool::new(false));
    let produced = Arc::new(AtomicUsize::new(0));
    let producer = {
        let (shared, stop, produced) = (
            Arc::clone(&shared),
            Arc::clone(&stop),
            Arc::clone(&produced),
        );
        thread::spawn(move || loop {
            let produced = Arc::clone(&produced);
            assert!(shared.queue(move || {
                produced.fetch_add(1, Ordering::SeqCst);
            }));
            if stop.load(Ordering::SeqCst) {
                break;
            }
            thread::yield_now();
        })
    };

    assert_eq!(
        in_child("same attributes", child_builds_the_parents_attributes),
        0,
        "same attributes"
    );
    assert_eq!(
        in_child("delayed work", child_delayed_work_fires),
        0,
        "delayed work"
    );
    assert_eq!(
        in_child("the parent's workqueue", || {
            child_uses_the_parents_workqueue(&mut parent, &running, &pending, &delayed)
        }),
        0,
        "the parent's workqueue"
    );

    // The parent goes on: its blocked item ends, its pending and delayed items run.
    stop.store(true, Ordering::SeqCst);
    producer.join().unwrap();
    assert!(shared.flush());
    assert!(produced.load(Ordering::SeqCst) > 0);
    let wq = parent.take().expect("the parent keeps its workqueue");
    release.send(()).unwrap();
    // `pending` may have run before the flush: only the count tells.
    pending.flush();
    assert!(delayed.flush());
    assert_eq!(ran.load(Ordering::SeqCst), 2);
    let done = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&done);
    assert!(shared.queue(move || {
        counter.fetch_add(1, Ordering::SeqCst);
    }));
    assert!(shared.flush());
    assert_eq!(done.load(Ordering::SeqCst), 1);
    drop(wq);
    drop(shared);
}
