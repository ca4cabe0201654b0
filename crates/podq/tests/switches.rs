//! Pull and steering switched at run time: `set_pull` re-forms the pods on pools that do not
//! pull while producers queue, losing nothing, and nothing is pulled afterwards; `set_steer`
//! stops and restarts steering without touching the pools.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::time::Duration;

use podq::{AffinityScope, Workqueue};

/// Items each producer queues, half before the switch and half after.
const PER_PRODUCER: usize = 4_000;

#[test]
fn set_pull_off_mid_run_loses_nothing_and_nothing_is_pulled_after() {
    let wq = Workqueue::builder("switch-pull")
        .scope(AffinityScope::Cpu)
        // Pools of its own: workqueues with equal attributes share pools, and their counts.
        .idle_timeout(Duration::from_secs(411))
        .build()
        .expect("workqueue");
    assert!(wq.pulls());
    let cpus: Vec<usize> = wq.cpus().iter().collect();
    let runs: Arc<Vec<AtomicUsize>> = Arc::new(
        (0..cpus.len() * PER_PRODUCER)
            .map(|_| AtomicUsize::new(0))
            .collect(),
    );
    let halfway = Barrier::new(cpus.len() + 1);
    let switched = Barrier::new(cpus.len() + 1);
    std::thread::scope(|s| {
        for (k, &cpu) in cpus.iter().enumerate() {
            let (wq, runs, halfway, switched) = (&wq, &runs, &halfway, &switched);
            s.spawn(move || {
                for i in 0..PER_PRODUCER {
                    if i == PER_PRODUCER / 4 {
                        halfway.wait();
                    }
                    if i == PER_PRODUCER / 2 {
                        switched.wait();
                    }
                    let id = k * PER_PRODUCER + i;
                    let runs = Arc::clone(runs);
                    // Producer 0 queues long items, the others short ones, so that pods run
                    // dry at different times and would pull.
                    let spin = if k == 0 { 2_000 } else { 10 };
                    wq.queue_on(cpu, move || {
                        for _ in 0..spin {
                            std::hint::spin_loop();
                        }
                        runs[id].fetch_add(1, Ordering::Relaxed);
                    })
                    .expect("cpu");
                }
            });
        }
        // Switched while the producers queue (a quarter of the items queued, many waiting).
        halfway.wait();
        wq.set_pull(false).expect("switch");
        switched.wait();
    });
    assert!(!wq.pulls());
    assert!(wq.flush());
    assert!(
        runs.iter().all(|r| r.load(Ordering::Relaxed) == 1),
        "every item ran exactly once"
    );
    let stats = wq.stats();
    assert_eq!(stats.completed, (cpus.len() * PER_PRODUCER) as u64);
    assert_eq!(stats.reformations, 1);
    assert!(!stats.pull);
    for pool in &stats.pools {
        assert_eq!((pool.pulled_in, pool.pulled_out), (0, 0), "{pool:?}");
        assert!(pool.pull.is_none(), "{pool:?}");
    }

    // After the switch, an item waiting behind a blocked one on a one-worker pool waits for
    // it: no idle pod takes it.
    if cpus.len() >= 2 {
        let one = Workqueue::builder("switch-pull-wait")
            .scope(AffinityScope::Cpu)
            .max_workers(1)
            .idle_timeout(Duration::from_secs(412))
            .build()
            .expect("workqueue");
        one.set_pull(false).expect("switch");
        let (tx, rx) = mpsc::channel::<()>();
        let who = Arc::new(std::sync::Mutex::new(Vec::new()));
        let who_a = Arc::clone(&who);
        one.queue_on(0, move || {
            who_a.lock().unwrap().push(thread_name());
            let _ = rx.recv_timeout(Duration::from_millis(300));
        })
        .expect("cpu 0");
        let who_b = Arc::clone(&who);
        one.queue_on(0, move || {
            who_b.lock().unwrap().push(thread_name());
            let _ = tx.send(());
        })
        .expect("cpu 0");
        one.queue_on(0, || {}).expect("cpu 0");
        assert!(one.flush());
        assert_eq!(*who.lock().unwrap(), ["podq/cpu-p0", "podq/cpu-p0"]);
        for pool in one.stats().pools {
            assert_eq!((pool.pulled_in, pool.pulled_out), (0, 0), "{pool:?}");
        }
        // On again: the pools that pull serve it again.
        one.set_pull(true).expect("switch");
        assert!(one.pulls());
        assert!(one.stats().pools.iter().all(|p| p.pull.is_some()));
    }
}

#[test]
fn a_strict_workqueue_stays_without_pull() {
    let wq = Workqueue::builder("switch-strict")
        .strict(true)
        .build()
        .expect("workqueue");
    assert!(!wq.pulls());
    wq.set_pull(true).expect("switch");
    assert!(!wq.pulls());
    assert_eq!(wq.stats().reformations, 0);
}

#[test]
fn set_steer_stops_and_restarts_steering_and_keeps_the_pools() {
    let wq = Workqueue::builder("switch-steer")
        .scope(AffinityScope::Cpu)
        .build()
        .expect("workqueue");
    let conn = wq.group();
    let ran = Arc::new(AtomicUsize::new(0));
    let queue = |n: usize| {
        for _ in 0..n {
            let ran = Arc::clone(&ran);
            conn.queue(move || {
                ran.fetch_add(1, Ordering::Relaxed);
            });
            assert!(wq.flush());
        }
    };
    queue(10);
    let grouped = |s: &podq::WorkqueueStats| s.grouped_at_home + s.grouped_elsewhere;
    assert_eq!(grouped(&wq.stats()), 10);

    wq.set_steer(false).expect("switch");
    assert!(!wq.steers() && !wq.stats().steer);
    assert_eq!(conn.home(), None);
    queue(10);
    let off = wq.stats();
    assert_eq!(
        grouped(&off),
        10,
        "calls of a group that does not steer are plain"
    );
    assert_eq!(off.reformations, 0);

    wq.set_steer(true).expect("switch");
    queue(10);
    assert_eq!(grouped(&wq.stats()), 20);
    assert_eq!(ran.load(Ordering::Relaxed), 30);
}

/// The name of the calling thread.
fn thread_name() -> String {
    std::thread::current().name().unwrap_or("").to_owned()
}
