//! Pods of every scope: the cache shard rule's examples (the merged Linux workqueue
//! `WQ_AFFN_CACHE_SHARD` series of 2026, `DIV_ROUND_CLOSEST`), SMT machines, and properties
//! over random synthetic machines.

use std::fs;

use podq::scope::{shard_count, DEFAULT_SHARD_SIZE};
use podq::topology::pods_from_predicate;
use podq::{AffinityScope, CpuSet, Error, Pods, Topology};
use proptest::prelude::*;

fn pod_lists(topo: &Topology, scope: AffinityScope, shard_size: usize) -> Vec<String> {
    Pods::new(topo, scope, shard_size)
        .unwrap()
        .pods()
        .iter()
        .map(|p| p.cpus().to_string())
        .collect()
}

/// The number of CPUs of each `cache_shard` pod.
fn shard_sizes(desc: &str, shard_size: usize) -> Vec<usize> {
    let topo = Topology::from_machine(desc).unwrap();
    Pods::new(&topo, AffinityScope::CacheShard, shard_size)
        .unwrap()
        .pods()
        .iter()
        .map(|p| p.cpus().len())
        .collect()
}

/// 1-11 cores make one shard, 12 make 6+6, 36 make 8+7+7+7+7, 72 nine of 8, 100 nine of 8 and
/// four of 7.
#[test]
fn the_kernels_cache_shard_examples() {
    assert_eq!(shard_sizes("cores=11", 8), [11]);
    assert_eq!(shard_sizes("cores=12", 8), [6, 6]);
    assert_eq!(shard_sizes("cores=36", 8), [8, 7, 7, 7, 7]);
    assert_eq!(shard_sizes("cores=72", 8), [8; 9]);
    let mut hundred = vec![8; 9];
    hundred.extend([7; 4]);
    assert_eq!(shard_sizes("cores=100", 8), hundred);
    for cores in 1..=11 {
        assert_eq!(shard_sizes(&format!("cores={cores}"), 8), [cores]);
    }
    // Shard size 1 is one shard per core; a size above the domain is one shard.
    assert_eq!(shard_sizes("cores=5", 1), [1; 5]);
    assert_eq!(shard_sizes("cores=5", 20), [5]);
}

#[test]
fn shards_follow_cache_domains_and_keep_siblings_together() {
    let epyc = Topology::from_machine("epyc-9d64").unwrap();
    let shards = pod_lists(&epyc, AffinityScope::CacheShard, DEFAULT_SHARD_SIZE);
    let expected: Vec<String> = (0..11)
        .map(|d| format!("{}-{},{}-{}", d * 8, d * 8 + 7, 88 + d * 8, 88 + d * 8 + 7))
        .collect();
    assert_eq!(shards, expected);
    assert_eq!(pod_lists(&epyc, AffinityScope::Cache, 8), expected);
    assert_eq!(pod_lists(&epyc, AffinityScope::Smt, 8)[5], "5,93");
    assert_eq!(pod_lists(&epyc, AffinityScope::System, 8), ["0-175"]);
    // Four cores per shard: each domain splits in two, siblings with their leaders.
    let halves = pod_lists(&epyc, AffinityScope::CacheShard, 4);
    assert_eq!(halves.len(), 22);
    assert_eq!(halves[0], "0-3,88-91");
    assert_eq!(halves[1], "4-7,92-95");

    let skylake = Topology::from_machine("skylake-18c").unwrap();
    assert_eq!(
        pod_lists(&skylake, AffinityScope::CacheShard, 8),
        ["0-8,18-26", "9-17,27-35"]
    );
    let ryzen = Topology::from_machine("ryzen-3900x").unwrap();
    assert_eq!(
        pod_lists(&ryzen, AffinityScope::CacheShard, 8),
        ["0-2,12-14", "3-5,15-17", "6-8,18-20", "9-11,21-23"]
    );
    let ryzen = Topology::from_machine("ryzen-7950x").unwrap();
    assert_eq!(
        pod_lists(&ryzen, AffinityScope::CacheShard, 8),
        ["0-7,16-23", "8-15,24-31"]
    );
    let grace = Topology::from_machine("grace").unwrap();
    let shards = pod_lists(&grace, AffinityScope::CacheShard, 8);
    assert_eq!(shards.len(), 9);
    assert_eq!(shards[8], "64-71");
    assert_eq!(pod_lists(&grace, AffinityScope::Cache, 8), ["0-71"]);
}

