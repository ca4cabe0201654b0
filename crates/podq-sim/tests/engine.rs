//! The engine: one seed gives one result, every item runs, the pools follow the policy's
//! limits, and the model's costs move the results the way physics says they must.

use podq::{AffinityScope, Topology};
use podq_sim::{simulate, Profile, Scenario, SimMachine, Workload};

fn machine(desc: &str) -> SimMachine {
    SimMachine::new(Topology::from_machine(desc).unwrap(), desc)
}

fn scenario(workload: Workload, scope: AffinityScope, threads: usize, items: u64) -> Scenario {
    Scenario {
        workload,
        threads,
        items,
        ..Scenario::kernel_test(scope, threads)
    }
}

#[test]
fn one_seed_replays_exactly_and_another_differs() {
    let m = machine("sockets=2,nodes=2,caches=4,cores=16,smt=2");
    for profile in [Profile::kernel(), Profile::podq()] {
        for workload in [Workload::Queue, Workload::Flood, Workload::Rpc] {
            let s = scenario(workload, AffinityScope::CacheShard, 32, 300);
            let a = simulate(&m, &profile, &s).unwrap();
            assert_eq!(a, simulate(&m, &profile, &s).unwrap());
            let other = Scenario { seed: 2, ..s };
            assert_ne!(a, simulate(&m, &profile, &other).unwrap());
        }
    }
}

#[test]
fn every_item_of_every_scope_runs() {
    let m = machine("sockets=1,nodes=2,caches=4,cores=8,smt=2");
    for profile in [Profile::kernel(), Profile::podq()] {
        for workload in [
            Workload::Queue,
            Workload::Flood,
            Workload::Skew,
            Workload::Rpc,
            Workload::Fanout,
        ] {
            for scope in AffinityScope::ALL {
                let s = Scenario {
                    pull: profile.mechanism.pulls,
                    ..scenario(workload, scope, 16, 200)
                };
                // An error, Stuck included, is a run that left items (or hops) unrun.
                let o = simulate(&m, &profile, &s)
                    .unwrap_or_else(|e| panic!("{} {workload:?} {scope}: {e}", profile.name));
                assert!(o.items_per_sec > 0.0);
                assert!(o.simulated_ns > 0);
                assert!(o.workers >= o.pools as u64, "one worker per pool at least");
                assert_eq!(o.queue_to_start.is_some(), workload != Workload::Queue);
            }
        }
    }
}

#[test]
fn pools_never_grow_past_max_workers() {
    let m = machine("cores=8");
    let mut profile = Profile::kernel();
    profile.mechanism.max_workers = 2;
    profile.mechanism.eager_workers = Some(2);
    let s = scenario(Workload::Flood, AffinityScope::System, 8, 500);
    let o = simulate(&m, &profile, &s).unwrap();
    assert_eq!(o.pools, 1);
    assert!(o.workers <= 2, "{o:?}");
}

#[test]
fn dearer_cache_lines_slow_a_shared_lock_down() {
    let topo = Topology::from_machine("cores=32").unwrap();
    let near = SimMachine::new(topo.clone(), "near");
    let mut platform = *near.platform();
    platform.same_cache_ns *= 4.0;
    let far = SimMachine::with_lines(topo, "far", platform, "test");
    let s = scenario(Workload::Queue, AffinityScope::Cache, 32, 300);
    let profile = Profile::kernel();
    let fast = simulate(&near, &profile, &s).unwrap().items_per_sec;
    let slow = simulate(&far, &profile, &s).unwrap().items_per_sec;
    assert!(slow < fast * 0.9, "{slow} vs {fast}");
}

#[test]
fn a_slower_clock_slows_the_software_and_leaves_the_lines() {
    // A pod per CPU: each item is the producer's and the worker's own work and wake-ups.
    let topo = Topology::from_machine("cores=8").unwrap();
    let profile = Profile::kernel();
    let at = profile
        .clock_ghz
        .expect("the kernel profile's costs have a clock");
    let with_clock = |ghz: Option<f64>| {
        let mut platform = *SimMachine::new(topo.clone(), "clocked").platform();
        platform.clock_ghz = ghz;
        SimMachine::with_lines(topo.clone(), "clocked", platform, "test")
    };
    let s = scenario(Workload::Queue, AffinityScope::Cpu, 8, 300);
    let same = simulate(&with_clock(Some(at)), &profile, &s).unwrap();
    let unknown = simulate(&with_clock(None), &profile, &s).unwrap();
    let half = simulate(&with_clock(Some(at / 2.0)), &profile, &s).unwrap();
    // An unknown clock is taken as the costs' own: the same simulation.
    assert_eq!(same.items_per_sec, unknown.items_per_sec);
    assert!(
        half.items_per_sec < same.items_per_sec * 0.7,
        "{} vs {}",
        half.items_per_sec,
        same.items_per_sec
    );
    // A one-pool scope's shared lock is its lines' hand-overs, which the clock leaves.
    let shared = scenario(Workload::Queue, AffinityScope::Cache, 8, 300);
    let same = simulate(&with_clock(Some(at)), &profile, &shared).unwrap();
    let half = simulate(&with_clock(Some(at / 2.0)), &profile, &shared).unwrap();
    assert!(
        half.items_per_sec > same.items_per_sec * 0.7,
        "{} vs {}",
        half.items_per_sec,
        same.items_per_sec
    );
}

#[test]
fn bad_scenarios_are_errors() {
    let m = machine("cores=4");
    let profile = Profile::kernel();
    let s = scenario(Workload::Queue, AffinityScope::Cpu, 4, 10);
    assert!(simulate(&m, &profile, &Scenario { threads: 5, ..s }).is_err());
    assert!(simulate(&m, &profile, &Scenario { threads: 0, ..s }).is_err());
    assert!(simulate(&m, &profile, &Scenario { items: 0, ..s }).is_err());
    let zero = Scenario {
        scope: AffinityScope::CacheShard,
        shard_size: 0,
        ..s
    };
    assert!(simulate(&m, &profile, &zero).is_err());
}

#[test]
fn a_kernel_queue_item_takes_the_pool_lock_three_times() {
    // `worker_thread` and `process_one_work`: the push, the worker's take, its look before it
    // parks. With a pod per CPU nobody else wants the lock.
    let m = machine("sockets=1,nodes=1,caches=1,cores=4,smt=1");
    let s = scenario(Workload::Queue, AffinityScope::Cpu, 4, 500);
    let o = simulate(&m, &Profile::kernel(), &s).unwrap();
    let items = (4 * 500) as f64;
    let per_item = o.lock_acquisitions as f64 / items;
    assert!((per_item - 3.0).abs() < 0.01, "{per_item} per item");
    assert_eq!(o.lock_contended, 0);
    // One pool for the four: the producers find it held.
    let shared = simulate(
        &m,
        &Profile::kernel(),
        &scenario(Workload::Queue, AffinityScope::Cache, 4, 500),
    )
    .unwrap();
    assert!(shared.lock_contended > 0, "{shared:?}");
    assert!(shared.lock_contended <= shared.lock_acquisitions);
}
