//! Every workqueue's counters and its pools' state through the [`metrics`] facade
//! (the `metrics` feature): for Prometheus and the other exporters a service already uses.
//!
//! Nothing is recorded per work item. The counters are the per-pod ones that
//! [`Workqueue::stats`](crate::Workqueue::stats) reads; [`publish`] reads them for every live
//! workqueue and hands the values to the facade's recorder, as absolute counter values and
//! gauge levels. Call it on each scrape (before the exporter renders), or let a [`Publisher`]
//! call it on a tick:
//!
//! ```
//! use std::time::Duration;
//! use podq::Workqueue;
//!
//! let wq = Workqueue::builder("io").build()?;
//! wq.queue(|| {});
//! wq.flush();
//! // Publishes every 5 s, to whatever recorder is installed, until it is dropped.
//! let publisher = podq::metrics::Publisher::start(Duration::from_secs(5))?;
//! podq::metrics::publish(); // or publish now, as a scrape handler does
//! drop(publisher);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The names, kinds, labels and units are in one table, `docs/observability.md` (a test
//! checks that it matches the lists `WORKQUEUE` and `POOL` here). Series carry the label
//! `workqueue` (its name); pool series also carry `pool` (the pool's short name, `cs8-p2`). A
//! pool is shared by every workqueue with equal attributes, so it appears under each of them
//! with the same values. Give live workqueues distinct names: two with one name write the same
//! series, and the one built later wins. A dropped workqueue is no longer published; its
//! series keep their last values in the recorder.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use ::metrics::{counter, describe_counter, describe_gauge, gauge, Unit};

use crate::stats::{PoolStats, WorkqueueStats};

/// How a series moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// Only up, from the workqueue's or pool's creation: set with `Counter::absolute`.
    Counter,
    /// The state now: set with `Gauge::set`.
    Gauge,
}

/// One published series: its name, kind, unit and help, and where its value comes from.
struct Metric<S> {
    /// The name, Prometheus-style (`_total` on counters).
    name: &'static str,
    /// Counter or gauge.
    kind: Kind,
    /// What one unit of the value is, in words (the facade's unit is `Unit::Count` for all).
    unit: &'static str,
    /// One line for the exporter's `# HELP`.
    help: &'static str,
    /// The value, from a statistics snapshot.
    read: fn(&S) -> u64,
}

/// The series of a workqueue, labelled `workqueue`.
const WORKQUEUE: &[Metric<WorkqueueStats>] = &[
    Metric {
        name: "podq_workqueue_started_total",
        kind: Kind::Counter,
        unit: "executions",
        help: "Executions whose closure started.",
        read: |s| s.started,
    },
    Metric {
        name: "podq_workqueue_completed_total",
        kind: Kind::Counter,
        unit: "executions",
        help: "Executions whose closure returned or panicked.",
        read: |s| s.completed,
    },
    Metric {
        name: "podq_workqueue_panicked_total",
        kind: Kind::Counter,
        unit: "executions",
        help: "Executions whose closure panicked (also counted as completed).",
        read: |s| s.panicked,
    },
    Metric {
        name: "podq_workqueue_cancelled_total",
        kind: Kind::Counter,
        unit: "executions",
        help: "Pending executions discarded by cancel_sync before they ran.",
        read: |s| s.cancelled,
    },
    Metric {
        name: "podq_workqueue_drop_panics_total",
        kind: Kind::Counter,
        unit: "work items",
        help: "Work items whose closure panicked while a worker dropped it after its last run.",
        read: |s| s.drop_panics,
    },
    Metric {
        name: "podq_workqueue_reformations_total",
        kind: Kind::Counter,
        unit: "re-formations",
        help: "Times the workqueue's pods were re-formed: the CPUs the process may use changed, \
               or its scope or shard size was set.",
        read: |s| s.reformations,
    },
    Metric {
        name: "podq_workqueue_queued",
        kind: Kind::Gauge,
        unit: "executions",
        help: "Executions queued and not finished: waiting in a pool, for a max_active slot, \
               or running.",
        read: |s| s.in_flight,
    },
    Metric {
        name: "podq_workqueue_waiting_for_slot",
        kind: Kind::Gauge,
        unit: "executions",
        help: "Executions waiting for a max_active slot.",
        read: |s| s.waiting_for_slot,
    },
    Metric {
        name: "podq_workqueue_grouped_at_home_total",
        kind: Kind::Counter,
        unit: "executions",
        help: "Executions queued through a group that started on their group's home pod.",
        read: |s| s.grouped_at_home,
    },
    Metric {
        name: "podq_workqueue_grouped_elsewhere_total",
        kind: Kind::Counter,
        unit: "executions",
        help: "Executions queued through a group that started on another pod, or while their \
               group had no home.",
        read: |s| s.grouped_elsewhere,
    },
    Metric {
        name: "podq_workqueue_home_changes_total",
        kind: Kind::Counter,
        unit: "moves",
        help: "Moves of a group's home from one pod to another.",
        read: |s| s.home_changes,
    },
];

