//! `podq sim`: predict every scope and shard size of the kernel's test on any machine, with the
//! discrete-event simulator of `podq-sim`.
//!
//! The machine comes from a preset, a description, a sysfs tree or this machine; the costs from
//! a profile (`kernel`, calibrated on the `test_workqueue` tables published with the Linux
//! workqueue's `WQ_AFFN_CACHE_SHARD` patch series, or `podq`, fitted by `--calibrate` on a
//! `podq bench --json` file). The report gives the kernel's lines or the
//! bench's JSON rows with `"system": "sim"`.

mod against;
mod args;
mod bench_file;
mod caches;
mod calibrate;
mod order;
mod plot;
mod published;
mod report;

use podq::{AffinityScope, Topology};
use podq_sim::published::XEON_8321HC;
use podq_sim::{simulate, Outcome, Platform, Profile, Scenario, ShardRule, SimMachine, Workload};
use rayon::prelude::*;

use self::args::Settings;
pub(crate) use self::args::SimArgs;
use self::order::OrderError;
use crate::error::CliError;

/// One simulated configuration and its outcome.
#[derive(Clone, Debug)]
pub(crate) struct Row {
    /// What was simulated.
    pub(crate) scenario: Scenario,
    /// What came out.
    pub(crate) outcome: Outcome,
    /// Least and greatest items/sec under `--uncertainty`.
    pub(crate) range: Option<(f64, f64)>,
    /// Whether its label names its steering setting.
    pub(crate) show_steer: bool,
}

impl Row {
    /// The name in the kernel lines: the scope, with `/S` for `cache_shard` when several shard
    /// sizes are simulated, ` pull=on` or ` pull=off` when `show_pull`, and ` steer=on` or
    /// ` steer=off` when the settings show steering.
    pub(crate) fn label(&self, sweeping: bool, show_pull: bool) -> String {
        let mut label = match self.scenario.scope {
            AffinityScope::CacheShard if sweeping => {
                format!("cache_shard/{}", self.scenario.shard_size)
            }
            scope => scope.name().to_owned(),
        };
        if show_pull {
            label.push_str(if self.scenario.pull {
                " pull=on"
            } else {
                " pull=off"
            });
        }
        if self.show_steer {
            label.push_str(if self.scenario.steer {
                " steer=on"
            } else {
                " steer=off"
            });
        }
        label
    }
}

/// Runs `podq sim`.
///
/// # Errors
///
/// [`CliError::Usage`] for a bad argument; [`CliError::Failed`] when the machine or the
/// calibration file cannot be read or used, or the output cannot be written.
pub(crate) fn run(args: &SimArgs) -> Result<(), CliError> {
    let settings = Settings::from_args(args)?;
    if args.published {
        return published::run(&settings);
    }
    if let Some(path) = &args.against {
        return against::run(path, args.calibrate.as_deref(), &settings);
    }
    let (machine, default_rule) = resolve_machine(args)?;
    let mut profile = Profile::by_name(settings.profile).expect("checked profile name");
    let scenarios = scenarios(&settings, &machine, default_rule)?;
    let calibration = match &args.calibrate {
        Some(path) => Some(calibrate::fit(path, &machine, &mut profile, default_rule)?),
        None => None,
    };
    let order = OrderError::of(profile.name, calibration.is_some());
    let outcomes = simulate_all(&machine, &profile, &scenarios)?;
    let mut rows: Vec<Row> = scenarios
        .iter()
        .zip(outcomes)
        .map(|(scenario, outcome)| Row {
            scenario: *scenario,
            outcome,
            range: None,
            show_steer: settings.show_steer,
        })
        .collect();
    let mut flips = Vec::new();
    let mut verdict = None;
    if let Some(percent) = settings.uncertainty {
        let spread =
            podq_sim::uncertainty::spread(&machine, &profile, &scenarios, percent, settings.seed)
                .map_err(sim_error)?;
        for (i, row) in rows.iter_mut().enumerate() {
            row.range = Some(spread.range_of(i, row.outcome.items_per_sec));
        }
        flips = spread.flips();
        verdict = best_row(&rows).map(|best| report::Verdict {
            first_in_every_draw: spread.always_first(best),
            within_error: spread.within(best, order.factor),
            beyond_error: spread.beyond(best, order.factor),
        });
    }
    if let Some(path) = &settings.plot {
        plot::draw(path, &rows, &machine, &profile, settings.show_pull)?;
    }
    let report = report::Report {
        machine: &machine,
        profile: &profile,
        settings: &settings,
        rows: &rows,
        flips: &flips,
        verdict,
        order,
        calibration: calibration.as_ref(),
    };
    let out = if settings.json {
        crate::output::json_text(&report.json())?
    } else {
        report.text()
    };
    crate::output::print(&out)
}

/// The row with the most items/sec (the first of equals).
pub(crate) fn best_row(rows: &[Row]) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, row) in rows.iter().enumerate() {
        if best.is_none_or(|b| row.outcome.items_per_sec > rows[b].outcome.items_per_sec) {
            best = Some(i);
        }
    }
    best
}

