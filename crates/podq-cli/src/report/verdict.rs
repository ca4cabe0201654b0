//! podq's default against the best peer in one step, and the verdict in plain words.
//!
//! podq's default is what `Workqueue::new` builds: `cache_shard` with shards of 8 cores, pull
//! and steering on. Every workload is compared by items/s (round trips/s for rpc, the same
//! ratio), except `locality`, whose items are paced to one rate on every system: there the
//! items' median run time decides, lower being better. Two figures are a tie when the ranges of
//! their runs overlap, or, with one run, when they are within [`LEVEL`] of each other.

use serde_json::Value;

use super::human::{count, nanos, ratio};

/// With one run, figures this close (relative) are a tie: there is no spread to go by.
const LEVEL: f64 = 0.05;

/// One configuration of a step, as the comparison needs it.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    /// How the report names it: `podq cache_shard`, `rayon`.
    pub(crate) label: String,
    /// The figure compared, higher better (for `locality`, the inverse of the run time).
    score: f64,
    /// The range of that figure over the runs, when the bench reports one.
    range: Option<(f64, f64)>,
    /// The figure as shown.
    shown: f64,
}

/// podq's default against the best peer in one step.
#[derive(Clone, Debug)]
pub(crate) struct Comparison {
    /// podq's default configuration, when measured.
    pub(crate) default: Option<Entry>,
    /// The best peer, when any was measured.
    pub(crate) best_peer: Option<Entry>,
    /// `default / best_peer` in the compared figure: above 1, podq is ahead.
    pub(crate) ratio: Option<f64>,
    /// The verdict in plain words.
    pub(crate) verdict: String,
    /// The unit of the rate column: `items/s`, `round trips/s`.
    pub(crate) unit: &'static str,
    /// Whether the rate column is halved (round trips of two hops).
    halve: bool,
    /// Whether run time decides (locality).
    by_run_time: bool,
}

impl Comparison {
    /// The rate of `row` and its min-max, as the table shows it.
    pub(crate) fn spread(&self, row: &Value) -> (f64, f64, f64) {
        let scale = if self.halve { 0.5 } else { 1.0 };
        let get = |key: &str| row[key].as_f64().unwrap_or(f64::NAN) * scale;
        (
            get("items_per_sec"),
            get("items_per_sec_min"),
            get("items_per_sec_max"),
        )
    }

    /// podq's default over `row` in the compared figure.
    pub(crate) fn against(&self, row: &Value) -> Option<f64> {
        let default = self.default.as_ref()?;
        let entry = self.entry(row)?;
        Some(default.score / entry.score)
    }

    /// `entry`'s figure as the summary shows it: `1.60M items/s`, `412 us run p50`.
    pub(crate) fn figure(&self, entry: &Entry) -> String {
        if self.by_run_time {
            format!("{} run p50", nanos(entry.shown))
        } else {
            format!("{}/s", count(entry.shown))
        }
    }

    /// `row` as an entry; `None` without its figure.
    fn entry(&self, row: &Value) -> Option<Entry> {
        let label = label(row);
        if self.by_run_time {
            let run = row["run_p50_ns"].as_f64().filter(|&r| r > 0.0)?;
            return Some(Entry {
                label,
                score: 1.0 / run,
                range: None,
                shown: run,
            });
        }
        let (median, min, max) = self.spread(row);
        (median > 0.0).then_some(Entry {
            label,
            score: median,
            range: (min.is_finite() && max.is_finite()).then_some((min, max)),
            shown: median,
        })
    }
}

/// How the report names a row: `podq cache_shard`, `podq cache_shard/4`, `rayon`.
pub(crate) fn label(row: &Value) -> String {
    let system = row["system"].as_str().unwrap_or("?");
    match (row["scope"].as_str(), row["shard_size"].as_u64()) {
        (Some(scope), Some(size)) if size != podq::scope::DEFAULT_SHARD_SIZE as u64 => {
            format!("{system} `{scope}`/{size}")
        }
        (Some(scope), _) => format!("{system} `{scope}`"),
        (None, _) => system.to_owned(),
    }
}

