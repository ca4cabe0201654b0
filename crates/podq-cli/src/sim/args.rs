//! The command line of `podq sim`, and its checks: every bad value is refused with one line
//! that names it and the valid choices.

use std::path::PathBuf;

use clap::Args;
use podq::AffinityScope;
use podq_sim::scenario::{MAX_GROUPS, MAX_SET_KB};
use podq_sim::{Locality, ShardRule, Workload, DEFAULT_LOAD, DEFAULT_SET_KB, PROFILES};

use crate::bench::args::DEFAULT_ITEMS;
use crate::bench::spawned;
use crate::bench::system::KERNEL_ORDER;
use crate::error::CliError;

/// Arguments of `podq sim`.
///
/// Values are taken as text and checked here rather than by clap, so that every bad value is
/// reported as one line naming it and the valid choices.
#[derive(Debug, Args)]
pub(crate) struct SimArgs {
    /// The machine: this (the one podq runs on), a preset (grace, epyc-9d64, ryzen-3900x,
    /// ryzen-7950x, skylake-18c), xeon-8321hc (the published 51-CPU run), or a description
    /// such as 'sockets=2,nodes=4,caches=16,cores=128,smt=2' (cpus=N keeps the lowest N CPUs).
    #[arg(long, value_name = "NAME|DESC", default_value = "this")]
    pub(crate) machine: String,
    /// Read the machine from the sysfs tree under this folder instead.
    #[arg(long, value_name = "DIR", conflicts_with = "machine")]
    pub(crate) sysfs: Option<PathBuf>,
    /// Workload: queue (the kernel's test_workqueue closed loop), flood (open loop), skew
    /// (the open loop from one producer on the first CPU, CPU-bound items), fanout (teams of
    /// senders queueing CPU-bound messages; --items messages per team), rpc (pairs of items
    /// queueing each other; --items round trips per pair), locality (paced items of groups,
    /// each group's working set hot where it last ran; steered with --steer), chain (--items
    /// chains of --depth links, each link queueing the next), yield (--items items, each
    /// queueing its continuation --yields times) or spawn-local (one item queueing --items
    /// items, then doing its own work).
    #[arg(long, value_name = "NAME", default_value = "queue")]
    pub(crate) workload: String,
    /// Scopes to simulate, comma-separated [default: cpu,smt,cache_shard,cache,numa,system].
    #[arg(long, value_name = "LIST")]
    pub(crate) scopes: Option<String>,
    /// Producer threads, one pinned per CPU in ascending order [default: every CPU].
    #[arg(long, value_name = "N")]
    pub(crate) threads: Option<String>,
    /// Work items per producer thread (chain: chains per producer; spawn-local: items the one
    /// item of each producer queues) [default: 50000; chain: 100; yield: 200; spawn-local:
    /// 10000].
    #[arg(long, value_name = "N")]
    pub(crate) items: Option<String>,
    /// Links per chain (chain only) [default: 1000].
    #[arg(long, value_name = "N")]
    pub(crate) depth: Option<String>,
    /// Continuations each item queues (yield only) [default: 1000].
    #[arg(long, value_name = "N")]
    pub(crate) yields: Option<String>,
    /// Simulated work per item, in nanoseconds [default: 10000 for skew and fanout, 0 for the
    /// others].
    #[arg(long, value_name = "NS")]
    pub(crate) work_ns: Option<String>,
    /// Cores per cache_shard pod.
    #[arg(long, value_name = "N", default_value = "8")]
    pub(crate) shard_size: String,
    /// Cut cache shards on core boundaries (core, podq and today's kernel) or CPU boundaries
    /// (cpu: at most --shard-size CPUs each, the kernel before the core-boundary rule)
    /// [default: cpu for xeon-8321hc, else core].
    #[arg(long, value_name = "core|cpu")]
    pub(crate) shard_by: Option<String>,
    /// Vary a parameter: shard-size=2,4,8,16 simulates cache_shard at each size.
    #[arg(long, value_name = "PARAM=LIST")]
    pub(crate) sweep: Option<String>,
    /// The seed of the simulation's jitter; one seed gives one result.
    #[arg(long, value_name = "N", default_value = "1")]
    pub(crate) seed: String,
    /// Cost profile: kernel (the Linux workqueue) or podq [default: podq with --calibrate,
    /// else kernel].
    #[arg(long, value_name = "NAME")]
    pub(crate) profile: Option<String>,
    /// Fit the podq profile to this `podq bench --json` file of the machine first (each podq
    /// row's best run and queue-call p50).
    #[arg(long, value_name = "FILE")]
    pub(crate) calibrate: Option<PathBuf>,
    /// Whether podq's idle workers pull waiting items from other pools: on, off, or on,off to
    /// simulate every scope with each [default: on for the podq profile, off for kernel, whose
    /// workqueue has no pull].
    #[arg(long, value_name = "LIST")]
    pub(crate) pull: Option<String>,
    /// Whether groups steer their items to their home pods (locality): on, off, or on,off to
    /// simulate every scope with each [default: on for the podq profile, off for kernel, whose
    /// workqueue has no groups].
    #[arg(long, value_name = "LIST")]
    pub(crate) steer: Option<String>,
    /// The locality workload's groups (1 to 65536) [default: four per pod of the scope].
    #[arg(long, value_name = "N")]
    pub(crate) groups: Option<String>,
    /// KiB of working set per group of the locality workload (1 to 65536) [default: 256].
    #[arg(long, value_name = "KIB")]
    pub(crate) set_kb: Option<String>,
    /// Percent of the CPUs the locality workload's items keep busy when nothing steers them:
    /// the pace is an unsteered item's run time (1 to 100) [default: 40].
    #[arg(long, value_name = "PCT")]
    pub(crate) load: Option<String>,
    /// How far every cost, platform and cache parameter may be off, in percent: each result's
    /// range comes from 8 draws that move them all by up to P percent (a cost fitted on the
    /// published tables also across every value its fits gave; with --calibrate, across every
    /// value that fits the file as closely as its runs agree), each with its own seed, and a
    /// recommendation is printed only when it is ahead of every other configuration by more
    /// than the model's order error in every draw (0: no ranges) [default: 20].
    #[arg(long, value_name = "P")]
    pub(crate) uncertainty: Option<String>,
    /// Instead of a machine, simulate the two published test_workqueue tables of the Linux
    /// workqueue's WQ_AFFN_CACHE_SHARD patch series (NVIDIA Grace, Intel Xeon Platinum
    /// 8321HC) and report the error of each cell.
    #[arg(long, conflicts_with_all = ["machine", "sysfs"])]
    pub(crate) published: bool,
    /// Rebuild the machine of this `podq bench --json` report (its recorded topology and CPU
    /// model) and print, for each of its podq rows, the prediction beside the measurement
    /// (with --calibrate OTHER, from costs fitted on another run of that machine).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["published", "machine", "sysfs"])]
    pub(crate) against: Option<PathBuf>,
    /// Also draw items/sec per configuration (a shard-size sweep as a line) into this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub(crate) plot: Option<PathBuf>,
    /// Print the results as JSON instead of the kernel's lines.
    #[arg(long)]
    pub(crate) json: bool,
}

