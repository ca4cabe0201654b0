//! The report: the kernel's line format, an aligned table, and the JSON.

use serde::Serialize;
use serde_json::{json, Value};

use super::args::Settings;
use super::fanout::{RECEIVERS, SENDERS};
use super::machine::{plural, Machine};
use super::measurement::Summary;
use super::system::{on_off, System};
use super::workload::{Shape, Workload};

/// Characters the kernel's lines give the scope name before the numbers; longer labels widen
/// the column for all of a workload's lines.
const KERNEL_LABEL_WIDTH: usize = 12;

/// One configuration's results over all runs.
#[derive(Clone, Debug)]
pub(crate) struct Row {
    /// The workload.
    pub(crate) workload: Workload,
    /// The system under test.
    pub(crate) system: System,
    /// Medians and spread over the runs.
    pub(crate) summary: Summary,
}

impl Row {
    /// The name in the kernel lines, the table and the plot.
    pub(crate) fn label(&self, settings: &Settings) -> String {
        settings.label(self.system)
    }

    /// Round trips per second: half the hops per second (rpc only).
    fn round_trips_per_sec(&self) -> Option<f64> {
        self.summary
            .round_trips
            .map(|_| self.summary.items_per_sec / 2.0)
    }
}

/// The text report: machine, then per workload the kernel lines and the table.
pub(crate) fn text(machine: &Machine, settings: &Settings, rows: &[Row]) -> String {
    let mut out = format!("{}\n", machine.summary());
    for workload in &settings.workloads {
        let rows: Vec<&Row> = rows
            .iter()
            .filter(|row| row.workload == *workload)
            .collect();
        out.push_str(&format!("\n{}\n", heading(*workload, settings)));
        let width = rows
            .iter()
            .map(|row| row.label(settings).chars().count() + 1)
            .fold(KERNEL_LABEL_WIDTH, usize::max);
        for row in &rows {
            out.push_str(&kernel_line(row, settings, width));
            out.push('\n');
        }
        out.push('\n');
        out.push_str(&table(*workload, &rows, settings));
    }
    out
}

/// `queue: 2 producer threads (CPUs 0-1) x 50000 items, ..., median of 5 runs`, and the
/// like for the other workloads.
fn heading(workload: Workload, settings: &Settings) -> String {
    let producers = settings.producers(workload);
    let cpus: podq::CpuSet = producers.iter().copied().collect();
    let count = producers.len();
    let runs = match settings.runs {
        1 => "1 run".to_owned(),
        n => format!("median of {n} runs"),
    };
    let work = match settings.work_ns(workload) {
        0 => String::new(),
        ns => format!(", {ns} ns of work per item"),
    };
    let items = settings.items(workload);
    let on = if count == 1 { "CPU" } else { "CPUs" };
    let what = match workload {
        Workload::Queue | Workload::Flood | Workload::Skew => {
            format!(
                "{} ({on} {cpus}) x {items} items",
                plural(count, "producer thread")
            )
        }
        Workload::Fanout => format!(
            "{} of {SENDERS} senders and {RECEIVERS} receivers (producers on {on} {cpus}) x \
             {items} messages",
            plural(count, "team")
        ),
        Workload::Rpc => format!(
            "{} (producers on {on} {cpus}) x {items} round trips",
            plural(count, "pair")
        ),
        Workload::Blocking => format!(
            "{} ({on} {cpus}) x {items} items, one in {} blocking for {} us",
            plural(count, "producer thread"),
            settings.mix.every,
            settings.mix.block_us()
        ),
        Workload::Locality => format!(
            "{} ({on} {cpus}) x {items} items of {}",
            plural(count, "producer thread"),
            settings.locality.describe()
        ),
        Workload::Chain => format!(
            "{} ({on} {cpus}) x {items} chains of {} links, one after the other",
            plural(count, "producer thread"),
            settings.depth
        ),
        Workload::Yield => format!(
            "{} ({on} {cpus}) x {items} items, each queueing its continuation {} times",
            plural(count, "producer thread"),
            settings.yields
        ),
        Workload::SpawnLocal => format!(
            "{} ({on} {cpus}) x one item queueing {items} items from its worker",
            plural(count, "producer thread")
        ),
        Workload::Checksum => format!(
            "{} ({on} {cpus}) x {items} items, each the CRC-32C of a {} KiB block its producer \
             wrote, at most {} in flight per producer",
            plural(count, "producer thread"),
            super::checksum::BLOCK_BYTES / 1024,
            super::checksum::RING_BLOCKS
        ),
    };
    format!(
        "{}: {what}, peers with {} workers{work}, {runs}",
        workload.name(),
        settings.peer_workers,
    )
}

