//! The text form of `podq topo`: a summary of the machine, an overview of the scopes, then the
//! pods of each scope with the CPU-to-pod map.

use std::fmt::Write as _;

use super::layout::{grid, wrap, Align, Table};
use super::report::{CacheGroup, CpuGroup, Group, Report, ScopeReport};

/// Width of the label column of the machine summary.
const LABEL: usize = 15;
/// Pod tables longer than this many rows are laid out in blocks side by side.
const TALL: usize = 16;
/// Machines with at most this many CPUs get the CPU-to-pod map as a table (one column per
/// CPU); larger ones get the compact form (`0-7,88-95:0 8-15,96-103:1`).
const MAP_TABLE_CPUS: usize = 32;

/// The text report.
pub(super) fn render(report: &Report) -> String {
    let mut out = String::new();
    summary(&mut out, report);
    if report.scopes.len() > 1 {
        out.push('\n');
        overview(&mut out, report);
    }
    for scope in &report.scopes {
        out.push('\n');
        section(&mut out, report, scope);
    }
    out
}

/// Appends `label` padded to the label column, then `value`.
fn field(out: &mut String, label: &str, value: &str) {
    let _ = writeln!(out, "{label:<LABEL$}{value}");
}

/// The machine summary: source, CPUs, cores, cache domains, nodes, packages, clusters,
/// fallbacks and the shard size.
fn summary(out: &mut String, report: &Report) {
    let machine = &report.machine;
    field(out, "source", &report.source);
    field(
        out,
        "CPUs",
        &format!("{} ({})", machine.cpu_list, machine.cpu_count),
    );
    field(
        out,
        "cores",
        &format!("{} (SMT width {})", machine.cores, machine.smt_width),
    );
    field(out, "cache domains", &caches(&machine.cache_domains));
    field(out, "nodes", &numbered(&machine.nodes, "node"));
    field(out, "packages", &numbered(&machine.packages, "package"));
    if !machine.clusters.is_empty() {
        field(out, "clusters", &clusters(&machine.clusters));
    }
    if report.fallbacks.is_empty() {
        field(out, "fallbacks", "none");
    }
    for (i, fallback) in report.fallbacks.iter().enumerate() {
        field(out, if i == 0 { "fallbacks" } else { "" }, fallback);
    }
    field(
        out,
        "shard size",
        &format!("{} (cores per cache shard)", report.shard_size),
    );
    // The scope shown (the default when all are), as an operator sets it for a service.
    let scope = match report.scopes.as_slice() {
        [one] => one.scope,
        _ => podq::AffinityScope::default(),
    };
    field(
        out,
        "environment",
        &podq::scope::env_line(scope, report.shard_size),
    );
}

/// `n` if every value is `n`, `low-high` otherwise (and `0` for no values).
fn spread(values: impl Iterator<Item = usize>) -> String {
    let (low, high) = values.fold((usize::MAX, 0), |(lo, hi), v| (lo.min(v), hi.max(v)));
    match (low, high) {
        (usize::MAX, _) => "0".to_owned(),
        (lo, hi) if lo == hi => lo.to_string(),
        (lo, hi) => format!("{lo}-{hi}"),
    }
}

/// `1 thing` or `n things`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The cache domains: how many, their level, their sizes, and their CPU lists.
fn caches(domains: &[CacheGroup]) -> String {
    let mut levels: Vec<String> = domains
        .iter()
        .map(|d| match d.level {
            Some(level) => format!("L{level}"),
            None => "package, no cache information".to_owned(),
        })
        .collect();
    levels.sort();
    levels.dedup();
    let uniform = domains
        .windows(2)
        .all(|w| w[0].cpus.cpus.len() == w[1].cpus.cpus.len() && w[0].cores == w[1].cores);
    let cpus = spread(domains.iter().map(|d| d.cpus.cpus.len()));
    let cores = spread(domains.iter().map(|d| d.cores));
    let sizes = format!(
        "{cpus} {} and {cores} {}{}",
        if cpus == "1" { "CPU" } else { "CPUs" },
        if cores == "1" { "core" } else { "cores" },
        if uniform && domains.len() > 1 {
            " each"
        } else {
            ""
        }
    );
    let head = format!("{} ({}; {sizes}): ", domains.len(), levels.join(", "));
    let lists: Vec<String> = domains.iter().map(|d| d.cpus.cpu_list.clone()).collect();
    format!("{head}{}", wrap(&lists, LABEL + head.len(), LABEL))
}

