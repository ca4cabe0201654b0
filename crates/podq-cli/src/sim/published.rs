//! `podq sim --published`: the two `test_workqueue` tables published with the Linux
//! workqueue's `WQ_AFFN_CACHE_SHARD` patch series (NVIDIA Grace, Intel Xeon Platinum 8321HC)
//! next to the `kernel` profile's simulation of each cell: first with the costs fitted on both
//! tables (the calibration), then leaving one machine out (each table predicted with the costs
//! fitted on the other alone), with the error per cell and the orders kept or lost; last, the
//! other published runs of those machines, never fitted, against the same simulations.

use podq_sim::kernel_fit::FREE;
use podq_sim::published::{
    against_run, check, distinct_values, leave_one_out, order_error, order_flips, CellCheck, Table,
    ORDER_ERROR, OTHER_RUNS, TABLES,
};
use podq_sim::{Platform, Profile};
use serde_json::{json, Value};

use super::args::Settings;
use crate::error::CliError;

/// How far apart two published cells must be for their order to count: 10 %. Two published
/// runs of one machine can differ by more ([`OTHER_RUNS`]).
const ORDER_MARGIN: f64 = 0.10;

/// Simulates every published cell with the `kernel` profile, fitted on both tables and on
/// each alone, and reports the errors.
///
/// # Errors
///
/// [`CliError::Usage`] for a profile other than `kernel`; [`CliError::Failed`] when a
/// simulation fails or the output cannot be written.
pub(crate) fn run(settings: &Settings) -> Result<(), CliError> {
    if settings.profile != "kernel" {
        return Err(CliError::Usage(
            "--published checks the kernel profile; leave --profile and --calibrate out".into(),
        ));
    }
    let failed = |err: podq_sim::SimError| CliError::Failed(err.to_string());
    let fitted = check(&Profile::kernel(), settings.items, settings.seed).map_err(failed)?;
    let held_out = leave_one_out(settings.items, settings.seed).map_err(failed)?;
    let out = if settings.json {
        let value = json!({
            "profile": "kernel",
            "items_per_thread": settings.items,
            "seed": settings.seed,
            "fitted": FREE.iter().map(|&(p, _, _)| p.name()).collect::<Vec<_>>(),
            "costs_clock_ghz": Profile::kernel().clock_ghz,
            "clocks": TABLES
                .iter()
                .map(|t| {
                    let clock = Platform::part_clock_ghz(t.machine);
                    (t.machine.to_owned(), json!(clock))
                })
                .collect::<serde_json::Map<String, Value>>(),
            "calibration": section_json(&fitted),
            "leave_one_machine_out": section_json(&held_out),
            "other_runs": OTHER_RUNS
                .iter()
                .map(|(run, source)| run_json(run, source, &fitted, &held_out))
                .collect::<Vec<_>>(),
            "order_error_bound": ORDER_ERROR,
        });
        crate::output::json_text(&value)?
    } else {
        let mut out = format!(
            "published tables, profile kernel, {} items per producer, seed {}\n",
            settings.items, settings.seed
        );
        out.push_str(&rule_text().map_err(failed)?);
        out.push_str(&clock_text());
        out.push_str("calibration: costs fitted on both tables\n");
        out.push_str(&section_text(&fitted));
        out.push_str(
            "leave one machine out: each table predicted with the costs fitted on the other \
             alone\n",
        );
        out.push_str(&section_text(&held_out));
        for (run, source) in &OTHER_RUNS {
            out.push_str(&run_text(run, source, &fitted, &held_out));
        }
        out.push_str(&format!(
            "podq sim ranks two configurations only when one is ahead of the other by more than \
             {ORDER_ERROR}x in every draw: the larger order error of the two checks at the \
             published 50,000 items, rounded up\n"
        ));
        out
    };
    crate::output::print(&out)
}

