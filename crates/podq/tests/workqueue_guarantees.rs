//! One test per workqueue guarantee: the Linux workqueue's semantics in Rust form (the crate
//! docs and `src/workqueue/README.md` state them).
//!
//! Behaviour only: no test asserts speed. The only time check is "not earlier than", which is
//! the delayed-work guarantee itself.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, Sender};
use podq::{AffinityScope, DelayedWork, Work, Workqueue};

/// A gate items wait on until the test opens it (by dropping the sender).
fn gate() -> (Sender<()>, Receiver<()>) {
    bounded(0)
}

fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

/// Queues an item that blocks `wq` (an ordered workqueue: everything queued after it waits)
/// until the returned sender is dropped.
fn hold_up(wq: &Workqueue) -> Sender<()> {
    let (open, closed) = gate();
    wq.queue(move || {
        let _ = closed.recv();
    });
    open
}

/// A work item that counts its runs in `runs`.
fn counting_work(runs: &Arc<AtomicUsize>) -> Work {
    let runs = runs.clone();
    Work::new(move || {
        runs.fetch_add(1, Ordering::SeqCst);
    })
}

#[test]
fn a_work_item_never_runs_on_two_workers_at_once() {
    let wq = Arc::new(Workqueue::builder("reentrancy").build().unwrap());
    let running = counter();
    let most = counter();
    let runs = counter();
    let work = {
        let (running, most, runs) = (running.clone(), most.clone(), runs.clone());
        Work::new(move || {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            thread::yield_now();
            runs.fetch_add(1, Ordering::SeqCst);
            running.fetch_sub(1, Ordering::SeqCst);
        })
    };
    let queuers: Vec<_> = (0..4)
        .map(|_| {
            let (wq, work) = (wq.clone(), work.clone());
            thread::spawn(move || {
                for _ in 0..2_000 {
                    wq.queue_work(&work);
                }
            })
        })
        .collect();
    for q in queuers {
        q.join().unwrap();
    }
    wq.flush();
    assert_eq!(most.load(Ordering::SeqCst), 1, "ran on two workers at once");
    assert!(runs.load(Ordering::SeqCst) >= 1);
    assert!(!work.is_pending() && !work.is_running());
}

#[test]
fn queueing_a_pending_item_returns_false_and_it_runs_once() {
    let wq = Workqueue::ordered("pending").unwrap();
    let open = hold_up(&wq);
    let runs = counter();
    let work = counting_work(&runs);
    assert!(wq.queue_work(&work));
    assert!(!wq.queue_work(&work), "second queue of a pending item");
    assert!(work.is_pending());
    drop(open);
    // `true` if it waited; the item may have run already (a slow caller, under a sanitizer).
    work.flush();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(!work.flush(), "nothing left to wait for");
}

#[test]
fn stores_before_queue_are_visible_to_the_work() {
    let wq = Workqueue::builder("visibility").build().unwrap();
    let seen_wrong = Arc::new(AtomicBool::new(false));
    for i in 1..=500usize {
        // Relaxed on purpose: only the queue call orders this store before the work.
        let cell = Arc::new(AtomicUsize::new(0));
        cell.store(i, Ordering::Relaxed);
        let (cell, wrong) = (cell.clone(), seen_wrong.clone());
        wq.queue(move || {
            if cell.load(Ordering::Relaxed) != i {
                wrong.store(true, Ordering::Relaxed);
            }
        });
    }
    wq.flush();
    assert!(!seen_wrong.load(Ordering::Relaxed));
}

#[test]
fn item_flush_waits_for_the_last_queueing() {
    let wq = Workqueue::builder("item-flush").build().unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let work = {
        let done = done.clone();
        Work::new(move || {
            thread::sleep(Duration::from_millis(20));
            done.store(true, Ordering::SeqCst);
        })
    };
    assert!(!work.flush(), "an idle item has nothing to flush");
    wq.queue_work(&work);
    assert!(work.flush());
    assert!(done.load(Ordering::SeqCst));
    assert!(!work.is_pending() && !work.is_running());
}

