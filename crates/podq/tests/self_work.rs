//! `Work::with_self`: an item that queues itself again through its argument runs until its
//! handles go, then runs at most once more, drops its closure and frees what it held.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use podq::{Work, Workqueue};
use support::eventually;

/// An item re-queueing itself on a workqueue its closure holds through an `Arc`.
fn self_requeueing(wq: &Arc<Workqueue>, runs: &Arc<AtomicUsize>, token: &Arc<()>) -> Work {
    let (on, runs, token) = (Arc::clone(wq), Arc::clone(runs), Arc::clone(token));
    Work::with_self(move |me| {
        let _held = &token;
        runs.fetch_add(1, Ordering::SeqCst);
        on.queue_work(me);
    })
}

#[test]
fn a_self_requeueing_item_stops_when_its_handles_go() {
    let wq = Arc::new(Workqueue::builder("self-requeue").build().unwrap());
    let runs = Arc::new(AtomicUsize::new(0));
    let token = Arc::new(());
    let item = self_requeueing(&wq, &runs, &token);
    let clone = item.clone();
    assert!(wq.queue_work(&item));
    assert!(eventually(|| runs.load(Ordering::SeqCst) >= 20));
    drop(item);
    // One handle left: it goes on.
    let at = runs.load(Ordering::SeqCst);
    assert!(eventually(|| runs.load(Ordering::SeqCst) >= at + 20));
    drop(clone);
    // The closure (and the workqueue's `Arc` it held) is dropped after at most one more run
    // than the one going on when the last handle went.
    assert!(
        eventually(|| Arc::strong_count(&token) == 1),
        "the closure was never dropped"
    );
    let stopped = runs.load(Ordering::SeqCst);
    thread::sleep(Duration::from_millis(50));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        stopped,
        "it ran after its closure went"
    );
    // Nothing holds the workqueue any more: it drops here, with nothing left to run.
    assert!(eventually(|| Arc::strong_count(&wq) == 1));
    let wq = Arc::into_inner(wq).unwrap();
    assert!(wq.flush());
    // Every execution completed: the runs, and at most one queued by the last run, which ran
    // nothing.
    let executions = wq.stats().completed as usize - runs.load(Ordering::SeqCst);
    assert!(executions <= 1, "{executions} executions ran nothing");
}

/// The run's argument is the item: a clone kept by the closure is a handle, and with it the
/// item lives on after the user's handles go; the closure is told the same item each run.
#[test]
fn the_argument_is_the_item_and_a_kept_clone_is_a_handle() {
    let wq = Workqueue::builder("self-arg").build().unwrap();
    let kept: Arc<std::sync::Mutex<Option<Work>>> = Arc::default();
    let slot = Arc::clone(&kept);
    let item = Work::with_self(move |me| {
        *slot.lock().unwrap() = Some(me.clone());
    });
    assert!(wq.queue_work(&item));
    assert!(wq.flush());
    let inside = kept.lock().unwrap().take().unwrap();
    assert!(inside.ptr_eq(&item));
    drop(item);
    // The kept clone queues it again: it still runs its closure.
    assert!(wq.queue_work(&inside));
    assert!(wq.flush());
    assert!(kept.lock().unwrap().is_some());
    // Break the cycle the closure made (it keeps a handle of itself in `kept`).
    drop(kept.lock().unwrap().take());
    drop(inside);
}

/// An item pending when its last handle goes runs once more, and its re-queue made in that
/// run runs nothing.
#[test]
fn an_item_pending_when_its_last_handle_goes_runs_once_more() {
    let wq = Arc::new(
        Workqueue::builder("self-pending")
            .max_active(1)
            .build()
            .unwrap(),
    );
    let runs = Arc::new(AtomicUsize::new(0));
    let token = Arc::new(());
    let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
    // Holds the only active slot, so that the item stays pending.
    wq.queue(move || {
        let _ = gate_rx.recv_timeout(Duration::from_secs(60));
    });
    let item = self_requeueing(&wq, &runs, &token);
    assert!(wq.queue_work(&item));
    assert!(item.is_pending());
    drop(item);
    gate_tx.send(()).unwrap();
    assert!(eventually(|| Arc::strong_count(&token) == 1));
    assert!(eventually(|| Arc::strong_count(&wq) == 1));
    assert!(wq.flush());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}
