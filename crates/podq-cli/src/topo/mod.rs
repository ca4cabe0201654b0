//! `podq topo`: the machine and the pods of every scope.
//!
//! The topology comes from this machine (default), a sysfs tree (`--sysfs DIR`) or a synthetic
//! machine (`--machine PRESET-OR-DESCRIPTION`). [`report`] turns it into one [`report::Report`],
//! which [`text`] prints for people and serde prints as JSON (`--json`).

use std::path::{Path, PathBuf};

use clap::Args;
use podq::scope::DEFAULT_SHARD_SIZE;
use podq::{AffinityScope, Topology};

use crate::error::CliError;
use crate::output;

mod layout;
mod report;
mod text;

/// Arguments of `podq topo`.
#[derive(Debug, Args)]
#[command(after_help = "The topology is this machine's unless --sysfs or --machine names another.")]
pub(crate) struct TopoArgs {
    /// Read the sysfs tree under DIR instead of this machine: a folder holding
    /// sys/devices/system/cpu, or an unpacked snapshot whose one top folder does. All online
    /// CPUs with a topology are usable.
    #[arg(long, value_name = "DIR", conflicts_with = "machine")]
    sysfs: Option<PathBuf>,

    /// Use a synthetic machine: a preset (grace, epyc-9d64, ryzen-3900x, ryzen-7950x,
    /// skylake-18c) or a description such as 'sockets=2,nodes=2,caches=4,cores=32,smt=2'.
    #[arg(long, value_name = "PRESET-OR-DESCRIPTION")]
    machine: Option<String>,

    /// Cores per cache shard for the cache_shard scope: a whole number, at least 1.
    #[arg(long, value_name = "CORES", default_value_t = DEFAULT_SHARD_SIZE,
          value_parser = parse_shard_size, allow_negative_numbers = true)]
    shard_size: usize,

    /// Show only this scope: cpu, smt, cache, cache_shard, numa, system, or default
    /// (cache_shard). Without it, every scope is shown.
    #[arg(long, value_name = "SCOPE")]
    scope: Option<String>,

    /// Print JSON (source, cpus, shard_size, default_scope, fallbacks, machine, scopes, pods,
    /// cpu_to_pod) instead of text.
    #[arg(long)]
    json: bool,
}

/// Parses `--shard-size`: a whole number of cores, at least 1.
fn parse_shard_size(value: &str) -> Result<usize, String> {
    match value.trim().parse::<usize>() {
        Ok(0) => Err("the shard size must be at least 1 core".to_owned()),
        Ok(cores) => Ok(cores),
        Err(_) => Err(format!(
            "expected a whole number of cores, at least 1 (default {DEFAULT_SHARD_SIZE})"
        )),
    }
}

/// Runs `podq topo`.
///
/// # Errors
///
/// [`CliError::Usage`] for an unknown scope, preset or malformed machine description, or a
/// `--sysfs` folder that does not exist; [`CliError::Failed`] for a tree that cannot be read
/// or has no usable CPU, or a failed write to stdout.
pub(crate) fn run(args: &TopoArgs) -> Result<(), CliError> {
    let scopes = match args.scope.as_deref() {
        Some(name) => vec![name.parse::<AffinityScope>()?],
        None => AffinityScope::ALL.to_vec(),
    };
    let topology = load(args)?;
    let report = report::Report::new(&topology, &scopes, args.shard_size)?;
    let text = if args.json {
        let mut json = serde_json::to_string(&report)
            .map_err(|err| CliError::Failed(format!("cannot write the JSON report: {err}")))?;
        json.push('\n');
        json
    } else {
        text::render(&report)
    };
    output::print(&text)
}

/// The topology the arguments ask for.
fn load(args: &TopoArgs) -> Result<Topology, CliError> {
    let topology = if let Some(dir) = &args.sysfs {
        Topology::from_sysfs(&sysfs_root(dir)?)?
    } else if let Some(machine) = &args.machine {
        Topology::from_machine(machine)?
    } else {
        Topology::discover()?
    };
    Ok(topology)
}

/// The folder under `dir` that holds `sys/devices/system/cpu`: `dir` itself, or its only
/// subfolder when that one has it (a snapshot unpacked as it comes). Otherwise `dir`, for the
/// library to say what is missing.
///
/// # Errors
///
/// [`CliError::Usage`] when `dir` does not exist or is not a folder.
pub(crate) fn sysfs_root(dir: &Path) -> Result<PathBuf, CliError> {
    const EXPECTED: &str = "expected a folder holding sys/devices/system/cpu";
    if !dir.exists() {
        return Err(CliError::Usage(format!(
            "--sysfs folder '{}' does not exist: {EXPECTED}",
            dir.display()
        )));
    }
    if !dir.is_dir() {
        return Err(CliError::Usage(format!(
            "--sysfs '{}' is not a folder: {EXPECTED}",
            dir.display()
        )));
    }
    let has_tree = |root: &Path| root.join("sys/devices/system/cpu").is_dir();
    if has_tree(dir) {
        return Ok(dir.to_path_buf());
    }
    let subfolders: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|path| path.is_dir())
                .collect()
        })
        .unwrap_or_default();
    match subfolders.as_slice() {
        [only] if has_tree(only) => Ok(only.clone()),
        _ => Ok(dir.to_path_buf()),
    }
}
