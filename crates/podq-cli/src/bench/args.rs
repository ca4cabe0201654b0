//! The command line of `podq bench`, and its checks: every bad value is refused with one line
//! that names it and the valid choices.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use podq::{AffinityScope, CpuSet};

use super::blocking::{Mix, MAX_BLOCK_EVERY, MAX_BLOCK_US};
use super::locality::{Plan, GROUPS_PER_POD};
use super::peers::Peer;
use super::spawned::{DEFAULT_DEPTH, DEFAULT_YIELDS};
use super::sweep::Sweep;
use super::system::{System, KERNEL_ORDER};
use super::workload::Workload;
use crate::error::CliError;

/// Items per producer thread when `--items` is not given: the kernel test's default.
pub(crate) const DEFAULT_ITEMS: u64 = 50_000;

/// Arguments of `podq bench`.
///
/// Values are taken as text and checked here rather than by clap, so that every bad value is
/// reported as one line naming it and the valid choices.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// Workload: queue (the kernel's test_workqueue closed loop), flood (open loop), skew (open
    /// loop from one producer), fanout (senders queueing receivers, hackbench-like), rpc (pairs
    /// of items queueing each other), blocking (open loop, one item in N blocks), locality
    /// (groups of items walking their group's data, at a steady load), chain (items each
    /// queueing the next from its worker), yield (items queueing their own continuation),
    /// spawn-local (one item queueing many from its worker), checksum (open loop, each item the
    /// CRC-32C of a 4 KiB block its producer wrote), or all.
    #[arg(long, value_name = "NAME", default_value = "queue")]
    pub(crate) workload: String,
    /// Scopes to measure, comma-separated [default: cpu,smt,cache_shard,cache,numa,system].
    #[arg(long, value_name = "LIST")]
    pub(crate) scopes: Option<String>,
    /// Peers to measure, comma-separated, or none [default: tokio,rayon,channel,mpsc; also: mutex].
    #[arg(long, value_name = "LIST")]
    pub(crate) peers: Option<String>,
    /// Producer threads, one pinned per usable CPU in ascending order [default: usable CPUs].
    #[arg(long, value_name = "N")]
    pub(crate) threads: Option<String>,
    /// Work items per producer thread (fanout: messages per team; rpc: round trips per pair;
    /// chain: chains per producer; spawn-local: items the one item of each producer queues)
    /// [default: 50000; chain: 100; yield: 200; spawn-local: 10000].
    #[arg(long, value_name = "N")]
    pub(crate) items: Option<String>,
    /// Links per chain of the chain workload; refused when no workload measured is chain
    /// [default: 1000].
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(crate) depth: Option<String>,
    /// Continuations each item of the yield workload queues; refused when no workload measured
    /// is yield [default: 1000].
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(crate) yields: Option<String>,
    /// Runs of every configuration; the report gives the median and the min-max.
    #[arg(long, value_name = "N", default_value = "1")]
    pub(crate) runs: String,
    /// CPU work per item, in nanoseconds of busy-waiting [default: 10000 for skew and fanout,
    /// 0 for the others].
    #[arg(long, value_name = "NS")]
    pub(crate) work_ns: Option<String>,
    /// The blocking workload's mix: one item in N blocks (2 to 1000000); refused when no
    /// workload measured is blocking [default: 10].
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(crate) block_every: Option<String>,
    /// How long each blocking item of the blocking workload sleeps, in microseconds (1 to
    /// 100000); refused when no workload measured is blocking [default: 1000].
    #[arg(long, value_name = "US", allow_negative_numbers = true)]
    pub(crate) block_us: Option<String>,
    /// Whether podq's idle workers pull work from other pods: on, off, or on,off to measure
    /// every podq configuration with each.
    #[arg(long, value_name = "LIST", default_value = "on")]
    pub(crate) pull: String,
    /// Whether podq's groups steer their items to their home pods: on, off, or on,off to
    /// measure every podq configuration with each.
    #[arg(long, value_name = "LIST", default_value = "on")]
    pub(crate) steer: String,
    /// The locality workload's groups of related items [default: four per pod of the measured
    /// scope; for the peers, of the first scope measured].
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(crate) groups: Option<String>,
    /// KiB of working set per group of the locality workload (1 to 65536) [default: 256].
    #[arg(long, value_name = "KB", allow_negative_numbers = true)]
    pub(crate) set_kb: Option<String>,
    /// Percent of the usable CPUs the locality workload keeps busy when its items are not
    /// steered, paced from a warm-up before the runs (1 to 100) [default: 40].
    #[arg(long, value_name = "PCT", allow_negative_numbers = true)]
    pub(crate) load: Option<String>,
    /// Vary a parameter: shard-size=2,4,8,16 measures cache_shard at each size.
    #[arg(long, value_name = "PARAM=LIST")]
    pub(crate) sweep: Option<String>,
    /// Also draw items/sec and p50 per configuration into this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub(crate) plot: Option<PathBuf>,
    /// Print the results as JSON instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
}

