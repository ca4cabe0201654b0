//! `Workqueue::scoped`: items that borrow from the caller's stack, a scope that waits for all
//! of them, a panic that comes back after all finished, and the calls from the workqueue's own
//! items.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use podq::{JoinError, Workqueue};

mod support;
use support::eventually;

#[test]
fn items_borrow_the_callers_stack_and_the_scope_waits_for_all() {
    let wq = Workqueue::builder("scoped-borrow").build().unwrap();
    let mut data: Vec<u64> = (0..64).collect();
    let sum = AtomicUsize::new(0);
    let doubled = wq.scoped(|s| {
        for chunk in data.chunks(8) {
            let sum = &sum;
            assert!(s.queue(move || {
                thread::sleep(Duration::from_millis(2));
                sum.fetch_add(chunk.iter().sum::<u64>() as usize, Ordering::SeqCst);
            }));
        }
        let handles: Vec<_> = data.iter().map(|v| s.spawn(move || v * 2)).collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<u64>>()
    });
    // Every item finished before `scoped` returned.
    assert_eq!(sum.load(Ordering::SeqCst), (0..64).sum::<usize>());
    assert_eq!(doubled, (0..64).map(|v| v * 2).collect::<Vec<u64>>());
    // The borrows ended with the scope.
    data.push(64);
    // A pool counts an execution just after its closure returned.
    assert!(eventually(|| wq.stats().completed == 8 + 64));
}

#[test]
fn a_panic_propagates_after_every_item_finished() {
    let wq = Workqueue::builder("scoped-panic").build().unwrap();
    let finished = AtomicUsize::new(0);
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        wq.scoped(|s| {
            s.queue(|| panic!("an item panics"));
            for _ in 0..4 {
                s.queue(|| {
                    thread::sleep(Duration::from_millis(20));
                    finished.fetch_add(1, Ordering::SeqCst);
                });
            }
        })
    }));
    let payload = outcome.unwrap_err();
    assert_eq!(
        payload.downcast_ref::<&str>(),
        Some(&"an item of a Workqueue::scoped scope panicked")
    );
    assert_eq!(finished.load(Ordering::SeqCst), 4);
    assert!(eventually(|| wq.stats().panicked == 1));
    // A panic taken by a join is the caller's: the scope returns.
    let joined = wq.scoped(|s| s.spawn(|| -> u32 { panic!("joined") }).join());
    assert!(matches!(joined, Err(JoinError::Panicked(_))));
    // The closure's own panic is resumed after the items finished.
    let finished = AtomicUsize::new(0);
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        wq.scoped(|s| {
            s.queue(|| {
                thread::sleep(Duration::from_millis(20));
                finished.fetch_add(1, Ordering::SeqCst);
            });
            panic!("the closure panics");
        })
    }));
    assert_eq!(
        outcome.unwrap_err().downcast_ref::<&str>(),
        Some(&"the closure panics")
    );
    assert_eq!(finished.load(Ordering::SeqCst), 1);
}

#[test]
fn from_an_ordered_workqueues_own_item_it_panics_before_the_closure() {
    let wq = Arc::new(Workqueue::ordered("scoped-ordered").unwrap());
    let on = Arc::clone(&wq);
    let ran = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&ran);
    let h = wq.spawn(move || {
        catch_unwind(AssertUnwindSafe(|| {
            on.scoped(|_| r.fetch_add(1, Ordering::SeqCst));
        }))
        .is_err()
    });
    assert!(h.join().unwrap(), "scoped did not panic");
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}

#[test]
fn from_an_own_item_of_a_concurrent_workqueue_the_scope_completes() {
    let wq = Arc::new(
        Workqueue::builder("scoped-nested")
            .max_workers(4)
            .build()
            .unwrap(),
    );
    let on = Arc::clone(&wq);
    let total = wq.spawn(move || {
        let parts = [1u64, 2, 3, 4];
        on.scoped(|s| {
            let hs: Vec<_> = parts.iter().map(|p| s.spawn(move || p * 10)).collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
        })
    });
    assert_eq!(total.join().unwrap(), 100);
}