/// A checked command line.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    /// The workload.
    pub(crate) workload: Workload,
    /// Scopes in order.
    pub(crate) scopes: Vec<AffinityScope>,
    /// Shard sizes of `cache_shard` (several with `--sweep`).
    pub(crate) shard_sizes: Vec<usize>,
    /// The shard rule given, if any.
    pub(crate) shard_by: Option<ShardRule>,
    /// Producer threads; `None`: every CPU.
    pub(crate) threads: Option<usize>,
    /// Items per producer.
    pub(crate) items: u64,
    /// Work per item, ns.
    pub(crate) work_ns: u64,
    /// Pull settings, each simulated for every scope (a cross product with the sweep).
    pub(crate) pulls: Vec<bool>,
    /// Whether labels name the pull setting: when it is not the profile's default alone.
    pub(crate) show_pull: bool,
    /// Steering settings, each simulated for every scope (locality only).
    pub(crate) steers: Vec<bool>,
    /// Whether labels name the steering setting: when it is not the profile's default alone.
    pub(crate) show_steer: bool,
    /// The locality workload's groups, working set and load.
    pub(crate) locality: Locality,
    /// Seed.
    pub(crate) seed: u64,
    /// Profile name.
    pub(crate) profile: &'static str,
    /// `--uncertainty`, in percent.
    pub(crate) uncertainty: Option<f64>,
    /// Where to draw the plot.
    pub(crate) plot: Option<PathBuf>,
    /// JSON instead of text.
    pub(crate) json: bool,
}

