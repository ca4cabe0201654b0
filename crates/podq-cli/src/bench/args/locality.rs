//! The locality workload's options (`--groups`, `--set-kb`, `--load`) and `--steer`, checked
//! as the rest of the command line is: every bad value refused with one line.

use super::{only_for, parse_bounded, parse_on_off, BenchArgs};
use crate::bench::locality::{Plan, MAX_GROUPS, MAX_SET_KB};
use crate::bench::workload::Workload;
use crate::error::CliError;

/// `--groups`, `--set-kb` and `--load`, each within its bounds, and given only when a workload
/// measured is `locality`; the defaults otherwise. The pace is measured later
/// (`locality::pace::measure`).
pub(super) fn parse_plan(args: &BenchArgs, workloads: &[Workload]) -> Result<Plan, CliError> {
    let groups = args
        .groups
        .as_deref()
        .map(|text| parse_bounded("--groups", text, 1, MAX_GROUPS, "groups of related items"))
        .transpose()?;
    let set_kb = args
        .set_kb
        .as_deref()
        .map(|text| {
            parse_bounded(
                "--set-kb",
                text,
                1,
                MAX_SET_KB,
                "KiB of working set per group",
            )
        })
        .transpose()?;
    let load = args
        .load
        .as_deref()
        .map(|text| {
            parse_bounded(
                "--load",
                text,
                1,
                100,
                "percent of the usable CPUs the workload keeps busy",
            )
        })
        .transpose()?;
    only_for(
        Workload::Locality,
        &[("--groups", groups), ("--set-kb", set_kb), ("--load", load)],
        args,
        workloads,
    )?;
    let default = Plan::default();
    Ok(Plan {
        groups: groups.map(|g| usize::try_from(g).unwrap_or(usize::MAX)),
        set_kb: set_kb.unwrap_or(default.set_kb),
        load: load.unwrap_or(default.load),
        ..default
    })
}

/// `--steer`: `on`, `off`, or both comma-separated, in the order given, without duplicates.
pub(super) fn parse_steers(list: &str) -> Result<Vec<bool>, CliError> {
    parse_on_off("--steer", list)
}