#[test]
fn workqueue_flush_waits_for_everything_queued_before_it() {
    let wq = Workqueue::builder("flush-all")
        .max_active(2)
        .build()
        .unwrap();
    let done = counter();
    for _ in 0..100 {
        let done = done.clone();
        wq.queue(move || {
            thread::sleep(Duration::from_micros(200));
            done.fetch_add(1, Ordering::SeqCst);
        });
    }
    wq.flush();
    assert_eq!(done.load(Ordering::SeqCst), 100);
    assert_eq!(wq.stats().in_flight, 0);
}

#[test]
fn workqueue_flush_is_not_held_up_by_self_requeueing_work() {
    let wq = Arc::new(Workqueue::builder("flush-later").build().unwrap());
    let runs = counter();
    // Re-queues itself forever: later work, which flush must not wait for.
    let (work, slot) = self_requeueing(&wq, &runs);
    wq.queue_work(&work);
    for _ in 0..5 {
        wq.flush(); // returns although the item is always queued again
    }
    assert!(runs.load(Ordering::SeqCst) >= 1);
    work.cancel_sync();
    slot.lock().unwrap().take();
}

/// A work item that counts its runs in `runs` and queues itself again on `wq` from every run,
/// and the slot through which it finds itself (empty the slot to break the cycle).
fn self_requeueing(
    wq: &Arc<Workqueue>,
    runs: &Arc<AtomicUsize>,
) -> (Work, Arc<Mutex<Option<Work>>>) {
    let slot: Arc<Mutex<Option<Work>>> = Arc::new(Mutex::new(None));
    let work = {
        let (wq, runs, slot) = (Arc::downgrade(wq), runs.clone(), slot.clone());
        Work::new(move || {
            runs.fetch_add(1, Ordering::SeqCst);
            if let (Some(wq), Some(me)) = (wq.upgrade(), slot.lock().unwrap().clone()) {
                wq.queue_work(&me);
            }
        })
    };
    *slot.lock().unwrap() = Some(work.clone());
    (work, slot)
}

#[test]
fn drain_waits_for_chains_and_refuses_outside_work() {
    let wq = Arc::new(Workqueue::builder("drain").build().unwrap());
    let done = counter();
    let (open, closed) = gate();
    // A chain: each link queues the next from inside the workqueue, which drain allows.
    fn link(wq: Arc<Workqueue>, done: Arc<AtomicUsize>, left: usize, gate: Receiver<()>) {
        let next = wq.clone();
        wq.queue(move || {
            let _ = gate.recv();
            done.fetch_add(1, Ordering::SeqCst);
            if left > 1 {
                link(next, done, left - 1, gate);
            }
        });
    }
    link(wq.clone(), done.clone(), 10, closed);
    let drainer = {
        let wq = wq.clone();
        thread::spawn(move || wq.drain())
    };
    // Once the drain has started, queue calls from outside are refused.
    let refused = counter();
    while wq.queue({
        let refused = refused.clone();
        move || {
            refused.fetch_add(1, Ordering::SeqCst);
        }
    }) {
        thread::sleep(Duration::from_millis(1));
    }
    drop(open);
    drainer.join().unwrap();
    assert_eq!(
        done.load(Ordering::SeqCst),
        10,
        "drain returned before the chain ended"
    );
    assert_eq!(wq.stats().in_flight, 0);
    assert!(wq.queue(|| {}), "queueing works again after the drain");
    wq.flush();
}

#[test]
fn cancel_sync_stops_a_self_requeueing_item() {
    let wq = Arc::new(Workqueue::builder("cancel-requeue").build().unwrap());
    let runs = counter();
    let (work, slot) = self_requeueing(&wq, &runs);
    wq.queue_work(&work);
    while runs.load(Ordering::SeqCst) < 50 {
        thread::yield_now();
    }
    work.cancel_sync();
    assert!(!work.is_pending() && !work.is_running());
    let after = runs.load(Ordering::SeqCst);
    wq.flush();
    thread::sleep(Duration::from_millis(20));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        after,
        "ran after cancel_sync returned"
    );
    // The item is usable again after the cancel.
    slot.lock().unwrap().take();
    assert!(wq.queue_work(&work));
    work.flush();
    assert_eq!(runs.load(Ordering::SeqCst), after + 1);
}