/// The series of each pool serving a workqueue, labelled `workqueue` and `pool`.
const POOL: &[Metric<PoolStats>] = &[
    Metric {
        name: "podq_pool_queue_depth",
        kind: Kind::Gauge,
        unit: "work items",
        help: "Work items waiting in the pool's queue.",
        read: |s| s.queue_depth as u64,
    },
    Metric {
        name: "podq_pool_workers",
        kind: Kind::Gauge,
        unit: "workers",
        help: "Live worker threads, busy or idle.",
        read: |s| s.workers as u64,
    },
    Metric {
        name: "podq_pool_idle_workers",
        kind: Kind::Gauge,
        unit: "workers",
        help: "Workers parked with nothing to do.",
        read: |s| s.idle_workers as u64,
    },
    Metric {
        name: "podq_pool_blocked_workers",
        kind: Kind::Gauge,
        unit: "workers",
        help: "Busy workers whose thread sleeps in a work item now.",
        read: |s| s.blocked_workers as u64,
    },
    Metric {
        name: "podq_pool_workers_created_total",
        kind: Kind::Counter,
        unit: "workers",
        help: "Worker threads ever started.",
        read: |s| s.workers_created,
    },
    Metric {
        name: "podq_pool_workers_retired_total",
        kind: Kind::Counter,
        unit: "workers",
        help: "Workers that retired after the idle timeout.",
        read: |s| s.workers_retired,
    },
    Metric {
        name: "podq_pool_executed_total",
        kind: Kind::Counter,
        unit: "work items",
        help: "Work items run to the end by the pool's workers, pulled ones included.",
        read: |s| s.executed,
    },
    Metric {
        name: "podq_pool_pulled_in_total",
        kind: Kind::Counter,
        unit: "work items",
        help: "Work items queued on another pool that this pool's workers pulled and ran.",
        read: |s| s.pulled_in,
    },
    Metric {
        name: "podq_pool_pulled_out_total",
        kind: Kind::Counter,
        unit: "work items",
        help: "Work items queued on this pool that workers of another pool pulled and ran.",
        read: |s| s.pulled_out,
    },
    Metric {
        name: "podq_pool_ran_by_queuer_total",
        kind: Kind::Counter,
        unit: "work items",
        help: "Work items queued by a running item to this pool that its worker ran next itself.",
        read: |s| s.ran_by_queuer,
    },
    Metric {
        name: "podq_pool_taken_from_queuer_total",
        kind: Kind::Counter,
        unit: "work items",
        help:
            "Held work items that another worker or the watchdog took from their queuer's worker.",
        read: |s| s.taken_from_queuer,
    },
    Metric {
        name: "podq_pool_ran_ahead_total",
        kind: Kind::Counter,
        unit: "work items",
        help: "Work items a worker took from the queue with the one before them and ran after it.",
        read: |s| s.ran_ahead,
    },
    Metric {
        name: "podq_pool_lock_acquisitions_total",
        kind: Kind::Counter,
        unit: "lock acquisitions",
        help: "Times one of the pool's locks was taken by a pusher or a worker.",
        read: |s| s.lock_acquisitions,
    },
    Metric {
        name: "podq_pool_lock_contended_total",
        kind: Kind::Counter,
        unit: "lock acquisitions",
        help: "Times such a lock was found held by another thread.",
        read: |s| s.lock_contended,
    },
    Metric {
        name: "podq_pool_pin_failures_total",
        kind: Kind::Counter,
        unit: "workers",
        help: "Workers that could not be placed on their CPUs and ran where the OS put them.",
        read: |s| s.pin_failures,
    },
    Metric {
        name: "podq_pool_worker_panics_total",
        kind: Kind::Counter,
        unit: "runs",
        help: "Runs that unwound into a worker past the workqueue's panic handling.",
        read: |s| s.worker_panics,
    },
    Metric {
        name: "podq_pool_spawn_failures_total",
        kind: Kind::Counter,
        unit: "threads",
        help: "Worker threads the OS refused to start.",
        read: |s| s.spawn_failures,
    },
    Metric {
        name: "podq_pool_workers_refused_seconds",
        kind: Kind::Gauge,
        unit: "seconds",
        help: "How long the OS has refused the pool's workers (0 while it starts them).",
        read: |s| {
            s.workers_refused_since
                .and_then(|since| since.elapsed().ok())
                .map_or(0, |d| d.as_secs())
        },
    },
    Metric {
        name: "podq_pool_rescued_total",
        kind: Kind::Counter,
        unit: "work items",
        help: "Work items the rescuer ran because no worker could be started.",
        read: |s| s.rescued,
    },
    Metric {
        name: "podq_pool_workers_seen_blocked_total",
        kind: Kind::Counter,
        unit: "workers",
        help: "Busy workers found asleep in a work item, each item counted once.",
        read: |s| s.workers_seen_blocked,
    },
    Metric {
        name: "podq_pool_workers_started_for_blocked_total",
        kind: Kind::Counter,
        unit: "workers",
        help: "Workers started because busy ones were found asleep.",
        read: |s| s.workers_started_for_blocked,
    },
    Metric {
        name: "podq_pool_pull_searches_total",
        kind: Kind::Counter,
        unit: "searches",
        help: "Searches of sibling pools by the pool's idle workers, all levels.",
        read: |s| {
            s.pull
                .as_ref()
                .map_or(0, |p| p.levels.iter().map(|l| l.searches).sum())
        },
    },
    Metric {
        name: "podq_pool_pull_gated_total",
        kind: Kind::Counter,
        unit: "idle entries",
        help: "Idle entries that found work offered by a sibling and did not search (the gate).",
        read: |s| {
            s.pull
                .as_ref()
                .map_or(0, |p| p.levels.iter().map(|l| l.gated).sum())
        },
    },
];

