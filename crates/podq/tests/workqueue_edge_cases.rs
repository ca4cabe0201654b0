//! Edge cases of the workqueue layer: bad input that must not panic, and
//! call patterns that must not deadlock.
//!
//! Behaviour only: no test asserts speed. A deadlock is detected by waiting for a result far
//! longer than the test needs (tens of seconds), never by timing the work itself.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use crossbeam_channel::bounded;
use podq::{DelayedWork, Work, Workqueue};

/// Far longer than any test here needs: a result not in by then is a deadlock.
const DEADLOCK: Duration = Duration::from_secs(30);

fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

/// Runs `f` on its own thread and returns its result, failing the test when it does not
/// return within [`DEADLOCK`].
fn without_deadlock<R: Send + 'static>(what: &str, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = bounded(1);
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(DEADLOCK)
        .unwrap_or_else(|_| panic!("{what}: no return within {DEADLOCK:?} (deadlock)"))
}

/// A delay too long for the clock (`Instant + delay` overflows) is a delay that never ends,
/// not a panic; the item stays pending, and can be modified, flushed and cancelled.
#[test]
fn a_delay_past_the_end_of_the_clock_is_not_a_panic() {
    let wq = Workqueue::builder("huge-delay").build().unwrap();
    let runs = counter();
    let d = {
        let runs = runs.clone();
        DelayedWork::new(move || {
            runs.fetch_add(1, Ordering::SeqCst);
        })
    };
    assert!(wq.queue_delayed(&d, Duration::MAX));
    assert!(d.is_pending());
    assert!(wq.mod_delayed(&d, Duration::MAX), "it was pending");
    assert!(d.is_pending());
    assert!(d.flush(), "flush runs it now");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(!wq.mod_delayed(&d, Duration::MAX), "it was idle");
    assert!(d.cancel_sync(), "it was pending");
    assert!(!d.is_pending());
    wq.flush();
    assert_eq!(runs.load(Ordering::SeqCst), 1, "a cancelled item ran");
}

/// An item that cancels itself while another thread is cancelling it: both calls return (the
/// outside cancel waits for the running call, which must not wait for that cancel).
#[test]
fn cancel_sync_from_the_item_during_an_outside_cancel_returns() {
    // Shared with the thread that waits: were the item stuck, that thread would keep the
    // workqueue, and the test's drop of its own handle would not wait for it forever.
    let wq = Arc::new(Workqueue::builder("self-cancel").build().unwrap());
    let (started_tx, started_rx) = bounded(1);
    let (open, closed) = bounded::<()>(0);
    let me: Arc<Mutex<Option<Work>>> = Arc::new(Mutex::new(None));
    let runs = counter();
    let work = {
        let (me, runs) = (me.clone(), runs.clone());
        Work::new(move || {
            runs.fetch_add(1, Ordering::SeqCst);
            let _ = started_tx.try_send(());
            let _ = closed.recv();
            let me = me.lock().unwrap().clone();
            if let Some(me) = me {
                me.cancel_sync();
            }
        })
    };
    *me.lock().unwrap() = Some(work.clone());
    assert!(wq.queue_work(&work));
    started_rx.recv_timeout(DEADLOCK).unwrap();
    let canceller = {
        let work = work.clone();
        thread::spawn(move || work.cancel_sync())
    };
    // Wait until the outside cancel is in progress: a queue call then fails although nothing
    // is pending. (An execution queued before it is taken back by that cancel.)
    loop {
        let queued = wq.queue_work(&work);
        if !queued && !work.is_pending() {
            break;
        }
        thread::yield_now();
    }
    drop(open);
    let keep = Arc::clone(&wq);
    without_deadlock(
        "cancel_sync against the item's own cancel_sync",
        move || {
            canceller.join().unwrap();
            drop(keep);
        },
    );
    assert!(!work.is_pending() && !work.is_running());
    me.lock().unwrap().take();
    // The item is usable again.
    assert!(wq.queue_work(&work));
    work.flush(); // `false` when it has run already
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// Panics when dropped: the closure of an item whose last handle the worker drops.
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        if !thread::panicking() {
            panic!("review: a closure's capture panics in drop on purpose");
        }
    }
}

/// The worker may drop an item's last handle (the caller let go of it while it was queued);
/// a panic in that drop is user code panicking: the run's accounting still completes, so a
/// flush returns.
#[test]
fn a_panic_dropping_the_last_handle_of_an_item_still_completes_its_accounting() {
    // Shared with the thread that waits: were the accounting lost, that thread would keep the
    // workqueue, and the test's drop of its own handle would not wait forever.
    let wq = Arc::new(Workqueue::ordered("drop-panic").unwrap());
    let (open, closed) = bounded::<()>(0);
    wq.queue(move || {
        let _ = closed.recv();
    });
    let runs = counter();
    let work = {
        let runs = runs.clone();
        let capture = PanicsOnDrop;
        Work::new(move || {
            let _keep = &capture;
            runs.fetch_add(1, Ordering::SeqCst);
        })
    };
    assert!(wq.queue_work(&work));
    drop(work); // the queued execution now holds the last handle
    drop(open);
    let flusher = Arc::clone(&wq);
    without_deadlock("flush after a panicking drop", move || flusher.flush());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(wq.stats().in_flight, 0);
}

/// `flush` and `drain` called from one of the workqueue's own items would wait for that very
/// item: they return `false` at once instead; from an item of another workqueue they wait as
/// usual and return `true`.
#[test]
fn flush_and_drain_from_an_own_item_return_false_instead_of_deadlocking() {
    let wq = Arc::new(Workqueue::builder("self-flush").build().unwrap());
    let other = Arc::new(Workqueue::builder("other-flush").build().unwrap());
    let answers = Arc::new(Mutex::new(Vec::new()));
    let ran_before = counter();
    {
        let ran_before = ran_before.clone();
        other.queue(move || {
            thread::sleep(Duration::from_millis(20));
            ran_before.fetch_add(1, Ordering::SeqCst);
        });
    }
    {
        let (wq2, other, answers) = (Arc::downgrade(&wq), other.clone(), answers.clone());
        let ran_before = ran_before.clone();
        wq.queue(move || {
            let wq = wq2.upgrade().expect("the workqueue outlives its items");
            let own = (wq.flush(), wq.drain());
            let foreign = other.flush();
            answers
                .lock()
                .unwrap()
                .push((own, foreign, ran_before.load(Ordering::SeqCst)));
        });
    }
    let flushed = without_deadlock("flush from the test thread", {
        let wq = wq.clone();
        move || wq.flush()
    });
    assert!(flushed);
    assert_eq!(
        answers.lock().unwrap().as_slice(),
        &[((false, false), true, 1)],
        "own flush/drain refuse at once; another workqueue's flush waits for its item"
    );
}
