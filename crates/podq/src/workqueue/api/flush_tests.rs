//! Tests of the flush colours with real threads on real CPUs (`flush.rs` itself is also
//! compiled against loom, where `crate::sys` does not exist).

use crate::test_support::eventually;
use crate::workqueue::item::flush::{Flush, PodCounters};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// Runs `f` on a thread pinned to `cpu` (or unpinned where pinning is not supported).
fn on_cpu<R: Send + 'static>(cpu: usize, f: impl FnOnce() -> R + Send + 'static) -> R {
    thread::spawn(move || {
        let _ = crate::sys::pin_current_thread(&[cpu]);
        f()
    })
    .join()
    .expect("counting thread")
}

#[test]
fn counts_raised_on_one_cpu_and_lowered_on_another_add_up_to_zero() {
    let cpus = crate::sys::allowed_cpus().expect("sched_getaffinity");
    let (first, last) = (cpus[0], cpus[cpus.len() - 1]);
    let pod = Arc::new(PodCounters::new(cpus.len()));
    let flush = Arc::new(new_flush());
    let colours: Vec<usize> = {
        let (pod, flush) = (Arc::clone(&pod), Arc::clone(&flush));
        on_cpu(first, move || {
            (0..3)
                .map(|_| flush.enter(&pod, crate::here::cpu_or_thread()))
                .collect()
        })
    };
    assert_eq!(pod.in_flight(), 3);
    {
        let (pod, flush) = (Arc::clone(&pod), Arc::clone(&flush));
        on_cpu(last, move || {
            for c in colours {
                flush.leave(&pod, c);
                pod.mine().completed.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    // On a machine with two CPUs or more, one stripe is at 3 and another wrapped to -3.
    assert_eq!(pod.in_flight(), 0);
    assert_eq!(pod.total(|s| &s.completed), 3);
}

#[test]
fn a_flush_waits_for_counts_lowered_on_other_cpus() {
    let cpus = crate::sys::allowed_cpus().expect("sched_getaffinity");
    let pod = Arc::new(PodCounters::new(cpus.len()));
    let flush = Arc::new(new_flush());
    let colour = flush.enter(&pod, crate::here::cpu_or_thread());
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flusher = {
        let (pod, flush, done) = (Arc::clone(&pod), Arc::clone(&flush), Arc::clone(&done));
        thread::spawn(move || {
            flush.flush(|| std::iter::once(&*pod));
            done.store(true, Ordering::SeqCst);
        })
    };
    // The flusher cannot finish while the execution is counted (a bounded look, not a
    // speed check: it only gives a wrongly finishing flusher time to show).
    thread::sleep(Duration::from_millis(20));
    assert!(!done.load(Ordering::SeqCst));
    let (pod2, flush2) = (Arc::clone(&pod), Arc::clone(&flush));
    on_cpu(cpus[cpus.len() - 1], move || flush2.leave(&pod2, colour));
    flusher.join().expect("flusher");
    assert!(done.load(Ordering::SeqCst));
    assert_eq!(pod.in_flight(), 0);
}

/// A flush state on one of the process's flush waits (shared with workqueues, as workqueues
/// share them: a wake-up of another's flusher only makes it look again).
fn new_flush() -> Flush {
    Flush::new(super::flush::flush_wait(0))
}

#[test]
fn a_workqueue_dropped_from_its_own_item_runs_the_rest_then_is_freed() {
    use crate::scope::AffinityScope;
    use crate::test_support::PATIENCE;
    use crate::workqueue::api::workqueue::Workqueue;
    use std::sync::Mutex;

    let wq = Workqueue::builder("reaped")
        .scope(AffinityScope::System)
        .max_workers(1)
        // An idle timeout no other test uses: the pool, and its one worker, are this test's.
        .idle_timeout(Duration::from_secs(7_300))
        .build()
        .expect("workqueue");
    let shared = Arc::downgrade(&wq.shared);
    let pod = Arc::downgrade(&wq.layouts.current().pods[0]);
    let slot = Arc::new(Mutex::new(Some(wq)));
    let (tx, rx) = std::sync::mpsc::channel();
    let (release, gate) = std::sync::mpsc::channel::<()>();
    {
        let guard = slot.lock().expect("slot");
        let wq = guard.as_ref().expect("workqueue");
        let slot = Arc::clone(&slot);
        wq.queue(move || {
            gate.recv().expect("released");
            // The last workqueue of its pool goes away on that pool's only worker: nothing
            // waits for itself.
            let wq = slot.lock().expect("slot").take();
            drop(wq);
        });
        for i in 0..20 {
            let tx = tx.clone();
            wq.queue(move || tx.send(i).expect("test alive"));
        }
    }
    release.send(()).expect("worker waits");
    // The items behind the dropping one still run, in order, holding their pod without a
    // count...
    let got: Vec<i32> = (0..20)
        .map(|_| rx.recv_timeout(PATIENCE).expect("queued items still run"))
        .collect();
    assert_eq!(got, (0..20).collect::<Vec<_>>());
    assert!(slot.lock().expect("slot").is_none());
    // ...and the reaper lets the pod and the workqueue go once they have.
    assert!(eventually(
        || pod.upgrade().is_none() && shared.upgrade().is_none()
    ));
}

#[test]
fn workqueues_dropped_while_their_items_finish_run_everything() {
    use crate::workqueue::api::workqueue::Workqueue;
    use std::sync::atomic::AtomicUsize;

    let ran = Arc::new(AtomicUsize::new(0));
    let rounds = 200;
    let per_round = 64;
    for _ in 0..rounds {
        let wq = Workqueue::builder("short-lived")
            .build()
            .expect("workqueue");
        // Two producers queue, then the drop races with the last finishers.
        thread::scope(|scope| {
            for _ in 0..2 {
                let (wq, ran) = (&wq, Arc::clone(&ran));
                scope.spawn(move || {
                    for _ in 0..per_round / 2 {
                        let ran = Arc::clone(&ran);
                        wq.queue(move || {
                            ran.fetch_add(1, Ordering::Relaxed);
                        });
                    }
                });
            }
        });
        drop(wq);
    }
    assert_eq!(ran.load(Ordering::Relaxed), rounds * per_round);
}

#[test]
fn workqueues_that_share_a_flush_wait_both_flush() {
    use crate::workqueue::api::flush::FLUSH_WAITS;
    use crate::workqueue::api::workqueue::Workqueue;
    use std::sync::atomic::AtomicUsize;

    // Ids are consecutive in one process, but other tests make workqueues too: build until two
    // fall on the same wait.
    let mut built = Vec::new();
    let (first, second) = loop {
        let wq = Workqueue::builder("shared-wait")
            .build()
            .expect("workqueue");
        let slot = wq.shared.id % FLUSH_WAITS as u64;
        if let Some(i) = built
            .iter()
            .position(|w: &Workqueue| w.shared.id % FLUSH_WAITS as u64 == slot)
        {
            break (built.swap_remove(i), wq);
        }
        built.push(wq);
    };
    drop(built);
    let ran = Arc::new(AtomicUsize::new(0));
    thread::scope(|scope| {
        for wq in [&first, &second] {
            let ran = Arc::clone(&ran);
            scope.spawn(move || {
                for round in 0..100 {
                    for _ in 0..8 {
                        let ran = Arc::clone(&ran);
                        wq.queue(move || {
                            ran.fetch_add(1, Ordering::SeqCst);
                        });
                    }
                    assert!(wq.flush(), "round {round}");
                    assert_eq!(wq.stats().in_flight, 0, "round {round}");
                }
            });
        }
    });
    assert_eq!(ran.load(Ordering::SeqCst), 2 * 100 * 8);
}
