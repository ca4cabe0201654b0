//! `set_scope` and `set_shard_size` while every CPU floods the workqueue: nothing is lost,
//! ordering and `max_active` hold, and the new pods serve the items queued after the change.

use std::sync::Arc;
use std::time::Duration;

mod reform_support;

use podq::{AffinityScope, Topology, Workqueue};
use reform_support::{Flood, Sequenced};

/// A 16-CPU synthetic machine (two cache domains of 4 cores with SMT, two nodes): every scope
/// and shard size gives other pods. Its workers run where this machine puts them.
fn machine() -> Topology {
    Topology::from_machine("sockets=1,nodes=2,caches=2,cores=8,smt=2").expect("machine")
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
    let flood = Flood::start(&wq, true, &[]);
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
        flood.flush();
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
    let queued = flood.finish();
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
        let producer = Sequenced::start(&wq, max_active);
        for scope in [
            AffinityScope::Cpu,
            AffinityScope::Cache,
            AffinityScope::System,
        ] {
            std::thread::sleep(Duration::from_millis(20));
            wq.set_scope(scope).expect("scope");
        }
        std::thread::sleep(Duration::from_millis(20));
        producer.finish();
        assert_eq!(wq.stats().reformations, 3);
    }
}
