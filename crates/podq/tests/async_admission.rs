//! `queue_async` and `spawn_async` (B4, B5): pending while the backlog is full, woken and
//! completed when room appears, and a future dropped while it waits neither keeps its
//! registration nor loses the room it was woken for.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Condvar, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use podq::{AffinityScope, Workqueue};

mod support;
use support::eventually;

/// A waker that counts its wake-ups.
#[derive(Default)]
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A future polled by hand, with its own counting waker.
struct Polled<F> {
    future: Pin<Box<F>>,
    count: Arc<Count>,
    waker: Waker,
}

impl<F: Future> Polled<F> {
    fn new(future: F) -> Self {
        let count = Arc::new(Count::default());
        Polled {
            future: Box::pin(future),
            waker: Waker::from(Arc::clone(&count)),
            count,
        }
    }

    fn poll(&mut self) -> Poll<F::Output> {
        self.future
            .as_mut()
            .poll(&mut Context::from_waker(&self.waker))
    }

    fn woken(&self) -> usize {
        self.count.0.load(Ordering::SeqCst)
    }
}

/// A one-worker workqueue with a backlog of one, its worker held by an item until `open`
/// is called, and its backlog full.
fn full_workqueue(name: &str) -> (Workqueue, impl FnOnce()) {
    let wq = Workqueue::builder(name)
        .scope(AffinityScope::System)
        .max_workers(1)
        .max_backlog(1)
        .build()
        .unwrap();
    let started = Arc::new(Barrier::new(2));
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let (s, g) = (Arc::clone(&started), Arc::clone(&gate));
    assert!(wq.queue(move || {
        s.wait();
        let (open, cv) = &*g;
        let mut open = open.lock().unwrap();
        while !*open {
            open = cv.wait(open).unwrap();
        }
    }));
    started.wait();
    assert!(wq.try_queue(|| {}).is_ok(), "the backlog's one place");
    let open = move || {
        let (open, cv) = &*gate;
        *open.lock().unwrap() = true;
        cv.notify_all();
    };
    (wq, open)
}

#[test]
fn queue_async_is_pending_while_full_and_completes_when_room_appears() {
    let (wq, open) = full_workqueue("async-full");
    let ran = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&ran);
    let mut waiting = Polled::new(wq.queue_async(move || {
        r.fetch_add(1, Ordering::SeqCst);
    }));
    assert_eq!(waiting.poll(), Poll::Pending);
    assert_eq!(waiting.poll(), Poll::Pending, "polled again: still no room");
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(waiting.woken(), 0, "woken with no room made");
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    open();
    assert!(eventually(|| waiting.woken() > 0), "never woken");
    assert_eq!(waiting.poll(), Poll::Ready(true));
    assert!(wq.flush());
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    // With room, it completes at its first poll; spawn_async gives the handle.
    assert_eq!(Polled::new(wq.queue_async(|| {})).poll(), Poll::Ready(true));
    assert!(wq.flush());
    let Poll::Ready(handle) = Polled::new(wq.spawn_async(|| 6 * 7)).poll() else {
        panic!("pending with room");
    };
    assert_eq!(handle.join().unwrap(), 42);
}

#[test]
fn a_dropped_waiter_passes_its_wake_on_and_keeps_no_registration() {
    let (wq, open) = full_workqueue("async-drop");
    let ran = Arc::new(AtomicUsize::new(0));
    let item = |ran: &Arc<AtomicUsize>| {
        let ran = Arc::clone(ran);
        move || {
            ran.fetch_add(1, Ordering::SeqCst);
        }
    };
    // Dropped while registered and never woken: its registration goes with it.
    let mut gone = Polled::new(wq.queue_async(item(&ran)));
    assert_eq!(gone.poll(), Poll::Pending);
    drop(gone);
    let mut first = Polled::new(wq.queue_async(item(&ran)));
    assert_eq!(first.poll(), Poll::Pending);
    let mut second = Polled::new(wq.spawn_async(|| 7));
    assert!(second.poll().is_pending());
    // One place appears (the waiting item starts): the oldest waiter is woken.
    open();
    assert!(
        eventually(|| first.woken() > 0),
        "the oldest waiter was never woken"
    );
    assert_eq!(second.woken(), 0);
    // Dropped after it was woken, before it took the place: the next waiter gets the wake.
    drop(first);
    assert!(eventually(|| second.woken() > 0), "the wake was lost");
    let Poll::Ready(handle) = second.poll() else {
        panic!("woken for room that is not there");
    };
    assert_eq!(handle.join().unwrap(), 7);
    assert!(wq.flush());
    // Only the first item ran (the one the backlog held); the dropped futures queued nothing.
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert_eq!(wq.stats().backlog, 0);
}

#[test]
fn futures_executor_awaits_many_admissions_through_a_small_backlog() {
    let wq = Workqueue::builder("async-many")
        .max_backlog(4)
        .build()
        .unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    futures_executor::block_on(async {
        for _ in 0..2000 {
            let ran = Arc::clone(&ran);
            assert!(
                wq.queue_async(move || {
                    ran.fetch_add(1, Ordering::SeqCst);
                })
                .await
            );
        }
    });
    assert!(wq.flush());
    assert_eq!(ran.load(Ordering::SeqCst), 2000);
}
