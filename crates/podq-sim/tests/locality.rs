//! The `locality` workload and steering: one seed replays exactly; on a machine of two cache
//! domains, at the default load (an unsteered machine's), a group's items stay on its home pod
//! and run faster with steering, which leaves the machine less busy; a group whose items
//! overload its pod spreads.

use podq::{AffinityScope, Topology};
use podq_sim::{
    simulate, Locality, LocalityCounts, Outcome, Profile, Scenario, SimMachine, Workload,
};

/// A machine of two cache domains of 4 cores each.
fn two_domains() -> SimMachine {
    let topo = Topology::from_machine("sockets=1,nodes=1,caches=2,cores=8").unwrap();
    SimMachine::new(topo, "two-domains")
}

fn locality(scope: AffinityScope, steer: bool, locality: Locality, items: u64) -> Scenario {
    Scenario {
        workload: Workload::Locality,
        items,
        pull: true,
        steer,
        locality,
        ..Scenario::kernel_test(scope, 8)
    }
}

fn run(scenario: &Scenario) -> Outcome {
    simulate(&two_domains(), &Profile::podq(), scenario).unwrap()
}

/// At least 90 % of the `started` items of a steered run started at their group's home.
fn at_home_of(on: &LocalityCounts, started: u64) {
    assert!(
        on.at_home as f64 >= 0.9 * started as f64,
        "at home {} of {started}",
        on.at_home
    );
}

/// The steered run's items ran in under half the unsteered run's p50.
fn runs_hotter(on: &LocalityCounts, off: &LocalityCounts) {
    assert!(
        on.run_time.p50 * 2 < off.run_time.p50,
        "run p50 {} with steering, {} without",
        on.run_time.p50,
        off.run_time.p50
    );
}

#[test]
fn one_seed_replays_exactly() {
    for steer in [true, false] {
        let s = locality(AffinityScope::Cpu, steer, Locality::default(), 300);
        let a = run(&s);
        assert_eq!(a, run(&s), "steer {steer}");
        let counts = a.locality.expect("locality counts");
        assert_eq!(counts.groups, 4 * 8, "four groups per pod of the cpu scope");
        assert!(counts.run_time.p50 > 0);
        let other = run(&Scenario { seed: 2, ..s });
        assert_ne!(a, other, "another seed draws other groups");
    }
}

/// The default load, four groups of 128 KiB: the pace is an unsteered item's run time, so
/// without steering the items keep the CPUs about 40 % busy. An item run away from its group's
/// cache domain walks its set about 28 times slower here (other cache domain, 110 ns a line,
/// against 3.9 ns in the core's own L2): an unsteered item finds its set in the other domain
/// about half the time, a steered one almost never.
const LIGHT: Locality = Locality {
    groups: Some(4),
    set_kb: 128,
    load: podq_sim::DEFAULT_LOAD,
};

#[test]
fn a_lightly_loaded_group_stays_home_and_runs_hot() {
    let on = run(&locality(AffinityScope::Cache, true, LIGHT, 2000));
    let off = run(&locality(AffinityScope::Cache, false, LIGHT, 2000));
    let (on, off) = (on.locality.unwrap(), off.locality.unwrap());
    let started = on.at_home + on.elsewhere;
    assert_eq!(started, 8 * 2000, "every item counted once");
    at_home_of(&on, started);
    assert!(
        on.steered > 0,
        "items issued on the other domain were steered"
    );
    assert_eq!((off.at_home, off.elsewhere, off.steered), (0, 0, 0));
    runs_hotter(&on, &off);
}

