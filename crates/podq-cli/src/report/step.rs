//! One step of a report: `podq bench` sized to its share of the budget, then `podq sim
//! --against` on what it measured.
//!
//! Each step runs this same binary as a child process (`podq bench ... --json`), so the report
//! measures exactly what `podq bench` does, every system starts in a fresh process, and a step
//! that fails leaves the others standing.
//!
//! Sizing: two short trial runs (one run of every configuration, at the step's base item count
//! and at four times it) give the time a run takes as a fixed part plus a part per item; the
//! step's runs then get the item count that fills what is left of its share. What one step
//! over- or undershoots, the next steps' shares absorb, since each share is taken from the time
//! left ([`super::budget::Clock`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::plan::Step;

/// Most items per producer a step runs, whatever its share: the bench keeps one start time per
/// item, and more than this says nothing more.
const MAX_ITEMS: u64 = 2_000_000;

/// Shares below this run the base item count once, without trial runs.
const TRIAL_FLOOR: Duration = Duration::from_millis(1500);

/// How many runs of every configuration a share of `share` affords: 5 from 40 s, 3 from 6 s,
/// else 1.
pub(crate) fn runs_for(share: Duration) -> u64 {
    match share.as_secs() {
        40.. => 5,
        6.. => 3,
        _ => 1,
    }
}

/// The items per producer that fill `left` with `runs` runs, given a run at `small` items that
/// took `t_small` and one at `large` items that took `t_large`; at least `small`.
pub(crate) fn items_for(
    left: Duration,
    runs: u64,
    (small, t_small): (u64, Duration),
    (large, t_large): (u64, Duration),
) -> u64 {
    let per_item =
        (t_large.as_secs_f64() - t_small.as_secs_f64()).max(0.0) / (large - small).max(1) as f64;
    // A run that did not grow with its items (noise) is sized by its whole time instead.
    let per_item = if per_item > 0.0 {
        per_item
    } else {
        t_large.as_secs_f64() / large.max(1) as f64
    };
    let fixed = (t_small.as_secs_f64() - per_item * small as f64).max(0.0);
    let per_run = left.as_secs_f64() / runs.max(1) as f64;
    let items = ((per_run - fixed) / per_item.max(1e-12)).round();
    if items.is_finite() && items > small as f64 {
        (items as u64).min(MAX_ITEMS)
    } else {
        small
    }
}

/// What one `podq bench` invocation left.
struct Invocation {
    /// Its arguments.
    command: Vec<String>,
    /// Its JSON report, or why there is none.
    result: Result<Value, String>,
    /// How long it took.
    took: Duration,
}

/// Runs `podq bench` with `args`.
fn bench(exe: &Path, args: &[String]) -> Invocation {
    let mut command = vec!["bench".to_owned()];
    command.extend(args.iter().cloned());
    let started = Instant::now();
    let result = run_json(exe, &command);
    Invocation {
        command,
        result,
        took: started.elapsed(),
    }
}

/// Runs this binary with `args`, which print JSON on stdout, and reads it; or the last line it
/// printed on stderr.
pub(crate) fn run_json(exe: &Path, args: &[String]) -> Result<Value, String> {
    let output = Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|err| format!("cannot start {}: {err}", exe.display()))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let line = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no message");
        return Err(format!(
            "podq {} failed ({}): {}",
            args.first().map_or("", String::as_str),
            output.status,
            line.trim_start_matches("podq: ")
        ));
    }
    serde_json::from_slice(&output.stdout).map_err(|err| format!("its output is not JSON: {err}"))
}

/// Where a step's files go, relative to the report's folder.
pub(crate) struct Files {
    /// The report's folder.
    pub(crate) out: PathBuf,
}

impl Files {
    /// The plot of step `id`, relative to the folder.
    pub(crate) fn plot(id: &str) -> String {
        format!("plots/{id}.svg")
    }

    /// The bench report of step `id`, relative to the folder.
    pub(crate) fn bench(id: &str) -> String {
        format!("bench/{id}.json")
    }
}