#[test]
fn cancel_sync_of_a_pending_item_discards_it() {
    let wq = Workqueue::ordered("cancel-pending").unwrap();
    let open = hold_up(&wq);
    let runs = counter();
    let work = counting_work(&runs);
    assert!(!work.cancel_sync(), "an idle item was not pending");
    wq.queue_work(&work);
    assert!(work.cancel_sync(), "a pending item");
    assert!(!work.is_pending());
    drop(open);
    wq.flush();
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(wq.stats().cancelled, 1);
}

#[test]
fn delayed_work_never_runs_early() {
    let wq = Workqueue::builder("delayed").build().unwrap();
    let (tx, rx) = bounded(4);
    let delay = Duration::from_millis(30);
    let armed = Arc::new(Mutex::new(Instant::now()));
    let d = {
        let armed = armed.clone();
        DelayedWork::new(move || {
            let _ = tx.send(armed.lock().unwrap().elapsed());
        })
    };
    for _ in 0..3 {
        *armed.lock().unwrap() = Instant::now();
        assert!(wq.queue_delayed(&d, delay));
        assert!(!wq.queue_delayed(&d, delay), "already pending");
        let waited = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(waited >= delay, "ran after {waited:?}, before {delay:?}");
        d.work().flush();
    }
}

#[test]
fn mod_delayed_rearms_and_cancel_disarms() {
    let wq = Workqueue::builder("mod-delayed").build().unwrap();
    let (tx, rx) = bounded(4);
    let d = DelayedWork::new(move || {
        let _ = tx.send(Instant::now());
    });
    let hour = Duration::from_secs(3600);
    assert!(wq.queue_delayed(&d, hour));
    let start = Instant::now();
    assert!(
        wq.mod_delayed(&d, Duration::from_millis(10)),
        "it was pending"
    );
    let ran = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(ran - start >= Duration::from_millis(10));
    d.work().flush();
    assert!(!wq.mod_delayed(&d, hour), "it was idle: queued anew");
    assert!(d.is_pending());
    assert!(d.cancel_sync());
    assert!(!d.is_pending());
    assert!(rx.try_recv().is_err(), "a cancelled delayed item ran");
}

#[test]
fn delayed_flush_runs_a_waiting_item_now() {
    let wq = Workqueue::builder("delayed-flush").build().unwrap();
    let runs = counter();
    let d = {
        let runs = runs.clone();
        DelayedWork::new(move || {
            runs.fetch_add(1, Ordering::SeqCst);
        })
    };
    assert!(wq.queue_delayed(&d, Duration::from_secs(3600)));
    assert!(d.flush());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(!d.is_pending());
}

#[test]
fn max_active_is_never_exceeded() {
    let wq = Workqueue::builder("max-active")
        .max_active(2)
        .build()
        .unwrap();
    let running = counter();
    let most = counter();
    for _ in 0..60 {
        let (running, most) = (running.clone(), most.clone());
        wq.queue(move || {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            thread::sleep(Duration::from_micros(300));
            running.fetch_sub(1, Ordering::SeqCst);
        });
    }
    wq.flush();
    assert!(
        most.load(Ordering::SeqCst) <= 2,
        "{} at once",
        most.load(Ordering::SeqCst)
    );
    assert_eq!(wq.stats().completed, 60);
}

