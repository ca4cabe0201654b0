//! The report of `podq sim`: the kernel's lines, or the bench's JSON rows with
//! `"system": "sim"` and the profile.

use podq::AffinityScope;
use podq_sim::{Outcome, Platform, Profile, Scenario, ShardRule, SimMachine, Workload};
use serde_json::{json, Value};

use super::args::Settings;
use super::calibrate::Calibration;
use super::order::OrderError;
use super::Row;

/// Everything a report shows.
pub(crate) struct Report<'a> {
    /// The machine.
    pub(crate) machine: &'a SimMachine,
    /// The profile the rows ran with.
    pub(crate) profile: &'a Profile,
    /// The command line.
    pub(crate) settings: &'a Settings,
    /// One row per configuration.
    pub(crate) rows: &'a [Row],
    /// Pairs of rows whose order flips under `--uncertainty`.
    pub(crate) flips: &'a [(usize, usize)],
    /// With ranges: how the fastest row stands against the others.
    pub(crate) verdict: Option<Verdict>,
    /// How far ahead a row must be to be ranked, for the costs the rows ran with.
    pub(crate) order: OrderError,
    /// The fit of `--calibrate`.
    pub(crate) calibration: Option<&'a Calibration>,
}

/// How the fastest row stands against the others across the draws of `--uncertainty`.
pub(crate) struct Verdict {
    /// Whether it is ahead of every other row in every draw.
    pub(crate) first_in_every_draw: bool,
    /// The rows it is not ahead of by more than the model's order error
    /// ([`OrderError`]) in every draw.
    pub(crate) within_error: Vec<usize>,
    /// The rows it is ahead of by more than the order error in every draw.
    pub(crate) beyond_error: Vec<usize>,
}