/// Reads the statistics of every live workqueue and records them through the `metrics`
/// facade's current recorder: counters as absolute values, gauges as levels, each series
/// described with its unit and help once per call.
///
/// Cheap enough for every scrape: one [`Workqueue::stats`](crate::Workqueue::stats) per
/// workqueue, which reads each pod's counters and takes each pool's lock once; the work items
/// themselves record nothing.
pub fn publish() {
    describe();
    for stats in crate::live::stats_of_live() {
        record(&stats);
    }
}

/// Describes every series to the current recorder: its kind, the unit `Count`, and its help
/// followed by what is counted (`... (unit: work items)`).
fn describe() {
    let names = WORKQUEUE
        .iter()
        .map(|m| (m.name, m.kind, m.help, m.unit))
        .chain(POOL.iter().map(|m| (m.name, m.kind, m.help, m.unit)));
    for (name, kind, help, unit) in names {
        let help = format!("{help} (unit: {unit})");
        match kind {
            Kind::Counter => describe_counter!(name, Unit::Count, help),
            Kind::Gauge => describe_gauge!(name, Unit::Count, help),
        }
    }
}

/// Records one workqueue's snapshot.
fn record(stats: &WorkqueueStats) {
    for metric in WORKQUEUE {
        let labels = [("workqueue", stats.name.clone())];
        set(metric.name, metric.kind, &labels, (metric.read)(stats));
    }
    for pool in &stats.pools {
        for metric in POOL {
            let labels = [
                ("workqueue", stats.name.clone()),
                ("pool", pool.name.clone()),
            ];
            set(metric.name, metric.kind, &labels, (metric.read)(pool));
        }
    }
}

