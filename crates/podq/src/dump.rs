//! [`dump()`]: every live workqueue of the process and its pools, in one snapshot, for an
//! operator: printed as tables in the manner of the kernel's `tools/workqueue/wq_dump.py` and
//! `wq_monitor.py`, or serialised (the `serde` feature).
//!
//! The snapshot is made of the statistics that [`Workqueue::stats`](crate::Workqueue::stats)
//! returns, one [`WorkqueueStats`] per workqueue; the tables show their fields through two
//! lists of columns, [`WORKQUEUE`] and [`POOL`], so that a field is one line to show.

use std::fmt;

use crate::stats::{PoolStats, PullLevelStats, WorkqueueStats};

/// Every live workqueue of the process and the state of its pools, at the moment [`dump()`]
/// was called.
///
/// `Display` prints two tables: the workqueues (name, scope, shard size, pull, steering,
/// `max_active`, backlog and their counts), then the pools of each (CPUs, workers busy, idle
/// and blocked, items waiting, lock acquisitions and how many were contended, items pulled in
/// and out, items run by the worker whose item queued them and items taken over from it, the
/// searches of sibling pools and how many found work, workers created, retired
/// and refused by the OS, how long the refusal has lasted, and items the rescuer ran). With
/// the `serde` feature it serialises as `{"workqueues": [...]}`, each element a
/// [`WorkqueueStats`].
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct Dump {
    /// The live workqueues, in the order they were built.
    pub workqueues: Vec<WorkqueueStats>,
}

/// A snapshot of every live workqueue of this process (those built and not yet dropped) and
/// of its pools, for an operator to print or serialise, as the kernel's
/// `tools/workqueue/wq_dump.py` shows the kernel's workqueues.
///
/// Workqueues register once when they are built, by a weak handle: nothing is kept alive and
/// nothing is recorded per work item. The call reads each workqueue's statistics as
/// [`Workqueue::stats`](crate::Workqueue::stats) does (each pool's lock taken once, and each
/// busy worker's thread state read on Linux), so it suits a signal handler thread or an admin
/// endpoint, not a hot loop. A pool is shared by every workqueue with equal attributes, so it
/// appears under each of them with the same counts. In a child process of `fork()`, the
/// workqueues of the parent are not listed.
///
/// ```
/// let wq = podq::Workqueue::builder("dumped").build()?;
/// wq.queue(|| {});
/// wq.flush();
/// let dump = podq::dump();
/// assert!(dump.workqueues.iter().any(|w| w.name == "dumped"));
/// println!("{dump}");
/// # Ok::<(), podq::Error>(())
/// ```
pub fn dump() -> Dump {
    Dump {
        workqueues: crate::live::stats_of_live(),
    }
}

/// One column of a table: its heading and how a row's cell reads.
struct Column<S> {
    /// The heading.
    head: &'static str,
    /// Whether the cells align right (numbers) or left (names).
    right: bool,
    /// The cell of one row.
    cell: fn(&S) -> String,
}

/// A right-aligned column of counts.
const fn count<S>(head: &'static str, cell: fn(&S) -> String) -> Column<S> {
    Column {
        head,
        right: true,
        cell,
    }
}

/// A left-aligned column of names.
const fn text<S>(head: &'static str, cell: fn(&S) -> String) -> Column<S> {
    Column {
        head,
        right: false,
        cell,
    }
}

/// `on` or `off`.
fn on_off(on: bool) -> String {
    if on { "on" } else { "off" }.to_owned()
}

/// A limit, or `-` for none.
fn limit(limit: Option<usize>) -> String {
    limit.map_or_else(|| "-".to_owned(), |n| n.to_string())
}

/// How long the OS has refused a pool's workers, in whole seconds, or `-` while it grows.
fn refused_for(since: Option<std::time::SystemTime>) -> String {
    since.map_or_else(
        || "-".to_owned(),
        |t| {
            let secs = t.elapsed().map_or(0, |d| d.as_secs());
            format!("{secs}s")
        },
    )
}

/// A count of the pool's pull summed over its levels, or `-` for a pool that does not pull.
fn pull_sum(pool: &PoolStats, count: fn(&PullLevelStats) -> u64) -> String {
    pool.pull.as_ref().map_or_else(
        || "-".to_owned(),
        |p| p.levels.iter().map(count).sum::<u64>().to_string(),
    )
}

/// The workqueue table's columns: its attributes, then its counts (`WorkqueueStats`).
const WORKQUEUE: &[Column<WorkqueueStats>] = &[
    text("workqueue", |s| s.name.clone()),
    text("scope", |s| s.scope.to_string()),
    count("shard", |s| s.shard_size.to_string()),
    text("pull", |s| on_off(s.pull)),
    text("steer", |s| on_off(s.steer)),
    count("max_active", |s| limit(s.max_active)),
    count("backlog", |s| match s.max_backlog {
        Some(max) => format!("{}/{max}", s.backlog),
        None => "-".to_owned(),
    }),
    count("pools", |s| s.pools.len().to_string()),
    count("started", |s| s.started.to_string()),
    count("completed", |s| s.completed.to_string()),
    count("in_flight", |s| s.in_flight.to_string()),
    count("for_slot", |s| s.waiting_for_slot.to_string()),
    count("panicked", |s| s.panicked.to_string()),
    count("cancelled", |s| s.cancelled.to_string()),
    count("at_home", |s| s.grouped_at_home.to_string()),
    count("elsewhere", |s| s.grouped_elsewhere.to_string()),
    count("reformed", |s| s.reformations.to_string()),
];