impl Settings {
    /// Checks `args`.
    ///
    /// # Errors
    ///
    /// [`CliError::Usage`] for a bad value: one line naming it and the valid choices.
    pub(crate) fn from_args(args: &SimArgs) -> Result<Settings, CliError> {
        let workload = match args.workload.as_str() {
            "queue" => Workload::Queue,
            "flood" => Workload::Flood,
            "skew" => Workload::Skew,
            "rpc" => Workload::Rpc,
            "fanout" => Workload::Fanout,
            "locality" => Workload::Locality,
            "chain" => Workload::Chain {
                depth: spawned::DEFAULT_DEPTH,
            },
            "yield" => Workload::Yield {
                yields: spawned::DEFAULT_YIELDS,
            },
            "spawn-local" => Workload::SpawnLocal,
            other => {
                return Err(CliError::Usage(format!(
                    "unknown workload '{other}': expected one of queue, flood, skew, fanout, \
                     rpc, locality, chain, yield, spawn-local"
                )))
            }
        };
        let workload = parse_spawned(args, workload)?;
        let scopes = match &args.scopes {
            Some(list) => parse_scopes(list)?,
            None => KERNEL_ORDER.to_vec(),
        };
        let shard_size = parse_count("--shard-size", &args.shard_size)?;
        let shard_sizes = match &args.sweep {
            Some(text) => parse_sweep(text)?,
            None => vec![usize::try_from(shard_size).unwrap_or(usize::MAX)],
        };
        if args.sweep.is_some() && !scopes.contains(&AffinityScope::CacheShard) {
            return Err(CliError::Usage(
                "--sweep shard-size needs the cache_shard scope, but --scopes leaves it out".into(),
            ));
        }
        let shard_by = match args.shard_by.as_deref() {
            None => None,
            Some(name) => Some(ShardRule::by_name(name).ok_or_else(|| {
                let names: Vec<&str> = ShardRule::ALL.iter().map(|r| r.name()).collect();
                CliError::Usage(format!(
                    "unknown --shard-by '{name}': expected one of {}",
                    names.join(", ")
                ))
            })?),
        };
        let profile =
            match (args.profile.as_deref(), &args.calibrate) {
                (None, Some(_)) | (Some("podq"), _) => "podq",
                (None | Some("kernel"), None) => "kernel",
                (Some("kernel"), Some(_)) => return Err(CliError::Usage(
                    "--calibrate fits the podq profile; give --profile podq or leave --profile out"
                        .into(),
                )),
                (Some(other), _) => {
                    return Err(CliError::Usage(format!(
                        "unknown profile '{other}': expected one of {}",
                        PROFILES.join(", ")
                    )))
                }
            };
        let uncertainty = match &args.uncertainty {
            None => Some(podq_sim::uncertainty::DEFAULT_PERCENT),
            Some(text) => match text.trim().trim_end_matches('%').parse::<f64>() {
                Ok(0.0) => None,
                Ok(p) if p > 0.0 && p < 100.0 => Some(p),
                _ => {
                    return Err(CliError::Usage(format!(
                        "--uncertainty '{text}': expected a percentage from 0 (no ranges) to \
                         below 100, such as 20"
                    )))
                }
            },
        };
        if let Some(path) = &args.plot {
            let is_svg = path
                .extension()
                .is_some_and(|ext| ext.eq_ignore_ascii_case("svg"));
            if !is_svg {
                return Err(CliError::Usage(format!(
                    "--plot {}: only SVG is drawn; give a file name ending in .svg",
                    path.display()
                )));
            }
        }
        let pull_default = profile == "podq";
        let pulls = match &args.pull {
            None => vec![pull_default],
            Some(list) => parse_pulls(list)?,
        };
        if profile == "kernel" && pulls.contains(&true) {
            return Err(CliError::Usage(format!(
                "--pull {}: the kernel profile models the Linux workqueue, which has no pull \
                 (an item runs on its own pool's workers); give --pull off, or --profile podq",
                args.pull.as_deref().unwrap_or("on")
            )));
        }
        let work_ns = match &args.work_ns {
            None => workload.default_work_ns(),
            Some(text) => parse_number("--work-ns", text)?,
        };
        let threads = match &args.threads {
            None => None,
            Some(text) => Some(usize::try_from(parse_count("--threads", text)?).unwrap_or(0)),
        };
        let steer_default = profile == "podq";
        let steers = match &args.steer {
            None => vec![steer_default],
            Some(list) => parse_on_off("--steer", list)?,
        };
        let locality = parse_locality(args, workload)?;
        Ok(Settings {
            workload,
            scopes,
            shard_sizes,
            shard_by,
            threads,
            items: match &args.items {
                Some(text) => parse_count("--items", text)?,
                None => default_items(workload),
            },
            work_ns,
            show_pull: pulls != [pull_default],
            pulls,
            show_steer: steers != [steer_default],
            steers,
            locality,
            seed: parse_number("--seed", &args.seed)?,
            profile,
            uncertainty,
            plot: args.plot.clone(),
            json: args.json,
        })
    }
}

