//! `podq topo` on the preset machines and on this machine: pod counts and CPU lists per scope,
//! the JSON shape, and the text report.

mod cli_support;

use std::collections::BTreeSet;

use cli_support::{pod_lists, podq_json, podq_ok, scope_pods};
use serde_json::Value;

const SCOPES: [&str; 6] = ["cpu", "smt", "cache", "cache_shard", "numa", "system"];

/// Runs `podq topo --machine NAME --json` plus `extra`.
fn preset(name: &str, extra: &[&str]) -> Value {
    let mut args = vec!["topo", "--machine", name, "--json"];
    args.extend_from_slice(extra);
    podq_json(&args)
}

/// `count` pods whose CPU lists are `first(i)`.
fn lists(count: usize, list: impl Fn(usize) -> String) -> Vec<String> {
    (0..count).map(list).collect()
}

/// Checks what holds for every report: each scope's pods partition the usable CPUs, ids are
/// 0.. in order of the lowest CPU, the CPU lists, nodes and CPU-to-pod map agree with the pods.
fn check_consistent(report: &Value) {
    let cpus: Vec<u64> = report["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect();
    assert!(!cpus.is_empty());
    assert!(cpus.windows(2).all(|w| w[0] < w[1]), "cpus ascending");
    assert_eq!(report["default_scope"], "cache_shard");
    assert_eq!(
        report["machine"]["cpu_count"].as_u64(),
        Some(cpus.len() as u64)
    );
    for scope in SCOPES {
        let pods = scope_pods(report, scope);
        let mut seen: Vec<u64> = pods.iter().flatten().copied().collect();
        seen.sort_unstable();
        assert_eq!(seen, cpus, "{scope}: every usable CPU in exactly one pod");
        assert!(
            pods.windows(2).all(|w| w[0][0] < w[1][0]),
            "{scope}: pods in order of their lowest CPU"
        );
        let details = report["pods"][scope].as_array().unwrap();
        assert_eq!(details.len(), pods.len(), "{scope}");
        let map = report["cpu_to_pod"][scope].as_object().unwrap();
        assert_eq!(map.len(), cpus.len(), "{scope}");
        for (i, (pod, detail)) in pods.iter().zip(details).enumerate() {
            assert_eq!(detail["id"].as_u64(), Some(i as u64), "{scope}");
            let detail_cpus: Vec<u64> = detail["cpus"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_u64().unwrap())
                .collect();
            assert_eq!(&detail_cpus, pod, "{scope} pod {i}");
            let parsed: podq::CpuSet = detail["cpu_list"].as_str().unwrap().parse().unwrap();
            assert_eq!(parsed.iter().map(|c| c as u64).collect::<Vec<_>>(), *pod);
            assert!(detail["node"].is_u64(), "{scope} pod {i} has a node");
            for cpu in pod {
                assert_eq!(
                    map[&cpu.to_string()].as_u64(),
                    Some(i as u64),
                    "{scope} cpu {cpu}"
                );
            }
        }
    }
    assert_eq!(scope_pods(report, "cpu").len(), cpus.len());
    assert_eq!(scope_pods(report, "system").len(), 1);
}

#[test]
fn grace_has_nine_cache_shards_of_eight() {
    let report = preset("grace", &[]);
    check_consistent(&report);
    assert_eq!(report["shard_size"], 8);
    assert_eq!(report["machine"]["cores"], 72);
    assert_eq!(report["machine"]["smt_width"], 1);
    assert_eq!(scope_pods(&report, "cpu").len(), 72);
    assert_eq!(scope_pods(&report, "smt").len(), 72);
    assert_eq!(pod_lists(&report, "cache"), ["0-71"]);
    assert_eq!(
        pod_lists(&report, "cache_shard"),
        lists(9, |i| format!("{}-{}", 8 * i, 8 * i + 7))
    );
    assert_eq!(pod_lists(&report, "numa"), ["0-71"]);
    assert_eq!(pod_lists(&report, "system"), ["0-71"]);
}

#[test]
fn grace_shard_size_changes_the_shards_only() {
    // 72 cores / 16 = 4.5, rounded up to 5 shards: 15 + 15 + 14 + 14 + 14 cores.
    let report = preset("grace", &["--shard-size", "16"]);
    check_consistent(&report);
    assert_eq!(report["shard_size"], 16);
    assert_eq!(
        pod_lists(&report, "cache_shard"),
        ["0-14", "15-29", "30-43", "44-57", "58-71"]
    );
    assert_eq!(pod_lists(&report, "cache"), ["0-71"]);
    // Shards of one core are the cores themselves.
    let report = preset("grace", &["--shard-size", "1"]);
    assert_eq!(
        scope_pods(&report, "cache_shard"),
        scope_pods(&report, "smt")
    );
    // A shard size above the cache domain's cores leaves one shard.
    let report = preset("grace", &["--shard-size", "1000"]);
    assert_eq!(pod_lists(&report, "cache_shard"), ["0-71"]);
}

#[test]
fn epyc_9d64_shards_are_its_ccds_with_their_smt_siblings() {
    let report = preset("epyc-9d64", &[]);
    check_consistent(&report);
    assert_eq!(report["machine"]["cpu_count"], 176);
    assert_eq!(report["machine"]["cores"], 88);
    assert_eq!(report["machine"]["smt_width"], 2);
    let ccds = lists(11, |i| {
        format!("{}-{},{}-{}", 8 * i, 8 * i + 7, 88 + 8 * i, 88 + 8 * i + 7)
    });
    assert_eq!(pod_lists(&report, "cache_shard")[0], "0-7,88-95");
    assert_eq!(pod_lists(&report, "cache_shard")[1], "8-15,96-103");
    assert_eq!(pod_lists(&report, "cache_shard"), ccds);
    assert_eq!(pod_lists(&report, "cache"), ccds);
    assert_eq!(
        pod_lists(&report, "smt"),
        lists(88, |i| format!("{i},{}", 88 + i))
    );
    assert_eq!(pod_lists(&report, "system"), ["0-175"]);
    // Shards of 4 cores split each CCD in two, siblings staying with their core.
    let report = preset("epyc-9d64", &["--shard-size", "4"]);
    check_consistent(&report);
    let shards = pod_lists(&report, "cache_shard");
    assert_eq!(shards.len(), 22);
    assert_eq!(shards[0], "0-3,88-91");
    assert_eq!(shards[1], "4-7,92-95");
}

#[test]
fn ryzen_3900x_has_four_cache_pods_of_three_cores() {
    let report = preset("ryzen-3900x", &[]);
    check_consistent(&report);
    assert_eq!(report["machine"]["cores"], 12);
    let ccxs = ["0-2,12-14", "3-5,15-17", "6-8,18-20", "9-11,21-23"];
    assert_eq!(pod_lists(&report, "cache"), ccxs);
    assert_eq!(pod_lists(&report, "cache_shard"), ccxs);
    assert_eq!(scope_pods(&report, "smt").len(), 12);
    assert_eq!(scope_pods(&report, "cpu").len(), 24);
    assert_eq!(pod_lists(&report, "numa"), ["0-23"]);
}

#[test]
fn ryzen_7950x_has_two_ccds() {
    let report = preset("ryzen-7950x", &[]);
    check_consistent(&report);
    let ccds = ["0-7,16-23", "8-15,24-31"];
    assert_eq!(pod_lists(&report, "cache"), ccds);
    assert_eq!(pod_lists(&report, "cache_shard"), ccds);
    assert_eq!(scope_pods(&report, "smt").len(), 16);
}

#[test]
fn skylake_18c_splits_its_llc_into_two_shards_of_nine_cores() {
    // 18 cores / 8 = 2.25, rounded to 2 shards of 9 cores.
    let report = preset("skylake-18c", &[]);
    check_consistent(&report);
    assert_eq!(pod_lists(&report, "cache"), ["0-35"]);
    assert_eq!(
        pod_lists(&report, "cache_shard"),
        ["0-8,18-26", "9-17,27-35"]
    );
    // 18 / 4 = 4.5, rounded up to 5 shards: 4 + 4 + 4 + 3 + 3 cores.
    let report = preset("skylake-18c", &["--shard-size", "4"]);
    assert_eq!(
        pod_lists(&report, "cache_shard"),
        [
            "0-3,18-21",
            "4-7,22-25",
            "8-11,26-29",
            "12-14,30-32",
            "15-17,33-35"
        ]
    );
}

#[test]
fn every_preset_reports_every_scope_in_kernel_order() {
    for name in podq::topology::PRESETS {
        let stdout = podq_ok(&["topo", "--machine", name, "--json"]);
        let report: Value = serde_json::from_str(&stdout).unwrap();
        check_consistent(&report);
        assert!(report["source"].as_str().unwrap().contains(name), "{name}");
        assert_eq!(report["fallbacks"], Value::Array(vec![]), "{name}");
        // Scopes appear in the kernel's order in the JSON text itself.
        let scopes_at = stdout.find("\"scopes\"").unwrap();
        let positions: Vec<usize> = SCOPES
            .iter()
            .map(|s| scopes_at + stdout[scopes_at..].find(&format!("\"{s}\":")).unwrap())
            .collect();
        assert!(
            positions.windows(2).all(|w| w[0] < w[1]),
            "{name}: {positions:?}"
        );
    }
}

#[test]
fn a_described_machine_is_reported() {
    let report = podq_json(&[
        "topo",
        "--machine",
        "sockets=2,nodes=2,caches=4,cores=32,smt=2",
        "--json",
    ]);
    check_consistent(&report);
    assert_eq!(report["machine"]["cpu_count"], 64);
    assert_eq!(report["machine"]["packages"].as_array().unwrap().len(), 2);
    assert_eq!(report["machine"]["nodes"].as_array().unwrap().len(), 2);
    assert_eq!(
        report["machine"]["cache_domains"].as_array().unwrap().len(),
        4
    );
    assert_eq!(scope_pods(&report, "numa").len(), 2);
    assert_eq!(scope_pods(&report, "cache").len(), 4);
    // Each cache domain holds 8 cores: one shard each.
    assert_eq!(
        scope_pods(&report, "cache_shard"),
        scope_pods(&report, "cache")
    );
}

#[test]
fn one_scope_can_be_asked_for() {
    let report = preset("grace", &["--scope", "default"]);
    let scopes: Vec<&String> = report["scopes"].as_object().unwrap().keys().collect();
    assert_eq!(scopes, ["cache_shard"]);
    assert_eq!(scope_pods(&report, "cache_shard").len(), 9);
    let report = preset("grace", &["--scope", "cache"]);
    let scopes: Vec<&String> = report["scopes"].as_object().unwrap().keys().collect();
    assert_eq!(scopes, ["cache"]);
    // One trailing newline is tolerated, as in sysfs.
    let report = preset("grace", &["--scope", "numa\n"]);
    assert!(report["scopes"]["numa"].is_array());
}

#[test]
fn grace_text_report_summarizes_the_machine_and_lists_the_pods() {
    let text = podq_ok(&["topo", "--machine", "grace"]);
    let line = |label: &str| -> &str {
        text.lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no {label:?} line in:\n{text}"))
    };
    assert!(line("source").contains("grace"));
    assert!(line("CPUs").contains("0-71 (72)"));
    assert!(line("cores").contains("72"));
    assert!(line("cache domains").contains("L3") && line("cache domains").contains("0-71"));
    assert!(line("nodes").contains("0-71"));
    assert!(line("fallbacks").contains("none"));
    assert!(line("shard size").contains('8'));
    // The overview: one line per scope, the default marked, numbers aligned on the right.
    let overview: Vec<&str> = SCOPES
        .iter()
        .map(|s| {
            text.lines()
                .find(|l| l.split_whitespace().next() == Some(s) && !l.contains(':'))
                .unwrap_or_else(|| panic!("no overview line for {s}:\n{text}"))
        })
        .collect();
    assert!(overview[3].contains("(default)"));
    let counts: Vec<&str> = overview
        .iter()
        .map(|l| l.split_whitespace().rev().nth(1).unwrap())
        .collect();
    assert_eq!(counts, ["72", "72", "1", "9", "1", "1"]);
    let ends: BTreeSet<usize> = overview
        .iter()
        .map(|l| l.rfind(|c: char| !c.is_whitespace()).unwrap())
        .collect();
    assert_eq!(ends.len(), 1, "right-aligned last column:\n{text}");
    // The default scope's section: its pods and the compact CPU-to-pod map.
    assert!(text.contains("cache_shard (default): 9 pods"), "{text}");
    let shard_rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("cache_shard (default):"))
        .skip(2)
        .take(9)
        .collect();
    for (i, row) in shard_rows.iter().enumerate() {
        let words: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            words,
            [
                i.to_string(),
                "0".to_owned(),
                format!("{}-{}", 8 * i, 8 * i + 7)
            ],
            "{row}"
        );
    }
    assert!(text.contains("cpu->pod: 0-7:0  8-15:1  16-23:2"), "{text}");
    assert!(
        text.lines().all(|l| l.len() <= 100),
        "lines within 100 columns"
    );
}

