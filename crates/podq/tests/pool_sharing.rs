//! Pools shared between workqueues of equal attributes and separate otherwise, their counts,
//! and shutdown: dropping the last workqueue of a pool runs everything queued.
//!
//! Each test gives its workqueues an idle timeout of its own, so that tests running in
//! parallel never share a pool and every count seen is the test's own.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;

mod support;
use support::eventually;

use podq::{AffinityScope, Workqueue};

/// An idle timeout no other test uses, so the test's pools are its own.
fn private_timeout(n: u64) -> Duration {
    Duration::from_secs(7_200 + n)
}

/// One pool of every CPU (`system`), with a private idle timeout.
fn system_wq(name: &str, n: u64) -> Workqueue {
    Workqueue::builder(name)
        .scope(AffinityScope::System)
        .idle_timeout(private_timeout(n))
        .build()
        .expect("workqueue")
}

#[test]
fn workqueues_with_equal_attributes_share_their_pool() {
    let first = system_wq("first", 1);
    let second = system_wq("second", 1);
    for _ in 0..50 {
        first.queue(|| {});
    }
    first.flush();
    // The second workqueue sees the first one's items in the pool they share.
    assert!(
        eventually(|| second.stats().pools[0].executed == 50),
        "{:?}",
        second.stats()
    );
    assert_eq!(second.stats().completed, 0);
    assert_eq!(first.stats().completed, 50);
}

#[test]
fn workqueues_with_other_attributes_get_pools_of_their_own() {
    let plain = system_wq("plain", 2);
    let strict = Workqueue::builder("strict")
        .scope(AffinityScope::System)
        .strict(true)
        .idle_timeout(private_timeout(2))
        .build()
        .expect("workqueue");
    let sharded = Workqueue::builder("sharded")
        .scope(AffinityScope::Cache)
        .idle_timeout(private_timeout(2))
        .build()
        .expect("workqueue");
    for _ in 0..20 {
        plain.queue(|| {});
    }
    plain.flush();
    assert!(eventually(|| plain.stats().pools[0].executed == 20));
    assert_eq!(strict.stats().pools[0].executed, 0);
    assert!(sharded.stats().pools.iter().all(|p| p.executed == 0));
}

#[test]
fn pool_stats_count_every_lock_acquisition_and_item() {
    const THREADS: usize = 2;
    const EACH: usize = 5_000;
    let wq = Arc::new(system_wq("counts", 3));
    let queuers: Vec<_> = (0..THREADS)
        .map(|_| {
            let wq = Arc::clone(&wq);
            thread::spawn(move || {
                for _ in 0..EACH {
                    wq.queue(|| {});
                }
            })
        })
        .collect();
    for q in queuers {
        q.join().expect("queuer");
    }
    wq.flush();
    let items = (THREADS * EACH) as u64;
    assert!(eventually(|| wq.stats().pools[0].executed == items));
    let pool = &wq.stats().pools[0];
    assert_eq!(pool.queue_depth, 0);
    // Every queue call takes its lane's lock once, and a worker takes the head lock at least
    // once per `1 + AHEAD_MAX` items (it may take the next ones ahead into its held slot: H8).
    let per_head_lock = 1 + podq::policy::held::AHEAD_MAX as u64;
    assert!(
        pool.lock_acquisitions >= items + items / per_head_lock,
        "{pool:?}"
    );
    assert!(pool.lock_contended <= pool.lock_acquisitions);
    assert!(pool.workers >= 1 && pool.workers as u64 <= pool.workers_created);
}

#[test]
fn dropping_the_last_workqueue_runs_everything_queued() {
    let ran = Arc::new(AtomicUsize::new(0));
    let wq = Workqueue::builder("shutdown")
        .scope(AffinityScope::System)
        .max_workers(1)
        .idle_timeout(private_timeout(4))
        .build()
        .expect("workqueue");
    let (release, gate) = mpsc::channel::<()>();
    // The only worker waits for the test, so everything after it is still queued at the drop.
    wq.queue(move || gate.recv().expect("released"));
    for _ in 0..500 {
        let ran = Arc::clone(&ran);
        wq.queue(move || {
            ran.fetch_add(1, Ordering::SeqCst);
        });
    }
    assert!(wq.stats().pools[0].queue_depth > 0);
    release.send(()).expect("worker waits");
    drop(wq);
    assert_eq!(ran.load(Ordering::SeqCst), 500);
}
