//! One step of a report: `podq bench` sized to its share of the budget, then `podq sim
//! --against` on what it measured.
//!
//! Each step runs this same binary as a child process (`podq bench ... --json`), so the report
//! measures exactly what `podq bench` does, every system starts in a fresh process, and a step
//! that fails leaves the others standing.
//!
//! Sizing: trial runs (one run of every configuration), from the step's base item count up,
//! each larger, until one takes a sixteenth of the step's share and the last two agree; those
//! give the time a run takes as a fixed part plus a part per item, and the step's runs then get
//! the item count that fills what is left of its share. What one step over- or undershoots, the next steps'
//! shares absorb, since each share is taken from the time left ([`super::budget::Clock`]); a
//! step that runs far beyond its share is stopped and reported as failed.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::plan::Step;

/// How often a running step is checked against its limit.
const POLL: Duration = Duration::from_millis(20);

/// Most items per producer a step runs, whatever its share: the bench keeps one start time per
/// item, and more than this says nothing more.
const MAX_ITEMS: u64 = 2_000_000;

/// Shares below this run the base item count once, without trial runs.
const TRIAL_FLOOR: Duration = Duration::from_millis(1500);

/// Most trial runs of a step.
const MAX_TRIALS: usize = 6;

/// A step's runs are stopped once they take this many times its share...
const OVERRUN: u32 = 3;

/// ... or this long, whichever is longer.
const MIN_LIMIT: Duration = Duration::from_secs(10);

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
/// took `t_small` and one at `large` items that took `t_large` (with `small` 0, the fixed part
/// is taken as none: the count errs low); at least `small`.
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

/// Runs `podq bench` with `args`, stopping it after `limit` or once `stop` is set.
fn bench(exe: &Path, args: &[String], limit: Duration, stop: &AtomicBool) -> Invocation {
    let mut command = vec!["bench".to_owned()];
    command.extend(args.iter().cloned());
    let started = Instant::now();
    let result = run_json_within(exe, &command, Some((limit, stop)));
    Invocation {
        command,
        result,
        took: started.elapsed(),
    }
}

/// Runs this binary with `args`, which print JSON on stdout, and reads it; or the last line it
/// printed on stderr.
pub(crate) fn run_json(exe: &Path, args: &[String]) -> Result<Value, String> {
    run_json_within(exe, args, None)
}

/// [`run_json`], stopping the child after the limit or once the flag is set, when given.
fn run_json_within(
    exe: &Path,
    args: &[String],
    limit: Option<(Duration, &AtomicBool)>,
) -> Result<Value, String> {
    let mut child = Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| format!("cannot start {}: {err}", exe.display()))?;
    let started = Instant::now();
    // Read both pipes while the child runs, so that a large report never blocks it.
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = read(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = read(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let mut stopped = None;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) => {
                if let (None, Some((limit, stop))) = (&stopped, limit) {
                    stopped = if stop.load(Ordering::Relaxed) {
                        Some("by a signal".to_owned())
                    } else if started.elapsed() > limit {
                        Some(format!(
                            "after {:.0} s, far beyond its share of the budget",
                            started.elapsed().as_secs_f64()
                        ))
                    } else {
                        None
                    };
                    if stopped.is_some() {
                        let _ = child.kill();
                    }
                }
                thread::sleep(POLL);
            }
            Err(err) => break Err(format!("cannot wait for podq {}: {err}", args[0])),
        }
    };
    let output = Output {
        status: status?,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    };
    if let Some(why) = stopped {
        return Err(format!("stopped {why}"));
    }
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
/// its entry of report.json; a `stop` set meanwhile (a signal) stops it, as failed.
pub(crate) fn run(
    exe: &Path,
    step: &Step,
    share: Duration,
    files: &Files,
    stop: &AtomicBool,
) -> Value {
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
        // Trial runs, each larger, until one takes a sixteenth of the share and the last two
        // agree (the larger took noticeably longer: [`consistent`]): long enough that the
        // machine's noise does not decide the item count, and all of them together about an
        // eighth of the share. A first trial that alone took a quarter of the share is enough.
        let target = share / 16;
        let mut trials: Vec<(u64, Duration)> = Vec::new();
        let mut items = base;
        loop {
            let trial = bench(exe, &with(items, 1, false), share, stop);
            if let Err(err) = trial.result {
                return failed(step, &trial.command, &err, started, &trials);
            }
            trials.push((items, trial.took));
            let agree = trials.len() >= 2 && consistent(&trials);
            let enough = trial.took >= target && (agree || trial.took >= share / 4);
            if enough || trials.len() == MAX_TRIALS || items >= MAX_ITEMS {
                break;
            }
            // Past the target, only the fixed part hides the items: grow faster.
            let least = if trial.took >= target { 4.0 } else { 2.0 };
            let growth =
                (target.as_secs_f64() / trial.took.as_secs_f64().max(1e-3)).clamp(least, 16.0);
            items = ((items as f64 * growth) as u64).min(MAX_ITEMS);
        }
        let left = share.saturating_sub(started.elapsed());
        let runs = runs_for(left);
        let last = trials[trials.len() - 1];
        // Without two trials that agree, the time is taken as all per item: the count errs low,
        // and the steps after this one get what it leaves.
        let before = if trials.len() > 1 && consistent(&trials) {
            trials[trials.len() - 2]
        } else {
            (0, Duration::ZERO)
        };
        let items = items_for(left, runs, before, last).max(base);
        (items, runs, trials)
    };
    // A step whose runs take far longer than its share (a machine that slowed down in the
    // middle) is stopped, so that one step cannot spend the others' time.
    let limit = (share * OVERRUN).max(MIN_LIMIT);
    let measured = bench(exe, &with(items, runs, true), limit, stop);
    let report = match measured.result {
        Ok(report) => report,
        Err(err) => return failed(step, &measured.command, &err, started, &trials),
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
        "trials": trials_json(&trials),
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
    trials: &[(u64, Duration)],
) -> Value {
    json!({
        "id": step.id,
        "title": step.title,
        "workload": step.workload.name(),
        "status": "failed",
        "command": display_command(command, Path::new("")),
        "error": err,
        "seconds": secs(started.elapsed()),
        "trials": trials_json(trials),
    })
}

/// Whether the last two of `trials` agree: the larger took at least [`GROWN`] times as long,
/// so their difference is the items' and not the machine's noise.
fn consistent(trials: &[(u64, Duration)]) -> bool {
    match trials {
        [.., (_, before), (_, last)] => last.as_secs_f64() >= GROWN * before.as_secs_f64(),
        _ => false,
    }
}

/// How much longer the larger of two trials must take for their difference to count.
const GROWN: f64 = 1.3;

/// The trial runs as report.json lists them.
fn trials_json(trials: &[(u64, Duration)]) -> Value {
    trials
        .iter()
        .map(|&(items, took)| json!({"items_per_thread": items, "seconds": secs(took)}))
        .collect()
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
    fn trials_agree_only_when_the_larger_took_clearly_longer() {
        let ms = Duration::from_millis;
        assert!(consistent(&[(100, ms(200)), (400, ms(500))]));
        assert!(!consistent(&[(10_000, ms(866)), (20_000, ms(910))]));
        assert!(!consistent(&[(100, ms(200))]));
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