/// The kernel's format, tab-separated:
/// `cache_shard      3629098 items/sec<TAB>p50=6080<TAB>p90=8896<TAB>p95=9728 ns`
/// (the open loops show p50/p99 and the queue-to-start p50/p99 instead; rpc shows round
/// trips/sec, p50/p99 and the per-hop p50/p99; blocking shows p50/p99 and the short items'
/// queue-to-start p50/p99).
/// The label takes `width` characters.
fn kernel_line(row: &Row, settings: &Settings, width: usize) -> String {
    let s = &row.summary;
    let label = row.label(settings);
    if let Some(short) = s.short_start {
        return format!(
            "{label:<width$}{:>12.0} items/sec\tp50={}\tp99={}\tshort_start_p50={}\t\
             short_start_p99={} ns",
            s.items_per_sec, s.queue.p50, s.queue.p99, short.p50, short.p99
        );
    }
    if row.workload.shape() == Shape::Spawned {
        let by_queuer = s.by_queuer.map_or_else(String::new, |share| {
            format!("\tby_queuer={}", percent(share))
        });
        return format!(
            "{label:<width$}{:>12.0} items/sec\tper_item={:.0} ns{by_queuer}",
            s.items_per_sec,
            ns_per_item(s)
        );
    }
    if let (Some(run), Some(start)) = (s.run_time, s.queue_to_start) {
        return format!(
            "{label:<width$}{:>12.0} items/sec\tp50={}\tp99={}\tstart_p50={}\tstart_p99={}\t\
             run_p50={}\trun_p99={} ns",
            s.items_per_sec, s.queue.p50, s.queue.p99, start.p50, start.p99, run.p50, run.p99
        );
    }
    match (s.queue_to_start, row.round_trips_per_sec()) {
        (None, _) => format!(
            "{label:<width$}{:>12.0} items/sec\tp50={}\tp90={}\tp95={} ns",
            s.items_per_sec, s.queue.p50, s.queue.p90, s.queue.p95
        ),
        (Some(start), None) => format!(
            "{label:<width$}{:>12.0} items/sec\tp50={}\tp99={}\tstart_p50={}\tstart_p99={} ns",
            s.items_per_sec, s.queue.p50, s.queue.p99, start.p50, start.p99
        ),
        (Some(hop), Some(round_trips)) => format!(
            "{label:<width$}{round_trips:>12.0} round trips/sec\tp50={}\tp99={}\thop_p50={}\t\
             hop_p99={} ns",
            s.queue.p50, s.queue.p99, hop.p50, hop.p99
        ),
    }
}