impl Report<'_> {
    /// Whether several shard sizes are simulated (labels then show the size).
    fn sweeping(&self) -> bool {
        self.settings.shard_sizes.len() > 1
    }

    /// `--pull` as given: `on`, `off`, or both in order, comma-separated.
    fn pull_setting(&self) -> String {
        on_off_list(&self.settings.pulls)
    }

    /// `--steer` as given: `on`, `off`, or both in order, comma-separated.
    fn steer_setting(&self) -> String {
        on_off_list(&self.settings.steers)
    }

    /// On which measurements the profile's costs rest, and at what scale.
    fn costs_basis(&self) -> String {
        let published = "the published test_workqueue tables of NVIDIA Grace (72 CPUs) and \
                         Intel Xeon Platinum 8321HC (51 CPUs)";
        match (self.profile.name, self.calibration) {
            ("podq", Some(c)) => format!(
                "podq's mechanisms, costs fitted on {} (a podq bench run on this machine's {} \
                 CPUs); no podq measurement at any other scale rests under them",
                c.file,
                self.machine.len()
            ),
            ("podq", None) => format!(
                "podq's mechanisms with the kernel profile's costs, fitted on {published}; no \
                 podq measurement rests under them (calibrate with --calibrate FILE)"
            ),
            _ => format!("the Linux workqueue's mechanisms, costs fitted on {published}"),
        }
    }

    /// The text report: the machine, the settings, the kernel's lines, the flips.
    pub(crate) fn text(&self) -> String {
        let m = self.machine;
        let topo = m.topology();
        let p = m.platform();
        let mut out = format!(
            "machine: {} ({}), {}, {}, {}, {}\n",
            m.name(),
            topo.source(),
            plural(topo.cpus().len(), "CPU"),
            plural(topo.core_count(), "core"),
            plural(topo.cache_domains().len(), "cache domain"),
            plural(topo.node_ids().len(), "node")
        );
        let exits: Vec<String> = p
            .idle_states
            .iter()
            .map(|st| format!("{:.0}", st.exit_ns * p.exit_factor))
            .collect();
        let smt = if m.smt_slowdown() > 1.0 {
            format!(
                "; SMT: a thread's own work takes {:.2}x as long while its sibling runs",
                m.smt_slowdown()
            )
        } else {
            String::new()
        };
        out.push_str(&format!(
            "platform: cache line same core {} ns, same cache {} ns, other cache {} ns, other \
             node {} ns; idle exits {} ns{smt}; {} ({})\n",
            p.same_core_ns,
            p.same_cache_ns,
            p.other_cache_ns,
            p.other_node_ns,
            exits.join("/"),
            clock_text(p, self.profile),
            m.platform_source(),
        ));
        out.push_str(&format!("costs: {}\n", self.costs_basis()));
        if let Some(calibration) = self.calibration {
            out.push_str(&calibration.text());
        }
        let first = self.rows.first().map(|r| r.scenario);
        if let Some(s) = first {
            let (each, unit) = match s.workload {
                Workload::Rpc => ("pair", "round trips".to_owned()),
                Workload::Fanout => ("team", "messages".to_owned()),
                Workload::Chain { depth } => {
                    ("producer thread", format!("chains of {depth} links"))
                }
                Workload::Yield { yields } => (
                    "producer thread",
                    format!("items, each queueing its continuation {yields} times"),
                ),
                Workload::SpawnLocal => (
                    "producer thread",
                    "items queued by one item from its worker".to_owned(),
                ),
                _ => ("producer thread", "items".to_owned()),
            };
            // Shards cut on CPU boundaries are not podq's (nor today's kernel's): say so.
            let by_cpu = self.rows.iter().any(|r| {
                r.scenario.scope == AffinityScope::CacheShard
                    && r.scenario.shard_rule == ShardRule::Cpus
            });
            let shards = if by_cpu {
                "; cache shards cut on CPU boundaries, at most --shard-size CPUs each (--shard-by cpu)"
            } else {
                ""
            };
            out.push_str(&format!(
                "sim: profile {}, {}: {} x {} {unit}, {} ns of work per item, \
                 seed {}, pull {}{shards}\n",
                self.profile.name,
                s.workload.name(),
                plural(s.producers(), each),
                s.items,
                s.work_ns,
                s.seed,
                self.pull_setting()
            ));
        }
        if let Some(loc) = self.rows.first().and_then(|r| r.outcome.locality) {
            let l = &self.settings.locality;
            let c = m.caches();
            out.push_str(&format!(
                "locality: {} groups of {} KiB at {} % load (the pace: an unsteered item's run \
                 time; the hot walk {} ns), steer {}; caches: L2 {} KiB, LLC {} KiB, a line {} \
                 ns hot, {} ns from a peer core, {} ns from the LLC, {} ns from memory ({})\n",
                loc.groups,
                l.set_kb,
                l.load,
                loc.walk_ns,
                self.steer_setting(),
                c.private_kb,
                c.llc_kb,
                c.private_hit_ns,
                c.peer_hit_ns,
                c.llc_hit_ns,
                c.memory_ns,
                m.caches_source()
            ));
        }
        for row in self.rows {
            out.push_str(&self.kernel_line(row));
            out.push('\n');
        }
        if let Some(best) = super::best_row(self.rows) {
            let row = &self.rows[best];
            let line = podq::scope::env_line(row.scenario.scope, row.scenario.shard_size);
            let label = row.label(self.sweeping(), self.settings.show_pull);
            match (&self.verdict, self.settings.uncertainty) {
                (Some(v), Some(percent)) if v.first_in_every_draw && v.within_error.is_empty() => {
                    out.push_str(&format!(
                        "fastest: {label} in every draw with parameters {}, and by more than the \
                         model's order error ({}x): {line}\n",
                        self.moved(percent),
                        self.order.factor
                    ));
                }
                (Some(v), Some(percent)) => {
                    let mut why = Vec::new();
                    if !v.first_in_every_draw {
                        why.push(format!(
                            "the order changes with parameters {}",
                            self.moved(percent)
                        ));
                    }
                    if !v.within_error.is_empty() {
                        why.push(format!(
                            "{} {} within its order error ({}x: {})",
                            self.labels(&v.within_error),
                            if v.within_error.len() == 1 {
                                "is"
                            } else {
                                "are"
                            },
                            self.order.factor,
                            self.order.measured_on
                        ));
                    }
                    out.push_str(&format!(
                        "fastest: no recommendation: {label} is ahead at the nominal costs, but \
                         not by more than the model's error: {}\n",
                        why.join("; ")
                    ));
                    if !v.beyond_error.is_empty() {
                        out.push_str(&format!(
                            "slower beyond the model's error: {} (behind {label} by more than \
                             {}x in every draw)\n",
                            self.labels(&v.beyond_error),
                            self.order.factor
                        ));
                    }
                }
                (_, _) => out.push_str(&format!(
                    "fastest at the nominal costs, without ranges: {label} ({line})\n"
                )),
            }
        }
        if let Some(percent) = self.settings.uncertainty {
            if self.flips.is_empty() {
                out.push_str(&format!(
                    "uncertainty: no order of two configurations flips with every cost, \
                     platform and cache parameter {}\n",
                    self.moved(percent)
                ));
            }
            for &(a, b) in self.flips {
                out.push_str(&format!(
                    "uncertainty: the order of {} and {} flips with costs, platform and caches \
                     {}\n",
                    self.rows[a].label(self.sweeping(), self.settings.show_pull),
                    self.rows[b].label(self.sweeping(), self.settings.show_pull),
                    self.moved(percent)
                ));
            }
        }
        out
    }

    /// How far the draws move the parameters: by up to `percent` %, and the fitted costs also
    /// across every value their fits allow.
    fn moved(&self, percent: f64) -> String {
        if self.profile.fit_spread.is_empty() {
            format!("moved by up to {percent}%")
        } else if let Some(c) = self.calibration {
            format!(
                "moved by up to {percent}% (fitted costs across every value that fits {} as \
                 closely as its runs agree)",
                c.file
            )
        } else {
            format!("moved by up to {percent}% (fitted costs across all their fits' values too)")
        }
    }

    /// The labels of `rows`, joined: "A", "A and B", "A, B and C".
    fn labels(&self, rows: &[usize]) -> String {
        let names = self.names(rows);
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => names.concat(),
        }
    }

    /// The labels of `rows`.
    fn names(&self, rows: &[usize]) -> Vec<String> {
        rows.iter()
            .map(|&r| self.rows[r].label(self.sweeping(), self.settings.show_pull))
            .collect()
    }

    /// The kernel's format, tab-separated:
    /// `cache_shard      3629098 items/sec<TAB>p50=6080<TAB>p90=8896<TAB>p95=9728 ns`
    /// (flood lines show p50/p99 and the queue-to-start p50/p99), with the range under
    /// `--uncertainty`.
    fn kernel_line(&self, row: &Row) -> String {
        let o = &row.outcome;
        let width = self
            .rows
            .iter()
            .map(|r| r.label(self.sweeping(), self.settings.show_pull).len() + 1)
            .fold(12, usize::max);
        let head = format!(
            "{:<width$}{:>12.0} items/sec",
            row.label(self.sweeping(), self.settings.show_pull),
            o.items_per_sec
        );
        let mut line = match o.queue_to_start {
            Some(hop) if row.scenario.workload == Workload::Rpc => format!(
                "{:<width$}{:>12.0} round trips/sec\tp50={}\tp99={}\thop_p50={}\thop_p99={} ns",
                row.label(self.sweeping(), self.settings.show_pull),
                o.items_per_sec / 2.0,
                o.queue.p50,
                o.queue.p99,
                hop.p50,
                hop.p99
            ),
            None => format!(
                "{head}\tp50={}\tp90={}\tp95={} ns",
                o.queue.p50, o.queue.p90, o.queue.p95
            ),
            Some(start) => format!(
                "{head}\tp50={}\tp99={}\tstart_p50={}\tstart_p99={} ns",
                o.queue.p50, o.queue.p99, start.p50, start.p99
            ),
        };
        if row.scenario.workload.is_spawned() {
            line = format!(
                "{head}\tper_item={:.0} ns{}\tby_queuer={:.0} %\ttaken_over={}",
                1e9 / o.items_per_sec,
                row.range.map_or_else(String::new, |(lo, hi)| format!(
                    " ({:.0}-{:.0})",
                    1e9 / hi,
                    1e9 / lo
                )),
                100.0 * by_queuer(&row.scenario, &row.outcome),
                o.held.taken_from_queuer
            );
        }
        if let Some(loc) = o.locality {
            line.push_str(&format!(
                "\trun_p50={}\trun_p99={} ns\tbusy={:.0}%\tpace={} ns",
                loc.run_time.p50,
                loc.run_time.p99,
                loc.cpu_busy * 100.0,
                loc.item_ns
            ));
            if row.scenario.steer {
                line.push_str(&format!(
                    "\tat_home={}\telsewhere={}\thome_changes={}",
                    loc.at_home, loc.elsewhere, loc.home_changes
                ));
            }
        }
        if self.profile.mechanism.holds {
            line.push_str(&format!(
                "\tahead={:.0} %",
                100.0 * ahead(&row.scenario, &row.outcome)
            ));
        }
        if let Some((lo, hi)) = row.range {
            line.push_str(&format!("\trange={lo:.0}-{hi:.0}"));
        }
        line
    }

    /// `{"machine": {...}, "settings": {...}, "results": [...]}`, the results in the bench's
    /// shape.
    pub(crate) fn json(&self) -> Value {
        let m = self.machine;
        let topo = m.topology();
        let p = m.platform();
        let results: Vec<Value> = self
            .rows
            .iter()
            .enumerate()
            .map(|(i, row)| self.json_row(i, row))
            .collect();
        let mut value = json!({
            "machine": {
                "name": m.name(),
                "source": topo.source(),
                "usable_cpus": topo.cpu_set().to_string(),
                "cpus": topo.cpus().len(),
                "cores": topo.core_count(),
                "cache_domains": topo.cache_domains().len(),
                "nodes": topo.node_ids().len(),
                "platform": {
                    "source": m.platform_source(),
                    "same_core_ns": p.same_core_ns,
                    "same_cache_ns": p.same_cache_ns,
                    "other_cache_ns": p.other_cache_ns,
                    "other_node_ns": p.other_node_ns,
                    "idle_exit_ns": p
                    .idle_states
                    .iter()
                    .map(|st| st.exit_ns * p.exit_factor)
                    .collect::<Vec<f64>>(),
                "smt_slowdown": m.smt_slowdown(),
                "clock_ghz": p.clock_ghz,
                "work_factor": p.work_factor(self.profile.clock_ghz),
                "costs_basis": self.costs_basis(),
                },
            },
            "settings": {
                "workloads": [self.settings.workload.name()],
                "threads": self.rows.first().map_or(0, |r| r.scenario.producers()),
                "items_per_thread": self.settings.items,
                "work_ns": self.settings.work_ns,
                "pull": self.pull_setting(),
                "steer": self.steer_setting(),
                "seed": self.settings.seed,
                "profile": self.profile.name,
                "uncertainty_percent": self.settings.uncertainty,
            },
            "results": results,
        });
        if let (Some(calibration), Value::Object(map)) = (self.calibration, &mut value) {
            map.insert("calibration".into(), calibration.json());
        }
        if let (Some(verdict), Value::Object(map)) = (self.verdict_json(), &mut value) {
            map.insert("verdict".into(), verdict);
        }
        value
    }

    /// The text report's `fastest:` line as JSON (with ranges only): the fastest row, whether
    /// it is recommended, and the rows within and beyond the model's order error.
    fn verdict_json(&self) -> Option<Value> {
        let (v, best) = (self.verdict.as_ref()?, super::best_row(self.rows)?);
        let row = &self.rows[best];
        Some(json!({
            "fastest": row.label(self.sweeping(), self.settings.show_pull),
            "environment": podq::scope::env_line(row.scenario.scope, row.scenario.shard_size),
            "recommended": v.first_in_every_draw && v.within_error.is_empty(),
            "first_in_every_draw": v.first_in_every_draw,
            "order_error": self.order.factor,
            "order_error_measured_on": self.order.measured_on,
            "within_error": self.names(&v.within_error),
            "slower_beyond_error": self.names(&v.beyond_error),
        }))
    }

    /// One result row in the bench's shape.
    fn json_row(&self, index: usize, row: &Row) -> Value {
        let o = &row.outcome;
        let s = &row.scenario;
        let (lo, hi) = row.range.unwrap_or((o.items_per_sec, o.items_per_sec));
        let mut value = json!({
            "workload": s.workload.name(),
            "system": "sim",
            "profile": self.profile.name,
            "scope": s.scope.name(),
            "threads": s.producers(),
            "items_per_thread": s.items,
            "runs": 1,
            "items_per_sec": o.items_per_sec.round() as u64,
            "items_per_sec_min": lo.round() as u64,
            "items_per_sec_max": hi.round() as u64,
            "p50_ns": o.queue.p50,
            "p90_ns": o.queue.p90,
            "p95_ns": o.queue.p95,
            "pools": o.pools,
            "workers": o.workers,
            "lock_contended": o.lock_contended,
            "seed": s.seed,
            "pull": if s.pull { "on" } else { "off" },
            "pulled": o.pull.pulled,
        });
        let Value::Object(map) = &mut value else {
            unreachable!("json! of an object literal")
        };
        if s.scope == AffinityScope::CacheShard {
            map.insert("shard_size".into(), s.shard_size.into());
            map.insert("shard_by".into(), s.shard_rule.name().into());
        }
        if s.workload.is_spawned() {
            match s.workload {
                Workload::Chain { depth } => map.insert("depth".into(), depth.into()),
                Workload::Yield { yields } => map.insert("yields".into(), yields.into()),
                _ => None,
            };
            map.insert("ns_per_item".into(), (1e9 / o.items_per_sec).into());
            map.insert(
                "by_queuer".into(),
                by_queuer(&row.scenario, &row.outcome).into(),
            );
            map.insert("taken_from_queuer".into(), o.held.taken_from_queuer.into());
            map.insert("taken_by_watchdog".into(), o.held.taken_by_watchdog.into());
            map.insert("held_bounded".into(), o.held.bounded.into());
        }
        if self.profile.mechanism.holds {
            map.insert("ahead".into(), ahead(s, o).into());
            map.insert("ran_ahead".into(), o.held.ran_ahead.into());
        }
        if s.pull {
            let c = &o.pull;
            map.insert(
                "pull_counts".into(),
                json!({
                    "offers": c.offers,
                    "kicks": c.kicks,
                    "idle_entries": c.idle_entries,
                    "searches": c.searches,
                    "found": c.found,
                    "gated": c.gated,
                    "capped": c.capped,
                }),
            );
        }
        if let (Workload::Rpc, Some(hop)) = (s.workload, o.queue_to_start) {
            map.insert("p99_ns".into(), o.queue.p99.into());
            map.insert(
                "round_trips".into(),
                (s.items * s.producers() as u64).into(),
            );
            map.insert(
                "round_trips_per_sec".into(),
                ((o.items_per_sec / 2.0).round() as u64).into(),
            );
            map.insert("hop_p50_ns".into(), hop.p50.into());
            map.insert("hop_p99_ns".into(), hop.p99.into());
        } else if let (true, Some(start)) = (s.workload.is_open(), o.queue_to_start) {
            map.insert("p99_ns".into(), o.queue.p99.into());
            map.insert("queue_to_start_p50_ns".into(), start.p50.into());
            map.insert("queue_to_start_p99_ns".into(), start.p99.into());
        }
        if let Some(loc) = o.locality {
            let l = &s.locality;
            map.insert("steer".into(), if s.steer { "on" } else { "off" }.into());
            map.insert("groups".into(), loc.groups.into());
            map.insert("set_kb".into(), l.set_kb.into());
            map.insert("load".into(), l.load.into());
            map.insert("item_ns".into(), loc.item_ns.into());
            map.insert("walk_ns".into(), loc.walk_ns.into());
            map.insert(
                "cpu_busy".into(),
                ((loc.cpu_busy * 1000.0).round() / 1000.0).into(),
            );
            map.insert("run_mean_ns".into(), loc.run_mean_ns.into());
            map.insert("run_p50_ns".into(), loc.run_time.p50.into());
            map.insert("run_p99_ns".into(), loc.run_time.p99.into());
            if let Some(start) = o.queue_to_start {
                map.insert("start_p99_ns".into(), start.p99.into());
            }
            map.insert("grouped_at_home".into(), loc.at_home.into());
            map.insert("grouped_elsewhere".into(), loc.elsewhere.into());
            map.insert("home_changes".into(), loc.home_changes.into());
            map.insert("steered".into(), loc.steered.into());
            map.insert("steer_refused".into(), loc.refused.into());
            map.insert("most_on_one_pod".into(), loc.most_on_one_pod.into());
            map.insert("outside_pod".into(), loc.outside_pod.into());
            let w = loc.walks_from;
            map.insert(
                "walks_from".into(),
                json!({
                    "private": w.private,
                    "peer": w.peer,
                    "llc": w.llc,
                    "other_cache": w.other_cache,
                    "memory": w.memory,
                }),
            );
        }
        if self.settings.uncertainty.is_some() {
            let flips: Vec<String> = self
                .flips
                .iter()
                .filter_map(|&(a, b)| match (a == index, b == index) {
                    (true, _) => Some(self.rows[b].label(self.sweeping(), self.settings.show_pull)),
                    (_, true) => Some(self.rows[a].label(self.sweeping(), self.settings.show_pull)),
                    _ => None,
                })
                .collect();
            map.insert("order_flips_with".into(), flips.into());
        }
        value
    }
}