/// The pool table's columns (`PoolStats`), after the workqueue's name.
const POOL: &[Column<PoolStats>] = &[
    text("pool", |s| s.name.clone()),
    count("pod", |s| s.pod.to_string()),
    text("cpus", |s| s.cpus.to_string()),
    count("workers", |s| s.workers.to_string()),
    count("busy", |s| {
        s.workers.saturating_sub(s.idle_workers).to_string()
    }),
    count("idle", |s| s.idle_workers.to_string()),
    count("blocked", |s| s.blocked_workers.to_string()),
    count("waiting", |s| s.queue_depth.to_string()),
    count("executed", |s| s.executed.to_string()),
    count("by_queuer", |s| s.ran_by_queuer.to_string()),
    count("taken_over", |s| s.taken_from_queuer.to_string()),
    count("ahead", |s| s.ran_ahead.to_string()),
    count("locks", |s| s.lock_acquisitions.to_string()),
    count("contended", |s| s.lock_contended.to_string()),
    count("pulled_in", |s| s.pulled_in.to_string()),
    count("pulled_out", |s| s.pulled_out.to_string()),
    count("searches", |s| pull_sum(s, |l| l.searches)),
    count("found", |s| pull_sum(s, |l| l.found)),
    count("created", |s| s.workers_created.to_string()),
    count("retired", |s| s.workers_retired.to_string()),
    count("for_blocked", |s| s.workers_started_for_blocked.to_string()),
    count("refused", |s| s.spawn_failures.to_string()),
    count("refused_for", |s| refused_for(s.workers_refused_since)),
    count("rescued", |s| s.rescued.to_string()),
];

/// Writes `rows` (each a list of cells, the first row the headings) as a table: columns two
/// spaces apart, each as wide as its widest cell, right-aligned where `right` says.
fn table(f: &mut fmt::Formatter<'_>, right: &[bool], rows: &[Vec<String>]) -> fmt::Result {
    let columns = right.len();
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c > 0 {
                line.push_str("  ");
            }
            let pad = widths[c] - cell.chars().count();
            if right[c] {
                line.extend(std::iter::repeat_n(' ', pad));
                line.push_str(cell);
            } else {
                line.push_str(cell);
                if c + 1 < columns {
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
        }
        writeln!(f, "{}", line.trim_end())?;
    }
    Ok(())
}

impl fmt::Display for Dump {
    /// The workqueue table, then the pool table (each pool under the name of the workqueue
    /// it serves). Counts run from the workqueue's or the pool's creation; `busy`, `idle`,
    /// `blocked` and `waiting` are the state now.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.workqueues.len();
        writeln!(f, "{n} live workqueue{}", if n == 1 { "" } else { "s" })?;
        if n == 0 {
            return Ok(());
        }
        writeln!(f)?;
        let mut rows = vec![WORKQUEUE.iter().map(|c| c.head.to_owned()).collect()];
        rows.extend(
            self.workqueues
                .iter()
                .map(|wq| WORKQUEUE.iter().map(|c| (c.cell)(wq)).collect()),
        );
        let right: Vec<bool> = WORKQUEUE.iter().map(|c| c.right).collect();
        table(f, &right, &rows)?;

        writeln!(f)?;
        let mut rows = vec![std::iter::once("workqueue".to_owned())
            .chain(POOL.iter().map(|c| c.head.to_owned()))
            .collect()];
        for wq in &self.workqueues {
            rows.extend(wq.pools.iter().map(|pool| {
                std::iter::once(wq.name.clone())
                    .chain(POOL.iter().map(|c| (c.cell)(pool)))
                    .collect()
            }));
        }
        let right: Vec<bool> = std::iter::once(false)
            .chain(POOL.iter().map(|c| c.right))
            .collect();
        table(f, &right, &rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Renders `rows` with `right` through [`table`].
    struct Table(Vec<bool>, Vec<Vec<String>>);

    impl fmt::Display for Table {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            table(f, &self.0, &self.1)
        }
    }

    #[test]
    fn a_table_aligns_names_left_and_counts_right() {
        let rows = |cells: &[&[&str]]| -> Vec<Vec<String>> {
            cells
                .iter()
                .map(|r| r.iter().map(|c| (*c).to_owned()).collect())
                .collect()
        };
        let t = Table(
            vec![false, true, false],
            rows(&[&["pool", "waiting", "cpus"], &["cs8-p10", "7", "0-3"]]),
        );
        assert_eq!(
            t.to_string(),
            "pool     waiting  cpus\ncs8-p10        7  0-3\n"
        );
    }

    #[test]
    fn headings_are_unique_within_a_table() {
        let mut heads: Vec<&str> = WORKQUEUE.iter().map(|c| c.head).collect();
        heads.sort_unstable();
        heads.dedup();
        assert_eq!(heads.len(), WORKQUEUE.len());
        let mut heads: Vec<&str> = POOL.iter().map(|c| c.head).collect();
        heads.push("workqueue");
        heads.sort_unstable();
        heads.dedup();
        assert_eq!(heads.len(), POOL.len() + 1);
    }

    #[test]
    fn an_empty_dump_says_so() {
        let empty = Dump {
            workqueues: Vec::new(),
        };
        assert_eq!(empty.to_string(), "0 live workqueues\n");
    }
}
