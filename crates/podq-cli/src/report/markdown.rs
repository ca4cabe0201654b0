//! report.md, and the summary a page takes, written from report.json alone: a report can be
//! rendered again (`podq report --render`) without measuring anything.

use std::time::Duration;

use serde_json::Value;

use super::human::{count, duration, error, nanos, percent, ratio};
use super::verdict::{compare, Comparison};

/// The whole report.md of `report`; `partial` reports are said to be so at the top.
pub(crate) fn report(report: &Value) -> String {
    let mut out = format!("# podq report: {}\n\n", title(report));
    out.push_str(&status_line(report));
    out.push_str("\n\n## Machine\n\n");
    out.push_str(&machine_table(report));
    out.push_str(&notes(report));
    if let Some(text) = report["topology_text"].as_str() {
        out.push_str("\nThe pods of every scope, as `podq topo` shows them:\n\n```text\n");
        out.push_str(text.trim_end());
        out.push_str("\n```\n");
    }
    out.push_str("\n## Summary\n\n");
    out.push_str(&summary_table(report, ""));
    out.push_str("\n## Workloads\n");
    for step in steps(report) {
        out.push_str(&step_section(step));
    }
    out.push_str(&format!(
        "\n---\nWritten by `podq report` (report.json schema version {}); every figure is a \
         median over the runs, with the min-max of items/s; ratios above 1.00x favour podq.\n",
        report["schema_version"]
    ));
    out
}

/// The summary a page shows: machine, notes and one line per step, with links into the report
/// at `link` (the report's folder relative to the page, ending in `/`).
pub(crate) fn page_summary(report: &Value, link: &str) -> String {
    let mut out = format!(
        "From [`podq report`]({link}report.md) of {}: {}\n\n",
        title(report),
        status_line(report)
    );
    out.push_str(&machine_table(report));
    out.push_str(&notes(report));
    out.push('\n');
    out.push_str(&summary_table(report, link));
    out
}

/// `AMD EPYC ..., 2 usable CPUs`.
fn title(report: &Value) -> String {
    let machine = &report["machine"];
    let model = machine["model"].as_str().unwrap_or("unknown CPU");
    match machine["cpus"].as_u64() {
        Some(1) => format!("{model}, 1 usable CPU"),
        Some(cpus) => format!("{model}, {cpus} usable CPUs"),
        None => model.to_owned(),
    }
}

/// Version, date, budget and time taken, and whether every step was measured.
fn status_line(report: &Value) -> String {
    let secs = |key: &str| Duration::from_secs_f64(report[key].as_f64().unwrap_or(0.0).max(0.0));
    let done = steps(report).filter(|s| s["status"] == "done").count();
    let planned = report["planned"].as_array().map_or(0, Vec::len);
    let mut line = format!(
        "podq {}, {}, budget {}, took {}.",
        report["podq_version"].as_str().unwrap_or("?"),
        report["started_utc"].as_str().unwrap_or("?"),
        duration(secs("budget_s")),
        duration(secs("elapsed_s")),
    );
    if report["complete"] != true {
        line.push_str(&format!(
            " **Partial report: {done} of {planned} steps measured** (the run was stopped or \
             is still going)."
        ));
    } else if done < planned {
        line.push_str(&format!(
            " {} of {planned} steps failed; their sections say why.",
            planned - done
        ));
    }
    line
}