/// The share of the items of `s` run by the worker whose running item queued them, as `o`
/// counts them (`PoolStats::ran_by_queuer` over the items, as the bench's `by_queuer`).
pub(crate) fn by_queuer(s: &Scenario, o: &Outcome) -> f64 {
    o.held.ran_by_queuer as f64 / runs(s)
}

/// The share of the items of `s` that a worker took from its pool's head ahead, with the one
/// it took, and ran (H8), as `o` counts them (`PoolStats::ran_ahead` over the items, as the
/// bench's `ahead`).
pub(crate) fn ahead(s: &Scenario, o: &Outcome) -> f64 {
    o.held.ran_ahead as f64 / runs(s)
}

/// The lock acquisitions per item of `s` and the share of them that found their lock held, as
/// `o` counts them (`PoolStats::lock_acquisitions` over the items and `lock_contended` over
/// the acquisitions, as the bench's `locks_per_item` and `lock_contended`).
pub(crate) fn locks(s: &Scenario, o: &Outcome) -> Locks {
    Locks {
        per_item: o.lock_acquisitions as f64 / runs(s),
        held: o.lock_contended as f64 / o.lock_acquisitions.max(1) as f64,
    }
}

/// A run's locks: acquisitions per item, and the share of them that found the lock held.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Locks {
    /// Lock acquisitions per item.
    pub(crate) per_item: f64,
    /// The share of those that found their lock held.
    pub(crate) held: f64,
}

