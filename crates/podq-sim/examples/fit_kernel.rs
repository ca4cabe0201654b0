//! Fits the `kernel` profile on the two published `test_workqueue` tables
//! (`podq_sim::published`) and prints the costs and the error per cell:
//! `cargo run --release -p podq-sim --example fit_kernel -- ITEMS EVALUATIONS`.
//!
//! The shared costs, the two machines' idle exits and the Xeon's software factor move within
//! the physical bounds below, by a bounded Nelder-Mead search over their logarithms; the
//! cache-line latencies stay at the public core-to-core data (`Platform::for_machine`). The
//! objective is the sum of squared log errors, plus a penalty for every pair of cells published
//! more than 10 % apart whose simulated order is lost or that is simulated less than half as
//! far apart. The values it gives are written in `src/calibrated.rs`.

use podq_sim::fit::{log_error, nelder_mead, to_unit, to_values};
use podq_sim::published::{check_with, order_flips, Table, TABLES};
use podq_sim::{Param, Profile, SimMachine};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let items: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let evaluations: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(300);
    let free = [
        (Param::LinesPerHandover, 1.0, 8.0),
        (Param::ContendedFactor, 1.0, 6.0),
        (Param::CriticalSection, 20.0, 500.0),
        (Param::WakeCall, 200.0, 3000.0),
        (Param::WakeIdle, 500.0, 8000.0),
        (Param::Switch, 1000.0, 12000.0),
        (Param::ProducerItem, 200.0, 12000.0),
        (Param::WorkerItem, 100.0, 5000.0),
    ];
    // Then the idle exits of Grace and of the Xeon.
    let mut bounds: Vec<(f64, f64)> = free.iter().map(|&(_, lo, hi)| (lo, hi)).collect();
    bounds.push((500.0, 3000.0));
    bounds.push((2000.0, 10000.0));
    bounds.push((0.4, 2.5));
    let base = Profile::kernel();
    let mut start: Vec<f64> = free.iter().map(|&(p, _, _)| base.costs.get(p)).collect();
    start.push(TABLES[0].sim_machine().platform().idle_exit_ns);
    start.push(TABLES[1].sim_machine().platform().idle_exit_ns);
    start.push(TABLES[1].sim_machine().platform().software_factor);
    let apply = |values: &[f64]| {
        let mut profile = base.clone();
        for (&(p, _, _), &v) in free.iter().zip(values) {
            profile.costs.set(p, v);
        }
        let exits = [values[free.len()], values[free.len() + 1]];
        let factor = values[free.len() + 2];
        let machine_of = move |t: &Table| {
            let m = t.sim_machine();
            let mut platform = *m.platform();
            if t.machine == "grace" {
                platform.idle_exit_ns = exits[0];
            } else {
                platform.idle_exit_ns = exits[1];
                platform.software_factor = factor;
            }
            SimMachine::with_lines(
                m.topology().clone(),
                t.machine,
                platform,
                m.platform_source(),
            )
        };
        (profile, machine_of)
    };
    let objective = |unit: &[f64]| {
        let (profile, machine_of) = apply(&to_values(&bounds, unit));
        let Ok(cells) = check_with(&TABLES, &profile, machine_of, items, 1) else {
            return f64::INFINITY;
        };
        let flips: f64 = order_flips(&cells, 0.10)
            .iter()
            .map(|(lo, hi)| 1.0 + (lo.simulated / hi.simulated).ln().powi(2))
            .sum();
        // Pairs published more than 10 % apart should be simulated at least half as far
        // apart, so that their order holds at other item counts and seeds too.
        let margins: f64 = cells
            .iter()
            .flat_map(|a| cells.iter().map(move |b| (a, b)))
            .filter(|(a, b)| a.machine == b.machine && b.published > a.published * 1.1)
            .map(|(lo, hi)| {
                let want = 1.0 + (hi.published / lo.published - 1.0) / 2.0;
                let got = hi.simulated / lo.simulated;
                if got < want {
                    (want / got).ln().powi(2)
                } else {
                    0.0
                }
            })
            .sum::<f64>();
        log_error(cells.iter().map(|c| (c.simulated, c.published))) + flips + margins
    };
    let (best, value) = nelder_mead(objective, &to_unit(&bounds, &start), 0.2, evaluations);
    let values = to_values(&bounds, &best);
    println!("objective {value:.5}");
    for (&(p, _, _), v) in free.iter().zip(&values) {
        println!("{} = {v:.1}", p.name());
    }
    println!("grace idle_exit_ns = {:.1}", values[free.len()]);
    println!("xeon-8321hc idle_exit_ns = {:.1}", values[free.len() + 1]);
    println!(
        "xeon-8321hc software_factor = {:.3}",
        values[free.len() + 2]
    );
    let (profile, machine_of) = apply(&values);
    let cells = check_with(&TABLES, &profile, machine_of, items, 1).expect("simulates");
    for c in &cells {
        println!(
            "{:<12} {:<12} published {:>9.0} simulated {:>9.0} error {:+.1}%",
            c.machine,
            c.scope.name(),
            c.published,
            c.simulated,
            100.0 * c.error()
        );
    }
}