/// Simulates each of `scenarios`, once for scenarios that differ only by a scope with the same
/// pods (numa and system on a one-node machine), whose outcomes are the same; the distinct
/// ones at once, one per CPU.
pub(crate) fn simulate_all(
    machine: &SimMachine,
    profile: &Profile,
    scenarios: &[Scenario],
) -> Result<Vec<Outcome>, CliError> {
    let mut distinct: Vec<(Scenario, Vec<podq::CpuSet>)> = Vec::new();
    let mut slot = Vec::with_capacity(scenarios.len());
    for scenario in scenarios {
        let pods = match (scenario.scope, scenario.shard_rule) {
            (AffinityScope::CacheShard, ShardRule::Cpus) => {
                podq::Pods::cache_shards_by_cpu(machine.topology(), scenario.shard_size)
            }
            (scope, _) => podq::Pods::new(machine.topology(), scope, scenario.shard_size),
        }?;
        let sets: Vec<podq::CpuSet> = pods.pods().iter().map(|p| p.cpus().clone()).collect();
        let same = distinct.iter().position(|(s, p)| {
            *p == sets
                && Scenario {
                    scope: scenario.scope,
                    shard_size: scenario.shard_size,
                    ..*s
                } == *scenario
        });
        slot.push(same.unwrap_or_else(|| {
            distinct.push((*scenario, sets));
            distinct.len() - 1
        }));
    }
    let outcomes = distinct
        .par_iter()
        .map(|(scenario, _)| simulate(machine, profile, scenario))
        .collect::<Result<Vec<Outcome>, _>>()
        .map_err(sim_error)?;
    Ok(slot.iter().map(|&i| outcomes[i]).collect())
}

/// The machine `--machine` or `--sysfs` names, and its default shard rule.
fn resolve_machine(args: &SimArgs) -> Result<(SimMachine, ShardRule), CliError> {
    if let Some(dir) = &args.sysfs {
        // The tree as `podq topo --sysfs` finds it (a snapshot unpacked in its own folder too).
        let root = crate::topo::sysfs_root(dir)?;
        let topology = Topology::from_sysfs(&root)?;
        let name = format!("sysfs {}", dir.display());
        let machine = caches::with_sysfs_sizes(SimMachine::new(topology, &name), &root);
        return Ok((machine, ShardRule::Cores));
    }
    let name = args.machine.trim();
    match name {
        "this" => {
            let topology = Topology::discover().map_err(|err| {
                CliError::Failed(format!("cannot read this machine's topology: {err}"))
            })?;
            let machine = SimMachine::new(topology, "this");
            Ok((
                caches::with_sysfs_sizes(machine, std::path::Path::new("/")),
                ShardRule::Cores,
            ))
        }
        "xeon-8321hc" => Ok((XEON_8321HC.sim_machine(), XEON_8321HC.shard_rule)),
        _ => match Topology::from_machine(name) {
            Ok(topology) => Ok((
                SimMachine::new(topology, name).at_clock(Platform::part_clock_ghz(name)),
                ShardRule::Cores,
            )),
            Err(podq::Error::UnknownPreset { presets, .. }) => Err(CliError::Usage(format!(
                "unknown machine '{name}': expected this, xeon-8321hc, a preset ({presets}) or a \
                 description such as sockets=2,nodes=4,caches=16,cores=128,smt=2"
            ))),
            Err(err) => Err(err.into()),
        },
    }
}

/// The scenarios of `settings` on `machine`: each scope in order, `cache_shard` once per shard
/// size, each once per pull setting and (locality) once per steering setting.
fn scenarios(
    settings: &Settings,
    machine: &SimMachine,
    default_rule: ShardRule,
) -> Result<Vec<Scenario>, CliError> {
    let cpus = machine.len();
    let threads = settings.threads.unwrap_or(cpus);
    if threads > cpus {
        return Err(CliError::Usage(format!(
            "--threads {threads}: give 1 to {cpus} (one pinned producer per CPU of the machine)"
        )));
    }
    let base = Scenario {
        workload: settings.workload,
        scope: AffinityScope::Cpu,
        shard_size: settings.shard_sizes[0],
        shard_rule: settings.shard_by.unwrap_or(default_rule),
        threads,
        items: settings.items,
        work_ns: settings.work_ns,
        seed: settings.seed,
        pull: false,
        steer: false,
        locality: settings.locality,
    };
    // Only the locality workload has groups to steer.
    let steers = if settings.workload == Workload::Locality {
        &settings.steers[..]
    } else {
        &[false][..]
    };
    let mut out = Vec::new();
    for &scope in &settings.scopes {
        let sizes = if scope == AffinityScope::CacheShard {
            &settings.shard_sizes[..]
        } else {
            &settings.shard_sizes[..1]
        };
        for &shard_size in sizes {
            for &pull in &settings.pulls {
                out.extend(steers.iter().map(|&steer| Scenario {
                    scope,
                    shard_size,
                    pull,
                    steer,
                    ..base
                }));
            }
        }
    }
    Ok(out)
}

/// The CLI's error for a simulation that could not run.
pub(crate) fn sim_error(err: podq_sim::SimError) -> CliError {
    match err {
        podq_sim::SimError::Pods(err) => err.into(),
        podq_sim::SimError::NoPull { .. } => CliError::Usage(err.to_string()),
        podq_sim::SimError::Stuck { .. } => CliError::Failed(err.to_string()),
        _ => CliError::Usage(err.to_string()),
    }
}
