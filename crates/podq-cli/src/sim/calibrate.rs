//! `--calibrate FILE`: fit the `podq` profile's costs to a `podq bench --json` run of the
//! machine, so that the simulator can predict what was not measured (another workload, shard
//! size or thread count).

use std::path::Path;

use podq::AffinityScope;
use podq_sim::fit::{fit_rough, log_error, Bound};
use podq_sim::{simulate, Locality, Param, Profile, Scenario, ShardRule, SimMachine, Workload};
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
        json!({
            "file": self.file,
            "costs": params,
            "rows": rows,
            "before_h8": self.before_h8,
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
    let text = std::fs::read_to_string(path)
        .map_err(|err| CliError::Failed(format!("--calibrate {file}: cannot read it: {err}")))?;
    let report: Value = serde_json::from_str(&text).map_err(|err| {
        CliError::Failed(format!(
            "--calibrate {file}: not JSON ({err}); give the output of podq bench --json"
        ))
    })?;
    let work_ns = report["settings"]["work_ns"].as_u64().unwrap_or(0);
    let before_h8 = measured_before_h8(&report);
    // The runtime that ran the file: without H8 when it records none.
    let mut measured_mechanism = profile.mechanism;
    measured_mechanism.holds_ahead &= !before_h8;
    let mut targets = Vec::new();
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
    let run = |profile: &Profile| -> Vec<Target> {
        let outcomes: Vec<Target> = unique
            .iter()
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
    let (costs, _) = fit_rough(
        &profile.costs,
        &FREE,
        objective,
        FIT_SAMPLES,
        FIT_EVALUATIONS,
    );
    profile.costs = costs;
    // The published fits no longer bound these costs: ranges are the plain ±P %.
    profile.fit_spread = &[];
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
        before_h8,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::measured_before_h8;

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