#[test]
fn shards_with_adjacent_siblings() {
    // 12 cores whose siblings are adjacent (CPU 2k and 2k+1), as on many ARM and POWER
    // machines, in one cache: 6 + 6 cores.
    let dir = tempfile::tempdir().unwrap();
    let cpu = dir.path().join("sys/devices/system/cpu");
    for id in 0..24 {
        let core = format!("{}-{}\n", id / 2 * 2, id / 2 * 2 + 1);
        let topo = cpu.join(format!("cpu{id}/topology"));
        fs::create_dir_all(&topo).unwrap();
        fs::write(topo.join("thread_siblings_list"), core).unwrap();
        fs::write(topo.join("physical_package_id"), "0\n").unwrap();
        let cache = cpu.join(format!("cpu{id}/cache/index2"));
        fs::create_dir_all(&cache).unwrap();
        fs::write(cache.join("level"), "3\n").unwrap();
        fs::write(cache.join("type"), "Unified\n").unwrap();
        fs::write(cache.join("shared_cpu_list"), "0-23\n").unwrap();
    }
    let topo = Topology::from_sysfs(dir.path()).unwrap();
    assert_eq!(
        pod_lists(&topo, AffinityScope::CacheShard, 8),
        ["0-11", "12-23"]
    );
    // 5 cores per shard: round(12 / 5) = 2 shards of 6 cores.
    assert_eq!(
        pod_lists(&topo, AffinityScope::CacheShard, 5),
        ["0-11", "12-23"]
    );
    // 3 cores per shard: 4 shards of 3 cores.
    assert_eq!(
        pod_lists(&topo, AffinityScope::CacheShard, 3),
        ["0-5", "6-11", "12-17", "18-23"]
    );
}

#[test]
fn pods_know_their_node_and_pod_of_is_total_on_usable_cpus() {
    let topo = Topology::from_machine("sockets=2,nodes=2,caches=4,cores=16,smt=2").unwrap();
    let numa = Pods::new(&topo, AffinityScope::Numa, 8).unwrap();
    assert_eq!(numa.len(), 2);
    assert_eq!(numa.pods()[1].node(), Some(1));
    assert_eq!(numa.pods()[1].cpus().to_string(), "8-15,24-31");
    assert_eq!(numa.pod_of(24), Some(1));
    assert_eq!(numa.pod_of(32), None);
    assert_eq!(numa.scope(), AffinityScope::Numa);
    assert_eq!(numa.shard_size(), 8);
    assert!(matches!(
        Pods::new(&topo, AffinityScope::CacheShard, 0),
        Err(Error::ZeroShardSize)
    ));
}

#[test]
fn pods_spanning_nodes_or_cache_domains_have_none() {
    let topo = Topology::from_machine("sockets=2,nodes=2,caches=4,cores=16,smt=2").unwrap();
    let numa = Pods::new(&topo, AffinityScope::Numa, 8).unwrap();
    assert_eq!(numa.pods()[1].node(), Some(1));
    assert_eq!(numa.pods()[1].cache_domain(), None);
    let system = Pods::new(&topo, AffinityScope::System, 8).unwrap();
    assert_eq!(system.pods()[0].node(), None);
    assert_eq!(system.pods()[0].cache_domain(), None);
    let cache = Pods::new(&topo, AffinityScope::Cache, 8).unwrap();
    let domains: Vec<Option<usize>> = cache.pods().iter().map(|p| p.cache_domain()).collect();
    assert_eq!(domains, [Some(0), Some(1), Some(2), Some(3)]);
    let nodes: Vec<Option<usize>> = cache.pods().iter().map(|p| p.node()).collect();
    assert_eq!(nodes, [Some(0), Some(0), Some(1), Some(1)]);
    let smt = Pods::new(&topo, AffinityScope::Smt, 8).unwrap();
    assert_eq!(smt.pods()[5].cache_domain(), topo.cache_domain_of(5));
}

#[test]
fn pods_from_predicate_joins_the_first_pod_whose_lowest_cpu_shares() {
    let cpus: CpuSet = (0..6).collect();
    // Not transitive: "differ by at most 1". 0 opens a pod, 1 joins it (|0-1| <= 1), 2 does
    // not share with 0 and opens a pod, 3 joins 2's, and so on.
    let pods = pods_from_predicate(&cpus, |a, b| a.abs_diff(b) <= 1);
    let lists: Vec<String> = pods.iter().map(ToString::to_string).collect();
    assert_eq!(lists, ["0-1", "2-3", "4-5"]);
    assert!(pods_from_predicate(&CpuSet::new(), |_, _| true).is_empty());
}

/// Random synthetic machines: each count divides the next.
fn machines() -> impl Strategy<Value = String> {
    (1usize..=3, 1usize..=2, 1usize..=3, 1usize..=14, 1usize..=4).prop_map(
        |(sockets, nodes_per, caches_per, cores_per, smt)| {
            let nodes = sockets * nodes_per;
            let caches = nodes * caches_per;
            let cores = caches * cores_per;
            format!("sockets={sockets},nodes={nodes},caches={caches},cores={cores},smt={smt}")
        },
    )
}

