//! `podq sim --against FILE`: rebuild the machine a `podq bench --json` report ran on (its
//! recorded topology), predict each of its podq rows with the costs of the nearest hardware
//! family (its recorded CPU model), and print the prediction beside the measurement, cell by
//! cell, with the error: the check of the model on a machine before trusting it there.

use std::path::Path;

use podq::{AffinityScope, Pods, Topology};
use podq_sim::published::{order_error, CellCheck};
use podq_sim::{Locality, Profile, Scenario, ShardRule, SimMachine, Workload};
use serde_json::{json, Value};

use super::args::Settings;
use super::report::Locks;
use crate::bench::spawned;
use crate::error::CliError;

/// Most items per producer a prediction simulates (the bench's own count when fewer).
const MAX_ITEMS: u64 = 50_000;

/// The machine name whose public figures (`Platform::for_machine`, `Caches::for_machine`)
/// stand for a CPU of `model`, and why.
pub(crate) fn family_of(model: &str) -> (&'static str, &'static str) {
    let m = model.to_ascii_lowercase();
    if m.contains("grace") || m.contains("neoverse") {
        ("grace", "an Arm Neoverse part: NVIDIA Grace's figures")
    } else if m.contains("xeon") || m.contains("intel") {
        (
            "xeon-8321hc",
            "an Intel Xeon: the Xeon 8358 lines, Skylake-SP idle states",
        )
    } else if m.contains("epyc 7") && !m.contains("epyc 7r13") || m.contains("ryzen 9 3") {
        (
            "ryzen-3900x",
            "an AMD Zen 2/3 part: the EPYC 7763's figures",
        )
    } else if m.contains("amd") || m.contains("epyc") || m.contains("ryzen") {
        ("epyc-9d64", "an AMD part: the EPYC 9654's (Zen 4) figures")
    } else {
        (
            "median",
            "an unknown CPU: the median of the public core-to-core tables",
        )
    }
}

/// The base clock in GHz a CPU model string states (Intel's brand strings end in
/// "@ 2.10GHz"); `None` when it states none.
pub(crate) fn clock_of(model: &str) -> Option<f64> {
    let (_, tail) = model.rsplit_once('@')?;
    let ghz = tail
        .trim()
        .strip_suffix("GHz")?
        .trim()
        .parse::<f64>()
        .ok()?;
    (ghz.is_finite() && ghz > 0.0).then_some(ghz)
}

/// Items per producer of a prediction of `workload` that runs at most [`MAX_ITEMS`] items
/// per producer (at least one item, chain or yielding item).
fn most_items(workload: Workload) -> u64 {
    let per_item = workload
        .runs_per_producer(1)
        .saturating_sub(u64::from(workload == Workload::SpawnLocal));
    (MAX_ITEMS / per_item.max(1)).max(1)
}

/// What a podq row of the file measured.
struct Measured {
    /// Items/sec, the median run's.
    median: f64,
    /// Items/sec, the best run's.
    best: f64,
    /// The share of items run by their queuer, if recorded.
    by_queuer: Option<f64>,
    /// The share of items taken ahead (H8), if recorded.
    ahead: Option<f64>,
    /// Lock acquisitions per item and the share found held, if recorded.
    locks: Option<Locks>,
    /// The queue call's median latency, in ns, if recorded.
    p50_ns: Option<f64>,
}

/// One predicted row beside its measurement.
struct Compared {
    scenario: Scenario,
    predicted: f64,
    range: Option<(f64, f64)>,
    median: f64,
    best: f64,
    /// The predicted and the measured share of items run by their queuer (`chain`, `yield`,
    /// `spawn-local`).
    by_queuer: Option<(f64, f64)>,
    /// The predicted share of items taken from the queue ahead (H8), and the measured one
    /// when the row has it; `None` for a profile without held slots.
    ahead: Option<(f64, Option<f64>)>,
    /// The predicted locks, and the measured ones when the row records them.
    locks: (Locks, Option<Locks>),
    /// The predicted queue call's median latency (ns), and the measured one if recorded.
    p50_ns: (f64, Option<f64>),
}