#[test]
fn ordered_workqueue_runs_one_at_a_time_in_queueing_order() {
    let wq = Workqueue::ordered("ordered").unwrap();
    assert_eq!(wq.pools(), 1);
    assert_eq!(wq.max_active(), Some(1));
    let order = Arc::new(Mutex::new(Vec::new()));
    let running = counter();
    for i in 0..300 {
        let (order, running) = (order.clone(), running.clone());
        wq.queue(move || {
            assert_eq!(running.fetch_add(1, Ordering::SeqCst), 0);
            order.lock().unwrap().push(i);
            running.fetch_sub(1, Ordering::SeqCst);
        });
    }
    wq.flush();
    let order = order.lock().unwrap();
    assert_eq!(*order, (0..300).collect::<Vec<_>>());
    assert_eq!(wq.stats().panicked, 0, "two items ran at once");
}

#[test]
fn a_panicking_item_is_caught_and_counted() {
    let wq = Workqueue::builder("panics").max_active(1).build().unwrap();
    let done = counter();
    for i in 0..6 {
        let done = done.clone();
        wq.queue(move || {
            if i % 2 == 0 {
                panic!("item {i} panics on purpose");
            }
            done.fetch_add(1, Ordering::SeqCst);
        });
    }
    let work = Work::new(|| panic!("a reusable item panics on purpose"));
    wq.queue_work(&work);
    assert!(work.flush(), "flush returns after a panicked run");
    assert!(wq.queue_work(&work), "a panicked item can be queued again");
    wq.flush();
    let stats = wq.stats();
    assert_eq!(stats.panicked, 5);
    assert_eq!(stats.completed, 8);
    assert_eq!(stats.in_flight, 0);
    assert_eq!(done.load(Ordering::SeqCst), 3);
    // The workers went on.
    let after = counter();
    let a = after.clone();
    wq.queue(move || {
        a.fetch_add(1, Ordering::SeqCst);
    });
    wq.flush();
    assert_eq!(after.load(Ordering::SeqCst), 1);
}

#[test]
fn dropping_a_workqueue_runs_everything_queued() {
    let done = counter();
    let wq = Workqueue::builder("drop").max_active(3).build().unwrap();
    for _ in 0..50 {
        let done = done.clone();
        wq.queue(move || {
            thread::sleep(Duration::from_micros(200));
            done.fetch_add(1, Ordering::SeqCst);
        });
    }
    let d = {
        let done = done.clone();
        DelayedWork::new(move || {
            done.fetch_add(1, Ordering::SeqCst);
        })
    };
    wq.queue_delayed(&d, Duration::from_secs(3600));
    drop(wq);
    assert_eq!(done.load(Ordering::SeqCst), 51);
    assert!(!d.is_pending());
}

#[test]
fn queue_on_runs_in_the_pool_of_that_cpu() {
    let cpus = podq::affinity::allowed_cpus().unwrap();
    let wq = Workqueue::builder("queue-on")
        .scope(AffinityScope::Cpu)
        .strict(true)
        .build()
        .unwrap();
    let cpu = wq.cpus().last().unwrap();
    assert!(cpus.contains(cpu));
    let (tx, rx) = bounded(1);
    assert!(wq
        .queue_on(cpu, move || {
            let name = thread::current().name().unwrap_or("").to_string();
            let _ = tx.send(name);
        })
        .unwrap());
    let name = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(
        name.ends_with(&format!("-p{cpu}")),
        "ran on '{name}', not CPU {cpu}'s pool"
    );
    let node = 0;
    assert!(wq.queue_node(node, || {}).unwrap());
    wq.flush();
}

#[test]
fn stats_count_per_workqueue_and_show_the_pools() {
    let wq = Workqueue::builder("stats")
        .scope(AffinityScope::Cpu)
        .build()
        .unwrap();
    for _ in 0..20 {
        wq.queue(|| {});
    }
    wq.flush();
    let s = wq.stats();
    assert_eq!(s.name, "stats");
    assert_eq!(s.scope, AffinityScope::Cpu);
    assert_eq!(
        (s.started, s.completed, s.in_flight, s.panicked),
        (20, 20, 0, 0)
    );
    assert_eq!(s.pools.len(), wq.pools());
    assert_eq!(s.pools.len(), wq.cpus().len());
}