/// The verdict's word when there is no spread of runs to go by: medians (or one run's
/// figures) within [`LEVEL`] are a tie.
fn without_spread(r: f64, runs: u64) -> &'static str {
    match (runs > 1, (r - 1.0).abs() <= LEVEL, r > 1.0) {
        (true, true, _) => "a tie (medians within 5 %)",
        (true, false, true) => "ahead by more than 5 % (medians; no spread to judge by)",
        (true, false, false) => "behind by more than 5 % (medians; no spread to judge by)",
        (false, true, _) => "a tie (one run; within 5 %)",
        (false, false, true) => "ahead (one run, no spread to judge by)",
        (false, false, false) => "behind (one run, no spread to judge by)",
    }
}

/// Whether `row` is podq's default configuration, or the same with pull or steering `off`.
fn is_default(row: &Value, pull: &str, steer: &str) -> bool {
    row["system"] == "podq"
        && row["scope"] == "cache_shard"
        && row["shard_size"]
            .as_u64()
            .is_none_or(|s| s == podq::scope::DEFAULT_SHARD_SIZE as u64)
        && row["pull"].as_str().unwrap_or("on") == pull
        && row["steer"].as_str().unwrap_or("on") == steer
}

/// Compares podq's default with the best peer in `step` (an entry of report.json's `steps`).
pub(crate) fn compare(step: &Value) -> Comparison {
    let workload = step["workload"].as_str().unwrap_or("");
    let rows: Vec<&Value> = step["bench"]["results"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    let mut c = Comparison {
        default: None,
        best_peer: None,
        ratio: None,
        verdict: String::new(),
        unit: if workload == "rpc" {
            "round trips/s"
        } else {
            "items/s"
        },
        halve: workload == "rpc",
        by_run_time: workload == "locality",
    };
    let find = |pull: &str, steer: &str| {
        rows.iter()
            .find(|r| is_default(r, pull, steer))
            .and_then(|r| c.entry(r))
    };
    let default = find("on", "on");
    let pull_off = find("off", "on");
    let steer_off = find("on", "off");
    let best_peer = rows
        .iter()
        .filter(|r| r["system"] != "podq")
        .filter_map(|r| c.entry(r))
        .max_by(|a, b| a.score.total_cmp(&b.score));
    let best_podq = rows
        .iter()
        .filter(|r| r["system"] == "podq")
        .filter_map(|r| c.entry(r))
        .max_by(|a, b| a.score.total_cmp(&b.score));
    let mut verdict = match (&default, &best_peer) {
        (Some(d), Some(p)) => {
            let r = d.score / p.score;
            c.ratio = Some(r);
            let what = if c.by_run_time {
                format!(
                    "items of podq's default run in {} (median) against {} on {}, the best peer",
                    nanos(d.shown),
                    nanos(p.shown),
                    p.label
                )
            } else {
                format!(
                    "podq's default runs at {} the rate of the best peer, {}",
                    ratio(r),
                    p.label
                )
            };
            let runs = step["runs"].as_u64().unwrap_or(1);
            let level_word = match (d.range, p.range) {
                (Some(a), Some(b)) if runs > 1 => {
                    if a.0 <= b.1 && b.0 <= a.1 {
                        "a tie (their runs' ranges overlap)"
                    } else if r > 1.0 {
                        "ahead, beyond the spread of the runs"
                    } else {
                        "behind, beyond the spread of the runs"
                    }
                }
                _ => without_spread(r, runs),
            };
            format!("{what}: {level_word}.")
        }
        (None, _) => match &best_podq {
            Some(best) => format!(
                "podq's default was not measured here; its best configuration is {} at {}.",
                best.label,
                c.figure(best)
            ),
            None => "Nothing was measured.".to_owned(),
        },
        (Some(d), None) => match &best_podq {
            Some(best) if best.label != d.label => format!(
                "No peer here; the best configuration is {} at {}, and the default reaches {} \
                 of it.",
                best.label,
                c.figure(best),
                ratio(d.score / best.score)
            ),
            _ => format!(
                "No peer here; the default is the best configuration, at {}.",
                c.figure(d)
            ),
        },
    };
    if let (Some(d), Some(off)) = (&default, &pull_off) {
        verdict.push_str(&format!(
            " With pull off, podq's default reaches {} of itself with pull on.",
            ratio(off.score / d.score)
        ));
    }
    if let (Some(d), Some(off)) = (&default, &steer_off) {
        verdict.push_str(&format!(
            " With steering off, its items run in {} against {}.",
            nanos(off.shown),
            nanos(d.shown)
        ));
    }
    if workload == "blocking" {
        let short = |label: &Option<Entry>| {
            let label = label.as_ref()?;
            rows.iter()
                .find(|r| {
                    self::label(r) == label.label && r["pull"].as_str().unwrap_or("on") == "on"
                })
                .and_then(|r| r["short_start_p99_ns"].as_f64())
        };
        if let (Some(d), Some(p)) = (short(&default), short(&best_peer)) {
            verdict.push_str(&format!(
                " Short items start within {} (p99) against {} on the best peer.",
                nanos(d),
                nanos(p)
            ));
        }
    }
    c.default = default;
    c.best_peer = best_peer;
    c.verdict = verdict;
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn step(runs: u64, podq: (f64, f64, f64), peer: (f64, f64, f64)) -> Value {
        let row = |system: &str, (m, lo, hi): (f64, f64, f64)| {
            let mut row = json!({
                "system": system, "items_per_sec": m, "items_per_sec_min": lo,
                "items_per_sec_max": hi,
            });
            if system == "podq" {
                row["scope"] = "cache_shard".into();
                row["shard_size"] = 8.into();
                row["pull"] = "on".into();
            }
            row
        };
        json!({
            "workload": "flood", "runs": runs,
            "bench": {"results": [row("podq", podq), row("rayon", peer), row("tokio", (1.0, 1.0, 1.0))]},
        })
    }

    /// Asserts that `c`'s verdict says `text`.
    fn says(c: &Comparison, text: &str) {
        assert!(c.verdict.contains(text), "'{text}' in: {}", c.verdict);
    }

    #[test]
    fn ahead_behind_and_level_follow_the_spread() {
        let ahead = compare(&step(3, (2e6, 1.9e6, 2.1e6), (1e6, 0.9e6, 1.1e6)));
        assert_eq!(ahead.ratio, Some(2.0));
        says(&ahead, "runs at 2.00x the rate of the best peer, rayon");
        says(&ahead, "ahead, beyond the spread");
        let level = compare(&step(3, (1.2e6, 0.9e6, 1.3e6), (1e6, 0.8e6, 1.25e6)));
        says(&level, "a tie (their runs' ranges overlap)");
        let behind = compare(&step(1, (0.5e6, 0.5e6, 0.5e6), (1e6, 1e6, 1e6)));
        says(&behind, "behind (one run");
    }

    #[test]
    fn rpc_counts_round_trips_and_locality_run_time() {
        let mut rpc = step(1, (2e6, 2e6, 2e6), (1e6, 1e6, 1e6));
        rpc["workload"] = "rpc".into();
        let c = compare(&rpc);
        assert_eq!(c.unit, "round trips/s");
        assert_eq!(c.spread(&rpc["bench"]["results"][0]).0, 1e6);
        let locality = json!({"workload": "locality", "runs": 1, "bench": {"results": [
            {"system": "podq", "scope": "cache_shard", "shard_size": 8, "pull": "on",
             "steer": "on", "items_per_sec": 100.0, "run_p50_ns": 400_000},
            {"system": "podq", "scope": "cache_shard", "shard_size": 8, "pull": "on",
             "steer": "off", "items_per_sec": 100.0, "run_p50_ns": 500_000},
            {"system": "tokio", "items_per_sec": 100.0, "run_p50_ns": 800_000},
        ]}});
        let c = compare(&locality);
        assert_eq!(c.ratio, Some(2.0));
        says(&c, "400 us (median) against 800 us on tokio");
        says(&c, "steering off, its items run in 500 us");
    }
}
