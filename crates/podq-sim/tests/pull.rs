//! Pull in the simulator: the runtime's policy (`podq::policy::pull`) driven by simulated
//! state. One seed replays exactly, nothing moves without pull, one producer's items spread
//! over other pods' workers with it, and the gate closes when offers are stale. Counts only.

use podq::{AffinityScope, Topology};
use podq_sim::{simulate, Profile, Scenario, SimError, SimMachine, Workload};

fn machine(desc: &str) -> SimMachine {
    SimMachine::new(Topology::from_machine(desc).unwrap(), desc)
}

/// `workload` on `scope` (two-core shards), `threads` producers of `items` items, with pull.
fn scenario(workload: Workload, scope: AffinityScope, threads: usize, items: u64) -> Scenario {
    Scenario {
        workload,
        threads,
        items,
        work_ns: workload.default_work_ns(),
        shard_size: 2,
        pull: true,
        ..Scenario::kernel_test(scope, threads)
    }
}

#[test]
fn one_seed_replays_exactly_with_pull() {
    let m = machine("sockets=2,nodes=2,caches=4,cores=16");
    for (workload, items) in [(Workload::Skew, 3000), (Workload::Queue, 300)] {
        let s = scenario(workload, AffinityScope::CacheShard, 16, items);
        let a = simulate(&m, &Profile::podq(), &s).unwrap();
        // One producer leaves a backlog to pull; the closed loop leaves at most one item in a
        // lane, which a pool does not offer.
        if workload == Workload::Skew {
            assert!(a.pull.pulled > 0, "{workload:?}: {:?}", a.pull);
        }
        assert_eq!(a, simulate(&m, &Profile::podq(), &s).unwrap());
        let other = Scenario { seed: 2, ..s };
        assert_ne!(a, simulate(&m, &Profile::podq(), &other).unwrap());
    }
}

#[test]
fn without_pull_no_item_moves_and_no_pool_offers() {
    let m = machine("sockets=1,nodes=2,caches=4,cores=8,smt=2");
    for workload in [
        Workload::Queue,
        Workload::Flood,
        Workload::Skew,
        Workload::Rpc,
        Workload::Fanout,
    ] {
        for scope in AffinityScope::ALL {
            let s = Scenario {
                pull: false,
                ..scenario(workload, scope, 16, 400)
            };
            let o = simulate(&m, &Profile::podq(), &s).unwrap();
            assert_eq!(o.pull, Default::default(), "{workload:?} {scope}");
        }
    }
}

#[test]
fn the_kernel_profile_has_no_pull() {
    let m = machine("cores=4");
    let s = scenario(Workload::Queue, AffinityScope::Cpu, 4, 10);
    let err = simulate(&m, &Profile::kernel(), &s).unwrap_err();
    assert!(
        matches!(err, SimError::NoPull { profile: "kernel" }),
        "{err}"
    );
    let off = Scenario { pull: false, ..s };
    assert!(simulate(&m, &Profile::kernel(), &off).is_ok());
}

#[test]
fn one_producer_s_items_spread_over_other_pods_with_pull() {
    // Eight two-CPU shards of one cache domain: the producer's shard has two workers, too few
    // for 10 us items queued every few microseconds; pull brings in a sibling's worker.
    let m = machine("cores=16");
    let s = scenario(Workload::Skew, AffinityScope::CacheShard, 16, 3000);
    assert_eq!(s.producers(), 1);
    // A producer that queues an item every 3 us, whatever the fitted bookkeeping is.
    let mut profile = Profile::podq();
    profile.costs.producer_item_ns = 3_000.0;
    let on = simulate(&m, &profile, &s).unwrap();
    let off = simulate(&m, &profile, &Scenario { pull: false, ..s }).unwrap();
    assert_eq!(off.pull.pulled, 0);
    assert!(on.pull.offers >= 1 && on.pull.kicks >= 1, "{:?}", on.pull);
    assert!(
        on.pull.pulled * 5 >= s.items,
        "at least a fifth of the items pulled: {:?}",
        on.pull
    );
    assert_eq!(on.pull.found, on.pull.pulled, "{:?}", on.pull);
    // Every search found work: offers were never stale, so the gate never held one back.
    assert_eq!(on.pull.gated, 0, "{:?}", on.pull);
    // Scopes with one pool have nobody to pull from.
    let system = scenario(Workload::Skew, AffinityScope::System, 16, 300);
    let o = simulate(&m, &profile, &system).unwrap();
    assert_eq!((o.pull.pulled, o.pull.offers), (0, 0), "{:?}", o.pull);
}

#[test]
fn the_gate_closes_when_offers_are_stale() {
    // The closed loop on two-core shards: a pool offers when both its producers' items wait,
    // and its own workers take them first far more often than not once a search has to fetch
    // lines from another cache domain at 100 times the usual latency. Searches fail, the
    // success ratios fall, and the gate holds idle workers back.
    let topo = Topology::from_machine("sockets=2,nodes=2,caches=2,cores=16").unwrap();
    let mut platform = *machine("sockets=2,nodes=2,caches=2,cores=16").platform();
    platform.other_cache_ns *= 100.0;
    platform.other_node_ns *= 100.0;
    let far = SimMachine::with_lines(topo, "far", platform, "test");
    let s = scenario(Workload::Queue, AffinityScope::CacheShard, 16, 2000);
    let c = simulate(&far, &Profile::podq(), &s).unwrap().pull;
    let failed = c.searches - c.found;
    assert!(
        failed * 5 >= c.searches,
        "a fifth of the searches fail: {c:?}"
    );
    assert!(
        c.gated * 5 >= c.searches + c.gated,
        "the gate holds back a fifth of the chances to search: {c:?}"
    );
}