/// The fit's parameters against the distinct published values of each fit (the parameter
/// rule: at most half as many parameters as values).
fn rule_text() -> Result<String, podq_sim::SimError> {
    let names: Vec<&str> = FREE.iter().map(|&(p, _, _)| p.name()).collect();
    let mut per_fit = vec![format!("{} on both tables", distinct_values(&TABLES)?)];
    for table in &TABLES {
        per_fit.push(format!(
            "{} on {} alone",
            distinct_values(std::slice::from_ref(table))?,
            table.machine
        ));
    }
    Ok(format!(
        "fitted: {} shared costs ({}) on distinct published values: {}\n",
        FREE.len(),
        names.join(", "),
        per_fit.join(", ")
    ))
}

/// Each table's machine's clock, and how long its own instructions take against the costs'.
fn clock_text() -> String {
    let kernel = Profile::kernel();
    let machines: Vec<String> = TABLES
        .iter()
        .map(|t| {
            let machine = t.sim_machine();
            let platform = machine.platform();
            let ghz = platform
                .clock_ghz
                .map_or("unknown".into(), |c| format!("{c:.2} GHz"));
            let factor = platform.work_factor(kernel.clock_ghz);
            format!("{} {ghz} ({factor:.2}x)", t.machine)
        })
        .collect();
    format!(
        "clocks (base, every core busy): {}: the costs' software time at each, against theirs\n",
        machines.join(", ")
    )
}

/// The largest items/sec error of `cells`, as a fraction.
fn worst(cells: &[CellCheck]) -> f64 {
    cells.iter().map(|c| c.error().abs()).fold(0.0, f64::max)
}

/// One section's lines: a cell per line, the largest error, the orders lost.
fn section_text(cells: &[CellCheck]) -> String {
    let mut out = format!(
        "{:<12} {:<12} {:>10} {:>10} {:>7} {:>8} {:>8} {:>7}\n",
        "machine", "scope", "published", "simulated", "error", "p50 pub", "p50 sim", "error"
    );
    for c in cells {
        out.push_str(&format!(
            "{:<12} {:<12} {:>10.0} {:>10.0} {:>+6.1}% {:>8} {:>8} {:>+6.0}%\n",
            c.machine,
            c.scope.name(),
            c.published,
            c.simulated,
            100.0 * c.error(),
            c.published_p50,
            c.simulated_p50,
            100.0 * c.p50_error()
        ));
    }
    out.push_str(&format!(
        "largest error: {:.1}% of items/sec\n",
        100.0 * worst(cells)
    ));
    if let (factor, Some((a, b))) = order_error(cells) {
        out.push_str(&format!(
            "order error: the ratio of two scopes of one machine misjudged by up to {factor:.3}x \
             ({} {} against {})\n",
            a.machine,
            a.scope.name(),
            b.scope.name()
        ));
    }
    let flips = order_flips(cells, ORDER_MARGIN);
    if flips.is_empty() {
        out.push_str("order: every pair of published cells more than 10% apart keeps its order\n");
    }
    for (lo, hi) in &flips {
        out.push_str(&format!(
            "order lost on {}: {} is published above {} but not simulated so\n",
            lo.machine,
            hi.scope.name(),
            lo.scope.name()
        ));
    }
    out
}

/// One section as JSON.
fn section_json(cells: &[CellCheck]) -> Value {
    let rows: Vec<_> = cells
        .iter()
        .map(|c| {
            json!({
                "machine": c.machine,
                "scope": c.scope.name(),
                "published_items_per_sec": c.published.round() as u64,
                "items_per_sec": c.simulated.round() as u64,
                "error": c.error(),
                "published_p50_ns": c.published_p50,
                "p50_ns": c.simulated_p50,
                "p50_error": c.p50_error(),
            })
        })
        .collect();
    let flipped: Vec<_> = order_flips(cells, ORDER_MARGIN)
        .iter()
        .map(|(lo, hi)| json!([lo.machine, lo.scope.name(), hi.scope.name()]))
        .collect();
    let (factor, pair) = order_error(cells);
    json!({
        "cells": rows,
        "largest_error": worst(cells),
        "order_error": {
            "factor": factor,
            "pair": pair.map(|(a, b)| json!([a.machine, a.scope.name(), b.scope.name()])),
        },
        "order_flips": flipped,
    })
}