/// A checked command line: what to measure, how, and where to report it.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    /// Workloads, in order.
    pub(crate) workloads: Vec<Workload>,
    /// Systems, in order: podq's scopes (kernel order), each with every pull setting, then the
    /// peers.
    pub(crate) systems: Vec<System>,
    /// Whether several shard sizes are measured (labels then show the size).
    pub(crate) sweeping: bool,
    /// The pull settings measured, in the order given (`true`: on).
    pub(crate) pulls: Vec<bool>,
    /// The steering settings measured, in the order given (`true`: on).
    pub(crate) steers: Vec<bool>,
    /// The locality workload's groups, working set and load, and its item's measured cost.
    pub(crate) locality: Plan,
    /// The locality workload's groups on the peers when `--groups` is not given:
    /// [`GROUPS_PER_POD`] per pod of the first podq configuration measured with a usable CPU
    /// (the same items as that row), or per usable CPU when no scope is measured.
    pub(crate) default_peer_groups: usize,
    /// The CPU each producer thread is pinned to, one per thread.
    pub(crate) producer_cpus: Vec<usize>,
    /// Worker threads for each peer: the usable CPUs.
    pub(crate) peer_workers: usize,
    /// Items per producer thread given by `--items` (for `fanout`, messages per team; for
    /// `rpc`, round trips per pair; for `chain`, chains), for every workload; `None`: each
    /// workload's default ([`Settings::items`]).
    pub(crate) items_given: Option<u64>,
    /// Links per chain of `chain`.
    pub(crate) depth: u64,
    /// Continuations per item of `yield`.
    pub(crate) yields: u64,
    /// Runs per configuration.
    pub(crate) runs: usize,
    /// Busy-wait per item given by `--work-ns`, for every workload; `None`: each workload's
    /// default.
    pub(crate) work_ns: Option<u64>,
    /// Which items of the blocking workload block, and for how long.
    pub(crate) mix: Mix,
    /// Where to draw the plot.
    pub(crate) plot: Option<PathBuf>,
    /// JSON instead of the table.
    pub(crate) json: bool,
}

