//! `podq report` end to end with a tiny budget: the folder it writes, report.json's schema
//! (docs/report.md), every section of report.md, and its errors.

mod cli_support;

use std::path::Path;

use cli_support::podq;
use serde_json::Value;

/// Every peer `podq bench` knows: the report measures each on every step that has peers.
const PEERS: [&str; 5] = ["tokio", "rayon", "channel", "mpsc", "mutex"];

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("report.json is written");
    serde_json::from_str(&text).expect("report.json is JSON")
}

#[test]
fn a_tiny_budget_writes_every_section_with_the_documented_schema() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let out = dir.path().join("report");
    let out_arg = out.to_str().expect("a UTF-8 path");
    let run = podq(&["report", "--budget", "1s", "--out", out_arg]);
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    // Not a terminal: one line per step on stderr, and nothing on stdout.
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(
        run.stderr.contains(" 1/") && run.stderr.contains("left"),
        "{}",
        run.stderr
    );

    let report = read_json(&out.join("report.json"));
    assert_eq!(report["schema"], "podq-report");
    assert_eq!(report["schema_version"], 1);
    assert_eq!(report["complete"], true);
    assert_eq!(report["budget_s"], 1.0);
    assert!(report["elapsed_s"].as_f64().is_some_and(|s| s > 0.0));
    assert!(report["started_utc"]
        .as_str()
        .is_some_and(|s| s.ends_with(" UTC")));
    let machine = &report["machine"];
    assert!(machine["cpus"].as_u64().is_some_and(|n| n >= 1));
    assert!(machine["topology"]["description"].is_string());
    assert!(machine["fallbacks"].is_array());
    assert!(report["topology"]["pods"]["cache_shard"].is_array());
    assert!(report["topology_text"]
        .as_str()
        .is_some_and(|t| t.contains("cache_shard")));
    assert!(report["notes"].is_array());

    let planned: Vec<&str> = report["planned"]
        .as_array()
        .expect("planned steps")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    // Every workload has a step of its name on every machine (the one-producer steps need
    // two CPUs, the sweep a cache domain of more than 8 cores).
    for id in cli_support::WORKLOADS {
        assert!(planned.contains(&id), "{id} is planned: {planned:?}");
    }
    let steps = report["steps"].as_array().expect("steps");
    assert_eq!(
        steps.len(),
        planned.len(),
        "every planned step has an entry"
    );
    for (step, id) in steps.iter().zip(&planned) {
        assert_eq!(step["id"], *id);
        assert_eq!(step["status"], "done", "{step}");
        assert!(step["title"].is_string() && step["workload"].is_string());
        assert!(step["items_per_thread"].as_u64().is_some_and(|n| n >= 1));
        assert!(step["runs"].as_u64().is_some_and(|n| n >= 1));
        let command = step["command"].as_str().expect("the bench command");
        assert!(command.starts_with("podq bench --workload "), "{command}");
        let results = step["bench"]["results"].as_array().expect("bench results");
        let systems: Vec<&str> = results
            .iter()
            .filter_map(|r| r["system"].as_str())
            .collect();
        assert!(systems.contains(&"podq"), "{id}: {systems:?}");
        for peer in PEERS {
            assert!(systems.contains(&peer), "{id} measures {peer}: {systems:?}");
        }
        let plot = out.join(step["plot"].as_str().expect("a plot"));
        let svg = std::fs::read_to_string(&plot).expect("the plot is written");
        assert!(svg.contains("<svg"), "{}", plot.display());
        let bench = read_json(&out.join(step["bench_file"].as_str().expect("a bench file")));
        assert_eq!(bench["results"], step["bench"]["results"]);
        let workload = step["workload"].as_str().unwrap_or_default();
        let predicted = ["queue", "flood", "skew", "fanout", "rpc"].contains(&workload);
        if predicted {
            let cells = step["prediction"]["cells"].as_array();
            assert!(
                cells.is_some_and(|c| !c.is_empty()),
                "{id}: {}",
                step["prediction"]
            );
        } else {
            assert!(step["prediction"].is_null(), "{id}");
        }
    }

    let md = std::fs::read_to_string(out.join("report.md")).expect("report.md is written");
    for heading in [
        "# podq report: ",
        "## Machine",
        "## Summary",
        "## Workloads",
    ] {
        assert!(md.contains(heading), "report.md has {heading}");
    }
    for step in steps {
        let title = step["title"].as_str().unwrap_or_default();
        assert!(
            md.contains(&format!("### {title}\n")),
            "report.md has {title}"
        );
        let plot = step["plot"].as_str().unwrap_or_default();
        assert!(md.contains(&format!("]({plot})")), "report.md shows {plot}");
    }
    assert!(md.contains("podq sim --against"), "predictions are shown");
    assert!(!md.contains("Partial report"));
    // Human figures only: no raw number such as 1600000.0 or 1600000 in the results (a human
    // one has at most four digits before its point or unit). Code spans are exact commands,
    // whose `--items 10527` is meant to be copied, and the machine's section holds its names
    // (a kernel release, a CPU model), so both are left out of the check.
    let results = md
        .split_once("## Summary")
        .map_or(md.as_str(), |(_, rest)| rest);
    let prose: String = results.split('`').step_by(2).collect::<Vec<_>>().join(" ");
    let raw = prose
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .find(|word| word.split('.').next().is_some_and(|whole| whole.len() > 4));
    assert!(raw.is_none(), "a raw number in report.md: {raw:?}");

    // --render writes report.md again from report.json alone, and fills a page's markers.
    let page = dir.path().join("page.md");
    std::fs::write(
        &page,
        "# kept\n\n<!-- podq report: begin -->\nold\n<!-- podq report: end -->\n\nkept too\n",
    )
    .expect("a page");
    std::fs::remove_file(out.join("report.md")).expect("report.md removed");
    let page_arg = page.to_str().expect("a UTF-8 path");
    let rendered = podq(&["report", "--render", "--out", out_arg, "--page", page_arg]);
    assert_eq!(rendered.code, Some(0), "{}", rendered.stderr);
    assert_eq!(
        std::fs::read_to_string(out.join("report.md")).expect("rendered again"),
        md
    );
    let page_text = std::fs::read_to_string(&page).expect("the page");
    assert!(page_text.starts_with("# kept\n") && page_text.ends_with("kept too\n"));
    assert!(!page_text.contains("\nold\n"), "{page_text}");
    assert!(page_text.contains("(report/report.md#queue-one-producer-per-cpu-closed-loop)"));
}

#[test]
fn bad_input_is_one_line_naming_it_with_exit_code_2() {
    for (args, needle) in [
        (
            &["report", "--budget", "5x"][..],
            "--budget '5x': expected a duration such as",
        ),
        (
            &["report", "--budget", "0"][..],
            "--budget '0': give more than zero",
        ),
        (
            &["report", "--page", "x.txt"][..],
            "--page x.txt: give a Markdown file",
        ),
        (
            &["report", "--render", "--budget", "1m"][..],
            "--budget with --render",
        ),
    ] {
        let run = podq(args);
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
        assert!(run.stderr.contains(needle), "{args:?}: {}", run.stderr);
    }
    let dir = tempfile::tempdir().expect("a temporary folder");
    let out = dir.path().to_str().expect("a UTF-8 path");
    let run = podq(&["report", "--render", "--out", out]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("cannot read") && run.stderr.contains("report.json"));
}
