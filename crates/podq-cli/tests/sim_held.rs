//! `podq sim` with the workloads whose items queue items (`chain`, `yield`, `spawn-local`): the
//! time per item and the share run by their queuer per scope, `--depth` and `--yields` checked,
//! and `--against` comparing that share with a bench run's; and the share of any workload's
//! items that a busy podq worker took from its pool's head ahead (H8).

mod cli_support;

use cli_support::{against_json, assert_one_line_error, podq_json, podq_ok, podq_sim_text};

/// `podq sim` of `workload` on a 4-core machine, one scope, as JSON rows.
fn rows(profile: &str, workload: &str, extra: &[&str]) -> Vec<serde_json::Value> {
    let mut args = vec![
        "sim",
        "--machine",
        "cores=4",
        "--profile",
        profile,
        "--workload",
        workload,
        "--scopes",
        "system",
        "--uncertainty",
        "0",
        "--json",
    ];
    args.extend_from_slice(extra);
    podq_json(&args)["results"].as_array().unwrap().clone()
}

#[test]
fn chain_rows_give_the_time_per_item_and_the_share_run_by_the_queuer() {
    let podq = rows("podq", "chain", &["--items", "3", "--depth", "100"]);
    let kernel = rows("kernel", "chain", &["--items", "3", "--depth", "100"]);
    for row in podq.iter().chain(&kernel) {
        assert_eq!(row["workload"], "chain");
        assert_eq!(row["depth"], 100);
        assert_eq!(row["items_per_thread"], 3);
        let per_item = row["ns_per_item"].as_f64().unwrap();
        let per_sec = row["items_per_sec"].as_f64().unwrap();
        assert!((per_item * per_sec / 1e9 - 1.0).abs() < 0.01, "{row}");
    }
    assert!(podq[0]["by_queuer"].as_f64().unwrap() > 0.8, "{}", podq[0]);
    assert_eq!(kernel[0]["by_queuer"].as_f64().unwrap(), 0.0);
    let text = podq_sim_text(
        "yield",
        &["--items", "8", "--yields", "20", "--scopes", "cpu,system"],
    );
    assert!(
        text.contains("items, each queueing its continuation 20 times"),
        "{text}"
    );
    for scope in ["cpu", "system"] {
        let line = text
            .lines()
            .find(|l| l.starts_with(scope) && l.contains("items/sec"))
            .unwrap_or_else(|| panic!("no {scope} line: {text}"));
        for field in ["per_item=", "by_queuer=", "taken_over=", "range="] {
            assert!(line.contains(field), "{line}");
        }
    }
}

#[test]
fn flood_rows_of_the_podq_profile_give_the_share_taken_ahead_and_the_kernels_none() {
    let podq = rows("podq", "flood", &["--items", "2000"]);
    let kernel = rows("kernel", "flood", &["--items", "2000"]);
    let ran = podq[0]["ran_ahead"].as_u64().unwrap();
    let share = podq[0]["ahead"].as_f64().unwrap();
    assert!(ran > 0, "{}", podq[0]);
    // Four producers on the 4 CPUs, 2000 items each.
    assert!((share * 8000.0 - ran as f64).abs() < 0.5, "{}", podq[0]);
    assert!(kernel[0].get("ahead").is_none(), "{}", kernel[0]);
    assert!(kernel[0].get("ran_ahead").is_none(), "{}", kernel[0]);
    let text = podq_sim_text(
        "flood",
        &[
            "--items",
            "2000",
            "--scopes",
            "system",
            "--uncertainty",
            "0",
        ],
    );
    let line = text
        .lines()
        .find(|l| l.starts_with("system") && l.contains("items/sec"))
        .unwrap_or_else(|| panic!("no system line: {text}"));
    assert!(line.contains("\tahead="), "{line}");
}

#[test]
fn depth_and_yields_are_checked_and_only_for_their_workload() {
    let cases: [(&[&str], &[&str]); 5] = [
        (&["--workload", "chain", "--depth", "0"], &["--depth 0"]),
        (
            &["--workload", "queue", "--depth", "5"],
            &["--depth", "chain"],
        ),
        (
            &["--workload", "chain", "--yields", "5"],
            &["--yields", "yield"],
        ),
        (&["--workload", "yield", "--yields", "x"], &["--yields 'x'"]),
        (&["--workload", "spawn"], &["'spawn'", "spawn-local"]),
    ];
    for (args, mentions) in cases {
        let mut all = vec!["sim", "--machine", "cores=2"];
        all.extend_from_slice(args);
        assert_one_line_error(&all, 2, mentions);
    }
}

#[test]
fn against_compares_the_share_run_by_the_queuer_with_the_bench_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chain.json");
    let bench = podq_ok(&[
        "bench",
        "--workload",
        "chain",
        "--items",
        "2",
        "--depth",
        "50",
        "--runs",
        "1",
        "--peers",
        "none",
        "--scopes",
        "cpu,system",
        "--json",
    ]);
    std::fs::write(&path, &bench).unwrap();
    let report = against_json(path.to_str().unwrap(), &[]);
    let cells = report["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2, "{report}");
    for cell in cells {
        assert_eq!(cell["workload"], "chain");
        let predicted = cell["predicted_by_queuer"].as_f64().unwrap();
        let measured = cell["measured_by_queuer"].as_f64().unwrap();
        assert!(
            (0.0..=1.0).contains(&predicted) && predicted > 0.5,
            "{cell}"
        );
        assert!((0.0..=1.0).contains(&measured), "{cell}");
    }
}
