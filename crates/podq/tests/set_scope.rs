//! `set_scope` and `set_shard_size` while every CPU floods the workqueue: nothing is lost,
//! ordering and `max_active` hold, and the new pods serve the items queued after the change.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use podq::affinity::{allowed_cpus, pin_current_thread};
use podq::{AffinityScope, CpuSet, Topology, Work, Workqueue};

/// A 16-CPU synthetic machine (two cache domains of 4 cores with SMT, two nodes): every scope
/// and shard size gives other pods. Its workers run where this machine puts them.
fn machine() -> Topology {
    Topology::from_machine("sockets=1,nodes=2,caches=2,cores=8,smt=2").expect("machine")
}

/// Producers, one per CPU of this machine, pinned there, each queueing one-shot items and a
/// reusable item until `stop`; returns their handles. `queued` counts successful queue calls.
fn flood(
    wq: &Arc<Workqueue>,
    queued: &Arc<AtomicU64>,
    ran: &Arc<AtomicU64>,
    stop: &Arc<AtomicBool>,
) -> Vec<std::thread::JoinHandle<()>> {
    let cpus = allowed_cpus().expect("affinity");
    cpus.iter()
        .map(|cpu| {
            let (wq, queued, ran, stop) = (
                Arc::clone(wq),
                Arc::clone(queued),
                Arc::clone(ran),
                Arc::clone(stop),
            );
            std::thread::spawn(move || {
                pin_current_thread(&CpuSet::from_iter([cpu])).expect("pin");
                let count = Arc::clone(&ran);
                let work = Work::new(move || {
                    count.fetch_add(1, Ordering::Relaxed);
                });
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let r = Arc::clone(&ran);
                    assert!(wq.queue(move || {
                        r.fetch_add(1, Ordering::Relaxed);
                    }));
                    queued.fetch_add(1, Ordering::SeqCst);
                    if wq.queue_work(&work) {
                        queued.fetch_add(1, Ordering::SeqCst);
                    }
                    n += 1;
                    if n.is_multiple_of(256) {
                        // A bounded backlog: the changes, not the queue's length, are the test.
                        while queued.load(Ordering::SeqCst) > ran.load(Ordering::SeqCst) + 4096
                            && !stop.load(Ordering::Relaxed)
                        {
                            std::thread::yield_now();
                        }
                    }
                }
            })
        })
        .collect()
}

#[test]
fn a_scope_change_under_a_flood_from_every_cpu_loses_nothing() {
    let wq = Arc::new(
        Workqueue::builder("set-scope")
            .topology(machine())
            .idle_timeout(Duration::from_secs(911))
            .build()
            .expect("workqueue"),
    );
    let queued = Arc::new(AtomicU64::new(0));
    let ran = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let producers = flood(&wq, &queued, &ran, &stop);
    // Every scope in turn from the default, `cache_shard`: each one a change, `cache_shard`
    // included (it follows `cache`).
    let mut changes = 0;
    let mut previous = AffinityScope::CacheShard;
    for scope in AffinityScope::ALL {
        wq.set_scope(scope).expect("scope");
        changes += u64::from(scope != previous);
        previous = scope;
        assert_eq!(wq.scope(), scope);
        // Everything queued before the flush has run, whichever pods it was queued to.
        let before = queued.load(Ordering::SeqCst);
        assert!(wq.flush());
        assert!(ran.load(Ordering::SeqCst) >= before, "flush returned early");
    }
    wq.set_scope(AffinityScope::CacheShard).expect("scope");
    changes += 1;
    for cores in [2, 1, 4] {
        wq.set_shard_size(cores).expect("shard size");
        assert_eq!(wq.shard_size(), cores);
        assert_eq!(wq.pools(), 8 / cores);
    }
    changes += 3;
    assert!(matches!(
        wq.set_shard_size(0),
        Err(podq::Error::ZeroShardSize)
    ));
    stop.store(true, Ordering::Relaxed);
    for p in producers {
        p.join().expect("producer");
    }
    assert!(wq.flush());
    let queued = queued.load(Ordering::SeqCst);
    assert_eq!(ran.load(Ordering::SeqCst), queued, "items lost");
    let stats = wq.stats();
    assert_eq!((stats.completed, stats.in_flight), (queued, 0));
    assert_eq!(stats.reformations, changes);
    assert_eq!(stats.scope, AffinityScope::CacheShard);
    assert_eq!(stats.pools.len(), 2);
}

#[test]
fn ordered_and_max_active_hold_across_scope_changes() {
    for max_active in [1, 3] {
        let wq = Arc::new(
            Workqueue::builder("set-scope-limited")
                .topology(machine())
                .scope(AffinityScope::System)
                .max_active(max_active)
                .idle_timeout(Duration::from_secs(912))
                .build()
                .expect("workqueue"),
        );
        let next = Arc::new(AtomicU64::new(0));
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let out_of_order = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let producer = {
            let (wq, next, running, most, out_of_order, stop) = (
                Arc::clone(&wq),
                Arc::clone(&next),
                Arc::clone(&running),
                Arc::clone(&most),
                Arc::clone(&out_of_order),
                Arc::clone(&stop),
            );
            std::thread::spawn(move || {
                let mut seq = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    while seq - next.load(Ordering::SeqCst) > 256 && !stop.load(Ordering::Relaxed) {
                        std::thread::yield_now();
                    }
                    let (next, running, most, out_of_order) = (
                        Arc::clone(&next),
                        Arc::clone(&running),
                        Arc::clone(&most),
                        Arc::clone(&out_of_order),
                    );
                    let mine = seq;
                    seq += 1;
                    assert!(wq.queue(move || {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        if max_active == 1 && next.load(Ordering::SeqCst) != mine {
                            out_of_order.fetch_add(1, Ordering::SeqCst);
                        }
                        next.fetch_add(1, Ordering::SeqCst);
                        running.fetch_sub(1, Ordering::SeqCst);
                    }));
                }
                seq
            })
        };
        for scope in [
            AffinityScope::Cpu,
            AffinityScope::Cache,
            AffinityScope::System,
        ] {
            std::thread::sleep(Duration::from_millis(20));
            wq.set_scope(scope).expect("scope");
        }
        std::thread::sleep(Duration::from_millis(20));
        stop.store(true, Ordering::Relaxed);
        let queued = producer.join().expect("producer");
        assert!(wq.flush());
        assert_eq!(next.load(Ordering::SeqCst), queued, "items lost");
        assert_eq!(out_of_order.load(Ordering::SeqCst), 0, "out of order");
        assert!(most.load(Ordering::SeqCst) <= max_active, "over max_active");
        assert_eq!(wq.stats().reformations, 3);
    }
}