#[test]
fn the_load_is_an_unsteered_machines_and_steering_takes_hold_under_it() {
    // The default workload on the cpu scope: four groups of 256 KiB per one-CPU pod.
    let default = Locality::default();
    let on = run(&locality(AffinityScope::Cpu, true, default, 1000));
    let off = run(&locality(AffinityScope::Cpu, false, default, 1000));
    let (on, off) = (on.locality.unwrap(), off.locality.unwrap());
    assert_eq!(on.item_ns, off.item_ns, "one pace for both");
    assert!(
        on.item_ns > 4 * on.walk_ns,
        "an unsteered item ({} ns) walks far slower than the hot walk ({} ns)",
        on.item_ns,
        on.walk_ns
    );
    // Busy: the items' 40 % and what queueing, waking and spinning take besides.
    assert!(
        (0.35..0.6).contains(&off.cpu_busy),
        "unsteered: {} busy",
        off.cpu_busy
    );
    let started = on.at_home + on.elsewhere;
    at_home_of(&on, started);
    for counts in [&on, &off] {
        let w = counts.walks_from;
        let walks = w.private + w.peer + w.llc + w.other_cache + w.memory;
        assert_eq!(walks, 8 * 1000, "one walk per item: {w:?}");
    }
    assert!(
        on.walks_from.other_cache * 10 < off.walks_from.other_cache,
        "steered {:?}, unsteered {:?}",
        on.walks_from,
        off.walks_from
    );
    assert!(
        on.cpu_busy < off.cpu_busy / 2.0,
        "steered {} busy, unsteered {}",
        on.cpu_busy,
        off.cpu_busy
    );
    runs_hotter(&on, &off);
}

#[test]
fn a_group_that_overloads_its_pod_spreads() {
    // One group whose items are all CPUs' worth: its home pod (half the CPUs) is crowded and
    // loaded, so items issued on the other pod stay there. Pull off: the spread is steering's.
    let overload = Locality {
        groups: Some(1),
        set_kb: 128,
        load: 100,
    };
    let items = 2000;
    let on = run(&Scenario {
        pull: false,
        ..locality(AffinityScope::Cache, true, overload, items)
    });
    let counts = on.locality.unwrap();
    let total = 8 * items;
    assert!(
        counts.refused * 4 > total,
        "refused {} of {total} queue calls",
        counts.refused
    );
    assert!(counts.refused > 10 * counts.steered, "{counts:?}");
    assert!(
        (counts.most_on_one_pod as f64) < 0.75 * total as f64,
        "one pod ran {} of {total}",
        counts.most_on_one_pod
    );
}

#[test]
fn uncertainty_moves_the_caches_and_the_pace_with_them() {
    // One cache domain, so that an item's walk costs only the caches' latencies (not the
    // platform's line between domains, which `--uncertainty` leaves). At 40 % load the
    // items/sec is the pace's rate, which only the caches set: moving the costs alone leaves
    // it within a percent or so, moving the caches moves it with them.
    let machine = SimMachine::new(
        Topology::from_machine("sockets=1,nodes=1,caches=1,cores=8").unwrap(),
        "one-domain",
    );
    let scenarios = [
        locality(AffinityScope::Cpu, true, Locality::default(), 300),
        locality(AffinityScope::Cpu, false, Locality::default(), 300),
    ];
    let spread = |seed| {
        podq_sim::uncertainty::spread(&machine, &Profile::podq(), &scenarios, 30.0, seed).unwrap()
    };
    let first = spread(1);
    assert_eq!(first, spread(1), "one seed, one spread");
    for s in 0..scenarios.len() {
        let (lo, hi) = first.range(s);
        let nominal = first.runs[0][s];
        assert!(
            hi > 1.05 * nominal && lo < 0.95 * nominal,
            "{lo}-{hi} around {nominal}"
        );
    }
}

#[test]
fn moved_caches_keep_their_sizes() {
    let caches = *two_domains().caches();
    let mut factors = [0.7, 1.3, 0.8, 1.2, 2.0].into_iter();
    let moved = caches.moved(|| factors.next().unwrap());
    assert_eq!(moved.private_hit_ns, caches.private_hit_ns * 0.7);
    assert_eq!(moved.peer_hit_ns, caches.peer_hit_ns * 1.3);
    assert_eq!(moved.llc_hit_ns, caches.llc_hit_ns * 0.8);
    assert_eq!(moved.memory_ns, caches.memory_ns * 1.2);
    assert_eq!(
        moved.usable_share, 1.0,
        "a share stays at most the whole cache"
    );
    assert_eq!(
        (moved.private_kb, moved.llc_kb),
        (caches.private_kb, caches.llc_kb)
    );
}