/// Runs `step` within `share`, writing its plot and bench report under `files`, and returns
/// its entry of report.json.
pub(crate) fn run(exe: &Path, step: &Step, share: Duration, files: &Files) -> Value {
    let started = Instant::now();
    let with = |items: u64, runs: u64, plot: bool| {
        let mut args = step.args.clone();
        args.extend([
            "--items".to_owned(),
            items.to_string(),
            "--runs".to_owned(),
            runs.to_string(),
            "--json".to_owned(),
        ]);
        if plot {
            args.extend([
                "--plot".to_owned(),
                files.out.join(Files::plot(&step.id)).display().to_string(),
            ]);
        }
        args
    };
    let base = step.base_items;
    let (items, runs, trials) = if share < TRIAL_FLOOR {
        (base, 1, Vec::new())
    } else {
        let small = bench(exe, &with(base, 1, false));
        let large = bench(exe, &with(4 * base, 1, false));
        let trials = vec![
            json!({"items_per_thread": base, "seconds": secs(small.took)}),
            json!({"items_per_thread": 4 * base, "seconds": secs(large.took)}),
        ];
        if let Err(err) = small.result.and(large.result) {
            return failed(step, &small.command, &err, started, trials);
        }
        let left = share.saturating_sub(started.elapsed());
        let runs = runs_for(left);
        let items = items_for(left, runs, (base, small.took), (4 * base, large.took));
        (items, runs, trials)
    };
    let measured = bench(exe, &with(items, runs, true));
    let report = match measured.result {
        Ok(report) => report,
        Err(err) => return failed(step, &measured.command, &err, started, trials),
    };
    let bench_file = Files::bench(&step.id);
    let written = crate::output::json_text(&report)
        .map_err(|err| err.to_string())
        .and_then(|text| {
            std::fs::write(files.out.join(&bench_file), text)
                .map_err(|err| format!("cannot write {bench_file}: {err}"))
        });
    let prediction = match (&written, step.predicted) {
        (Ok(()), true) => {
            let args = [
                "sim".to_owned(),
                "--against".to_owned(),
                files.out.join(&bench_file).display().to_string(),
                "--json".to_owned(),
            ];
            match run_json(exe, &args) {
                Ok(value) => value,
                Err(err) => json!({ "error": err }),
            }
        }
        (Err(err), true) => json!({ "error": err }),
        (_, false) => Value::Null,
    };
    json!({
        "id": step.id,
        "title": step.title,
        "workload": step.workload.name(),
        "status": "done",
        "command": display_command(&measured.command, &files.out),
        "items_per_thread": items,
        "runs": runs,
        "share_s": secs(share),
        "seconds": secs(started.elapsed()),
        "trials": trials,
        "plot": Files::plot(&step.id),
        "bench_file": bench_file,
        "bench": report,
        "prediction": prediction,
    })
}

/// The entry of a step that failed: what ran and why it failed.
fn failed(
    step: &Step,
    command: &[String],
    err: &str,
    started: Instant,
    trials: Vec<Value>,
) -> Value {
    json!({
        "id": step.id,
        "title": step.title,
        "workload": step.workload.name(),
        "status": "failed",
        "command": display_command(command, Path::new("")),
        "error": err,
        "seconds": secs(started.elapsed()),
        "trials": trials,
    })
}

/// `podq bench ...` as a user would type it again: without `--json`, the plot's folder written
/// as `DIR`.
fn display_command(command: &[String], out: &Path) -> String {
    let out = out.display().to_string();
    let mut words = vec!["podq".to_owned()];
    for word in command {
        if word == "--json" {
            continue;
        }
        let word = match word.strip_prefix(&out) {
            Some(rest) if !out.is_empty() => format!("DIR{rest}"),
            _ => word.clone(),
        };
        words.push(word);
    }
    words.join(" ")
}

/// Seconds, to the millisecond.
pub(crate) fn secs(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_fill_the_time_left_after_the_fixed_part() {
        // 0.1 s fixed, 1 ms per item: 100 items took 0.2 s, 400 took 0.5 s.
        let items = items_for(
            Duration::from_secs(3),
            3,
            (100, Duration::from_millis(200)),
            (400, Duration::from_millis(500)),
        );
        assert_eq!(items, 900, "3 runs of 1 s: 0.1 s fixed + 900 x 1 ms");
    }

    #[test]
    fn items_never_fall_below_the_base_nor_exceed_the_cap() {
        let short = items_for(
            Duration::from_millis(10),
            5,
            (100, Duration::from_millis(200)),
            (400, Duration::from_millis(500)),
        );
        assert_eq!(short, 100);
        let long = items_for(
            Duration::from_secs(3600),
            1,
            (100, Duration::from_micros(100)),
            (400, Duration::from_micros(400)),
        );
        assert_eq!(long, MAX_ITEMS);
        let flat = items_for(
            Duration::from_secs(1),
            1,
            (100, Duration::from_millis(100)),
            (400, Duration::from_millis(90)),
        );
        assert!(
            flat > 100,
            "a noisy pair is sized by the larger run's time: {flat}"
        );
    }

    #[test]
    fn runs_grow_with_the_share() {
        assert_eq!(runs_for(Duration::from_secs(1)), 1);
        assert_eq!(runs_for(Duration::from_secs(10)), 3);
        assert_eq!(runs_for(Duration::from_secs(60)), 5);
    }

    #[test]
    fn commands_are_shown_as_typed_with_the_folder_as_dir() {
        let command: Vec<String> = ["bench", "--json", "--plot", "/tmp/r/plots/q.svg"]
            .map(str::to_owned)
            .to_vec();
        assert_eq!(
            display_command(&command, Path::new("/tmp/r")),
            "podq bench --plot DIR/plots/q.svg"
        );
    }
}
