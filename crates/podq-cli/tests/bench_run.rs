//! Tiny real runs of `podq bench`: the text report, the JSON's documented shape with every
//! default scope and every peer, the flood and blocking workloads, the skew, fanout and rpc
//! workloads with pull on and off, the locality workload with steering on and off, a
//! shard-size sweep and the SVG plot.

mod cli_support;

use std::process::Command;

use serde_json::Value;

const SCOPES: [&str; 6] = ["cpu", "smt", "cache_shard", "cache", "numa", "system"];
const PEERS: [&str; 4] = ["tokio", "rayon", "channel", "mpsc"];

/// Runs `podq bench ARGS`, checks it succeeded, and returns stdout.
fn bench(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_podq"))
        .arg("bench")
        .args(args)
        .output()
        .expect("the podq binary runs");
    assert!(
        out.status.success(),
        "podq bench {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn bench_json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let text = bench(&all);
    serde_json::from_str(&text).unwrap_or_else(|err| panic!("not JSON ({err}): {text}"))
}

fn results(json: &Value) -> &[Value] {
    json["results"].as_array().expect("results is an array")
}

fn u64_of(row: &Value, key: &str) -> u64 {
    row[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is not a whole number in {row}"))
}

/// The checks every row passes: positive items/sec, ordered percentiles, the run's settings.
fn check_row(row: &Value, workload: &str, items: u64) {
    assert_eq!(row["workload"], workload, "{row}");
    assert_eq!(u64_of(row, "items_per_thread"), items, "{row}");
    assert_eq!(u64_of(row, "runs"), 1, "{row}");
    let ips = u64_of(row, "items_per_sec");
    assert!(ips > 0, "{row}");
    assert!(
        u64_of(row, "items_per_sec_min") <= ips && ips <= u64_of(row, "items_per_sec_max"),
        "{row}"
    );
    let (p50, p90, p95) = (
        u64_of(row, "p50_ns"),
        u64_of(row, "p90_ns"),
        u64_of(row, "p95_ns"),
    );
    assert!(p50 <= p90 && p90 <= p95, "{row}");
    match row["system"].as_str() {
        Some("podq") => {
            let pulled = u64_of(row, "pulled");
            match row["pull"].as_str() {
                Some("on") => {}
                Some("off") => assert_eq!(pulled, 0, "nothing is pulled with pull off: {row}"),
                _ => panic!("podq rows say pull on or off: {row}"),
            }
            let scope = row["scope"].as_str().expect("podq rows name their scope");
            assert!(SCOPES.contains(&scope), "{row}");
            assert!(u64_of(row, "pools") >= 1, "{row}");
            assert!(
                u64_of(row, "workers") >= 1,
                "the items ran on at least one worker: {row}"
            );
            assert_eq!(
                row.get("shard_size").is_some(),
                scope == "cache_shard",
                "{row}"
            );
        }
        Some(peer) => {
            assert!(PEERS.contains(&peer) || peer == "mutex", "{row}");
            assert!(
                row.get("scope").is_none() && row.get("pools").is_none(),
                "peers have no scope: {row}"
            );
            assert!(
                row.get("pull").is_none() && row.get("pulled").is_none(),
                "peers do not pull: {row}"
            );
        }
        None => panic!("no system in {row}"),
    }
}

#[test]
fn queue_json_has_every_default_scope_and_every_peer() {
    let json = bench_json(&["--items", "200", "--runs", "1"]);
    let machine = &json["machine"];
    let cpus = u64_of(machine, "cpus");
    assert!(cpus >= 1 && u64_of(machine, "cores") >= 1, "{machine}");
    assert!(machine["usable_cpus"].is_string(), "{machine}");
    assert_eq!(
        u64_of(&json["settings"], "threads"),
        cpus,
        "one producer per usable CPU"
    );
    let rows = results(&json);
    for row in rows {
        check_row(row, "queue", 200);
        assert!(
            row.get("p99_ns").is_none(),
            "queue rows report p50/p90/p95: {row}"
        );
    }
    let podq_scopes: Vec<&str> = rows
        .iter()
        .filter(|r| r["system"] == "podq")
        .filter_map(|r| r["scope"].as_str())
        .collect();
    assert_eq!(podq_scopes, SCOPES, "every scope, in the kernel's order");
    let peers: Vec<&str> = rows
        .iter()
        .filter(|r| r["system"] != "podq")
        .filter_map(|r| r["system"].as_str())
        .collect();
    assert_eq!(peers, PEERS);
    let shard = rows
        .iter()
        .find(|r| r["scope"] == "cache_shard")
        .expect("a cache_shard row");
    assert_eq!(u64_of(shard, "shard_size"), 8, "the default shard size");
}

#[test]
fn text_report_prints_kernel_lines_then_the_table() {
    let text = bench(&[
        "--items",
        "100",
        "--threads",
        "1",
        "--scopes",
        "cache_shard,system",
        "--peers",
        "channel",
    ]);
    assert!(text.starts_with("machine: "), "{text}");
    for name in ["cache_shard", "system", "channel"] {
        let line = text
            .lines()
            .find(|line| line.starts_with(name) && line.contains(" items/sec\tp50="))
            .unwrap_or_else(|| panic!("no kernel line for {name} in:\n{text}"));
        assert!(
            line.contains("\tp90=") && line.contains("\tp95=") && line.ends_with(" ns"),
            "{line}"
        );
    }
    let header = text
        .lines()
        .find(|l| l.split_whitespace().take(2).eq(["system", "scope"]))
        .expect("a table header");
    for column in [
        "items/sec",
        "min-max",
        "p50 ns",
        "p95 ns",
        "pools",
        "workers",
    ] {
        assert!(header.contains(column), "{header}");
    }
    assert!(
        text.lines()
            .any(|l| l.starts_with("podq") && l.contains("cache_shard")),
        "{text}"
    );
}

#[test]
fn flood_json_adds_p99_and_queue_to_start() {
    let json = bench_json(&["--workload", "flood", "--items", "300", "--work-ns", "200"]);
    let rows = results(&json);
    assert_eq!(rows.len(), SCOPES.len() + PEERS.len());
    for row in rows {
        check_row(row, "flood", 300);
        let p99 = u64_of(row, "p99_ns");
        assert!(u64_of(row, "p95_ns") <= p99, "{row}");
        let start50 = u64_of(row, "queue_to_start_p50_ns");
        assert!(start50 <= u64_of(row, "queue_to_start_p99_ns"), "{row}");
    }
}

#[test]
fn sweep_measures_cache_shard_at_each_size_and_plots_svg() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let plot = dir.path().join("bench.svg");
    let plot_arg = plot.to_str().expect("UTF-8 temp path");
    let json = bench_json(&[
        "--items",
        "100",
        "--scopes",
        "cpu,cache_shard",
        "--peers",
        "rayon",
        "--sweep",
        "shard-size=1,2",
        "--plot",
        plot_arg,
    ]);
    let rows = results(&json);
    let labels: Vec<(String, Option<u64>)> = rows
        .iter()
        .map(|r| {
            (
                r["scope"]
                    .as_str()
                    .unwrap_or(r["system"].as_str().unwrap_or("?"))
                    .to_owned(),
                r["shard_size"].as_u64(),
            )
        })
        .collect();
    assert_eq!(
        labels,
        [
            ("cpu".to_owned(), None),
            ("cache_shard".to_owned(), Some(1)),
            ("cache_shard".to_owned(), Some(2)),
            ("rayon".to_owned(), None)
        ]
    );
    assert!(
        u64_of(&rows[1], "pools") >= u64_of(&rows[2], "pools"),
        "smaller shards, no fewer pools"
    );
    let svg = std::fs::read_to_string(&plot).expect("the plot was written");
    assert!(
        svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
        "not SVG: {svg:.200}"
    );
    assert!(
        svg.contains("podq cache_shard") && svg.contains("rayon") && svg.contains("workers"),
        "the sweep's curve, the peer's line and the worker counts drawn"
    );
}

#[test]
fn every_workload_reports_its_rows_with_pull_on_and_off() {
    let json = bench_json(&[
        "--workload",
        "all",
        "--items",
        "64",
        "--scopes",
        "cpu",
        "--pull",
        "on,off",
        "--work-ns",
        "100",
        "--block-us",
        "50",
        "--depth",
        "10",
        "--yields",
        "10",
    ]);
    let threads = u64_of(&json["settings"], "threads");
    assert_eq!(json["settings"]["pull"], serde_json::json!(["on", "off"]));
    let rows = results(&json);
    let workloads = cli_support::WORKLOADS;
    assert_eq!(rows.len(), workloads.len() * (2 + PEERS.len()));
    for (workload, rows) in workloads.iter().zip(rows.chunks(2 + PEERS.len())) {
        assert_eq!(u64_of(&json["settings"]["work_ns"], workload), 100);
        let systems: Vec<(&str, &str)> = rows
            .iter()
            .map(|r| {
                (
                    r["system"].as_str().unwrap_or("?"),
                    r["pull"].as_str().unwrap_or("-"),
                )
            })
            .collect();
        assert_eq!(
            systems[..3],
            [("podq", "on"), ("podq", "off"), ("tokio", "-")],
            "every podq scope once per pull value, then the peers"
        );
        for row in rows {
            check_row(row, workload, 64);
            assert_eq!(u64_of(row, "work_ns"), 100, "{row}");
            let producers = if *workload == "skew" { 1 } else { threads };
            assert_eq!(u64_of(row, "threads"), producers, "{row}");
            if *workload == "queue" {
                continue;
            }
            if ["chain", "yield", "spawn-local"].contains(workload) {
                assert!(
                    row["ns_per_item"].as_f64().is_some_and(|ns| ns > 0.0),
                    "{row}"
                );
                let podq = row["system"] == "podq";
                assert_eq!(row.get("by_queuer").is_some(), podq, "{row}");
                continue;
            }
            assert!(u64_of(row, "p95_ns") <= u64_of(row, "p99_ns"), "{row}");
            if *workload == "rpc" {
                assert_eq!(
                    u64_of(row, "round_trips"),
                    threads * 64,
                    "one pair per producer, every round trip counted: {row}"
                );
                let per_sec = u64_of(row, "round_trips_per_sec");
                assert!(per_sec > 0, "{row}");
                assert!(
                    u64_of(row, "items_per_sec").abs_diff(2 * per_sec) <= 2,
                    "two hops per round trip: {row}"
                );
                assert!(
                    u64_of(row, "hop_p50_ns") <= u64_of(row, "hop_p99_ns"),
                    "{row}"
                );
                assert!(row.get("queue_to_start_p50_ns").is_none(), "{row}");
            } else {
                let start50 = u64_of(row, "queue_to_start_p50_ns");
                assert!(start50 <= u64_of(row, "queue_to_start_p99_ns"), "{row}");
                assert!(row.get("round_trips").is_none(), "{row}");
            }
            let blocking = *workload == "blocking";
            assert_eq!(row.get("short_start_p50_ns").is_some(), blocking, "{row}");
            assert_eq!(row.get("block_every").is_some(), blocking, "{row}");
            if blocking {
                assert_eq!(u64_of(row, "block_us"), 50, "{row}");
                assert_eq!(
                    u64_of(row, "blocking_items"),
                    threads * 6,
                    "one in 10 of 64 items per producer: {row}"
                );
            }
        }
    }
}

/// The checks of a blocking row: flood's fields, the mix, the items that blocked and the short
/// items' starts; podq rows count the workers seen blocked and started for them.
fn check_blocking_row(row: &Value, items: u64, every: u64, block_us: u64, producers: u64) {
    check_row(row, "blocking", items);
    assert!(u64_of(row, "p95_ns") <= u64_of(row, "p99_ns"), "{row}");
    assert!(
        u64_of(row, "queue_to_start_p50_ns") <= u64_of(row, "queue_to_start_p99_ns"),
        "{row}"
    );
    assert!(
        u64_of(row, "short_start_p50_ns") <= u64_of(row, "short_start_p99_ns"),
        "{row}"
    );
    assert_eq!(u64_of(row, "block_every"), every, "{row}");
    assert_eq!(u64_of(row, "block_us"), block_us, "{row}");
    assert_eq!(
        u64_of(row, "work_ns"),
        0,
        "short items default to no work: {row}"
    );
    assert_eq!(
        u64_of(row, "blocking_items"),
        producers * (items / every),
        "item n blocks when n + 1 is a multiple of --block-every: {row}"
    );
    let podq = row["system"] == "podq";
    for field in ["workers_seen_blocked", "workers_started_for_blocked"] {
        assert_eq!(row.get(field).is_some(), podq, "{field}: {row}");
    }
    if podq {
        assert!(
            u64_of(row, "workers_started_for_blocked") <= u64_of(row, "workers"),
            "workers started for blocked ones are workers created: {row}"
        );
    }
}

#[test]
fn blocking_json_reports_the_mix_and_the_short_items_starts_beside_every_peer() {
    let json = bench_json(&[
        "--workload",
        "blocking",
        "--items",
        "40",
        "--block-every",
        "4",
        "--block-us",
        "100",
        "--scopes",
        "cache_shard,cpu",
        "--peers",
        "tokio,rayon,channel,mpsc,mutex",
    ]);
    let threads = u64_of(&json["settings"], "threads");
    let rows = results(&json);
    let systems: Vec<&str> = rows.iter().filter_map(|r| r["system"].as_str()).collect();
    assert_eq!(
        systems,
        ["podq", "podq", "tokio", "rayon", "channel", "mpsc", "mutex"]
    );
    for row in rows {
        check_blocking_row(row, 40, 4, 100, threads);
    }

    // --block-every larger than --items: no item blocks, every item is short.
    let json = bench_json(&[
        "--workload",
        "blocking",
        "--items",
        "5",
        "--block-every",
        "6",
        "--scopes",
        "system",
        "--peers",
        "none",
        "--threads",
        "1",
    ]);
    let row = &results(&json)[0];
    check_blocking_row(row, 5, 6, 1000, 1);
    assert_eq!(u64_of(row, "blocking_items"), 0, "{row}");
}

#[test]
fn blocking_text_report_shows_the_short_items_starts() {
    let text = bench(&[
        "--workload",
        "blocking",
        "--items",
        "30",
        "--block-us",
        "20",
        "--block-every",
        "3",
        "--scopes",
        "cache_shard",
        "--peers",
        "tokio",
    ]);
    assert!(
        text.contains("x 30 items, one in 3 blocking for 20 us"),
        "the heading names the mix: {text}"
    );
    for name in ["cache_shard", "tokio"] {
        let line = text
            .lines()
            .find(|line| line.starts_with(name) && line.contains(" items/sec\tp50="))
            .unwrap_or_else(|| panic!("no kernel line for {name} in:\n{text}"));
        assert!(
            line.contains("\tp99=")
                && line.contains("\tshort_start_p50=")
                && line.contains("\tshort_start_p99="),
            "{line}"
        );
    }
    let header = text
        .lines()
        .find(|l| l.split_whitespace().take(2).eq(["system", "scope"]))
        .expect("a table header");
    for column in ["short start p50", "short start p99", "seen blocked"] {
        assert!(header.contains(column), "{header}");
    }
}

#[test]
fn text_report_labels_pull_and_cpu_bound_workloads_default_to_ten_microseconds() {
    let text = bench(&[
        "--workload",
        "skew",
        "--items",
        "20",
        "--scopes",
        "cpu",
        "--peers",
        "none",
        "--pull",
        "off,on",
    ]);
    assert!(
        text.contains("skew: 1 producer thread (CPU") && text.contains("10000 ns of work per item"),
        "{text}"
    );
    let off = text
        .find("cpu pull=off ")
        .expect("a kernel line for pull off");
    let on = text
        .find("cpu pull=on ")
        .expect("a kernel line for pull on");
    assert!(off < on, "the order given: {text}");
    let header = text
        .lines()
        .find(|l| l.split_whitespace().take(3).eq(["system", "scope", "pull"]))
        .expect("a table header with the pull column");
    assert!(header.contains("pulled"), "{header}");
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().take(3).eq(["podq", "cpu", "off"])),
        "{text}"
    );

    let json = bench_json(&[
        "--workload",
        "rpc",
        "--items",
        "20",
        "--scopes",
        "cpu",
        "--peers",
        "none",
    ]);
    let row = &results(&json)[0];
    assert_eq!(row["pull"], "on", "pull is on by default: {row}");
    assert_eq!(u64_of(row, "work_ns"), 0, "{row}");
    let text = bench(&[
        "--workload",
        "fanout",
        "--items",
        "20",
        "--peers",
        "mutex",
        "--scopes",
        "system",
    ]);
    assert!(
        text.contains("teams of 4 senders and 4 receivers") || text.contains("1 team of 4"),
        "{text}"
    );
    assert!(text.contains("10000 ns of work per item"), "{text}");
    assert!(text.contains(" items/sec\tp50="), "{text}");
}