/// `--items` when it is not given, as `podq bench`'s: chains per producer for `chain`, items
/// per producer for `yield`, items the one item queues for `spawn-local`, else
/// [`DEFAULT_ITEMS`].
fn default_items(workload: Workload) -> u64 {
    match workload {
        Workload::Chain { .. } => spawned::CHAINS,
        Workload::Yield { .. } => spawned::YIELDING_ITEMS,
        Workload::SpawnLocal => spawned::SPAWNED_ITEMS,
        _ => DEFAULT_ITEMS,
    }
}

/// `--depth` (links per chain) and `--yields` (continuations per item), each at least 1 and
/// refused for a workload other than its own.
fn parse_spawned(args: &SimArgs, workload: Workload) -> Result<Workload, CliError> {
    let workload = match (workload, &args.depth) {
        (Workload::Chain { .. }, Some(text)) => Workload::Chain {
            depth: parse_count("--depth", text)?,
        },
        (_, Some(_)) => {
            return Err(CliError::Usage(
                "--depth applies to the chain workload only; give --workload chain or leave \
                 --depth out"
                    .into(),
            ))
        }
        (workload, None) => workload,
    };
    match (workload, &args.yields) {
        (Workload::Yield { .. }, Some(text)) => Ok(Workload::Yield {
            yields: parse_count("--yields", text)?,
        }),
        (_, Some(_)) => Err(CliError::Usage(
            "--yields applies to the yield workload only; give --workload yield or leave \
             --yields out"
                .into(),
        )),
        (workload, None) => Ok(workload),
    }
}

/// `--pull`: `on`, `off`, or both comma-separated, in the order given, without duplicates.
fn parse_pulls(list: &str) -> Result<Vec<bool>, CliError> {
    parse_on_off("--pull", list)
}

