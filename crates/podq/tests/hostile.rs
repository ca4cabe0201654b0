//! Work items that fight back: a panic whose payload panics when dropped, a closure that holds
//! its own workqueue's last handle, a captured value whose `Drop` panics. Handled carelessly,
//! each leaves an item running forever, a drain waiting on itself, or a panic counted nowhere.
//!
//! A broken runtime hangs here rather than failing an assertion, so every wait has a generous
//! deadline and fails the test when it passes.

use std::panic::panic_any;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use podq::{AffinityScope, Work, Workqueue};

/// Long enough never to pass on a busy machine when nothing is wrong.
const DEADLINE: Duration = Duration::from_secs(30);

/// A panic payload whose `Drop` panics.
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("the payload's drop panics");
    }
}

/// Runs `f` on another thread; fails the test if it has not returned within [`DEADLINE`].
fn within_deadline<R: Send + 'static>(what: &str, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (done, result) = mpsc::channel();
    thread::spawn(move || {
        let _ = done.send(f());
    });
    result
        .recv_timeout(DEADLINE)
        .unwrap_or_else(|_| panic!("{what} did not return within {DEADLINE:?}"))
}

#[test]
fn a_panic_whose_payload_panics_on_drop_ends_the_run_like_any_panic() {
    let wq = Arc::new(Workqueue::builder("bomb").build().expect("workqueue"));
    let work = Work::new(|| {
        panic_any(Bomb);
    });
    assert!(wq.queue_work(&work));
    // The flush returns (whether it had to wait depends on how far the run got).
    {
        let work = work.clone();
        within_deadline("Work::flush", move || work.flush());
    }
    // The item is idle again: neither running nor pending, so it can be queued, and
    // cancelled, again.
    assert!(!work.is_running() && !work.is_pending());
    assert!(wq.queue_work(&work));
    {
        let work = work.clone();
        within_deadline("Work::cancel_sync", move || work.cancel_sync());
    }
    let one_shot = Arc::clone(&wq);
    within_deadline("Workqueue::flush", move || {
        assert!(one_shot.queue(|| {
            panic_any(Bomb);
        }));
        one_shot.flush()
    });
    let stats = wq.stats();
    assert!(stats.panicked >= 2, "{stats:?}");
    assert_eq!(stats.completed, stats.started);
    assert!(
        stats.pools.iter().all(|p| p.worker_panics == 0),
        "{stats:?}"
    );
}

#[test]
fn an_ordered_workqueue_goes_on_after_a_bomb() {
    let wq = Arc::new(Workqueue::ordered("bomb-ordered").expect("workqueue"));
    let (ran, seen) = mpsc::channel();
    assert!(wq.queue(|| {
        panic_any(Bomb);
    }));
    assert!(wq.queue(move || ran.send(()).expect("send")));
    seen.recv_timeout(DEADLINE)
        .expect("the item after the bomb never ran");
    let wq2 = Arc::clone(&wq);
    assert!(within_deadline("flush", move || wq2.flush()));
    assert_eq!(wq.stats().panicked, 1);
}

#[test]
fn a_work_item_that_holds_its_own_workqueues_last_handle_lets_the_items_behind_it_run() {
    // One worker per pool: if the item's drop drained the workqueue on that worker, the items
    // behind it would never run.
    let wq = Arc::new(
        Workqueue::builder("own-last-handle")
            .scope(AffinityScope::System)
            .max_workers(1)
            .build()
            .expect("workqueue"),
    );
    let (go, wait) = mpsc::channel::<()>();
    let wait = Mutex::new(wait);
    let work = {
        let wq = Arc::clone(&wq);
        Work::new(move || {
            let _own = &wq;
            let _ = wait.lock().unwrap().recv_timeout(DEADLINE);
        })
    };
    assert!(wq.queue_work(&work));
    let (ran, seen) = mpsc::channel();
    for i in 0..3 {
        let ran = ran.clone();
        assert!(wq.queue(move || ran.send(i).expect("send")));
    }
    // Let go of every handle but the closure's, then let the item finish.
    drop(work);
    drop(wq);
    go.send(()).expect("the item waits");
    let mut behind: Vec<i32> = (0..3)
        .map(|_| {
            seen.recv_timeout(DEADLINE)
                .expect("an item behind the self-holding item never ran")
        })
        .collect();
    behind.sort_unstable();
    assert_eq!(behind, [0, 1, 2]);
}

/// A captured value whose `Drop` panics.
struct PanicOnDrop;

impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        panic!("a captured value's drop panics");
    }
}

#[test]
fn a_capture_that_panics_when_the_worker_drops_it_is_counted() {
    let wq = Arc::new(Workqueue::builder("drop-panic").build().expect("workqueue"));
    let (go, wait) = mpsc::channel::<()>();
    let wait = Mutex::new(wait);
    let (started, is_running) = mpsc::channel::<()>();
    let capture = PanicOnDrop;
    let work = Work::new(move || {
        let _keep = &capture;
        let _ = started.send(());
        let _ = wait.lock().unwrap().recv_timeout(DEADLINE);
    });
    assert!(wq.queue_work(&work));
    is_running
        .recv_timeout(DEADLINE)
        .expect("the item never started");
    // The worker now holds the last handle, and drops the closure after the run.
    drop(work);
    go.send(()).expect("the item waits");
    let wq2 = Arc::clone(&wq);
    assert!(within_deadline("flush", move || wq2.flush()));
    // The drop comes right after the run's accounting, which flush waits for.
    let deadline = std::time::Instant::now() + DEADLINE;
    while wq.stats().drop_panics == 0 && std::time::Instant::now() < deadline {
        thread::sleep(Duration::from_millis(1));
    }
    let stats = wq.stats();
    assert_eq!(stats.drop_panics, 1, "{stats:?}");
    assert_eq!(stats.panicked, 0);
    assert!(
        stats.pools.iter().all(|p| p.worker_panics == 0),
        "{stats:?}"
    );
}
