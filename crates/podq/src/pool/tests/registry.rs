//! The registry's sharing rules, and pool names.

use std::sync::LazyLock;

use super::*;

/// The registry of the tests' pools.
static REGISTRY: LazyLock<Registry<TestJob>> = LazyLock::new(Registry::new);

fn machine() -> Topology {
    Topology::from_machine("sockets=1,nodes=1,caches=2,cores=8,smt=2").expect("machine")
}

#[test]
fn the_pools_of_one_node_keep_drained_segments_together_and_two_nodes_apart() {
    let topo = Topology::from_machine("sockets=2,nodes=2,caches=2,cores=4,smt=1").expect("m");
    let a = attrs_of(AffinityScope::Cache, false, topo.cpu_set());
    let per_cache = REGISTRY.pools_for(&topo, &a).expect("pools");
    let core = |set: &PoolSet<TestJob>, pod: usize| Arc::clone(&set.pools[pod].shared);
    let (node0, node1) = (core(&per_cache, 0), core(&per_cache, 1));
    assert!(!node0.core.shares_spares_with(&node1.core));
    // Pools made for other attributes, even after these are gone, share their node's.
    let cpus = PoolAttrs {
        scope: AffinityScope::Cpu,
        ..a
    };
    drop(per_cache);
    let per_cpu = REGISTRY.pools_for(&topo, &cpus).expect("pools");
    assert_eq!(per_cpu.pools.len(), topo.cpu_set().len());
    assert_ne!(node0.pod.node, node1.pod.node);
    for pool in &per_cpu.pools {
        let same_node = if pool.shared.pod.node == node0.pod.node {
            &node0
        } else {
            &node1
        };
        assert_eq!(pool.shared.pod.node, same_node.pod.node);
        assert!(pool.shared.core.shares_spares_with(&same_node.core));
    }
}

#[test]
fn equal_attributes_share_pools_and_others_do_not() {
    let topo = machine();
    let a = attrs_of(AffinityScope::Cache, false, topo.cpu_set());
    let first = REGISTRY.pools_for(&topo, &a).expect("pools");
    let second = REGISTRY.pools_for(&topo, &a).expect("pools");
    assert_eq!(first.pools.len(), 2);
    for (x, y) in first.pools.iter().zip(&second.pools) {
        assert!(Arc::ptr_eq(x, y));
    }
    let strict = PoolAttrs {
        strict: true,
        ..a.clone()
    };
    let other = REGISTRY.pools_for(&topo, &strict).expect("pools");
    assert!(!Arc::ptr_eq(&first.pools[0], &other.pools[0]));
    let no_pull = PoolAttrs {
        pull: false,
        ..a.clone()
    };
    let other = REGISTRY.pools_for(&topo, &no_pull).expect("pools");
    assert!(!Arc::ptr_eq(&first.pools[0], &other.pools[0]));
    let shards = PoolAttrs {
        scope: AffinityScope::CacheShard,
        ..a.clone()
    };
    let other = REGISTRY.pools_for(&topo, &shards).expect("pools");
    assert!(!Arc::ptr_eq(&first.pools[0], &other.pools[0]));
    // Another machine with the same attributes gets its own pools too.
    let wide = Topology::from_machine("sockets=1,nodes=1,caches=1,cores=16,smt=2").expect("m");
    let wide_attrs = attrs_of(AffinityScope::Cache, false, topo.cpu_set());
    let other = REGISTRY.pools_for(&wide, &wide_attrs).expect("pools");
    assert!(!Arc::ptr_eq(&first.pools[0], &other.pools[0]));
}

#[test]
fn a_pool_is_dropped_with_its_last_user_and_made_anew() {
    let topo = machine();
    let a = attrs_of(AffinityScope::Numa, true, topo.cpu_set());
    let first = REGISTRY.pools_for(&topo, &a).expect("pools");
    let weak = Arc::downgrade(&first.pools[0]);
    drop(first);
    assert!(weak.upgrade().is_none());
    let again = REGISTRY.pools_for(&topo, &a).expect("pools");
    assert_eq!(again.pools[0].stats().lock_acquisitions, 0);
}

#[test]
fn pools_serve_their_pod_within_the_workqueue_cpus() {
    let topo = machine();
    // Two cache domains of 4 cores (8 CPUs each); the workqueue may use CPUs 0-1 and 8-9 only.
    let cpus: CpuSet = [0, 1, 8, 9].into_iter().collect();
    let a = attrs_of(AffinityScope::Cache, false, cpus);
    let set = REGISTRY.pools_for(&topo, &a).expect("pools");
    assert_eq!(set.pods.len(), 2);
    assert_eq!(set.pools[0].pod().cpus, [0, 1, 8, 9].into_iter().collect());
    assert_eq!(set.pools[1].pod().cpus, CpuSet::new());
    assert_eq!(set.pools[0].stats().name, "cache-p0");
    assert_eq!(set.pools[1].stats().pod, 1);
}

/// The other bad attributes (no worker, no CPU, an unusable CPU) are rejected before the
/// registry, by the workqueue's builder (`tests/workqueue_errors.rs`).
#[test]
fn bad_attributes_are_typed_errors() {
    let topo = machine();
    let good = attrs_of(AffinityScope::CacheShard, false, topo.cpu_set());
    let zero_shard = PoolAttrs {
        shard_size: 0,
        ..good
    };
    assert!(matches!(
        REGISTRY.pools_for(&topo, &zero_shard),
        Err(crate::error::Error::ZeroShardSize)
    ));
}

#[test]
fn pool_names_fit_in_a_linux_thread_name() {
    assert_eq!(pool_name(AffinityScope::CacheShard, 8, 2), "cs8-p2");
    assert_eq!(pool_name(AffinityScope::Cpu, 8, 5), "cpu-p5");
    assert_eq!(pool_name(AffinityScope::System, 8, 0), "sys-p0");
    for scope in AffinityScope::ALL {
        let name = format!("podq/{}", pool_name(scope, 16, 999));
        assert!(name.len() <= 15, "{name}");
    }
}