/// The aligned table of one workload's rows.
fn table(workload: Workload, rows: &[&Row], settings: &Settings) -> String {
    let shape = workload.shape();
    let mut header = vec!["system", "scope", "pull"];
    if shape == Shape::Local {
        header.push("steer");
    }
    match shape {
        Shape::Closed => header.extend(["items/sec", "min-max", "p50 ns", "p90 ns", "p95 ns"]),
        Shape::Open | Shape::Local => header.extend([
            "items/sec",
            "min-max",
            "p50 ns",
            "p99 ns",
            "start p50",
            "start p99",
        ]),
        Shape::RoundTrips => header.extend([
            "round trips/s",
            "min-max",
            "p50 ns",
            "p99 ns",
            "hop p50",
            "hop p99",
        ]),
        Shape::Mixed => header.extend([
            "items/sec",
            "min-max",
            "p50 ns",
            "p99 ns",
            "short start p50",
            "short start p99",
        ]),
        Shape::Spawned => header.extend(["items/sec", "min-max", "ns/item"]),
    }
    if matches!(shape, Shape::Spawned | Shape::RoundTrips) {
        header.push("by queuer");
    }
    if shape == Shape::Local {
        header.extend(["run p50", "run p99", "busy", "same CPU"]);
    }
    header.extend(["pulled", "pools", "workers"]);
    if shape == Shape::Mixed {
        header.push("seen blocked");
    }
    let dash = || "-".to_owned();
    let mut cells: Vec<Vec<String>> = vec![header.iter().map(|h| (*h).to_owned()).collect()];
    for row in rows {
        let s = &row.summary;
        let scale = if shape == Shape::RoundTrips { 0.5 } else { 1.0 };
        let mut line = vec![
            row.system.name().to_owned(),
            row.system
                .scope()
                .map_or_else(dash, |_| row.system.label(settings.sweeping, false)),
            row.system
                .pull()
                .map_or_else(dash, |p| on_off(p).to_owned()),
        ];
        if shape == Shape::Local {
            line.push(
                row.system
                    .steer()
                    .map_or_else(dash, |p| on_off(p).to_owned()),
            );
        }
        line.extend([
            format!("{:.0}", s.items_per_sec * scale),
            format!(
                "{:.0}-{:.0}",
                s.items_per_sec_min * scale,
                s.items_per_sec_max * scale
            ),
        ]);
        let start = match shape {
            Shape::Mixed => s.short_start,
            Shape::Closed | Shape::Open | Shape::RoundTrips | Shape::Local | Shape::Spawned => {
                s.queue_to_start
            }
        };
        match (shape, start) {
            (Shape::Spawned, _) => line.push(format!("{:.0}", ns_per_item(s))),
            (Shape::Open | Shape::RoundTrips | Shape::Mixed | Shape::Local, Some(start)) => line
                .extend([
                    s.queue.p50.to_string(),
                    s.queue.p99.to_string(),
                    start.p50.to_string(),
                    start.p99.to_string(),
                ]),
            _ => line.extend([
                s.queue.p50.to_string(),
                s.queue.p90.to_string(),
                s.queue.p95.to_string(),
            ]),
        }
        if let (Shape::Local, Some(run)) = (shape, s.run_time) {
            line.extend([
                run.p50.to_string(),
                run.p99.to_string(),
                s.cpu_busy
                    .map_or_else(dash, |b| format!("{:.0} %", b * 100.0)),
                s.cpu_reuse
                    .map_or_else(dash, |r| format!("{:.0} %", r.same * 100.0)),
            ]);
        }
        if matches!(shape, Shape::Spawned | Shape::RoundTrips) {
            line.push(s.by_queuer.map_or_else(dash, percent));
        }
        line.push(s.pulled.map_or_else(dash, |p| p.to_string()));
        line.push(s.pools.map_or_else(dash, |p| p.to_string()));
        line.push(s.workers.map_or_else(dash, |w| w.to_string()));
        if shape == Shape::Mixed {
            line.push(s.seen_blocked.map_or_else(dash, |b| b.to_string()));
        }
        cells.push(line);
    }
    align(&cells)
}

/// Nanoseconds per item: the inverse of items/sec (all producers' items over the wall time).
fn ns_per_item(s: &Summary) -> f64 {
    1e9 / s.items_per_sec
}

/// A share as a whole percentage: `42 %`.
fn percent(share: f64) -> String {
    format!("{:.0} %", share * 100.0)
}