impl Settings {
    /// Checks `args` against the usable CPUs of this machine.
    ///
    /// # Errors
    ///
    /// [`CliError::Usage`] for a bad value: one line naming it and the valid choices.
    pub(crate) fn from_args(args: &BenchArgs, usable: &CpuSet) -> Result<Settings, CliError> {
        let workloads = Workload::parse(&args.workload)?;
        let pulls = parse_pulls(&args.pull)?;
        let steers = locality::parse_steers(&args.steer)?;
        let sweep = args.sweep.as_deref().map(Sweep::parse).transpose()?;
        let scopes = match &args.scopes {
            Some(list) => parse_scopes(list)?,
            None => KERNEL_ORDER.to_vec(),
        };
        let peers = match &args.peers {
            Some(list) => parse_peers(list)?,
            None => Peer::DEFAULT.to_vec(),
        };
        let shard_sizes = match &sweep {
            Some(sweep) => sweep.shard_sizes.clone(),
            None => vec![podq::scope::DEFAULT_SHARD_SIZE],
        };
        let mut systems = Vec::new();
        for scope in &scopes {
            let sizes = if *scope == AffinityScope::CacheShard {
                &shard_sizes[..]
            } else {
                &[podq::scope::DEFAULT_SHARD_SIZE][..]
            };
            for &shard_size in sizes {
                for &pull in &pulls {
                    systems.extend(steers.iter().map(|&steer| System::Podq {
                        scope: *scope,
                        shard_size,
                        pull,
                        steer,
                    }));
                }
            }
        }
        if sweep.is_some() && !scopes.contains(&AffinityScope::CacheShard) {
            return Err(CliError::Usage(format!(
                "--sweep shard-size needs the cache_shard scope, but --scopes {} leaves it out",
                args.scopes.as_deref().unwrap_or_default()
            )));
        }
        systems.extend(peers.into_iter().map(System::Peer));
        if systems.is_empty() {
            return Err(CliError::Usage(
                "nothing to measure: --scopes and --peers are both empty; \
                 give at least one scope or peer"
                    .into(),
            ));
        }

        let usable_count = usable.len();
        let threads = match &args.threads {
            Some(text) => parse_number("--threads", text)?,
            None => usable_count as u64,
        };
        if threads == 0 || threads > usable_count as u64 {
            return Err(CliError::Usage(format!(
                "--threads {threads}: give 1 to {usable_count} (one pinned producer thread per \
                 usable CPU; this machine's usable CPUs are {usable})"
            )));
        }
        let threads = usize::try_from(threads).unwrap_or(usable_count);
        let runs = parse_count("--runs", &args.runs, "run")?;
        let mix = parse_mix(args, &workloads)?;
        let locality = locality::parse_plan(args, &workloads)?;
        let (depth, yields) = parse_spawned(args, &workloads)?;
        let plot = args.plot.clone();
        if let Some(path) = &plot {
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
        Ok(Settings {
            workloads,
            sweeping: shard_sizes.len() > 1,
            systems,
            pulls,
            steers,
            locality,
            default_peer_groups: GROUPS_PER_POD * usable_count,
            producer_cpus: usable.iter().take(threads).collect(),
            peer_workers: usable_count,
            items_given: args
                .items
                .as_deref()
                .map(|text| parse_count("--items", text, "item per thread"))
                .transpose()?,
            depth,
            yields,
            runs: usize::try_from(runs).unwrap_or(usize::MAX),
            work_ns: args
                .work_ns
                .as_deref()
                .map(|text| parse_number("--work-ns", text))
                .transpose()?,
            mix,
            plot,
            json: args.json,
        })
    }

    /// Producer threads (`--threads`).
    pub(crate) fn threads(&self) -> usize {
        self.producer_cpus.len()
    }

    /// The CPUs of `workload`'s producer threads.
    pub(crate) fn producers(&self, workload: Workload) -> &[usize] {
        workload.producer_cpus(&self.producer_cpus)
    }

    /// Items per producer thread of `workload` (see `--items`): as given, or the workload's
    /// default.
    pub(crate) fn items(&self, workload: Workload) -> u64 {
        self.items_given.unwrap_or_else(|| workload.default_items())
    }

    /// Busy-wait per item of `workload`, in nanoseconds: `--work-ns`, or the workload's default.
    pub(crate) fn work_ns(&self, workload: Workload) -> u64 {
        self.work_ns.unwrap_or_else(|| workload.default_work_ns())
    }

    /// Whether labels name the pull setting: whenever it is not the default alone.
    pub(crate) fn show_pull(&self) -> bool {
        self.pulls != [true]
    }

    /// Whether labels name the steering setting: whenever it is not the default alone.
    pub(crate) fn show_steer(&self) -> bool {
        self.steers != [true]
    }

    /// The locality workload's groups on the peers: `--groups`, or
    /// [`Settings::default_peer_groups`].
    pub(crate) fn peer_groups(&self) -> usize {
        self.locality.groups.unwrap_or(self.default_peer_groups)
    }

    /// Counts the pods of the first podq configuration on `topology` for
    /// [`Settings::default_peer_groups`]: those with a CPU of `usable`.
    pub(crate) fn count_peer_pods(&mut self, topology: &podq::Topology, usable: &CpuSet) {
        let first = self.systems.iter().find_map(|system| match *system {
            System::Podq {
                scope, shard_size, ..
            } => Some((scope, shard_size)),
            System::Peer(_) => None,
        });
        let Some((scope, shard_size)) = first else {
            return;
        };
        if let Ok(pods) = podq::Pods::new(topology, scope, shard_size) {
            let count = pods
                .pods()
                .iter()
                .filter(|pod| !pod.cpus().intersection(usable).is_empty())
                .count();
            self.default_peer_groups = GROUPS_PER_POD * count.max(1);
        }
    }

    /// `system`'s name in the kernel lines, the table and the plot.
    pub(crate) fn label(&self, system: System) -> String {
        system.label_with(self.sweeping, self.show_pull(), self.show_steer())
    }
}

/// `--block-every` and `--block-us`, each within its bounds, and given only when a workload
/// measured is `blocking`; the defaults otherwise.
fn parse_mix(args: &BenchArgs, workloads: &[Workload]) -> Result<Mix, CliError> {
    let every = args
        .block_every
        .as_deref()
        .map(|text| {
            parse_bounded(
                "--block-every",
                text,
                2,
                MAX_BLOCK_EVERY,
                "one item in N blocks; 1 would leave no short item",
            )
        })
        .transpose()?;
    let block_us = args
        .block_us
        .as_deref()
        .map(|text| {
            parse_bounded(
                "--block-us",
                text,
                1,
                MAX_BLOCK_US,
                "microseconds a blocking item sleeps",
            )
        })
        .transpose()?;
    only_for(
        Workload::Blocking,
        &[("--block-every", every), ("--block-us", block_us)],
        args,
        workloads,
    )?;
    let default = Mix::default();
    Ok(Mix {
        every: every.unwrap_or(default.every),
        block: block_us.map_or(default.block, Duration::from_micros),
    })
}

/// `--depth` and `--yields`, each refused when its workload is not measured.
fn parse_spawned(args: &BenchArgs, workloads: &[Workload]) -> Result<(u64, u64), CliError> {
    let parse = |flag: &str, text: &Option<String>, what: &str| {
        text.as_deref()
            .map(|text| parse_bounded(flag, text, 1, MAX_SPAWNED_STEPS, what))
            .transpose()
    };
    let depth = parse("--depth", &args.depth, "links per chain")?;
    let yields = parse("--yields", &args.yields, "continuations per item")?;
    only_for(Workload::Chain, &[("--depth", depth)], args, workloads)?;
    only_for(Workload::Yield, &[("--yields", yields)], args, workloads)?;
    Ok((
        depth.unwrap_or(DEFAULT_DEPTH),
        yields.unwrap_or(DEFAULT_YIELDS),
    ))
}

/// The most `--depth` and `--yields` take: 1,000,000,000 steps, far more than a run needs.
const MAX_SPAWNED_STEPS: u64 = 1_000_000_000;

/// Refuses the first flag of `given` that has a value when `workload` is not among `workloads`
/// (the flags only it uses), with one line naming the flag and `--workload`'s value.
fn only_for(
    workload: Workload,
    given: &[(&str, Option<u64>)],
    args: &BenchArgs,
    workloads: &[Workload],
) -> Result<(), CliError> {
    if workloads.contains(&workload) {
        return Ok(());
    }
    let name = workload.name();
    match given.iter().find_map(|&(flag, value)| Some((flag, value?))) {
        Some((flag, value)) => Err(CliError::Usage(format!(
            "{flag} {value}: only the {name} workload uses it, and --workload {} leaves it \
             out; give --workload {name} or all, or leave {flag} out",
            args.workload
        ))),
        None => Ok(()),
    }
}

/// A whole number from `min` to `max`; the message says what it is (`what`) otherwise.
fn parse_bounded(flag: &str, text: &str, min: u64, max: u64, what: &str) -> Result<u64, CliError> {
    let range = || format!("give {min} to {max} ({what})");
    let value = text.trim().replace('_', "").parse::<u64>().map_err(|_| {
        CliError::Usage(format!(
            "{flag} '{text}': expected a whole number; {}",
            range()
        ))
    })?;
    if (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(CliError::Usage(format!("{flag} {value}: {}", range())))
    }
}

/// `--pull`: `on`, `off`, or both comma-separated, in the order given, without duplicates.
fn parse_pulls(list: &str) -> Result<Vec<bool>, CliError> {
    parse_on_off("--pull", list)
}

/// `flag`'s `on`, `off`, or both comma-separated, in the order given, without duplicates.
fn parse_on_off(flag: &str, list: &str) -> Result<Vec<bool>, CliError> {
    let values = parse_list(list, |value| match value {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(CliError::Usage(format!(
            "{flag} '{list}': unknown value '{value}'; expected on, off, or on,off"
        ))),
    })?;
    if values.is_empty() {
        return Err(CliError::Usage(format!(
            "{flag} '{list}': expected on, off, or on,off"
        )));
    }
    Ok(values)
}

/// A comma-separated list of scopes, kept in the order given, without duplicates.
fn parse_scopes(list: &str) -> Result<Vec<AffinityScope>, CliError> {
    parse_list(list, |name| {
        name.parse()
            .map_err(|err: podq::Error| CliError::Usage(err.to_string()))
    })
}

/// A comma-separated list of peers, or `none`.
fn parse_peers(list: &str) -> Result<Vec<Peer>, CliError> {
    if list.trim() == "none" {
        return Ok(Vec::new());
    }
    parse_list(list, Peer::parse)
}

/// A comma-separated list, each name read by `parse`, kept in the order given without
/// duplicates; empty when `list` is blank.
fn parse_list<T: PartialEq>(
    list: &str,
    parse: impl Fn(&str) -> Result<T, CliError>,
) -> Result<Vec<T>, CliError> {
    let mut items = Vec::new();
    if list.trim().is_empty() {
        return Ok(items);
    }
    for name in list.split(',').map(str::trim) {
        let item = parse(name)?;
        if !items.contains(&item) {
            items.push(item);
        }
    }
    Ok(items)
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
fn parse_count(flag: &str, text: &str, what: &str) -> Result<u64, CliError> {
    match parse_number(flag, text)? {
        0 => Err(CliError::Usage(format!("{flag} 0: give at least 1 {what}"))),
        n => Ok(n),
    }
}

mod locality;
#[cfg(test)]
mod tests;
