//! What H8 (a busy worker taking its share of the head ahead, under one lock) changes in the
//! `podq` profile's predictions: `cargo run --release -p podq-sim --example h8_effect -- [ITEMS]`.
//!
//! For the 16-CPU Xeon of `docs/machines/xeon-16cpu`, Grace and the Xeon 8321HC, and the
//! `flood`, `queue` and `spawn-local` workloads on `cache_shard` and `cache`: items/sec with H8
//! and without it (the median of seeds 1-5, `ITEMS` per producer, default 5,000; at most 2,000
//! for `spawn-local`), their ratio, and the share of items run ahead with it. `podq sim
//! --against` runs a bench file that records no `ahead` without H8; this is how far that moves
//! a prediction.

use podq::{AffinityScope, Topology};
use podq_sim::{simulate, Locality, Platform, Profile, Scenario, ShardRule, SimMachine, Workload};

/// The machines: a name, its description and the platform it takes its lines from.
const MACHINES: [(&str, &str, &str); 3] = [
    (
        "16 CPUs",
        "sockets=1,nodes=1,caches=1,cores=16,smt=1",
        "xeon-8321hc",
    ),
    (
        "grace",
        "sockets=1,nodes=1,caches=1,cores=72,smt=1",
        "grace",
    ),
    (
        "xeon-8321hc",
        "sockets=1,nodes=1,caches=1,cores=26,smt=2,cpus=51",
        "xeon-8321hc",
    ),
];

/// The seeds whose median is taken.
const SEEDS: u64 = 5;

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let items: u64 = std::env::args()
        .nth(1)
        .map_or(5_000, |a| a.parse().expect("ITEMS: a number of items"));
    println!("machine      workload     scope         with H8   without   ratio  ahead");
    for (name, description, platform) in MACHINES {
        let topology = Topology::from_machine(description).expect("a valid description");
        // The parts at their clocks; the 16-CPU Xeon's model string states none.
        let machine = SimMachine::new(topology, platform).at_clock(Platform::part_clock_ghz(name));
        let cpus = machine.len();
        for workload in [Workload::Flood, Workload::Queue, Workload::SpawnLocal] {
            let per_producer = if workload == Workload::SpawnLocal {
                items.min(2_000)
            } else {
                items
            };
            for scope in [AffinityScope::CacheShard, AffinityScope::Cache] {
                let run = |ahead: bool| {
                    let mut profile = Profile::podq();
                    profile.mechanism.holds_ahead = ahead;
                    let outcomes: Vec<_> = (1..=SEEDS)
                        .map(|seed| {
                            let scenario = Scenario {
                                workload,
                                scope,
                                shard_size: 8,
                                shard_rule: ShardRule::Cores,
                                threads: cpus,
                                items: per_producer,
                                work_ns: 0,
                                seed,
                                pull: true,
                                steer: false,
                                locality: Locality::default(),
                            };
                            let runs = workload.runs_per_producer(per_producer) * cpus as u64;
                            let o = simulate(&machine, &profile, &scenario).expect("simulates");
                            (o.items_per_sec, o.held.ran_ahead as f64 / runs as f64)
                        })
                        .collect();
                    (
                        median(outcomes.iter().map(|o| o.0).collect()),
                        median(outcomes.iter().map(|o| o.1).collect()),
                    )
                };
                let (with, ahead) = run(true);
                let (without, _) = run(false);
                println!(
                    "{name:<12} {:<12} {:<12} {:>8.2}M {:>8.2}M {:>6.3} {:>5.1} %",
                    workload.name(),
                    scope.name(),
                    with / 1e6,
                    without / 1e6,
                    with / without,
                    100.0 * ahead
                );
            }
        }
    }
}
