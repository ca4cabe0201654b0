//! `Workqueue::shutdown_timeout` (E7): everything runs within the bound and it says `true`;
//! with an item blocked past the bound it says `false`, reports the items that never started
//! as cancelled, and leaves the running item to finish on its own.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use podq::{AffinityScope, DelayedWork, JoinError, Work, Workqueue};

mod support;
use support::eventually;

#[test]
fn within_the_bound_everything_runs_and_it_says_true() {
    let wq = Workqueue::builder("stop-in-time").build().unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    for _ in 0..100 {
        let ran = Arc::clone(&ran);
        wq.queue(move || {
            ran.fetch_add(1, Ordering::SeqCst);
        });
    }
    let delayed = {
        let ran = Arc::clone(&ran);
        DelayedWork::new(move || {
            ran.fetch_add(1, Ordering::SeqCst);
        })
    };
    wq.queue_delayed(&delayed, Duration::from_secs(3600));
    let handle = wq.spawn(|| 7);
    assert!(wq.shutdown_timeout(Duration::from_secs(60)));
    // The delayed item was queued at once and ran.
    assert_eq!(ran.load(Ordering::SeqCst), 101);
    assert_eq!(handle.join().unwrap(), 7);
}

#[test]
fn past_the_bound_unstarted_items_are_cancelled_and_the_running_one_goes_on() {
    let wq = Workqueue::builder("stop-bounded")
        .scope(AffinityScope::System)
        .max_workers(1)
        .build()
        .unwrap();
    let group = wq.group();
    let (started_tx, started) = mpsc::channel::<()>();
    let (release, released) = mpsc::channel::<()>();
    let finished = Arc::new(AtomicUsize::new(0));
    let f = Arc::clone(&finished);
    wq.queue(move || {
        started_tx.send(()).unwrap();
        let _ = released.recv_timeout(Duration::from_secs(60));
        f.fetch_add(1, Ordering::SeqCst);
    });
    started.recv_timeout(Duration::from_secs(60)).unwrap();
    // Behind the blocked item: a closure, a spawned closure, a work item.
    let token = Arc::new(());
    let held = Arc::clone(&token);
    let ran = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&ran);
    wq.queue(move || {
        let _held = &held;
        r.fetch_add(1, Ordering::SeqCst);
    });
    let handle = wq.spawn(|| 1);
    let r = Arc::clone(&ran);
    let work = Work::new(move || {
        r.fetch_add(1, Ordering::SeqCst);
    });
    assert!(wq.queue_work(&work));
    assert!(work.is_pending());
    let t0 = Instant::now();
    assert!(!wq.shutdown_timeout(Duration::from_millis(100)));
    assert!(t0.elapsed() >= Duration::from_millis(100));
    // The unstarted items are reported cancelled.
    assert!(matches!(handle.join(), Err(JoinError::Cancelled)));
    assert!(!work.is_pending());
    assert_eq!(Arc::strong_count(&token), 1, "the closure was not dropped");
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    // Counted as cancelled: the workqueue is still listed while its running item holds it.
    let stats = podq::dump()
        .workqueues
        .into_iter()
        .find(|w| w.name == "stop-bounded")
        .expect("listed while an item runs");
    assert_eq!(stats.cancelled, 3);
    assert_eq!(stats.started, 1);
    // The workqueue takes no more work.
    assert!(!group.queue(|| {}));
    // The running item was not waited for: it finishes now.
    assert_eq!(finished.load(Ordering::SeqCst), 0);
    release.send(()).unwrap();
    assert!(eventually(|| finished.load(Ordering::SeqCst) == 1));
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    // The work item can be queued elsewhere.
    let other = Workqueue::builder("stop-after").build().unwrap();
    assert!(other.queue_work(&work));
    assert!(other.flush());
    assert_eq!(ran.load(Ordering::SeqCst), 1);
}
