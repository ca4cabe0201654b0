//! loom models of the one-shot slot between a spawned closure and its `JoinHandle`
//! (`crates/podq/src/workqueue/README.md`, J1-J4), compiled from
//! `crates/podq/src/workqueue/api/oneshot.rs` against loom: a poll racing the completion is never
//! left without a wake-up, a waker replaced between two polls is the one woken, a sleeping join
//! is woken, a cancel and a worker never both decide the outcome, and an outcome nobody waits
//! for is dropped exactly once.

// The protocol file names `crate::sync`: here it is loom's.
use podq_loom::sync;

#[allow(dead_code)]
#[path = "../../podq/src/workqueue/api/oneshot.rs"]
mod oneshot;

use std::task::{Context, Poll, Wake, Waker};

use oneshot::OneShot;
use sync::atomic::{AtomicUsize, Ordering};
use sync::{thread, Arc};

/// A waker that counts its wake-ups.
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counting_waker() -> (std::sync::Arc<Count>, Waker) {
    let count = std::sync::Arc::new(Count(AtomicUsize::new(0)));
    let waker = Waker::from(std::sync::Arc::clone(&count));
    (count, waker)
}

/// A slot of a closure returning a number.
type Slot = OneShot<fn() -> u32, u32>;

/// A slot holding `f`, and a worker thread that takes it and puts what it returns in.
fn slot_and_worker(f: fn() -> u32) -> (Arc<Slot>, loom::thread::JoinHandle<()>) {
    let slot = Arc::new(OneShot::new(f));
    let worker = {
        let slot: Arc<Slot> = Arc::clone(&slot);
        thread::spawn(move || {
            if let Some(f) = slot.take_func() {
                assert!(slot.complete(f()).is_none(), "the handle is still there");
            }
        })
    };
    (slot, worker)
}

/// Two polls with two wakers race the worker: if the last poll found nothing, its waker (and
/// not the one it replaced) is woken; a poll that found the outcome returns it.
#[test]
fn a_poll_racing_the_completion_wakes_the_last_waker() {
    podq_loom::check(3, || {
        let (slot, worker) = slot_and_worker(|| 42);
        let (first, w1) = counting_waker();
        let (second, w2) = counting_waker();
        let mut ready = None;
        for waker in [&w1, &w2] {
            if let Poll::Ready(v) = slot.poll(&mut Context::from_waker(waker)) {
                ready = Some(v);
                break;
            }
        }
        worker.join().unwrap();
        match ready {
            Some(v) => assert_eq!(v, 42),
            None => {
                assert_eq!(
                    second.0.load(Ordering::SeqCst),
                    1,
                    "the last waker never woken"
                );
                assert_eq!(
                    first.0.load(Ordering::SeqCst),
                    0,
                    "a replaced waker was woken"
                );
                let Poll::Ready(v) = slot.poll(&mut Context::from_waker(&w2)) else {
                    panic!("woken with no outcome");
                };
                assert_eq!(v, 42);
            }
        }
        assert!(slot.is_finished());
    });
}

/// A blocking join races the worker: it is never left asleep (loom reports a deadlock).
#[test]
fn a_sleeping_join_is_woken() {
    podq_loom::check(3, || {
        let (slot, worker) = slot_and_worker(|| 7);
        assert_eq!(slot.wait(1), 7);
        worker.join().unwrap();
    });
}

/// A cancel (the task dropped unrun) races a worker: exactly one of them decides the outcome,
/// and a join sees that one.
#[test]
fn a_cancel_and_a_worker_never_both_decide() {
    podq_loom::check(3, || {
        let slot: Arc<Slot> = Arc::new(OneShot::new(|| 1));
        let worker = {
            let slot = Arc::clone(&slot);
            thread::spawn(move || slot.take_func().map(|f| slot.complete(f())).is_some())
        };
        let cancelled = slot.cancel(0).is_some();
        let ran = worker.join().unwrap();
        assert!(ran != cancelled, "ran {ran}, cancelled {cancelled}");
        assert_eq!(slot.wait(1), u32::from(ran));
    });
}

/// Counts its drops.
struct Outcome(Arc<AtomicUsize>);

impl Drop for Outcome {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// The handle is dropped as the worker completes: the outcome is dropped exactly once, by
/// whichever side comes second, and never kept in the slot.
#[test]
fn an_outcome_nobody_waits_for_is_dropped_once() {
    podq_loom::check(3, || {
        let drops = Arc::new(AtomicUsize::new(0));
        let slot: Arc<OneShot<(), Outcome>> = Arc::new(OneShot::new(()));
        let worker = {
            let (slot, drops) = (Arc::clone(&slot), Arc::clone(&drops));
            thread::spawn(move || {
                slot.take_func().expect("the closure");
                drop(slot.complete(Outcome(drops)));
            })
        };
        drop(slot.detach());
        worker.join().unwrap();
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        assert!(slot.detach().is_none());
    });
}