/// Nodes or packages: how many, then each one's CPU list and id.
fn numbered(groups: &[Group], what: &str) -> String {
    let head = format!("{}: ", groups.len());
    let items: Vec<String> = groups
        .iter()
        .map(|g| format!("{} ({what} {})", g.cpus.cpu_list, g.id))
        .collect();
    format!("{head}{}", wrap(&items, LABEL + head.len(), LABEL))
}

/// The clusters: how many, their sizes, and their CPU lists.
fn clusters(groups: &[CpuGroup]) -> String {
    let sizes = spread(groups.iter().map(|g| g.cpus.len()));
    let cpus = if sizes == "1" { "CPU" } else { "CPUs" };
    let each = if groups.len() > 1 && !sizes.contains('-') {
        " each"
    } else {
        ""
    };
    let head = format!("{} ({sizes} {cpus}{each}): ", groups.len());
    let lists: Vec<String> = groups.iter().map(|g| g.cpu_list.clone()).collect();
    format!("{head}{}", wrap(&lists, LABEL + head.len(), LABEL))
}

/// The name of a scope, marked when it is the default.
fn scope_title(scope: &ScopeReport) -> String {
    if scope.is_default() {
        format!("{} (default)", scope.scope.name())
    } else {
        scope.scope.name().to_owned()
    }
}

/// One line per scope: its number of pods and their sizes.
fn overview(out: &mut String, report: &Report) {
    let mut table = Table::new(&[
        ("scope", Align::Left),
        ("pods", Align::Right),
        ("CPUs per pod", Align::Right),
    ]);
    for scope in &report.scopes {
        table.push(vec![
            scope_title(scope),
            scope.pods.len().to_string(),
            spread(scope.pods.iter().map(|p| p.cpus.cpus.len())),
        ]);
    }
    for line in table.render(0, usize::MAX) {
        let _ = writeln!(out, "{line}");
    }
}

/// One scope: its pods (id, node, CPUs) and the CPU-to-pod map.
fn section(out: &mut String, report: &Report, scope: &ScopeReport) {
    let _ = writeln!(
        out,
        "{}: {}",
        scope_title(scope),
        count(scope.pods.len(), "pod", "pods")
    );
    let mut table = Table::new(&[
        ("pod", Align::Right),
        ("node", Align::Right),
        ("CPUs", Align::Left),
    ]);
    for pod in &scope.pods {
        table.push(vec![
            pod.id.to_string(),
            pod.node.to_string(),
            pod.cpus.cpu_list.clone(),
        ]);
    }
    for line in table.render(2, TALL) {
        let _ = writeln!(out, "{line}");
    }

    let map = scope.cpu_to_pod();
    if report.cpus.len() <= MAP_TABLE_CPUS {
        let cpus = map.iter().map(|(cpu, _)| cpu.to_string()).collect();
        let pods = map.iter().map(|(_, pod)| pod.to_string()).collect();
        let _ = writeln!(out, "  cpu->pod:");
        for line in grid(&[("cpu", cpus), ("pod", pods)], 4) {
            let _ = writeln!(out, "{line}");
        }
    } else {
        let label = "  cpu->pod: ";
        let items: Vec<String> = scope
            .pods
            .iter()
            .map(|pod| format!("{}:{}", pod.cpus.cpu_list, pod.id))
            .collect();
        let _ = writeln!(out, "{label}{}", wrap(&items, label.len(), label.len()));
    }
}