#[test]
fn locality_json_measures_each_scope_with_steering_on_and_off_beside_the_peers() {
    let items = 40;
    let json = bench_json(&[
        "--workload",
        "locality",
        "--items",
        "40",
        "--scopes",
        "cpu,cache",
        "--peers",
        "channel",
        "--steer",
        "on,off",
        "--set-kb",
        "16",
    ]);
    let threads = u64_of(&json["settings"], "threads");
    assert_eq!(json["settings"]["steer"], serde_json::json!(["on", "off"]));
    let rows = results(&json);
    let systems: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["system"].as_str().unwrap_or("?"),
                r["scope"].as_str().unwrap_or("-"),
                r["steer"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(
        systems,
        [
            ("podq", "cpu", "on"),
            ("podq", "cpu", "off"),
            ("podq", "cache", "on"),
            ("podq", "cache", "off"),
            ("channel", "-", "-"),
        ],
        "every podq scope once per steering value, then the peers"
    );
    let cpu_groups = u64_of(&rows[0], "groups");
    for row in rows {
        check_row(row, "locality", items);
        assert_eq!(u64_of(row, "set_kb"), 16, "{row}");
        assert_eq!(u64_of(row, "load"), 40, "the default load: {row}");
        assert!(u64_of(row, "item_ns") > 0, "{row}");
        assert!(u64_of(row, "item_run_ns") > 0, "{row}");
        assert!(u64_of(row, "walk_ns") > 0, "{row}");
        assert_eq!(
            row["item_ns"], rows[0]["item_ns"],
            "one pace for every system: {row}"
        );
        let busy = row["cpu_busy"].as_f64().unwrap_or(-1.0);
        assert!(busy >= 0.0, "the busy fraction: {row}");
        check_cpu_reuse(row);
        assert!(
            u64_of(row, "run_p50_ns") <= u64_of(row, "run_p99_ns"),
            "{row}"
        );
        assert_eq!(
            u64_of(row, "start_p99_ns"),
            u64_of(row, "queue_to_start_p99_ns"),
            "{row}"
        );
        if row["system"] == "podq" {
            assert_eq!(
                u64_of(row, "groups"),
                4 * u64_of(row, "pools"),
                "four groups per pod: {row}"
            );
            let grouped = u64_of(row, "grouped_at_home") + u64_of(row, "grouped_elsewhere");
            if row["steer"] == "on" {
                assert_eq!(grouped, threads * items, "every item steered: {row}");
            } else {
                // Without steering a group's calls are the plain ones.
                assert_eq!(grouped + u64_of(row, "home_changes"), 0, "{row}");
            }
        } else {
            assert_eq!(
                u64_of(row, "groups"),
                cpu_groups,
                "the peers run the first scope's groups: {row}"
            );
            assert!(row.get("grouped_at_home").is_none(), "{row}");
        }
    }
}

#[test]
fn locality_overload_runs_one_group_at_full_load_and_the_text_labels_steering() {
    let out = bench(&[
        "--workload",
        "locality",
        "--items",
        "30",
        "--scopes",
        "cpu",
        "--peers",
        "none",
        "--steer",
        "on,off",
        "--load",
        "100",
        "--groups",
        "1",
        "--set-kb",
        "8",
    ]);
    assert!(
        out.contains("x 30 items of 1 group walking 8 KiB each, paced by the hot walk")
            && out.contains("per item): the overload case"),
        "{out}"
    );
    for label in ["cpu steer=on", "cpu steer=off"] {
        let line = out
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no line for {label}: {out}"));
        assert!(
            line.contains("start_p99=") && line.contains("run_p50=") && line.contains("run_p99="),
            "{line}"
        );
    }
    assert!(
        out.contains("steer") && out.contains("run p50") && out.contains("busy"),
        "{out}"
    );
}

/// A locality row's split of its items by whether they ran on their group's previous item's
/// CPU: a fraction, with the run time p50 of each side that had items. Linux tells the CPU, so
/// there the split is always there.
fn check_cpu_reuse(row: &serde_json::Value) {
    let Some(same) = row["same_cpu"].as_f64() else {
        if cfg!(target_os = "linux") {
            panic!("no same_cpu on Linux: {row}");
        }
        return;
    };
    assert!((0.0..=1.0).contains(&same), "{row}");
    assert_eq!(
        row["run_p50_same_cpu_ns"].is_u64(),
        same > 0.0,
        "a p50 for the items on their group's CPU exactly when there were some: {row}"
    );
    assert_eq!(
        row["run_p50_moved_ns"].is_u64(),
        same < 1.0,
        "a p50 for the items that moved exactly when there were some: {row}"
    );
}