/// The items `s` runs, at least 1.
pub(crate) fn runs(s: &Scenario) -> f64 {
    (s.workload.runs_per_producer(s.items) * s.producers() as u64).max(1) as f64
}

/// `values` as `on` and `off`, in order, comma-separated.
fn on_off_list(values: &[bool]) -> String {
    let names: Vec<&str> = values
        .iter()
        .map(|&on| if on { "on" } else { "off" })
        .collect();
    names.join(",")
}

/// `1 core`, `2 cores`.
fn plural(count: usize, what: &str) -> String {
    if count == 1 {
        format!("{count} {what}")
    } else {
        format!("{count} {what}s")
    }
}

/// The part's clock and what it makes of the profile's software costs, in words.
pub(crate) fn clock_text(p: &Platform, profile: &Profile) -> String {
    let factor = p.work_factor(profile.clock_ghz);
    match (p.clock_ghz, profile.clock_ghz) {
        (Some(here), Some(at)) => format!(
            "clock {here:.2} GHz: the costs' software (at {at:.2} GHz) takes {factor:.2}x their time"
        ),
        (Some(here), None) => format!("clock {here:.2} GHz, the costs' own"),
        (None, Some(at)) => format!("clock unknown: the costs' {at:.2} GHz"),
        (None, None) => "clock unknown, the costs' own".to_owned(),
    }
}
