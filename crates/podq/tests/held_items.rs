//! Items queued by a running item to its own pool are held by that item's worker (H1-H7 of
//! `pool/README.md`): the worker runs them itself, yet nothing waits on a worker that runs on
//! or blocks, and every workqueue guarantee holds for them.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use podq::{AffinityScope, Work, Workqueue};

/// How long the queueing item sleeps after queueing.
const SLEEP: Duration = Duration::from_secs(1);

/// One pool for the whole machine, so that every item of a test meets the same workers; its
/// own (`workers` sets it apart from the other tests' pools, which have equal attributes
/// otherwise), so that its counts are the test's alone.
fn system(name: &str, workers: usize) -> Arc<Workqueue> {
    Arc::new(
        Workqueue::builder(name)
            .scope(AffinityScope::System)
            .max_workers(workers)
            .build()
            .expect("workqueue"),
    )
}

/// Sums one count over the workqueue's pools.
fn total(wq: &Workqueue, count: impl Fn(&podq::PoolStats) -> u64) -> u64 {
    wq.stats().pools.iter().map(count).sum()
}

#[test]
fn an_item_held_for_a_queuer_that_then_sleeps_runs_before_the_sleep_ends() {
    let wq = system("held-sleep", 101);
    let (ran, rx) = mpsc::channel();
    let slept = Arc::new(AtomicBool::new(false));
    let (queuer_wq, queuer_slept) = (Arc::clone(&wq), Arc::clone(&slept));
    assert!(wq.queue(move || {
        let slept = Arc::clone(&queuer_slept);
        let started = Instant::now();
        assert!(queuer_wq.queue(move || {
            let _ = ran.send((started.elapsed(), slept.load(Ordering::SeqCst)));
        }));
        std::thread::sleep(SLEEP);
        queuer_slept.store(true, Ordering::SeqCst);
    }));
    let (after, queuer_done) = rx
        .recv_timeout(SLEEP * 10)
        .expect("the held item never ran");
    assert!(!queuer_done, "it waited for its queuer: {after:?}");
    assert!(after < SLEEP / 2, "{after:?}");
    assert!(wq.flush());
    // It was held, and another worker (or the watchdog) took it.
    assert_eq!(total(&wq, |p| p.taken_from_queuer), 1);
}

#[test]
fn items_held_ahead_by_a_worker_that_then_sleeps_run_before_the_sleep_ends() {
    const SHORT: usize = 12;
    let wq = system("held-ahead-sleep", 104);
    // Each attempt: one worker waits in a gate; the other, parked, is woken by the first of the
    // items queued behind the gate. It runs that one (which has the pool watched, so that
    // nobody is idle and the pool does not grow), comes back to the head, takes the next one,
    // which sleeps, with the rest behind it, and holds its share of them ahead (H8). The gated
    // worker, let go, runs the head's and takes the held ones over (H5, or the watchdog, H6).
    // An attempt whose woken worker came to the head before the rest were queued holds none;
    // another attempt follows.
    for _ in 0..8 {
        let taken_before = total(&wq, |p| p.taken_from_queuer);
        let (gate, gated) = mpsc::channel::<()>();
        let (in_gate, waiting) = mpsc::channel();
        assert!(wq.queue(move || {
            let _ = in_gate.send(());
            let _ = gated.recv();
        }));
        waiting.recv().expect("the gate item ran");
        // The other worker spins a little, then parks.
        std::thread::sleep(Duration::from_millis(50));
        let started = Instant::now();
        let (ran, rx) = mpsc::channel();
        let first = ran.clone();
        assert!(wq.queue(move || {
            let _ = first.send(started.elapsed());
        }));
        assert!(wq.queue(|| std::thread::sleep(SLEEP)));
        for _ in 0..SHORT {
            let ran = ran.clone();
            assert!(wq.queue(move || {
                let _ = ran.send(started.elapsed());
            }));
        }
        drop(ran);
        gate.send(()).expect("the gate item waits");
        for _ in 0..=SHORT {
            let after = rx.recv_timeout(SLEEP * 10).expect("a short item never ran");
            assert!(
                after < SLEEP / 2,
                "it waited for the sleeping worker: {after:?}"
            );
        }
        assert!(wq.flush());
        // Held ahead and taken over, and some held item ran on its holder: an attempt whose
        // take-overs left its holder none is followed by another.
        if total(&wq, |p| p.taken_from_queuer) > taken_before && total(&wq, |p| p.ran_ahead) > 0 {
            return;
        }
    }
    panic!("no attempt had items held ahead, taken over and run ahead by their holder");
}

