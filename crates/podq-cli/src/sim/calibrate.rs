//! `--calibrate FILE`: fit the `podq` profile's costs to a `podq bench --json` run of the
//! machine, so that the simulator can predict what was not measured (another workload, shard
//! size or thread count).

use std::borrow::Cow;
use std::path::Path;

use podq::AffinityScope;
use podq_sim::fit::{fit_rough, log_error, Bound};
use podq_sim::{
    simulate, Costs, Locality, Param, Profile, Scenario, ShardRule, SimMachine, Workload,
};
use rayon::prelude::*;
use serde_json::{json, Value};

use crate::error::CliError;

/// Items per producer in the fit's simulations: enough for a steady state, few enough that a
/// fit takes seconds.
const FIT_ITEMS: u64 = 5_000;

/// Random points the fit tries before its Nelder-Mead runs (`podq_sim::fit::fit_rough`).
const FIT_SAMPLES: usize = 200;

/// Evaluations of each of the fit's two Nelder-Mead runs.
const FIT_EVALUATIONS: usize = 200;

/// The costs the fit moves, and their bounds: from a tenth of the fastest to ten times the
/// slowest plausible value on current servers. The worker's own cost per item
/// (`worker_item_ns`) stays inside the producer's, as in the `kernel` profile: a closed loop
/// runs the two in series, so its rates cannot tell them apart.
const FREE: [Bound; 8] = [
    Bound {
        param: Param::LinesPerHandover,
        low: 1.0,
        high: 8.0,
    },
    Bound {
        param: Param::ItemLines,
        low: 0.25,
        high: 8.0,
    },
    Bound {
        param: Param::Switch,
        low: 200.0,
        high: 50_000.0,
    },
    Bound {
        param: Param::WakeIdle,
        low: 200.0,
        high: 50_000.0,
    },
    Bound {
        param: Param::WakeCall,
        low: 50.0,
        high: 10_000.0,
    },
    Bound {
        param: Param::ProducerItem,
        low: 20.0,
        high: 20_000.0,
    },
    Bound {
        param: Param::CriticalSection,
        low: 10.0,
        high: 2_000.0,
    },
    Bound {
        param: Param::Spin,
        low: 100.0,
        high: 200_000.0,
    },
];

/// One measured row and its fitted simulation.
#[derive(Clone, Debug)]
struct Fitted {
    /// The configuration, as measured.
    scenario: Scenario,
    /// Measured items/sec and queue call p50 (ns).
    measured: Target,
    /// Simulated items/sec and queue call p50 (ns) after the fit.
    simulated: Target,
}

/// What a fit matches of one row: the rate, and the queue call's own cost.
#[derive(Clone, Copy, Debug, Default)]
struct Target {
    /// Items per second.
    items_per_sec: f64,
    /// The queue call's median latency, in nanoseconds (0: not measured, not fitted).
    p50_ns: f64,
}