/// The machine as a two-column table.
fn machine_table(report: &Value) -> String {
    let m = &report["machine"];
    if m.is_null() {
        return "No step has measured yet: the machine is described by the first.\n".to_owned();
    }
    let text = |v: &Value| v.as_str().unwrap_or("-").to_owned();
    let level = m["cache_level"]
        .as_u64()
        .map_or("no cache level known".to_owned(), |l| format!("L{l}"));
    let fallbacks: Vec<String> = m["fallbacks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f.as_str().map(str::to_owned))
        .collect();
    let fallbacks = if fallbacks.is_empty() {
        "none: sysfs described every CPU and cache".to_owned()
    } else {
        fallbacks.join("; ")
    };
    let rows = [
        ("CPU", text(&m["model"])),
        (
            "kernel",
            m["kernel"]
                .as_str()
                .map_or("-".into(), |k| format!("Linux {k}")),
        ),
        (
            "CPUs",
            format!(
                "{} usable ({}), {}, {} ({level}), {}",
                m["cpus"],
                text(&m["usable_cpus"]),
                plural(&m["cores"], "core"),
                plural(&m["cache_domains"], "cache domain"),
                plural(&m["nodes"], "node")
            ),
        ),
        (
            "topology",
            format!("`{}`", text(&m["topology"]["description"])),
        ),
        ("read from", text(&m["source"])),
        ("fallbacks", fallbacks),
    ];
    let mut out = "| | |\n|---|---|\n".to_owned();
    for (key, value) in rows {
        out.push_str(&format!("| {key} | {} |\n", cell(&value)));
    }
    out
}

/// The report's notes as a list, after a blank line; nothing without notes.
fn notes(report: &Value) -> String {
    let notes: Vec<&str> = report["notes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if notes.is_empty() {
        return String::new();
    }
    let mut out = "\n".to_owned();
    for note in notes {
        out.push_str(&format!("- {note}\n"));
    }
    out
}

/// One line per step: podq's default, the best peer, the ratio and the verdict; step names
/// link to their sections in the report at `link` (empty: this page).
fn summary_table(report: &Value, link: &str) -> String {
    let mut out = "| step | podq default | best peer | podq / best peer | verdict |\n\
                   |---|---|---|---|---|\n"
        .to_owned();
    for step in steps(report) {
        let id = step["id"].as_str().unwrap_or("?");
        let name = format!(
            "[{id}]({link}{}#{})",
            if link.is_empty() { "" } else { "report.md" },
            anchor(step)
        );
        if step["status"] != "done" {
            out.push_str(&format!(
                "| {name} | - | - | - | failed: {} |\n",
                cell(step["error"].as_str().unwrap_or("?"))
            ));
            continue;
        }
        let c = compare(step);
        let best = c
            .best_peer
            .as_ref()
            .map_or("-".to_owned(), |p| format!("{} {}", p.label, c.figure(p)));
        let default = c.default.as_ref().map_or("-".to_owned(), |d| c.figure(d));
        out.push_str(&format!(
            "| {name} | {default} | {best} | {} | {} |\n",
            c.ratio.map_or("-".to_owned(), ratio),
            cell(&c.verdict)
        ));
    }
    out
}

/// The steps of `report`, in order.
fn steps(report: &Value) -> impl Iterator<Item = &Value> {
    report["steps"].as_array().into_iter().flatten()
}

/// The anchor GitHub gives a step's heading.
fn anchor(step: &Value) -> String {
    let title = step["title"].as_str().unwrap_or("");
    title
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            'a'..='z' | '0'..='9' | '-' | '_' => Some(c),
            ' ' => Some('-'),
            _ => None,
        })
        .collect()
}

/// A step's section: heading, command, verdict, table, plot, prediction.
fn step_section(step: &Value) -> String {
    let mut out = format!("\n### {}\n\n", step["title"].as_str().unwrap_or("?"));
    out.push_str(&format!("`{}`", step["command"].as_str().unwrap_or("?")));
    if step["status"] != "done" {
        out.push_str(&format!(
            "\n\nThis step failed: {}\n",
            step["error"].as_str().unwrap_or("?")
        ));
        return out;
    }
    let settings = &step["bench"]["settings"];
    out.push_str(&format!(
        ": {}, {} items each, {} per configuration, in {}.\n\n",
        plural(&settings["threads"], "producer thread"),
        count(step["items_per_thread"].as_f64().unwrap_or(0.0)),
        match step["runs"].as_u64() {
            Some(1) => "1 run".to_owned(),
            Some(n) => format!("median of {n} runs"),
            None => "?".to_owned(),
        },
        duration(Duration::from_secs_f64(
            step["seconds"].as_f64().unwrap_or(0.0).max(0.0)
        ))
    ));
    let c = compare(step);
    out.push_str(&format!("**{}**\n\n", c.verdict));
    out.push_str(&results_table(step, &c));
    if let Some(plot) = step["plot"].as_str() {
        out.push_str(&format!(
            "\n![{}]({plot})\n",
            step["id"].as_str().unwrap_or("plot")
        ));
    }
    out.push_str(&prediction(step));
    out
}

