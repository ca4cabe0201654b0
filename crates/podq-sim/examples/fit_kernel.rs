//! Fits the `kernel` profile's shared costs (`podq_sim::kernel_fit::FREE`) on the published
//! `test_workqueue` tables and prints them as `src/calibrated.rs` writes them:
//! `cargo run --release -p podq-sim --example fit_kernel -- TABLES [EVALUATIONS]`, TABLES
//! `all` (the profile's costs) or the one machine whose table alone is fitted (`grace`,
//! `xeon-8321hc`: the leave-one-machine-out costs that predict the other).

use podq_sim::kernel_fit::{fit, FIT_ITEMS, FREE};
use podq_sim::published::{check_with, Table, TABLES};
use podq_sim::Profile;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let which = args.get(1).map_or("all", String::as_str);
    let evaluations: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(250);
    let tables: Vec<Table> = TABLES
        .iter()
        .filter(|t| which == "all" || t.machine == which)
        .copied()
        .collect();
    if tables.is_empty() {
        eprintln!("unknown table '{which}': expected all, grace or xeon-8321hc");
        std::process::exit(2);
    }
    let start = Profile::kernel().costs;
    let (costs, value) = fit(&start, &tables, FIT_ITEMS, evaluations);
    println!("// {which}: objective {value:.5} at {FIT_ITEMS} items per producer");
    for &(p, _, _) in &FREE {
        // Every digit: the rounded constants would not be the optimum of a rough objective.
        println!("    {}: {:?},", p.name(), costs.get(p));
    }
    let profile = Profile {
        costs,
        ..Profile::kernel()
    };
    let cells = check_with(&TABLES, &profile, Table::sim_machine, FIT_ITEMS, 1).expect("simulates");
    for c in &cells {
        println!(
            "// {:<12} {:<12} items/sec {:>9.0} / {:>9.0} ({:+.1}%)  p50 {:>6} / {:>6}",
            c.machine,
            c.scope.name(),
            c.simulated,
            c.published,
            100.0 * c.error(),
            c.simulated_p50,
            c.published_p50
        );
    }
}