#[test]
fn small_machines_get_the_cpu_to_pod_map_as_a_table() {
    let text = podq_ok(&["topo", "--machine", "ryzen-3900x", "--scope", "cache"]);
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim() == "cpu->pod:")
        .expect(&text);
    let cpus: Vec<&str> = lines[at + 1].split_whitespace().collect();
    let pods: Vec<&str> = lines[at + 2].split_whitespace().collect();
    assert_eq!(cpus[0], "cpu");
    assert_eq!(pods[0], "pod");
    let expected_pods: Vec<String> = (0..24).map(|cpu| ((cpu % 12) / 3).to_string()).collect();
    assert_eq!(
        cpus[1..],
        (0..24).map(|c| c.to_string()).collect::<Vec<_>>()
    );
    assert_eq!(pods[1..], expected_pods);
    // Each pod id sits under the end of its CPU id.
    assert_eq!(lines[at + 1].len(), lines[at + 2].len());
}

#[test]
fn big_machines_stay_readable() {
    let text = podq_ok(&[
        "topo",
        "--machine",
        "sockets=2,nodes=8,caches=16,cores=128,smt=2",
    ]);
    assert!(
        text.lines().all(|l| l.len() <= 100),
        "lines within 100 columns"
    );
    // 256 single-CPU pods are laid out side by side rather than one per line.
    let cpu_section = text
        .lines()
        .skip_while(|l| !l.starts_with("cpu: 256 pods"))
        .take_while(|l| !l.is_empty())
        .count();
    assert!(cpu_section < 100, "{cpu_section} lines for the cpu scope");
    assert!(text.contains("cpu->pod: "), "{text}");
}

#[test]
fn this_machine_reports_a_consistent_topology() {
    let report = podq_json(&["topo", "--json"]);
    check_consistent(&report);
    assert_eq!(report["source"], "this machine");
    let text = podq_ok(&["topo"]);
    assert!(text.starts_with("source"), "{text}");
    assert!(text.contains("cache_shard (default)"), "{text}");
}
