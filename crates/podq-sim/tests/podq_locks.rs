//! The `podq` profile's head and pool locks: futex mutexes whose waiters sleep after a short
//! spin, each contended unlock paying a wake-up, H8's second take per lock as a mechanism of
//! its own, and the mailbox that spares a push handed to a spinner its lane lock.

use podq::{AffinityScope, Topology};
use podq_sim::{simulate, Costs, Outcome, Profile, Scenario, SimMachine, Workload};

/// 16 CPUs in one cache domain, as the 16-CPU Xeon of `docs/machines/xeon-16cpu`.
fn machine() -> SimMachine {
    xeon("sockets=1,nodes=1,caches=1,cores=16,smt=1")
}

/// `desc` with the Xeon family's figures.
fn xeon(desc: &str) -> SimMachine {
    SimMachine::new(Topology::from_machine(desc).unwrap(), "xeon-8321hc")
}

/// The podq profile with costs where the head lock, not the producers, bounds a pod: a push
/// and a take cost hundreds of ns, a wake-up microseconds.
fn podq() -> Profile {
    let mut profile = Profile::podq();
    profile.costs = Costs {
        producer_item_ns: 500.0,
        worker_item_ns: 100.0,
        critical_section_ns: 300.0,
        wake_call_ns: 3_000.0,
        wake_idle_ns: 8_000.0,
        switch_ns: 1_000.0,
        spin_ns: 1_600.0,
        ..profile.costs
    };
    profile
}

fn flood(profile: &Profile, scope: AffinityScope, shard_size: usize, pull: bool) -> Outcome {
    let s = Scenario {
        workload: Workload::Flood,
        shard_size,
        items: 2_000,
        pull,
        ..Scenario::kernel_test(scope, 16)
    };
    simulate(&machine(), profile, &s).unwrap()
}

#[test]
fn sleeping_waiters_slow_a_shared_head_lock_down() {
    let futex = podq();
    let mut spinning = podq();
    spinning.mechanism.futex_locks = false;
    for (scope, size) in [(AffinityScope::CacheShard, 8), (AffinityScope::Cache, 8)] {
        let slept = flood(&futex, scope, size, true).items_per_sec;
        let spun = flood(&spinning, scope, size, true).items_per_sec;
        // A waiter that sleeps is handed the lock only after a wake-up, and its unlocker pays
        // the wake call: a pod of 8 or 16 workers loses a third of its rate or more.
        assert!(
            slept < 0.67 * spun,
            "{scope}/{size}: {slept:.0} vs {spun:.0}"
        );
    }
    // With one worker per pool and no pull, no lock is ever contended: nothing changes.
    let alone = flood(&futex, AffinityScope::Cpu, 8, false);
    assert_eq!(alone, flood(&spinning, AffinityScope::Cpu, 8, false));
    assert_eq!(alone.lock_contended, 0);
}

#[test]
fn without_h8_every_take_takes_one_item() {
    let with = podq();
    let mut without = podq();
    without.mechanism.holds_ahead = false;
    let ahead = flood(&with, AffinityScope::CacheShard, 8, true)
        .held
        .ran_ahead;
    assert!(ahead > 0, "a busy pod of 8 takes items ahead");
    let none = flood(&without, AffinityScope::CacheShard, 8, true).held;
    assert_eq!(none.ran_ahead, 0);
}

#[test]
fn a_closed_loop_on_a_shared_pod_hands_its_items_to_the_spinner() {
    // (P1) A producer on another CPU than the spinning owner hands it the item: no lane lock,
    // and the owner's head lock (W7) is the item's take. Through the lanes, each item would
    // cost a lane lock and two head locks.
    let m = xeon("sockets=1,nodes=1,caches=1,cores=4,smt=1");
    let s = Scenario {
        workload: Workload::Queue,
        items: 2_000,
        ..Scenario::kernel_test(AffinityScope::Cache, 4)
    };
    let o = simulate(&m, &Profile::podq(), &s).unwrap();
    let per_item = o.lock_acquisitions as f64 / (4 * 2_000) as f64;
    assert!(per_item < 2.5, "{per_item} lock acquisitions per item");
    assert!(
        per_item > 1.9,
        "an item's take and the look that finds none: {per_item}"
    );
}

/// (W5) A spin ends as soon as an item waits, whichever push put it there: one producer
/// whose next item comes while its worker is between finding the queue empty and starting to
/// spin has it run then, not at the spin's end, so every cycle is far shorter than a spin.
#[test]
fn a_spin_sees_an_item_pushed_before_it_began() {
    let mut profile = podq();
    profile.costs.producer_item_ns = 100.0;
    profile.costs.spin_ns = 20_000.0;
    for scope in [AffinityScope::Cache, AffinityScope::CacheShard] {
        let s = Scenario {
            workload: Workload::Queue,
            threads: 1,
            items: 2_000,
            pull: true,
            ..Scenario::kernel_test(scope, 16)
        };
        let one = simulate(&machine(), &profile, &s).unwrap();
        let cycle_ns = 1e9 / one.items_per_sec;
        assert!(
            cycle_ns < profile.costs.spin_ns / 4.0,
            "{scope}: {cycle_ns:.0} ns per item, a spin being {} ns",
            profile.costs.spin_ns
        );
    }
}
