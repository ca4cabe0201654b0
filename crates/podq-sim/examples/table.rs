//! Prints every scope of the kernel's test on a machine: `cargo run --release -p podq-sim
//! --example table -- grace 50000`.

use podq::{AffinityScope, Topology};
use podq_sim::{simulate, Profile, Scenario, ShardRule, SimMachine};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map_or("grace", String::as_str);
    let items: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(2000);
    let desc = if name == "xeon-8321hc" {
        "cores=26,smt=2,cpus=51"
    } else {
        name
    };
    let machine = SimMachine::new(Topology::from_machine(desc).unwrap(), name);
    let rule = if name == "xeon-8321hc" {
        ShardRule::Cpus
    } else {
        ShardRule::Cores
    };
    for scope in [
        AffinityScope::Cpu,
        AffinityScope::Smt,
        AffinityScope::CacheShard,
        AffinityScope::Cache,
        AffinityScope::Numa,
        AffinityScope::System,
    ] {
        let scenario = Scenario {
            items,
            shard_rule: rule,
            ..Scenario::kernel_test(scope, machine.len())
        };
        let start = std::time::Instant::now();
        let o = simulate(&machine, &Profile::kernel(), &scenario).unwrap();
        println!(
            "{:<12}{:>10.0} items/sec p50={} p90={} p95={} workers={} events={} ({:.2?})",
            scope.name(),
            o.items_per_sec,
            o.queue.p50,
            o.queue.p90,
            o.queue.p95,
            o.workers,
            o.events,
            start.elapsed()
        );
    }
}
