//! `podq report`: one command that measures the machine it runs on and writes what it found.
//!
//! A report is a plan of steps ([`plan`]), each a `podq bench` invocation sized to its share of
//! the budget and followed by `podq sim --against` ([`step`]). After every step the whole
//! report is written again (report.json first, then report.md rendered from it), so a run that
//! is stopped leaves a report of the steps done, marked partial. The schema of report.json is
//! documented in docs/report.md and carries [`SCHEMA_VERSION`].

mod args;
mod budget;
mod human;
mod markdown;
mod page;
mod plan;
mod progress;
mod step;
mod verdict;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use podq::Topology;
use serde_json::{json, Value};

pub(crate) use self::args::ReportArgs;
use self::args::Settings;
use self::budget::Clock;
use self::plan::Plan;
use self::progress::Progress;
use self::step::{run_json, secs, Files};
use crate::error::CliError;

/// The version of report.json's schema: raised whenever a field changes meaning or goes away.
pub(crate) const SCHEMA_VERSION: u64 = 1;

/// Runs `podq report`.
///
/// # Errors
///
/// [`CliError::Usage`] for a bad argument; [`CliError::Failed`] when the machine cannot be
/// read, the folder or a file cannot be written, or (with `--render`) there is no report.json
/// to render.
pub(crate) fn run(args: &ReportArgs) -> Result<(), CliError> {
    let settings = Settings::from_args(args)?;
    if settings.render {
        let path = settings.out.join("report.json");
        let text = std::fs::read_to_string(&path).map_err(|err| {
            CliError::Failed(format!("--render: cannot read {}: {err}", path.display()))
        })?;
        let report: Value = serde_json::from_str(&text).map_err(|err| {
            CliError::Failed(format!("--render: {} is not JSON: {err}", path.display()))
        })?;
        if report["schema"] != "podq-report" {
            return Err(CliError::Failed(format!(
                "--render: {} is not a podq report (no \"schema\": \"podq-report\")",
                path.display()
            )));
        }
        write_markdown(&settings.out, &report)?;
        return write_page(&settings, &report);
    }
    let clock = Clock::start(settings.budget);
    let topology = Topology::discover()
        .map_err(|err| CliError::Failed(format!("cannot read this machine's topology: {err}")))?;
    let plan = Plan::for_machine(&topology);
    let exe = std::env::current_exe().map_err(|err| {
        CliError::Failed(format!(
            "cannot find the podq binary to run its steps: {err}"
        ))
    })?;
    for folder in ["plots", "bench"] {
        let path = settings.out.join(folder);
        std::fs::create_dir_all(&path).map_err(|err| {
            CliError::Failed(format!("--out: cannot create {}: {err}", path.display()))
        })?;
    }
    let mut report = start_report(&settings, &plan, &exe);
    write(&settings.out, &report)?;

    // SIGINT and SIGTERM stop the step running (its child too) and end the report as partial,
    // rather than leave a child measuring on its own.
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Without the handler a signal ends the report at once, which still leaves the report
        // of the steps done: nothing is lost but the child's end.
        let _ = signal_hook::flag::register(signal, Arc::clone(&stop));
    }
    let progress = Progress::start(clock, plan.steps.len());
    let weight: usize = plan.steps.iter().map(|s| s.configurations).sum();
    let mut remaining = weight;
    let files = Files {
        out: settings.out.clone(),
    };
    for (index, step) in plan.steps.iter().enumerate() {
        progress.begin(index, &step.id);
        let share = clock.share(step.configurations, remaining);
        remaining -= step.configurations;
        let entry = step::run(&exe, step, share, &files, &stop);
        progress.end(
            index,
            &step.id,
            entry["status"].as_str().unwrap_or("?"),
            Duration::from_secs_f64(entry["seconds"].as_f64().unwrap_or(0.0)),
        );
        if report["machine"].is_null() && !entry["bench"]["machine"].is_null() {
            report["machine"] = entry["bench"]["machine"].clone();
        }
        if let Some(steps) = report["steps"].as_array_mut() {
            steps.push(entry);
        }
        report["elapsed_s"] = secs(clock.elapsed()).into();
        write(&settings.out, &report)?;
        if stop.load(Ordering::Relaxed) {
            progress.finish();
            return Err(CliError::Failed(format!(
                "stopped by a signal after {} of {} steps; the partial report is in {}",
                index + 1,
                plan.steps.len(),
                settings.out.display()
            )));
        }
    }
    progress.finish();
    report["complete"] = true.into();
    report["elapsed_s"] = secs(clock.elapsed()).into();
    write(&settings.out, &report)?;
    write_page(&settings, &report)?;
    eprintln!(
        "podq report: {} in {}",
        settings.out.join("report.md").display(),
        human::duration(clock.elapsed())
    );
    Ok(())
}