/// Lays `cells` out in columns: the first three left-aligned (names), the rest right-aligned.
fn align(cells: &[Vec<String>]) -> String {
    let columns = cells.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            cells
                .iter()
                .filter_map(|line| line.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for line in cells {
        let fields: Vec<String> = line
            .iter()
            .enumerate()
            .map(|(c, cell)| {
                if c < 3 {
                    format!("{cell:<w$}", w = widths[c])
                } else {
                    format!("{cell:>w$}", w = widths[c])
                }
            })
            .collect();
        out.push_str(fields.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// The JSON settings block.
#[derive(Serialize)]
struct JsonSettings<'a> {
    workloads: Vec<&'static str>,
    threads: usize,
    producer_cpus: &'a [usize],
    items_per_thread: Option<u64>,
    runs: usize,
    /// The busy-wait per item of each workload measured, by name.
    work_ns: serde_json::Map<String, Value>,
    /// The pull settings measured: `on`, `off`.
    pull: Vec<&'static str>,
    /// The steering settings measured: `on`, `off`.
    steer: Vec<&'static str>,
    peer_workers: usize,
}

/// `{"machine": {...}, "settings": {...}, "results": [...]}`.
pub(crate) fn json(machine: &Machine, settings: &Settings, rows: &[Row]) -> Value {
    let results: Vec<Value> = rows.iter().map(|row| json_row(row, settings)).collect();
    json!({
        "machine": machine,
        "settings": JsonSettings {
            workloads: settings.workloads.iter().map(|w| w.name()).collect(),
            threads: settings.threads(),
            producer_cpus: &settings.producer_cpus,
            items_per_thread: settings.items_given,
            runs: settings.runs,
            work_ns: settings
                .workloads
                .iter()
                .map(|&w| (w.name().to_owned(), settings.work_ns(w).into()))
                .collect(),
            pull: settings.pulls.iter().map(|&p| on_off(p)).collect(),
            steer: settings.steers.iter().map(|&p| on_off(p)).collect(),
            peer_workers: settings.peer_workers,
        },
        "results": results,
    })
}

/// One result: podq rows carry scope (and shard size for `cache_shard`), pull, pulled, pools
/// and the blocked-worker counts; peers have none of them; the open loops add p99 and the
/// queue-to-start percentiles; rpc adds p99, the round trips and the per-hop percentiles;
/// blocking adds what flood does, the mix, the items that blocked and the short items'
/// queue-to-start percentiles.
fn json_row(row: &Row, settings: &Settings) -> Value {
    let s = &row.summary;
    let mut value = json!({
        "workload": row.workload.name(),
        "system": row.system.name(),
        "threads": settings.producers(row.workload).len(),
        "work_ns": settings.work_ns(row.workload),
        "items_per_thread": settings.items(row.workload),
        "runs": s.runs,
        "items_per_sec": s.items_per_sec.round() as u64,
        "items_per_sec_min": s.items_per_sec_min.round() as u64,
        "items_per_sec_max": s.items_per_sec_max.round() as u64,
        "p50_ns": s.queue.p50,
        "p90_ns": s.queue.p90,
        "p95_ns": s.queue.p95,
    });
    let Value::Object(map) = &mut value else {
        unreachable!("json! of an object literal")
    };
    if let Some(scope) = row.system.scope() {
        map.insert("scope".into(), scope.name().into());
    }
    if let Some(size) = row.system.shard_size() {
        map.insert("shard_size".into(), size.into());
    }
    if let Some(pull) = row.system.pull() {
        map.insert("pull".into(), on_off(pull).into());
    }
    if let Some(steer) = row.system.steer() {
        map.insert("steer".into(), on_off(steer).into());
    }
    if let Some(pulled) = s.pulled {
        map.insert("pulled".into(), pulled.into());
    }
    match (s.queue_to_start, row.round_trips_per_sec(), s.round_trips) {
        (Some(hop), Some(per_sec), Some(round_trips)) => {
            map.insert("p99_ns".into(), s.queue.p99.into());
            map.insert("round_trips".into(), round_trips.into());
            map.insert(
                "round_trips_per_sec".into(),
                (per_sec.round() as u64).into(),
            );
            map.insert("hop_p50_ns".into(), hop.p50.into());
            map.insert("hop_p99_ns".into(), hop.p99.into());
        }
        (Some(start), _, _) => {
            map.insert("p99_ns".into(), s.queue.p99.into());
            map.insert("queue_to_start_p50_ns".into(), start.p50.into());
            map.insert("queue_to_start_p99_ns".into(), start.p99.into());
        }
        (None, _, _) => {}
    }
    if row.workload.shape() == Shape::Spawned || row.workload == Workload::Checksum {
        map.insert("ns_per_item".into(), ns_per_item(s).into());
    }
    match row.workload {
        Workload::Chain => {
            map.insert("depth".into(), settings.depth.into());
        }
        Workload::Yield => {
            map.insert("yields".into(), settings.yields.into());
        }
        _ => {}
    }
    if let Some(share) = s.by_queuer {
        map.insert("by_queuer".into(), share.into());
    }
    if let Some(share) = s.ahead {
        map.insert("ahead".into(), share.into());
    }
    if let Some(locks) = s.locks_per_item {
        map.insert("locks_per_item".into(), locks.into());
    }
    if let Some(short) = s.short_start {
        map.insert("block_every".into(), settings.mix.every.into());
        map.insert("block_us".into(), settings.mix.block_us().into());
        map.insert("short_start_p50_ns".into(), short.p50.into());
        map.insert("short_start_p99_ns".into(), short.p99.into());
    }
    if let Some(run) = s.run_time {
        let plan = &settings.locality;
        map.insert("set_kb".into(), plan.set_kb.into());
        map.insert("load".into(), plan.load.into());
        let ns = |d: std::time::Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        map.insert("item_ns".into(), ns(plan.pace.item).into());
        map.insert("item_run_ns".into(), ns(plan.pace.run).into());
        map.insert("walk_ns".into(), ns(plan.pace.walk).into());
        if let Some(busy) = s.cpu_busy {
            map.insert("cpu_busy".into(), ((busy * 1000.0).round() / 1000.0).into());
        }
        map.insert("run_p50_ns".into(), run.p50.into());
        map.insert("run_p99_ns".into(), run.p99.into());
        if let Some(start) = s.queue_to_start {
            map.insert("start_p99_ns".into(), start.p99.into());
        }
        if let Some(reuse) = s.cpu_reuse {
            map.insert("same_cpu".into(), reuse.same.into());
            if let Some(p50) = reuse.same_p50 {
                map.insert("run_p50_same_cpu_ns".into(), p50.into());
            }
            if let Some(p50) = reuse.moved_p50 {
                map.insert("run_p50_moved_ns".into(), p50.into());
            }
        }
    }
    if let Some(groups) = s.groups {
        map.insert("groups".into(), groups.into());
    }
    if let Some(steering) = s.steering {
        map.insert("grouped_at_home".into(), steering.at_home.into());
        map.insert("grouped_elsewhere".into(), steering.elsewhere.into());
        map.insert("home_changes".into(), steering.home_changes.into());
    }
    if let Some(blocking) = s.blocking_items {
        map.insert("blocking_items".into(), blocking.into());
    }
    if let Some(seen) = s.seen_blocked {
        map.insert("workers_seen_blocked".into(), seen.into());
    }
    if let Some(started) = s.started_for_blocked {
        map.insert("workers_started_for_blocked".into(), started.into());
    }
    if let Some(pools) = s.pools {
        map.insert("pools".into(), pools.into());
    }
    if let Some(workers) = s.workers {
        map.insert("workers".into(), workers.into());
    }
    if let Some(contended) = s.lock_contended {
        map.insert("lock_contended".into(), contended.into());
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::measurement::Percentiles;
    use crate::bench::peers::Peer;

    #[test]
    fn kernel_line_matches_the_kernel_format() {
        let settings_rows = Row {
            workload: Workload::Queue,
            system: System::Podq {
                scope: podq::AffinityScope::CacheShard,
                shard_size: 8,
                pull: true,
                steer: true,
            },
            summary: Summary {
                runs: 1,
                items_per_sec: 3_629_098.0,
                queue: Percentiles {
                    p50: 6080,
                    p90: 8896,
                    p95: 9728,
                    p99: 9999,
                },
                ..Summary::default()
            },
        };
        let settings = test_settings();
        assert_eq!(
            kernel_line(&settings_rows, &settings, KERNEL_LABEL_WIDTH),
            "cache_shard      3629098 items/sec\tp50=6080\tp90=8896\tp95=9728 ns"
        );
    }

    #[test]
    fn blocking_rows_show_the_short_items_starts_and_the_mix() {
        let start = |p50, p99| Percentiles {
            p50,
            p90: p99,
            p95: p99,
            p99,
        };
        let row = Row {
            workload: Workload::Blocking,
            system: System::Podq {
                scope: podq::AffinityScope::System,
                shard_size: 8,
                pull: true,
                steer: true,
            },
            summary: Summary {
                runs: 1,
                items_per_sec: 1000.0,
                queue: start(90, 900),
                queue_to_start: Some(start(5_000, 9_000)),
                short_start: Some(start(700, 7_000)),
                blocking_items: Some(4),
                seen_blocked: Some(3),
                started_for_blocked: Some(2),
                ..Summary::default()
            },
        };
        let mut settings = test_settings();
        settings.workloads = vec![Workload::Blocking];
        settings.mix.every = 5;
        assert_eq!(
            kernel_line(&row, &settings, KERNEL_LABEL_WIDTH),
            "system              1000 items/sec\tp50=90\tp99=900\tshort_start_p50=700\t\
             short_start_p99=7000 ns"
        );
        let table = table(Workload::Blocking, &[&row], &settings);
        let header = table.lines().next().expect("a header");
        assert!(
            header.contains("short start p50  short start p99"),
            "{table}"
        );
        assert!(header.ends_with("seen blocked"), "{table}");
        assert!(table
            .lines()
            .nth(1)
            .is_some_and(|l| l.contains("  700  ") && l.ends_with(" 3")));
        let json = json_row(&row, &settings);
        for (field, value) in [
            ("block_every", 5),
            ("block_us", 1000),
            ("blocking_items", 4),
            ("short_start_p50_ns", 700),
            ("short_start_p99_ns", 7000),
            ("queue_to_start_p50_ns", 5000),
            ("p99_ns", 900),
            ("workers_seen_blocked", 3),
            ("workers_started_for_blocked", 2),
        ] {
            assert_eq!(json[field], value, "{field} in {json}");
        }
    }

    #[test]
    fn table_columns_line_up() {
        let settings = test_settings();
        let rows = [
            Row {
                workload: Workload::Queue,
                system: System::Podq {
                    scope: podq::AffinityScope::Cpu,
                    shard_size: 8,
                    pull: false,
                    steer: true,
                },
                summary: Summary {
                    runs: 1,
                    items_per_sec: 1234.0,
                    pools: Some(2),
                    workers: Some(3),
                    ..Summary::default()
                },
            },
            Row {
                workload: Workload::Queue,
                system: System::Peer(Peer::Tokio),
                summary: Summary {
                    runs: 1,
                    items_per_sec: 98_765_432.0,
                    ..Summary::default()
                },
            },
        ];
        let refs: Vec<&Row> = rows.iter().collect();
        let out = table(Workload::Queue, &refs, &settings);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("system  scope  pull"), "{out}");
        assert!(lines[1].starts_with("podq    cpu    off"), "{out}");
        let end_of = |line: &str, field: &str| line.find(field).map(|i| i + field.len());
        assert_eq!(
            end_of(lines[1], "1234"),
            end_of(lines[2], "98765432"),
            "{out}"
        );
        assert!(lines[2].starts_with("tokio   -      -"), "{out}");
    }

    fn test_settings() -> Settings {
        Settings {
            workloads: vec![Workload::Queue],
            systems: Vec::new(),
            sweeping: false,
            pulls: vec![true],
            steers: vec![true],
            locality: crate::bench::locality::Plan::default(),
            default_peer_groups: 8,
            producer_cpus: vec![0, 1],
            peer_workers: 2,
            items_given: Some(10),
            depth: 1_000,
            yields: 1_000,
            runs: 1,
            work_ns: None,
            mix: crate::bench::blocking::Mix::default(),
            plot: None,
            json: false,
        }
    }
}