/// What `--calibrate` fitted, for the report.
#[derive(Clone, Debug)]
pub(crate) struct Calibration {
    /// The file.
    pub(crate) file: String,
    /// Each measured row.
    rows: Vec<Fitted>,
    /// The fitted costs.
    params: Vec<(&'static str, f64)>,
    /// Each fitted cost's least and greatest value among the costs the fit tried that match
    /// the file within [`Calibration::tolerance`] of the best ([`near_best`]).
    spread: Vec<(Param, f64, f64)>,
    /// How much worse than the best fit a fit may be and still count: the squared log ratios
    /// of each row's best run to its median run, summed (0 for single runs).
    tolerance: f64,
    /// How many of the costs the fit tried lie within that tolerance, and how many it tried.
    near: (usize, usize),
    /// The run was measured before H8 ([`measured_before_h8`]), so the fit ran without it.
    before_h8: bool,
}

/// Whether the podq rows of a `podq bench --json` report were measured by a podq without H8
/// (a busy worker taking the head's next item too, `crates/podq/src/pool/README.md`): they
/// record no `ahead`, which the bench writes for every podq row since H8.
pub(crate) fn measured_before_h8(report: &Value) -> bool {
    let mut podq = report["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|row| row["system"] == "podq")
        .peekable();
    podq.peek().is_some() && podq.all(|row| row.get("ahead").is_none())
}

impl Calibration {
    /// Lines for the text report.
    pub(crate) fn text(&self) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|(name, value)| format!("{name}={value:.0}"))
            .collect();
        let mut out = format!(
            "calibration: podq profile fitted on {}: {}\n",
            self.file,
            params.join(", ")
        );
        if self.before_h8 {
            out.push_str(
                "calibration: its rows record no `ahead`: measured before H8, fitted without it\n",
            );
        }
        if !self.spread.is_empty() {
            let spans: Vec<String> = self
                .spread
                .iter()
                .map(|(param, least, most)| format!("{} {least:.0}-{most:.0}", param.name()))
                .collect();
            out.push_str(&format!(
                "calibration: as close to the file as its runs are to each other ({} of {} costs \
                 tried, log error within {:.4} of the best): {}\n",
                self.near.0,
                self.near.1,
                self.tolerance,
                spans.join(", ")
            ));
        }
        for row in &self.rows {
            let s = &row.scenario;
            out.push_str(&format!(
                "calibration: {} {}/{}: measured {:.0}, fitted {:.0} items/sec ({:+.1}%); \
                 queue call p50 measured {:.0}, fitted {:.0} ns\n",
                s.workload.name(),
                s.scope.name(),
                s.shard_size,
                row.measured.items_per_sec,
                row.simulated.items_per_sec,
                100.0 * (row.simulated.items_per_sec / row.measured.items_per_sec - 1.0),
                row.measured.p50_ns,
                row.simulated.p50_ns,
            ));
        }
        out
    }

    /// The JSON block.
    pub(crate) fn json(&self) -> Value {
        let params: serde_json::Map<String, Value> = self
            .params
            .iter()
            .map(|(name, value)| ((*name).to_owned(), json!(value)))
            .collect();
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                json!({
                    "workload": r.scenario.workload.name(),
                    "scope": r.scenario.scope.name(),
                    "shard_size": r.scenario.shard_size,
                    "measured_items_per_sec": r.measured.items_per_sec.round() as u64,
                    "fitted_items_per_sec": r.simulated.items_per_sec.round() as u64,
                    "measured_p50_ns": r.measured.p50_ns.round() as u64,
                    "fitted_p50_ns": r.simulated.p50_ns.round() as u64,
                })
            })
            .collect();
        let spread: serde_json::Map<String, Value> = self
            .spread
            .iter()
            .map(|(param, least, most)| (param.name().to_owned(), json!([least, most])))
            .collect();
        json!({
            "file": self.file,
            "costs": params,
            "rows": rows,
            "before_h8": self.before_h8,
            "spread": spread,
            "tolerance": self.tolerance,
            "near": self.near.0,
            "tried": self.near.1,
        })
    }
}

/// What makes two rows one simulation: everything of the scenario but the scope's name, and
/// the pods the scope forms on `machine` (`None` when they cannot be formed: the simulation
/// reports that).
fn pods_key(machine: &SimMachine, s: &Scenario) -> (Scenario, Option<Vec<Vec<usize>>>) {
    let topo = machine.topology();
    let pods = match (s.scope, s.shard_rule) {
        (AffinityScope::CacheShard, ShardRule::Cpus) => {
            podq::Pods::cache_shards_by_cpu(topo, s.shard_size)
        }
        (scope, _) => podq::Pods::new(topo, scope, s.shard_size),
    };
    let pods = pods.ok().map(|pods| {
        pods.pods()
            .iter()
            .map(|pod| pod.cpus().iter().collect())
            .collect()
    });
    let key = Scenario {
        scope: AffinityScope::System,
        shard_size: 0,
        ..*s
    };
    (key, pods)
}

