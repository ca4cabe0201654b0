//! The `kernel` profile's fit on the published `test_workqueue` tables ([`crate::published`]):
//! which shared costs move and within which bounds ([`FREE`]), the objective ([`objective`]),
//! the search ([`fit`]) and the check that the committed constants are its optimum
//! ([`optimum_gaps`]). Nothing per machine is fitted: a machine differs only by its topology
//! and its [`Platform`](crate::Platform), public figures.
//!
//! The published cells hold 14 distinct values (items/sec and the queue call's p50 of the
//! scopes whose pods differ: three on Grace, four on the Xeon), 6 on Grace alone; [`FREE`]
//! has 3 parameters, at most half of the values of every fit, the leave-one-machine-out fits
//! included. The other costs are fixed: measured on a machine at hand
//! (`cargo run --release -p podq-sim --example measure_os`) or set by what the platform's
//! figures already hold (`calibrated.rs`).

use crate::cost::{Costs, Param};
use crate::fit::{nelder_mead, to_unit, to_values};
use crate::published::{check_with, CellCheck, Table};
use crate::SimError;

/// The fitted parameters and their bounds: what is physically plausible for each on a
/// server of the 2020s. Each stands for kernel work that no public figure gives: what
/// `try_to_wake_up` costs the waker, the cache lines a hand-over of `pool->lock` moves (the
/// lock word and what the critical sections touch of the pool, its work list, the item, the
/// workers' list entries and counts), and the lines a change of the per-node count of active
/// items moves (`tryinc_node_nr_active`'s compare-and-exchange loop, with its retries when
/// many CPUs change it at once). The test's own loop is measured, not fitted
/// (`calibrated.rs`); a switch and what a wake-up costs an idle CPU besides its idle exit are
/// not parameters of their own ([`derived`]).
pub const FREE: [(Param, f64, f64); 3] = [
    (Param::WakeCall, 200.0, 5_000.0),
    (Param::LinesPerHandover, 1.0, 40.0),
    (Param::ActiveLines, 0.5, 20.0),
];

/// The costs that follow from the fitted ones: a wake-up of an idle CPU
/// ([`Costs::wake_idle_ns`], besides the idle exit) is the task's activation, which
/// `try_to_wake_up` leaves to an idle target CPU through its wake list and an interrupt
/// (`ttwu_queue_cond` since Linux 6.0), and that CPU's schedule from its idle task:
/// `wake_call_ns`. No sleep path is in it: the thread that slept before the CPU idled ran its
/// own ([`Costs::switch_ns`]) while the CPU that woke this one went on. A switch
/// ([`Costs::switch_ns`]: `schedule` from a thread that sleeps to the next) costs what the
/// waker's call does: the two scheduler paths, a dequeue and a pick against an enqueue and a
/// preemption check, each with the run queue's lock and clock. Their user-space analogues
/// (`cargo run --release -p podq-sim --example measure_os`) came out at 1,002-1,353 ns and
/// 992-1,102 ns in four runs on the project's 2-CPU VM.
pub const fn derived(costs: Costs) -> Costs {
    Costs {
        wake_idle_ns: costs.wake_call_ns,
        switch_ns: costs.wake_call_ns,
        ..costs
    }
}

/// How much a p50 error weighs against an items/sec error of the same ratio: as much less as a
/// p50 repeats less. Grace's two published runs (the table and the RFC posting's) differ by up
/// to ln 1.234 in items/sec and ln 1.514 in p50; the squared ratio of the two is 0.26.
pub const P50_WEIGHT: f64 = 0.25;

/// Items per producer of the reduced-scale objective the constants are the optimum of
/// (50,000 were published; the errors at both scales are printed by `podq sim --published`).
pub const FIT_ITEMS: u64 = 5_000;

/// The objective's seed.
pub const FIT_SEED: u64 = 1;

/// The relative step of the optimum check ([`optimum_gaps`]) and of the fit's last polish.
pub const STEP: f64 = 0.05;