/// `flag`'s `on`, `off`, or both comma-separated, in the order given, without duplicates.
fn parse_on_off(flag: &str, list: &str) -> Result<Vec<bool>, CliError> {
    let mut values = Vec::new();
    for value in list.split(',').map(str::trim) {
        let on = match value {
            "on" => true,
            "off" => false,
            _ => {
                return Err(CliError::Usage(format!(
                    "{flag} '{list}': unknown value '{value}'; expected on, off, or on,off"
                )))
            }
        };
        if !values.contains(&on) {
            values.push(on);
        }
    }
    Ok(values)
}

/// `--steer`, `--groups`, `--set-kb` and `--load`: each within its bounds, and given only for
/// the locality workload (no other has groups).
fn parse_locality(args: &SimArgs, workload: Workload) -> Result<Locality, CliError> {
    let given = [
        ("--steer", args.steer.is_some()),
        ("--groups", args.groups.is_some()),
        ("--set-kb", args.set_kb.is_some()),
        ("--load", args.load.is_some()),
    ];
    if workload != Workload::Locality {
        if let Some((flag, _)) = given.iter().find(|(_, given)| *given) {
            return Err(CliError::Usage(format!(
                "{flag} applies to the locality workload only (no other workload has groups); \
                 give --workload locality or leave {flag} out"
            )));
        }
    }
    let bounded = |flag: &str, text: &Option<String>, max: u64, default: u64| {
        let Some(text) = text else {
            return Ok(default);
        };
        match parse_number(flag, text)? {
            n if (1..=max).contains(&n) => Ok(n),
            n => Err(CliError::Usage(format!("{flag} {n}: give 1 to {max}"))),
        }
    };
    let groups = match &args.groups {
        None => None,
        some => Some(bounded("--groups", some, MAX_GROUPS, 1)? as usize),
    };
    Ok(Locality {
        groups,
        set_kb: bounded("--set-kb", &args.set_kb, MAX_SET_KB, DEFAULT_SET_KB)?,
        load: bounded("--load", &args.load, 100, DEFAULT_LOAD)?,
    })
}

/// A comma-separated list of scopes, kept in the order given, without duplicates.
fn parse_scopes(list: &str) -> Result<Vec<AffinityScope>, CliError> {
    let mut scopes = Vec::new();
    for name in list.split(',').map(str::trim) {
        let scope: AffinityScope = name
            .parse()
            .map_err(|err: podq::Error| CliError::Usage(err.to_string()))?;
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    Ok(scopes)
}

/// `shard-size=2,4,8,16`: sizes of at least 1, in the order given, without duplicates.
fn parse_sweep(text: &str) -> Result<Vec<usize>, CliError> {
    let form = "expected shard-size=N[,N...] with sizes of at least 1, e.g. shard-size=2,4,8,16";
    let Some((param, values)) = text.split_once('=') else {
        return Err(CliError::Usage(format!("bad --sweep '{text}': {form}")));
    };
    if param.trim() != "shard-size" {
        return Err(CliError::Usage(format!(
            "unknown --sweep parameter '{}': expected one of shard-size (as in shard-size=2,4,8,16)",
            param.trim()
        )));
    }
    let mut sizes = Vec::new();
    for value in values.split(',') {
        match value.trim().parse::<usize>() {
            Ok(size) if size >= 1 => {
                if !sizes.contains(&size) {
                    sizes.push(size);
                }
            }
            _ => {
                return Err(CliError::Usage(format!(
                    "bad shard size '{}' in --sweep '{text}': {form}",
                    value.trim()
                )))
            }
        }
    }
    Ok(sizes)
}

/// A whole number (underscores allowed as separators).
fn parse_number(flag: &str, text: &str) -> Result<u64, CliError> {
    text.trim().replace('_', "").parse::<u64>().map_err(|_| {
        CliError::Usage(format!(
            "{flag} '{text}': expected a whole number such as 1000"
        ))
    })
}

/// A whole number of at least 1.
fn parse_count(flag: &str, text: &str) -> Result<u64, CliError> {
    match parse_number(flag, text)? {
        0 => Err(CliError::Usage(format!("{flag} 0: give at least 1"))),
        n => Ok(n),
    }
}