/// `run` (published in `source`) against the calibration's and the held-out check's
/// simulations of its machine: a cell per line, each with how far this run is from the
/// table's, the largest errors and the orders lost.
fn run_text(run: &Table, source: &str, fitted: &[CellCheck], held_out: &[CellCheck]) -> String {
    let (Some(calibrated), Some(predicted)) =
        (against_run(fitted, run), against_run(held_out, run))
    else {
        return String::new();
    };
    let mut out = format!(
        "another published run of {}, never fitted ({source}): the same simulations\n",
        run.machine
    );
    out.push_str(&format!(
        "{:<12} {:>10} {:>8} {:>10} {:>7} {:>10} {:>7} {:>8} {:>8}\n",
        "scope",
        "published",
        "vs table",
        "calibrated",
        "error",
        "held out",
        "error",
        "p50 pub",
        "vs table"
    ));
    for (cal, pred) in calibrated.iter().zip(&predicted) {
        let Some(table) = table_cell(fitted, cal) else {
            continue;
        };
        out.push_str(&format!(
            "{:<12} {:>10.0} {:>+7.1}% {:>10.0} {:>+6.1}% {:>10.0} {:>+6.1}% {:>8} {:>+7.0}%\n",
            cal.scope.name(),
            cal.published,
            100.0 * (cal.published / table.published - 1.0),
            cal.simulated,
            100.0 * cal.error(),
            pred.simulated,
            100.0 * pred.error(),
            cal.published_p50,
            100.0 * (cal.published_p50 as f64 / table.published_p50.max(1) as f64 - 1.0),
        ));
    }
    out.push_str(&format!(
        "largest error: {:.1}% calibrated, {:.1}% held out; the two published runs differ by up \
         to {:.1}% of items/sec\n",
        100.0 * worst(&calibrated),
        100.0 * worst(&predicted),
        100.0 * runs_apart(fitted, &calibrated)
    ));
    for (name, cells) in [("calibrated", &calibrated), ("held out", &predicted)] {
        for (lo, hi) in order_flips(cells, ORDER_MARGIN) {
            out.push_str(&format!(
                "order lost {name}: {} is published above {} in this run but not simulated so\n",
                hi.scope.name(),
                lo.scope.name()
            ));
        }
    }
    out
}

/// `run` as JSON, as [`run_text`] gives it.
fn run_json(run: &Table, source: &str, fitted: &[CellCheck], held_out: &[CellCheck]) -> Value {
    let calibrated = against_run(fitted, run);
    json!({
        "machine": run.machine,
        "source": source,
        "runs_apart": calibrated.as_deref().map(|cells| runs_apart(fitted, cells)),
        "calibration": calibrated.as_deref().map(section_json),
        "leave_one_machine_out": against_run(held_out, run).map(|c| section_json(&c)),
    })
}

/// The cell of `cells` (a table's) of `cell`'s machine and scope.
fn table_cell<'a>(cells: &'a [CellCheck], cell: &CellCheck) -> Option<&'a CellCheck> {
    cells
        .iter()
        .find(|c| c.machine == cell.machine && c.scope == cell.scope)
}

/// The largest relative difference of items/sec between the cells of another run (`run`) and
/// the table's of their machine (in `cells`), as a fraction of the table's.
fn runs_apart(cells: &[CellCheck], run: &[CellCheck]) -> f64 {
    run.iter()
        .filter_map(|cell| {
            table_cell(cells, cell).map(|table| (cell.published / table.published - 1.0).abs())
        })
        .fold(0.0, f64::max)
}