/// The pod of `scope` holding `cpu`.
fn pod_cpus(pods: &Pods, cpu: usize) -> &CpuSet {
    pods.pods()[pods.pod_of(cpu).expect("usable CPU has a pod")].cpus()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn pods_partition_nest_and_balance(desc in machines(), shard_size in 1usize..=20) {
        let topo = Topology::from_machine(&desc).unwrap();
        let all = topo.cpu_set();
        let by_scope: Vec<Pods> = AffinityScope::ALL
            .iter()
            .map(|&s| Pods::new(&topo, s, shard_size).unwrap())
            .collect();
        let get = |scope: AffinityScope| &by_scope[AffinityScope::ALL.iter().position(|&s| s == scope).unwrap()];

        // Every usable CPU in exactly one pod of each scope; ids in order of lowest CPU.
        for pods in &by_scope {
            let mut seen = CpuSet::new();
            let mut last_lowest = None;
            for (i, pod) in pods.pods().iter().enumerate() {
                prop_assert_eq!(pod.id(), i);
                prop_assert!(!pod.cpus().is_empty());
                prop_assert!(pod.cpus().first() > last_lowest);
                last_lowest = pod.cpus().first();
                // The node and cache domain of all its CPUs, or None when they span several.
                let lowest = topo.cpu(pod.cpus().first().unwrap()).unwrap();
                let one_node = pod.cpus().iter().all(|c| topo.cpu(c).unwrap().node() == lowest.node());
                prop_assert_eq!(pod.node(), one_node.then_some(lowest.node()));
                let domain = topo.cache_domain_of(lowest.id()).unwrap();
                let one_domain = pod.cpus().iter().all(|c| topo.cache_domain_of(c) == Some(domain));
                prop_assert_eq!(pod.cache_domain(), one_domain.then_some(domain));
                prop_assert_eq!(
                    pod.cache_domain().map(|d| topo.cache_domains()[d].cpus.clone()),
                    one_domain.then(|| lowest.cache_cpus().clone())
                );
                for cpu in pod.cpus().iter() {
                    prop_assert!(seen.insert(cpu), "CPU {} twice in {}", cpu, pods.scope());
                    prop_assert_eq!(pods.pod_of(cpu), Some(i));
                }
            }
            prop_assert_eq!(&seen, &all);
        }
        prop_assert_eq!(get(AffinityScope::Cpu).len(), all.len());
        prop_assert_eq!(get(AffinityScope::System).len(), 1);
        prop_assert_eq!(get(AffinityScope::Numa).len(), topo.node_ids().len());

        // smt inside cache_shard inside cache inside numa: a shard never splits a core.
        let nest = [
            (AffinityScope::Smt, AffinityScope::CacheShard),
            (AffinityScope::CacheShard, AffinityScope::Cache),
            (AffinityScope::Cache, AffinityScope::Numa),
        ];
        for (inner, outer) in nest {
            for pod in get(inner).pods() {
                let lowest = pod.cpus().first().unwrap();
                prop_assert!(
                    pod.cpus().is_subset(pod_cpus(get(outer), lowest)),
                    "{} pod {} is not inside one {} pod", inner, pod.cpus(), outer
                );
            }
        }

        // Within each cache domain: the shard count follows the rule, the first shards take the
        // extra cores, and sizes differ by at most one core.
        let smt = get(AffinityScope::Smt);
        let shards = get(AffinityScope::CacheShard);
        for domain in get(AffinityScope::Cache).pods() {
            let cores = smt.pods().iter().filter(|c| c.cpus().is_subset(domain.cpus())).count();
            let cores_per_shard: Vec<usize> = shards
                .pods()
                .iter()
                .filter(|s| s.cpus().is_subset(domain.cpus()))
                .map(|s| smt.pods().iter().filter(|c| c.cpus().is_subset(s.cpus())).count())
                .collect();
            prop_assert_eq!(cores_per_shard.len(), shard_count(cores, shard_size));
            prop_assert_eq!(cores_per_shard.iter().sum::<usize>(), cores);
            let (max, min) = (cores_per_shard[0], *cores_per_shard.last().unwrap());
            prop_assert!(max - min <= 1, "shard cores {:?}", cores_per_shard);
            prop_assert!(cores_per_shard.windows(2).all(|w| w[0] >= w[1]), "{:?}", cores_per_shard);
        }
    }

    #[test]
    fn shard_count_rule(cores in 0usize..500, shard_size in 1usize..=20) {
        let shards = shard_count(cores, shard_size);
        // round_half_up(cores / S), at least 1, in exact arithmetic.
        let twice = 2 * cores;
        let expected = ((twice + shard_size) / (2 * shard_size)).max(1);
        prop_assert_eq!(shards, expected);
    }
}