/// report.json before the first step: the machine as `podq topo` shows it, the plan and the
/// exact settings.
fn start_report(settings: &Settings, plan: &Plan, exe: &Path) -> Value {
    let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let topology_text = std::process::Command::new(exe)
        .arg("topo")
        .stdin(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    let topology = run_json(exe, &args(&["topo", "--json"])).unwrap_or(Value::Null);
    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    json!({
        "schema": "podq-report",
        "schema_version": SCHEMA_VERSION,
        "podq_version": env!("CARGO_PKG_VERSION"),
        "started_unix_s": started,
        "started_utc": utc(started),
        "budget_s": secs(settings.budget),
        "elapsed_s": 0.0,
        "complete": false,
        "machine": Value::Null,
        "topology": topology,
        "topology_text": topology_text,
        "notes": plan.notes,
        "planned": plan.steps.iter().map(|s| s.id.clone()).collect::<Vec<_>>(),
        "steps": [],
    })
}

/// Writes report.json (through a temporary file renamed over it, so a reader never sees half
/// of one) and report.md into `out`.
fn write(out: &Path, report: &Value) -> Result<(), CliError> {
    let text = crate::output::json_text(report)?;
    let path = out.join("report.json");
    let temporary = out.join(".report.json.new");
    std::fs::write(&temporary, text)
        .and_then(|()| std::fs::rename(&temporary, &path))
        .map_err(|err| CliError::Failed(format!("cannot write {}: {err}", path.display())))?;
    write_markdown(out, report)
}

/// Writes report.md into `out`, rendered from `report`.
fn write_markdown(out: &Path, report: &Value) -> Result<(), CliError> {
    let path = out.join("report.md");
    std::fs::write(&path, markdown::report(report))
        .map_err(|err| CliError::Failed(format!("cannot write {}: {err}", path.display())))
}

/// Writes the summary into `--page`, when given.
fn write_page(settings: &Settings, report: &Value) -> Result<(), CliError> {
    let Some(page) = &settings.page else {
        return Ok(());
    };
    page::write(page, &settings.out, report)
}

/// `2026-11-27 02:40 UTC` for `unix` seconds (the civil calendar from days since 1970, after
/// Howard Hinnant's `civil_from_days`).
fn utc(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let rest = unix % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60
    )
}

/// `to` relative to the folder `from`, both as given or made absolute, with `/` separators.
fn relative(from: &Path, to: &Path) -> PathBuf {
    let absolute = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let (from, to) = (absolute(from), absolute(to));
    let common = from
        .components()
        .zip(to.components())
        .take_while(|(a, b)| a == b)
        .count();
    let mut path = PathBuf::new();
    for _ in from.components().skip(common) {
        path.push("..");
    }
    for part in to.components().skip(common) {
        path.push(part);
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates_follow_the_calendar() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc(1_795_747_216), "2026-11-27 02:40 UTC");
    }

    #[test]
    fn relative_paths_climb_and_descend() {
        assert_eq!(
            relative(Path::new("/a/docs"), Path::new("/a/docs/machines/x")),
            PathBuf::from("machines/x")
        );
        assert_eq!(
            relative(Path::new("/a/docs"), Path::new("/a/out")),
            PathBuf::from("../out")
        );
    }
}
