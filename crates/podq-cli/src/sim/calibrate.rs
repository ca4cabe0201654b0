//! `--calibrate FILE`: fit the `podq` profile's costs to a `podq bench --json` run of the
//! machine, so that the simulator can predict what was not measured (another workload, shard
//! size or thread count).

use std::path::Path;

use podq::AffinityScope;
use podq_sim::fit::{fit as fit_costs, log_error, Bound};
use podq_sim::{simulate, Param, Profile, Scenario, ShardRule, SimMachine, Workload};
use serde_json::{json, Value};

use crate::error::CliError;

/// Items per producer in the fit's simulations: enough for a steady state, few enough that a
/// fit takes seconds.
const FIT_ITEMS: u64 = 20_000;

/// Simulations the fit may run.
const FIT_EVALUATIONS: usize = 120;

/// The costs the fit moves, and their bounds: from a tenth of the fastest to ten times the
/// slowest plausible value on today's servers (see `docs/simulator.md`).
const FREE: [Bound; 7] = [
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
        param: Param::WorkerItem,
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
    /// Measured items/sec.
    measured: f64,
    /// Simulated items/sec after the fit.
    simulated: f64,
}

/// What `--calibrate` fitted, for the report.
#[derive(Clone, Debug)]
pub(crate) struct Calibration {
    /// The file.
    file: String,
    /// Each measured row.
    rows: Vec<Fitted>,
    /// The fitted costs.
    params: Vec<(&'static str, f64)>,
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
        for row in &self.rows {
            let s = &row.scenario;
            out.push_str(&format!(
                "calibration: {} {}/{}: measured {:.0}, fitted {:.0} items/sec ({:+.1}%)\n",
                s.workload.name(),
                s.scope.name(),
                s.shard_size,
                row.measured,
                row.simulated,
                100.0 * (row.simulated / row.measured - 1.0)
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
                    "measured_items_per_sec": r.measured.round() as u64,
                    "fitted_items_per_sec": r.simulated.round() as u64,
                })
            })
            .collect();
        json!({ "file": self.file, "costs": params, "rows": rows })
    }
}

/// Fits `profile`'s costs to the podq rows of the bench JSON at `path`, run on `machine`.
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
        let measured = row["items_per_sec"].as_f64().ok_or_else(bad)?;
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
        };
        targets.push((scenario, measured));
    }
    if targets.is_empty() {
        return Err(CliError::Failed(format!(
            "--calibrate {file}: no podq rows; give the output of podq bench --json"
        )));
    }
    let run = |profile: &Profile| -> Vec<f64> {
        targets
            .iter()
            .map(|(s, _)| simulate(machine, profile, s).map_or(0.0, |o| o.items_per_sec))
            .collect()
    };
    let objective = |costs: &podq_sim::Costs| {
        let trial = Profile {
            costs: *costs,
            ..profile.clone()
        };
        let simulated = run(&trial);
        log_error(simulated.into_iter().zip(targets.iter().map(|(_, m)| *m)))
    };
    let (costs, _) = fit_costs(&profile.costs, &FREE, objective, FIT_EVALUATIONS);
    profile.costs = costs;
    let simulated = run(profile);
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
    })
}