/// Runs `podq sim --against FILE`.
///
/// # Errors
///
/// [`CliError::Failed`] naming the file when it cannot be read, has no recorded topology or no
/// podq row of a simulated workload; what `--calibrate` and the simulation report.
pub(crate) fn run(
    path: &Path,
    calibrate: Option<&Path>,
    settings: &Settings,
) -> Result<(), CliError> {
    let file = path.display().to_string();
    let fail = |what: &str| CliError::Failed(format!("--against {file}: {what}"));
    let report = super::bench_file::read("--against", path)?;
    let description = report["machine"]["topology"]["description"]
        .as_str()
        .ok_or_else(|| {
            fail("no machine.topology.description; record the run with this podq's bench --json")
        })?;
    let model = report["machine"]["model"].as_str().unwrap_or("unknown CPU");
    let (family, why) = family_of(model);
    let topology = Topology::from_machine(description).map_err(|err| {
        fail(&format!(
            "its topology '{description}' cannot be rebuilt: {err}"
        ))
    })?;
    // The family's figures, at the clock the CPU's own model string states (an Intel brand
    // string's "@ 2.10GHz").
    let machine = SimMachine::new(topology, family).at_clock(clock_of(model));
    let mut notes = Vec::new();
    if let Some(recorded) = report["machine"]["topology"]["pods"].as_object() {
        for scope in AffinityScope::ALL {
            let rebuilt = Pods::new(machine.topology(), scope, 8).map_or(0, |p| p.pods().len());
            if let Some(n) = recorded.get(scope.name()).and_then(Value::as_u64) {
                if n as usize != rebuilt {
                    notes.push(format!(
                        "{}: {n} pods recorded, {rebuilt} rebuilt (the layout is irregular)",
                        scope.name()
                    ));
                }
            }
        }
    }
    let mut profile = Profile::podq();
    if super::calibrate::measured_before_h8(&report) {
        // The runtime that ran the file, whose rows record no `ahead`.
        profile.mechanism.holds_ahead = false;
        notes.push("its rows record no `ahead`: measured before H8, simulated without it".into());
    }
    let calibration = match calibrate {
        Some(other) => Some(super::calibrate::fit(
            other,
            &machine,
            &mut profile,
            ShardRule::Cores,
        )?),
        None => None,
    };
    let work_ns = report["settings"]["work_ns"].as_u64();
    let mut scenarios = Vec::new();
    let mut measured = Vec::new();
    for row in report["results"].as_array().into_iter().flatten() {
        if row["system"] != "podq" {
            continue;
        }
        let workload = match row["workload"].as_str() {
            Some("queue") => Workload::Queue,
            Some("flood") => Workload::Flood,
            Some("skew") => Workload::Skew,
            Some("fanout") => Workload::Fanout,
            Some("rpc") => Workload::Rpc,
            Some("chain") => Workload::Chain {
                depth: row["depth"]
                    .as_u64()
                    .unwrap_or(spawned::DEFAULT_DEPTH)
                    .max(1),
            },
            Some("yield") => Workload::Yield {
                yields: row["yields"].as_u64().unwrap_or(spawned::DEFAULT_YIELDS),
            },
            Some("spawn-local") => Workload::SpawnLocal,
            _ => continue,
        };
        let (Some(scope), Some(threads), Some(items), Some(median)) = (
            row["scope"]
                .as_str()
                .and_then(|s| s.parse::<AffinityScope>().ok()),
            row["threads"].as_u64(),
            row["items_per_thread"].as_u64(),
            row["items_per_sec"].as_f64(),
        ) else {
            continue;
        };
        if threads == 0 || threads as usize > machine.len() || items == 0 {
            continue;
        }
        scenarios.push(Scenario {
            workload,
            scope,
            shard_size: row["shard_size"].as_u64().unwrap_or(8) as usize,
            shard_rule: ShardRule::Cores,
            threads: threads as usize,
            items: items.min(most_items(workload)),
            work_ns: row["work_ns"]
                .as_u64()
                .or(work_ns)
                .unwrap_or_else(|| workload.default_work_ns()),
            seed: settings.seed,
            pull: row["pull"].as_str() == Some("on"),
            steer: false,
            locality: Locality::default(),
        });
        // Counted over each run's items: the bench's counts are medians of its runs.
        let run_items = super::report::runs(&Scenario {
            items,
            ..*scenarios.last().expect("just pushed")
        });
        let locks = match (
            row["locks_per_item"].as_f64(),
            row["lock_contended"].as_f64(),
        ) {
            (Some(per_item), Some(contended)) if per_item > 0.0 => Some(Locks {
                per_item,
                held: contended / (per_item * run_items),
            }),
            _ => None,
        };
        measured.push(Measured {
            median,
            best: row["items_per_sec_max"].as_f64().unwrap_or(median),
            by_queuer: row["by_queuer"].as_f64(),
            ahead: row["ahead"].as_f64(),
            locks,
            p50_ns: row["p50_ns"].as_f64(),
        });
    }
    if scenarios.is_empty() {
        return Err(fail(
            "no podq row of the queue, flood, skew, fanout, rpc, chain, yield or spawn-local \
             workload to predict",
        ));
    }
    let outcomes = super::simulate_all(&machine, &profile, &scenarios)?;
    let ranges = match settings.uncertainty {
        Some(percent) => {
            let spread = podq_sim::uncertainty::spread(
                &machine,
                &profile,
                &scenarios,
                percent,
                settings.seed,
            )
            .map_err(super::sim_error)?;
            outcomes
                .iter()
                .enumerate()
                .map(|(i, o)| Some(spread.range_of(i, o.items_per_sec)))
                .collect()
        }
        None => vec![None; outcomes.len()],
    };
    let rows: Vec<Compared> = scenarios
        .iter()
        .zip(&outcomes)
        .zip(ranges)
        .zip(&measured)
        .map(|(((s, o), range), m)| Compared {
            scenario: *s,
            predicted: o.items_per_sec,
            range,
            median: m.median,
            best: m.best,
            by_queuer: m
                .by_queuer
                .map(|measured| (super::report::by_queuer(s, o), measured)),
            ahead: profile
                .mechanism
                .holds
                .then(|| (super::report::ahead(s, o), m.ahead)),
            locks: (super::report::locks(s, o), m.locks),
            p50_ns: (o.queue.p50 as f64, m.p50_ns),
        })
        .collect();
    let basis = match &calibration {
        Some(c) => format!("podq's costs fitted on {}", c.file),
        None => "podq's mechanisms with the kernel profile's costs, not fitted to this machine \
                 (--calibrate with a queue run of it fits podq's own first)"
            .to_owned(),
    };
    let order = super::OrderError::of(profile.name, calibration.is_some());
    // How far this file's ratios of two configurations of one workload were misjudged, as
    // the published tables' order error counts it.
    let checks: Vec<CellCheck> = rows
        .iter()
        .map(|r| CellCheck {
            machine: r.scenario.workload.name(),
            scope: r.scenario.scope,
            published: r.median,
            simulated: r.predicted,
            published_p50: 0,
            simulated_p50: 0,
        })
        .collect();
    let (missed, pair) = order_error(&checks);
    let pair = pair.map(|(a, b)| format!("{} against {}", a.scope.name(), b.scope.name()));
    let out = if settings.json {
        let cells: Vec<Value> = rows
            .iter()
            .map(|r| {
                json!({
                    "workload": r.scenario.workload.name(),
                    "scope": r.scenario.scope.name(),
                    "shard_size": r.scenario.shard_size,
                    "pull": if r.scenario.pull { "on" } else { "off" },
                    "predicted_items_per_sec": r.predicted.round() as u64,
                    "predicted_min": r.range.map(|x| x.0.round() as u64),
                    "predicted_max": r.range.map(|x| x.1.round() as u64),
                    "measured_items_per_sec": r.median.round() as u64,
                    "measured_max": r.best.round() as u64,
                    "error": r.predicted / r.median - 1.0,
                    "error_against_best": r.predicted / r.best - 1.0,
                    "predicted_by_queuer": r.by_queuer.map(|b| b.0),
                    "measured_by_queuer": r.by_queuer.map(|b| b.1),
                    "predicted_ahead": r.ahead.map(|a| a.0),
                    "measured_ahead": r.ahead.and_then(|a| a.1),
                    "predicted_locks_per_item": r.locks.0.per_item,
                    "measured_locks_per_item": r.locks.1.map(|l| l.per_item),
                    "predicted_lock_held": r.locks.0.held,
                    "measured_lock_held": r.locks.1.map(|l| l.held),
                    "predicted_p50_ns": r.p50_ns.0,
                    "measured_p50_ns": r.p50_ns.1,
                })
            })
            .collect();
        let value = json!({
            "against": file,
            "description": description,
            "model": model,
            "family": family,
            "family_reason": why,
            "clock_ghz": machine.platform().clock_ghz,
            "work_factor": machine.platform().work_factor(profile.clock_ghz),
            "costs": basis,
            "order_error": order.factor,
            "order_error_measured_on": order.measured_on,
            "order_missed": missed,
            "order_missed_pair": pair,
            "notes": notes,
            "cells": cells,
        });
        crate::output::json_text(&value)?
    } else {
        let mut out = format!(
            "against {file}: {model}, rebuilt as {description}; platform of {family} ({why}): \
             {}\n",
            machine.platform_source()
        );
        out.push_str(&format!(
            "costs: {basis}; {}\n",
            super::report::clock_text(machine.platform(), &profile)
        ));
        out.push_str(&format!(
            "order error: {}x ({}): two scopes predicted closer than this may be the other way \
             round; here the ratio of two was misjudged by up to {missed:.2}x{}\n",
            order.factor,
            order.measured_on,
            pair.as_deref().map_or(String::new(), |p| format!(" ({p})"))
        ));
        for note in &notes {
            out.push_str(&format!("note: {note}\n"));
        }
        if let Some(c) = &calibration {
            out.push_str(&c.text());
        }
        out.push_str(&format!(
            "{:<11} {:<22} {:>10} {:>23} {:>10} {:>10} {:>7} {:>7}\n",
            "workload", "scope", "predicted", "range", "measured", "best", "error", "vs best"
        ));
        for r in &rows {
            let s = &r.scenario;
            let label = format!(
                "{}{} pull={}",
                s.scope.name(),
                if s.scope == AffinityScope::CacheShard {
                    format!("/{}", s.shard_size)
                } else {
                    String::new()
                },
                if s.pull { "on" } else { "off" }
            );
            let range = r
                .range
                .map_or("-".to_owned(), |(lo, hi)| format!("{lo:.0}-{hi:.0}"));
            out.push_str(&format!(
                "{:<11} {:<22} {:>10.0} {:>23} {:>10.0} {:>10.0} {:>+6.1}% {:>+6.1}%",
                s.workload.name(),
                label,
                r.predicted,
                range,
                r.median,
                r.best,
                100.0 * (r.predicted / r.median - 1.0),
                100.0 * (r.predicted / r.best - 1.0)
            ));
            let percent = |v: f64| format!("{:.1} %", 100.0 * v);
            if let Some((predicted, measured)) = r.by_queuer {
                out.push_str(&format!(
                    "  by_queuer {}{}",
                    percent(predicted),
                    beside(Some(measured), percent)
                ));
            }
            if let Some((predicted, measured)) = r.ahead {
                out.push_str(&format!(
                    "  ahead {}{}",
                    percent(predicted),
                    beside(measured, percent)
                ));
            }
            let (predicted, measured) = r.locks;
            out.push_str(&format!(
                "  locks/item {:.2}{}, held {}{}",
                predicted.per_item,
                beside(measured.map(|m| m.per_item), |v| format!("{v:.2}")),
                percent(predicted.held),
                beside(measured.map(|m| m.held), percent),
            ));
            let (predicted, measured) = r.p50_ns;
            out.push_str(&format!(
                "  call p50 {predicted:.0} ns{}\n",
                beside(measured, |v| format!("{v:.0}"))
            ));
        }
        out
    };
    crate::output::print(&out)
}

/// ` (measured X)` after a predicted figure, X as `show` writes it, or nothing when the run did
/// not record it.
fn beside(measured: Option<f64>, show: impl Fn(f64) -> String) -> String {
    measured.map_or(String::new(), |m| format!(" (measured {})", show(m)))
}

#[cfg(test)]
mod tests {
    use super::clock_of;

    #[test]
    fn a_clock_is_read_only_where_the_model_string_states_one() {
        assert_eq!(
            clock_of("Intel(R) Xeon(R) Platinum 8321HC CPU @ 1.40GHz"),
            Some(1.40)
        );
        assert_eq!(
            clock_of("Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz "),
            Some(3.20)
        );
        assert_eq!(clock_of("Intel(R) Xeon(R) Processor"), None);
        assert_eq!(clock_of("AMD EPYC 9654 96-Core Processor"), None);
        assert_eq!(clock_of("odd @ fastGHz"), None);
        assert_eq!(clock_of("odd @ 0GHz"), None);
        assert_eq!(clock_of("odd @ -2GHz"), None);
    }
}