/// Fits `profile`'s costs to the podq rows of the bench JSON at `path`, run on `machine`: each
/// row's items/sec of its best run (`items_per_sec_max`, or `items_per_sec` for a single run)
/// and its queue call's median latency (the push's own cost, which the rate
/// of a closed loop alone leaves open), as a sum of squared log errors.
///
/// # Errors
///
/// [`CliError::Failed`] naming the file when it cannot be read, is not a bench JSON report,
/// has no podq row, or was measured with more threads than `machine` has CPUs.
pub(crate) fn fit(
    path: &Path,
    machine: &SimMachine,
    profile: &mut Profile,
    rule: ShardRule,
) -> Result<Calibration, CliError> {
    let file = path.display().to_string();
    let report = super::bench_file::read("--calibrate", path)?;
    // Costs fitted here are at this machine's clock.
    profile.clock_ghz = machine.platform().clock_ghz;
    let work_ns = report["settings"]["work_ns"].as_u64().unwrap_or(0);
    let before_h8 = measured_before_h8(&report);
    // The runtime that ran the file: without H8 when it records none.
    let mut measured_mechanism = profile.mechanism;
    measured_mechanism.holds_ahead &= !before_h8;
    let mut targets = Vec::new();
    let mut tolerance = 0.0;
    for row in report["results"].as_array().into_iter().flatten() {
        if row["system"] != "podq" {
            continue;
        }
        let bad = || {
            CliError::Failed(format!(
                "--calibrate {file}: a podq row lacks workload, scope, threads, \
                 items_per_thread or items_per_sec; give the output of podq bench --json"
            ))
        };
        let workload = match row["workload"].as_str() {
            Some("queue") => Workload::Queue,
            Some("flood") => Workload::Flood,
            _ => return Err(bad()),
        };
        let scope: AffinityScope = row["scope"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .ok_or_else(bad)?;
        let threads = row["threads"].as_u64().ok_or_else(bad)? as usize;
        let items = row["items_per_thread"].as_u64().ok_or_else(bad)?;
        // The best run: the model's machine runs nothing else, and every other process only
        // slows a run down.
        let rate = row["items_per_sec_max"]
            .as_f64()
            .or(row["items_per_sec"].as_f64());
        let measured = Target {
            items_per_sec: rate.ok_or_else(bad)?,
            p50_ns: row["p50_ns"].as_f64().unwrap_or(0.0),
        };
        if let Some(median) = row["items_per_sec"].as_f64().filter(|&m| m > 0.0) {
            tolerance += (measured.items_per_sec / median).ln().powi(2);
        }
        if threads == 0 || threads > machine.len() || items == 0 {
            return Err(CliError::Failed(format!(
                "--calibrate {file}: measured with {threads} threads, but the machine {} has \
                 {} CPUs; give --machine or --sysfs for the machine it ran on",
                machine.name(),
                machine.len()
            )));
        }
        let shard_size = row["shard_size"].as_u64().unwrap_or(8) as usize;
        let scenario = Scenario {
            workload,
            scope,
            shard_size,
            shard_rule: rule,
            threads,
            items: items.min(FIT_ITEMS),
            work_ns,
            seed: 1,
            pull: row["pull"].as_str() == Some("on"),
            steer: false,
            locality: Locality::default(),
        };
        targets.push((scenario, measured));
    }
    if targets.is_empty() {
        return Err(CliError::Failed(format!(
            "--calibrate {file}: no podq rows; give the output of podq bench --json"
        )));
    }
    // Rows whose scopes form the same pods (on a small machine most do) are one simulation.
    let keys: Vec<_> = targets.iter().map(|(s, _)| pods_key(machine, s)).collect();
    let mut unique: Vec<usize> = Vec::new();
    let slot: Vec<usize> = keys
        .iter()
        .enumerate()
        .map(
            |(i, key)| match unique.iter().position(|&u| keys[u] == *key) {
                Some(at) => at,
                None => {
                    unique.push(i);
                    unique.len() - 1
                }
            },
        )
        .collect();
    // The distinct simulations of a round at once: a fit runs some 600 rounds.
    let run = |profile: &Profile| -> Vec<Target> {
        let outcomes: Vec<Target> = unique
            .par_iter()
            .map(|&i| {
                simulate(machine, profile, &targets[i].0).map_or(Target::default(), |o| Target {
                    items_per_sec: o.items_per_sec,
                    p50_ns: o.queue.p50 as f64,
                })
            })
            .collect();
        slot.iter().map(|&u| outcomes[u]).collect()
    };
    let objective = |costs: &podq_sim::Costs| {
        let trial = Profile {
            costs: *costs,
            mechanism: measured_mechanism,
            ..profile.clone()
        };
        let simulated = run(&trial);
        let pairs = simulated.iter().zip(&targets).flat_map(|(s, (_, m))| {
            let rate = (s.items_per_sec, m.items_per_sec);
            let call = (m.p50_ns > 0.0).then_some((s.p50_ns, m.p50_ns));
            std::iter::once(rate).chain(call)
        });
        log_error(pairs)
    };
    let mut tried: Vec<(Costs, f64)> = Vec::new();
    let (costs, best) = fit_rough(
        &profile.costs,
        &FREE,
        |costs: &Costs| {
            let value = objective(costs);
            tried.push((*costs, value));
            value
        },
        FIT_SAMPLES,
        FIT_EVALUATIONS,
    );
    profile.costs = costs;
    let (spread, near) = near_best(&tried, best + tolerance);
    profile.fit_spread = Cow::Owned(spread.clone());
    let simulated = run(&Profile {
        mechanism: measured_mechanism,
        ..profile.clone()
    });
    Ok(Calibration {
        file,
        rows: targets
            .iter()
            .zip(simulated)
            .map(|((scenario, measured), simulated)| Fitted {
                scenario: *scenario,
                measured: *measured,
                simulated,
            })
            .collect(),
        params: FREE
            .iter()
            .map(|b| (b.param.name(), costs.get(b.param)))
            .collect(),
        spread,
        tolerance,
        near: (near, tried.len()),
        before_h8,
    })
}

/// Each free cost's least and greatest value among the `tried` costs whose objective is at
/// most `limit`, and how many those are: the costs that fit the file as well as its runs
/// agree with each other, so that `--uncertainty` draws across them.
fn near_best(tried: &[(Costs, f64)], limit: f64) -> (Vec<(Param, f64, f64)>, usize) {
    let near: Vec<&Costs> = tried
        .iter()
        .filter(|(_, value)| *value <= limit)
        .map(|(costs, _)| costs)
        .collect();
    let spread = FREE
        .iter()
        .filter_map(|b| {
            let values = near.iter().map(|c| c.get(b.param));
            let least = values.clone().fold(f64::INFINITY, f64::min);
            let most = values.fold(f64::NEG_INFINITY, f64::max);
            (least <= most).then_some((b.param, least, most))
        })
        .collect();
    (spread, near.len())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use podq_sim::{Param, Profile};

    use super::{measured_before_h8, near_best, FREE};

    #[test]
    fn the_spread_spans_every_cost_tried_within_the_limit_and_no_other() {
        let base = Profile::podq().costs;
        let with_switch = |switch_ns: f64| podq_sim::Costs { switch_ns, ..base };
        let tried = [
            (with_switch(1_000.0), 0.10),
            (with_switch(700.0), 0.12),
            (with_switch(1_900.0), 0.14),
            (with_switch(9_000.0), 0.50),
        ];
        let (spread, near) = near_best(&tried, 0.10 + 0.05);
        assert_eq!(near, 3);
        assert_eq!(spread.len(), FREE.len());
        let switch = spread.iter().find(|s| s.0 == Param::Switch).unwrap();
        assert_eq!((switch.1, switch.2), (700.0, 1_900.0));
        let spin = spread.iter().find(|s| s.0 == Param::Spin).unwrap();
        assert_eq!((spin.1, spin.2), (base.spin_ns, base.spin_ns));
        // Only the best within a limit of its own value.
        let (spread, near) = near_best(&tried, 0.10);
        assert_eq!(near, 1);
        let switch = spread.iter().find(|s| s.0 == Param::Switch).unwrap();
        assert_eq!((switch.1, switch.2), (1_000.0, 1_000.0));
        // Nothing tried: no spread.
        assert_eq!(near_best(&[], 1.0), (Vec::new(), 0));
    }

    #[test]
    fn a_run_whose_podq_rows_record_no_ahead_was_measured_before_h8() {
        let row = |system: &str, ahead: Option<f64>| {
            let mut row = json!({ "system": system, "workload": "flood" });
            if let Some(share) = ahead {
                row["ahead"] = json!(share);
            }
            row
        };
        let report = |rows: Vec<serde_json::Value>| json!({ "results": rows });
        assert!(measured_before_h8(&report(vec![
            row("podq", None),
            row("tokio", None)
        ])));
        assert!(!measured_before_h8(&report(vec![
            row("podq", Some(0.0)),
            row("podq", None)
        ])));
        // No podq row: nothing says how podq was built.
        assert!(!measured_before_h8(&report(vec![row("rayon", None)])));
        assert!(!measured_before_h8(&json!({})));
    }
}