/// Every system's figures in a step, podq's default against each.
fn results_table(step: &Value, c: &Comparison) -> String {
    let rows: Vec<&Value> = step["bench"]["results"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    let has = |key: &str, value: &str| rows.iter().any(|r| r[key] == value);
    let show_pull = has("pull", "off");
    let show_steer = has("steer", "off");
    let workload = step["workload"].as_str().unwrap_or("");
    let mut header = vec!["system".to_owned()];
    if show_pull {
        header.push("pull".into());
    }
    if show_steer {
        header.push("steer".into());
    }
    header.push(format!("{}, median (min-max)", c.unit));
    header.push("spread".into());
    header.push("podq default / this".into());
    let extra: Vec<(&str, &str)> = match workload {
        "queue" => vec![("queue call p50", "p50_ns"), ("p95", "p95_ns")],
        "rpc" => vec![
            ("hop p50", "hop_p50_ns"),
            ("hop p99", "hop_p99_ns"),
            ("by queuer", "by_queuer"),
        ],
        "blocking" => vec![
            ("short items' start p50", "short_start_p50_ns"),
            ("p99", "short_start_p99_ns"),
        ],
        "locality" => vec![
            ("run p50", "run_p50_ns"),
            ("run p99", "run_p99_ns"),
            ("start p99", "start_p99_ns"),
            ("same CPU", "same_cpu"),
        ],
        "chain" | "yield" | "spawn-local" => {
            vec![("time per item", "ns_per_item"), ("by queuer", "by_queuer")]
        }
        "checksum" => vec![
            ("time per item", "ns_per_item"),
            ("queue call p50", "p50_ns"),
            ("queue-to-start p99", "queue_to_start_p99_ns"),
        ],
        _ => vec![
            ("queue call p50", "p50_ns"),
            ("queue-to-start p99", "queue_to_start_p99_ns"),
        ],
    };
    header.extend(extra.iter().map(|(h, _)| (*h).to_owned()));
    let mut out = format!(
        "| {} |\n|{}\n",
        header.join(" | "),
        "---|".repeat(header.len())
    );
    for row in rows {
        let mut line = vec![super::verdict::label(row)];
        if show_pull {
            line.push(row["pull"].as_str().unwrap_or("-").to_owned());
        }
        if show_steer {
            line.push(row["steer"].as_str().unwrap_or("-").to_owned());
        }
        let (median, min, max) = c.spread(row);
        line.push(format!("{} ({}-{})", count(median), count(min), count(max)));
        line.push(if median > 0.0 {
            format!("±{:.0} %", 50.0 * (max - min) / median)
        } else {
            "-".to_owned()
        });
        line.push(c.against(row).map_or("-".to_owned(), ratio));
        for (_, key) in &extra {
            let value = &row[*key];
            line.push(match (*key, value.as_f64()) {
                (_, None) => "-".to_owned(),
                ("by_queuer" | "same_cpu", Some(share)) => percent(share),
                (_, Some(ns)) => nanos(ns),
            });
        }
        out.push_str(&format!("| {} |\n", line.join(" | ")));
    }
    out
}

/// What `podq sim --against` predicted for the step's podq rows, beside the measurement.
fn prediction(step: &Value) -> String {
    let p = &step["prediction"];
    if p.is_null() {
        return String::new();
    }
    if let Some(err) = p["error"].as_str() {
        return format!("\nNo prediction: {err}\n");
    }
    let mut out = format!(
        "\n`podq sim --against DIR/{}` predicted podq on this machine ({}) with {}:\n\n\
         | scope | pull | predicted items/s | measured items/s | error | locks per item | found held | call p50 |\n\
         |---|---|---|---|---|---|---|---|\n",
        step["bench_file"].as_str().unwrap_or("?"),
        p["family_reason"].as_str().unwrap_or("?"),
        p["costs"].as_str().unwrap_or("?"),
    );
    for cell in p["cells"].as_array().into_iter().flatten() {
        let scope = cell["scope"].as_str().unwrap_or("?");
        let scope = match (scope, cell["shard_size"].as_u64()) {
            ("cache_shard", Some(size)) => format!("`cache_shard`/{size}"),
            _ => format!("`{scope}`"),
        };
        out.push_str(&format!(
            "| {scope} | {} | {} | {} | {} | {} | {} | {} |\n",
            cell["pull"].as_str().unwrap_or("?"),
            count(cell["predicted_items_per_sec"].as_f64().unwrap_or(f64::NAN)),
            count(cell["measured_items_per_sec"].as_f64().unwrap_or(f64::NAN)),
            error(cell["error"].as_f64().unwrap_or(f64::NAN)),
            beside(cell, "locks_per_item", |v| format!("{v:.2}")),
            beside(cell, "lock_held", |v| format!("{:.1} %", 100.0 * v)),
            beside(cell, "p50_ns", nanos),
        ));
    }
    out
}

/// A prediction cell's `predicted_KEY` beside its `measured_KEY`, each as `show` writes it:
/// `1.13 (measured 1.13)`, or the prediction alone when the run did not record it.
fn beside(cell: &Value, key: &str, show: impl Fn(f64) -> String) -> String {
    let Some(predicted) = cell[format!("predicted_{key}")].as_f64() else {
        return "-".to_owned();
    };
    match cell[format!("measured_{key}")].as_f64() {
        Some(measured) => format!("{} (measured {})", show(predicted), show(measured)),
        None => show(predicted),
    }
}

/// `1 node`, `2 nodes`, from a JSON count.
fn plural(n: &Value, what: &str) -> String {
    match n.as_u64() {
        Some(1) => format!("1 {what}"),
        Some(n) => format!("{n} {what}s"),
        None => format!("? {what}s"),
    }
}

/// `text` safe in a table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prediction_shows_the_model_beside_what_the_run_recorded() {
        let cell = serde_json::json!({
            "predicted_locks_per_item": 2.0, "measured_locks_per_item": 2.05,
            "predicted_p50_ns": 353.0, "measured_p50_ns": null,
        });
        let two = |v: f64| format!("{v:.2}");
        assert_eq!(beside(&cell, "locks_per_item", two), "2.00 (measured 2.05)");
        assert_eq!(beside(&cell, "p50_ns", nanos), "353 ns");
        assert_eq!(beside(&cell, "lock_held", two), "-");
    }

    #[test]
    fn anchors_follow_github() {
        let step = serde_json::json!({"title": "queue: one producer per CPU, closed loop"});
        assert_eq!(anchor(&step), "queue-one-producer-per-cpu-closed-loop");
    }
}
