//! The command line of `podq report`, and its checks: every bad value is refused with one line
//! that names it and the valid forms.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::error::CliError;

/// The budget when `--budget` is not given.
pub(crate) const DEFAULT_BUDGET: Duration = Duration::from_secs(300);

/// The most `--budget` takes: a day.
const MAX_BUDGET: Duration = Duration::from_secs(24 * 3600);

/// Arguments of `podq report`.
#[derive(Debug, Args)]
#[command(
    after_help = "The folder gets report.md, report.json (its schema is in the \
    project's docs/report.md), plots/*.svg and bench/*.json (one `podq bench --json` per \
    step, for `podq sim --against`). Both reports are rewritten after every step, so a run \
    that is stopped leaves a partial report."
)]
pub(crate) struct ReportArgs {
    /// The folder to write the report into; created when missing.
    #[arg(long, value_name = "DIR", default_value = "podq-report")]
    pub(crate) out: PathBuf,
    /// How long the whole report may take: 90s, 5m, 2m30s, 1h (a bare number is seconds);
    /// item counts and runs are scaled to it [default: 5m].
    #[arg(long, value_name = "DURATION")]
    pub(crate) budget: Option<String>,
    /// Also write the report's summary into this Markdown page, between the lines
    /// `<!-- podq report: begin -->` and `<!-- podq report: end -->`, keeping the rest of the
    /// page as it is (docs/benchmarks.md is written so).
    #[arg(long, value_name = "FILE.md")]
    pub(crate) page: Option<PathBuf>,
    /// Measure nothing: write report.md (and --page) again from the report.json already in
    /// --out.
    #[arg(long)]
    pub(crate) render: bool,
}

/// A checked command line.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    /// Where the report goes.
    pub(crate) out: PathBuf,
    /// How long it may take.
    pub(crate) budget: Duration,
    /// The page to write the summary into.
    pub(crate) page: Option<PathBuf>,
    /// Only render again.
    pub(crate) render: bool,
}

impl Settings {
    /// Checks `args`.
    ///
    /// # Errors
    ///
    /// [`CliError::Usage`] for a bad budget or page: one line naming it and the valid forms.
    pub(crate) fn from_args(args: &ReportArgs) -> Result<Settings, CliError> {
        let budget = match &args.budget {
            Some(text) => parse_budget(text)?,
            None => DEFAULT_BUDGET,
        };
        if args.render && args.budget.is_some() {
            return Err(CliError::Usage(
                "--budget with --render: --render measures nothing; leave one of them out".into(),
            ));
        }
        if let Some(page) = &args.page {
            let is_md = page
                .extension()
                .is_some_and(|ext| ext.eq_ignore_ascii_case("md"));
            if !is_md {
                return Err(CliError::Usage(format!(
                    "--page {}: give a Markdown file name ending in .md",
                    page.display()
                )));
            }
        }
        Ok(Settings {
            out: args.out.clone(),
            budget,
            page: args.page.clone(),
            render: args.render,
        })
    }
}

/// `--budget`: one or more whole or decimal numbers each followed by a unit (`h`, `m`, `s`),
/// or a bare number of seconds; more than zero and at most a day.
pub(crate) fn parse_budget(text: &str) -> Result<Duration, CliError> {
    let bad = || {
        CliError::Usage(format!(
            "--budget '{text}': expected a duration such as 90s, 5m, 2m30s or 1h (units h, m, \
             s; a bare number is seconds)"
        ))
    };
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(bad());
    }
    let mut seconds = 0.0f64;
    if let Ok(bare) = trimmed.parse::<f64>() {
        seconds = bare;
    } else {
        let mut number = String::new();
        let mut last_unit = f64::INFINITY;
        for c in trimmed.chars() {
            if c.is_ascii_digit() || c == '.' {
                number.push(c);
                continue;
            }
            let unit = match c {
                'h' => 3600.0,
                'm' => 60.0,
                's' => 1.0,
                _ => return Err(bad()),
            };
            // Units in falling order, each once: 1h30m, not 30m1h or 5m5m.
            if number.is_empty() || unit >= last_unit {
                return Err(bad());
            }
            let value: f64 = number.parse().map_err(|_| bad())?;
            seconds += value * unit;
            last_unit = unit;
            number.clear();
        }
        if !number.is_empty() {
            return Err(bad());
        }
    }
    if !seconds.is_finite() || seconds <= 0.0 {
        return Err(CliError::Usage(format!(
            "--budget '{text}': give more than zero, such as 90s or 5m"
        )));
    }
    let budget = Duration::from_secs_f64(seconds.min(MAX_BUDGET.as_secs_f64() + 1.0));
    if budget > MAX_BUDGET {
        return Err(CliError::Usage(format!(
            "--budget '{text}': give at most 24h"
        )));
    }
    Ok(budget)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_in_every_form() {
        let secs = |text: &str| parse_budget(text).map(|d| d.as_secs_f64()).ok();
        assert_eq!(secs("90"), Some(90.0));
        assert_eq!(secs("90s"), Some(90.0));
        assert_eq!(secs("5m"), Some(300.0));
        assert_eq!(secs("2m30s"), Some(150.0));
        assert_eq!(secs("1h"), Some(3600.0));
        assert_eq!(secs("1.5m"), Some(90.0));
        assert_eq!(secs(" 3m "), Some(180.0));
    }

    #[test]
    fn bad_budgets_name_the_input_and_the_forms() {
        for text in [
            "5x", "", "m", "5m5m", "30s1m", "1.2.3s", "-5s", "0", "0s", "25h", "5 m",
        ] {
            let Err(CliError::Usage(message)) = parse_budget(text) else {
                panic!("'{text}' must be refused");
            };
            assert!(message.contains(&format!("'{text}'")), "{message}");
            assert!(!message.contains('\n'), "{message}");
        }
        let Err(CliError::Usage(message)) = parse_budget("5x") else {
            panic!("5x must be refused");
        };
        assert!(message.contains("90s, 5m, 2m30s or 1h"), "{message}");
    }
}