#[test]
fn a_chain_of_items_runs_on_its_queuer_and_drain_waits_for_all_of_it() {
    const DEPTH: usize = 10_000;
    let wq = system("held-chain", 102);
    let ran = Arc::new(AtomicUsize::new(0));
    fn link(wq: Arc<Workqueue>, ran: Arc<AtomicUsize>, left: usize) {
        ran.fetch_add(1, Ordering::Relaxed);
        if left > 0 {
            let next = Arc::clone(&wq);
            assert!(wq.queue(move || link(next, ran, left - 1)));
        }
    }
    let (first, counted) = (Arc::clone(&wq), Arc::clone(&ran));
    assert!(wq.queue(move || link(first, counted, DEPTH - 1)));
    // The links are queued by the workqueue's own items: a drain waits for all of them.
    assert!(wq.drain());
    assert_eq!(ran.load(Ordering::Relaxed), DEPTH);
    let by_queuer = total(&wq, |p| p.ran_by_queuer);
    assert!(by_queuer > 0 && by_queuer < DEPTH as u64, "{by_queuer}");
    let stats = wq.stats();
    assert_eq!(stats.pools.iter().map(|p| p.queue_depth).sum::<usize>(), 0);
}

#[test]
fn cancel_sync_finds_an_item_held_by_the_worker_that_calls_it() {
    let wq = system("held-cancel", 103);
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&runs);
    let work = Work::new(move || {
        counted.fetch_add(1, Ordering::SeqCst);
    });
    let (tx, rx) = mpsc::channel();
    let (inner_wq, inner_work) = (Arc::clone(&wq), work.clone());
    assert!(wq.queue(move || {
        assert!(inner_wq.queue_work(&inner_work));
        // Held by this worker: cancel takes it out of the slot, so it never runs.
        let _ = tx.send((inner_work.cancel_sync(), inner_work.is_pending()));
    }));
    let (cancelled, pending) = rx.recv_timeout(SLEEP * 10).expect("the item never ran");
    assert!(cancelled);
    assert!(!pending);
    assert!(wq.flush());
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[test]
fn an_ordered_workqueue_keeps_fifo_for_items_queued_by_its_items() {
    let wq = Arc::new(
        Workqueue::builder("held-ordered")
            .scope(AffinityScope::System)
            .max_active(1)
            .max_workers(105)
            .build()
            .expect("workqueue"),
    );
    let order = Arc::new(Mutex::new(Vec::new()));
    let (inner_wq, inner_order) = (Arc::clone(&wq), Arc::clone(&order));
    assert!(wq.queue(move || {
        for i in 0..100 {
            let order = Arc::clone(&inner_order);
            assert!(inner_wq.queue(move || order.lock().unwrap().push(i)));
        }
    }));
    assert!(wq.drain());
    assert_eq!(*order.lock().unwrap(), (0..100).collect::<Vec<_>>());
    assert_eq!(total(&wq, |p| p.ran_by_queuer), 0);
}

#[test]
fn dropping_the_workqueue_runs_the_items_its_items_hold() {
    let ran = Arc::new(AtomicUsize::new(0));
    for round in 0..20 {
        let wq = system(&format!("held-drop-{round}"), 104);
        let (inner_wq, counted) = (Arc::clone(&wq), Arc::clone(&ran));
        assert!(wq.queue(move || {
            let counted = Arc::clone(&counted);
            assert!(inner_wq.queue(move || {
                counted.fetch_add(1, Ordering::SeqCst);
            }));
        }));
        // The last handle may go on the worker (the item holds one): either way, nothing
        // queued is lost.
        drop(wq);
    }
    let deadline = Instant::now() + SLEEP * 10;
    while ran.load(Ordering::SeqCst) < 20 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(ran.load(Ordering::SeqCst), 20);
}