/// The objective of `cells`: the squared log errors of items/sec and, weighted by
/// [`P50_WEIGHT`], of the p50, plus, for every pair of cells of one machine published more
/// than 10 % apart, the squared log shortfall when they are simulated less than half as far
/// apart (so that their order holds at other scales and seeds).
pub fn score(cells: &[CellCheck]) -> f64 {
    let errors: f64 = cells
        .iter()
        .map(|c| {
            let items = (c.simulated.max(1.0) / c.published).ln().powi(2);
            let p50 = (c.simulated_p50.max(1) as f64 / c.published_p50.max(1) as f64)
                .ln()
                .powi(2);
            items + P50_WEIGHT * p50
        })
        .sum();
    let margins: f64 = cells
        .iter()
        .flat_map(|a| cells.iter().map(move |b| (a, b)))
        .filter(|(a, b)| a.machine == b.machine && b.published > a.published * 1.1)
        .map(|(lo, hi)| {
            let want = 1.0 + (hi.published / lo.published - 1.0) / 2.0;
            let got = hi.simulated / lo.simulated.max(1.0);
            if got < want {
                (want / got).ln().powi(2)
            } else {
                0.0
            }
        })
        .sum();
    errors + margins
}

/// [`score`] of `costs` on `tables` at `items` per producer.
///
/// # Errors
///
/// What a simulation reports.
pub fn objective(costs: &Costs, tables: &[Table], items: u64) -> Result<f64, SimError> {
    let profile = crate::Profile {
        costs: *costs,
        ..crate::Profile::kernel()
    };
    let cells = check_with(tables, &profile, Table::sim_machine, items, FIT_SEED)?;
    Ok(score(&cells))
}

/// Fits [`FREE`] of `start` on `tables` at `items` per producer: Nelder-Mead over the
/// parameters' logarithms from `start`, `evaluations` calls, started again from its best
/// point, then a polish by coordinate steps of ±[`STEP`] until none improves (so that
/// [`optimum_gaps`] of the result is empty).
pub fn fit(start: &Costs, tables: &[Table], items: u64, evaluations: usize) -> (Costs, f64) {
    let bounds: Vec<(f64, f64)> = FREE.iter().map(|&(_, lo, hi)| (lo, hi)).collect();
    let with = |unit: &[f64]| {
        let mut costs = *start;
        for (&(p, _, _), v) in FREE.iter().zip(to_values(&bounds, unit)) {
            costs.set(p, v);
        }
        costs = derived(costs);
        costs
    };
    let eval = |costs: &Costs| objective(costs, tables, items).unwrap_or(f64::INFINITY);
    let mut best = (*start, eval(start));
    for _ in 0..2 {
        let values: Vec<f64> = FREE.iter().map(|&(p, _, _)| best.0.get(p)).collect();
        let (unit, value) = nelder_mead(
            |unit| eval(&with(unit)),
            &to_unit(&bounds, &values),
            0.15,
            evaluations,
        );
        if value < best.1 {
            best = (with(&unit), value);
        }
    }
    loop {
        let mut improved = false;
        for (_, _, costs) in neighbours(&best.0) {
            let v = eval(&costs);
            if v < best.1 {
                best = (costs, v);
                improved = true;
            }
        }
        if !improved {
            return best;
        }
    }
}

/// `costs` with one parameter of [`FREE`] moved by ±[`STEP`] (within its bounds), each with
/// the parameter and its new value.
fn neighbours(costs: &Costs) -> Vec<(Param, f64, Costs)> {
    let mut out = Vec::new();
    for &(param, lo, hi) in &FREE {
        for sign in [-1.0, 1.0] {
            let value = (costs.get(param) * (1.0 + sign * STEP)).clamp(lo, hi);
            if value != costs.get(param) {
                let mut moved = *costs;
                moved.set(param, value);
                moved = derived(moved);
                out.push((param, value, moved));
            }
        }
    }
    out
}

/// The steps of ±[`STEP`] of one parameter of [`FREE`] that lower the objective of `costs` on
/// `tables` (at [`FIT_ITEMS`]): `(parameter, moved value, objective there, objective at
/// costs)`. Empty when `costs` is the fit's optimum.
///
/// # Errors
///
/// What a simulation reports.
pub fn optimum_gaps(
    costs: &Costs,
    tables: &[Table],
) -> Result<Vec<(Param, f64, f64, f64)>, SimError> {
    let at = objective(costs, tables, FIT_ITEMS)?;
    let mut gaps = Vec::new();
    for (param, value, moved) in neighbours(costs) {
        let there = objective(&moved, tables, FIT_ITEMS)?;
        if there < at {
            gaps.push((param, value, there, at));
        }
    }
    Ok(gaps)
}