/// Sets one series.
fn set(name: &'static str, kind: Kind, labels: &[(&'static str, String)], value: u64) {
    match kind {
        Kind::Counter => counter!(name, labels).absolute(value),
        // Gauges are f64 in the facade; counts below 2^53 convert exactly.
        Kind::Gauge => gauge!(name, labels).set(value as f64),
    }
}

/// A thread (`podq/metrics`) that calls [`publish`] on a tick until the `Publisher` is dropped.
#[derive(Debug)]
pub struct Publisher {
    /// Dropped to stop the thread (its `recv_timeout` then returns at once).
    stop: Option<mpsc::Sender<()>>,
    /// The thread, joined on drop.
    thread: Option<JoinHandle<()>>,
}

impl Publisher {
    /// Starts a thread that publishes at once and then every `every`.
    ///
    /// # Errors
    ///
    /// The OS's error when it refuses the thread.
    pub fn start(every: Duration) -> std::io::Result<Publisher> {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("podq/metrics".into())
            .spawn(move || loop {
                publish();
                match stopped.recv_timeout(every) {
                    Err(RecvTimeoutError::Timeout) => {}
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                }
            })?;
        Ok(Publisher {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Publisher {
    /// Stops the thread and waits for it (at most one [`publish`] in progress).
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            // A panic in the thread (a recorder's) has been reported by the panic hook already.
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Kind, Metric, POOL, WORKQUEUE};

    /// The rows of the table in `docs/observability.md`: `| name | kind | unit | labels |`.
    fn documented() -> Vec<Vec<String>> {
        include_str!("../../../docs/observability.md")
            .lines()
            .filter(|line| line.starts_with("| `podq_"))
            .map(|line| {
                line.trim_matches('|')
                    .split('|')
                    .map(|cell| cell.trim().trim_matches('`').to_owned())
                    .collect()
            })
            .collect()
    }

    fn row<S>(metric: &Metric<S>, labels: &str) -> Vec<String> {
        let kind = match metric.kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        };
        vec![
            metric.name.to_owned(),
            kind.to_owned(),
            metric.unit.to_owned(),
            labels.to_owned(),
            metric.help.split_whitespace().collect::<Vec<_>>().join(" "),
        ]
    }

    #[test]
    fn the_documented_table_is_the_published_one() {
        let code: Vec<Vec<String>> = WORKQUEUE
            .iter()
            .map(|m| row(m, "workqueue"))
            .chain(POOL.iter().map(|m| row(m, "workqueue, pool")))
            .collect();
        assert_eq!(documented(), code);
    }

    #[test]
    fn names_are_unique_and_counters_end_in_total() {
        let mut names: Vec<(&str, Kind)> = WORKQUEUE
            .iter()
            .map(|m| (m.name, m.kind))
            .chain(POOL.iter().map(|m| (m.name, m.kind)))
            .collect();
        for (name, kind) in &names {
            assert_eq!(name.ends_with("_total"), *kind == Kind::Counter, "{name}");
        }
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count);
    }
}
