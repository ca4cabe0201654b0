//! The `metrics` and `tracing` features after a known load: the series a recorder receives
//! (names, labels, values, units) and the spans and events a subscriber sees.
//!
//! `cargo test -p podq --features metrics,tracing --test observability` (skipped without the
//! features; `.ci/run` runs it).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use metrics::Unit;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use metrics_util::MetricKind;
use podq::{AffinityScope, Work, Workqueue};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// One published series: name, labels, value (a counter's or a gauge's, as a whole number).
type Series = BTreeMap<(String, Vec<(String, String)>), (MetricKind, u64, Option<Unit>)>;

/// What `podq::metrics::publish` hands a recorder, for the series labelled `workqueue`.
fn published(workqueue: &str) -> Series {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, podq::metrics::publish);
    let mut series = Series::new();
    for (key, unit, help, value) in snapshotter.snapshot().into_vec() {
        let (kind, key) = key.into_parts();
        let labels: Vec<(String, String)> = key
            .labels()
            .map(|l| (l.key().to_owned(), l.value().to_owned()))
            .collect();
        if !labels.contains(&("workqueue".to_owned(), workqueue.to_owned())) {
            continue;
        }
        assert!(help.is_some(), "{} has no help", key.name());
        let value = match value {
            DebugValue::Counter(v) => v,
            DebugValue::Gauge(v) => v.into_inner() as u64,
            DebugValue::Histogram(_) => panic!("{} is a histogram", key.name()),
        };
        series.insert((key.name().to_owned(), labels), (kind, value, unit));
    }
    series
}

/// The value of series `name` with exactly `labels`.
fn value(series: &Series, name: &str, labels: &[(&str, &str)]) -> u64 {
    let labels: Vec<(String, String)> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    match series.get(&(name.to_owned(), labels.clone())) {
        Some(&(_, value, _)) => value,
        None => panic!("no series {name} {labels:?} in {series:#?}"),
    }
}

#[test]
fn publish_gives_every_series_with_the_counts_of_a_known_load() {
    // A pool of its own (no other test here uses the numa scope with 3 workers).
    let wq = Workqueue::builder("obs-metrics")
        .scope(AffinityScope::Numa)
        .max_workers(3)
        .max_active(1)
        .build()
        .expect("workqueue");
    // One item blocks the only slot while a reusable item waits for it and is cancelled.
    let release = Arc::new(AtomicBool::new(false));
    let blocker = {
        let release = Arc::clone(&release);
        move || {
            while !release.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    };
    wq.queue(blocker);
    let cancelled = Work::new(|| {});
    assert!(wq.queue_work(&cancelled));
    let waiting = published("obs-metrics");
    assert_eq!(
        value(
            &waiting,
            "podq_workqueue_waiting_for_slot",
            &[("workqueue", "obs-metrics")]
        ),
        1
    );
    assert_eq!(
        value(
            &waiting,
            "podq_workqueue_queued",
            &[("workqueue", "obs-metrics")]
        ),
        2
    );
    assert!(cancelled.cancel_sync());
    release.store(true, Ordering::Release);
    for n in 0..100u32 {
        wq.queue(move || assert!(n % 25 != 0, "item {n} panics"));
    }
    assert!(wq.flush());

    let series = published("obs-metrics");
    let wq_labels = [("workqueue", "obs-metrics")];
    // 100 closures and the blocker ran; 4 of them (0, 25, 50, 75) panicked.
    assert_eq!(
        value(&series, "podq_workqueue_started_total", &wq_labels),
        101
    );
    assert_eq!(
        value(&series, "podq_workqueue_completed_total", &wq_labels),
        101
    );
    assert_eq!(
        value(&series, "podq_workqueue_panicked_total", &wq_labels),
        4
    );
    assert_eq!(
        value(&series, "podq_workqueue_cancelled_total", &wq_labels),
        1
    );
    assert_eq!(value(&series, "podq_workqueue_queued", &wq_labels), 0);
    assert_eq!(
        value(&series, "podq_workqueue_reformations_total", &wq_labels),
        wq.stats().reformations
    );
    assert_eq!(
        value(&series, "podq_workqueue_waiting_for_slot", &wq_labels),
        0
    );
    // No group queued anything on it.
    for name in [
        "podq_workqueue_grouped_at_home_total",
        "podq_workqueue_grouped_elsewhere_total",
        "podq_workqueue_home_changes_total",
    ] {
        assert_eq!(value(&series, name, &wq_labels), 0, "{name}");
    }

    let stats = wq.stats();
    assert!(!stats.pools.is_empty());
    let (mut created, mut pulled_in, mut pulled_out) = (0, 0, 0);
    for pool in &stats.pools {
        let labels = [("workqueue", "obs-metrics"), ("pool", pool.name.as_str())];
        assert_eq!(value(&series, "podq_pool_queue_depth", &labels), 0);
        assert_eq!(value(&series, "podq_pool_worker_panics_total", &labels), 0);
        assert_eq!(value(&series, "podq_pool_spawn_failures_total", &labels), 0);
        assert_eq!(
            value(&series, "podq_pool_workers_refused_seconds", &labels),
            0
        );
        assert_eq!(value(&series, "podq_pool_rescued_total", &labels), 0);
        // Nobody retires within the default idle timeout of 300 s.
        assert_eq!(
            value(&series, "podq_pool_workers_retired_total", &labels),
            0
        );
        let pins = value(&series, "podq_pool_pin_failures_total", &labels);
        assert_eq!(pins, pool.pin_failures);
        let workers = value(&series, "podq_pool_workers", &labels);
        assert!((1..=3).contains(&workers), "{workers} workers");
        assert!(value(&series, "podq_pool_idle_workers", &labels) <= workers);
        assert!(value(&series, "podq_pool_blocked_workers", &labels) <= workers);
        let pool_created = value(&series, "podq_pool_workers_created_total", &labels);
        assert_eq!(
            pool_created, workers,
            "none retired, so every worker created lives"
        );
        created += pool_created;
        pulled_in += value(&series, "podq_pool_pulled_in_total", &labels);
        pulled_out += value(&series, "podq_pool_pulled_out_total", &labels);
        let locks = value(&series, "podq_pool_lock_acquisitions_total", &labels);
        assert!(locks >= value(&series, "podq_pool_lock_contended_total", &labels));
        assert!(locks > 0);
        assert!(value(&series, "podq_pool_executed_total", &labels) <= 101);
    }
    assert!(created >= 1);
    // Each pull is counted by the pool that ran the item and by the one it was queued on.
    assert_eq!(pulled_in, pulled_out);

    // Every series once per pool or workqueue, each a counter exactly when named `_total`,
    // all with the unit `count`.
    let names: Vec<&str> = series.keys().map(|(name, _)| name.as_str()).collect();
    assert_eq!(series.len(), 11 + 23 * stats.pools.len(), "{names:?}");
    for ((name, _), (kind, _, unit)) in &series {
        let counter = *kind == MetricKind::Counter;
        assert_eq!(name.ends_with("_total"), counter, "{name}");
        assert_eq!(*unit, Some(Unit::Count), "{name}");
    }

    drop(wq);
    assert!(
        published("obs-metrics").is_empty(),
        "a dropped workqueue is still published"
    );
}

#[test]
fn a_publisher_publishes_on_its_tick_to_the_global_recorder() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::set_global_recorder(recorder).expect("the only global recorder of this test");
    let wq = Workqueue::builder("obs-ticked").build().expect("workqueue");
    for _ in 0..10 {
        wq.queue(|| {});
    }
    wq.flush();
    let publisher = podq::metrics::Publisher::start(Duration::from_millis(5)).expect("thread");
    let started = || {
        snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .find_map(|(key, _, _, value)| {
                let (_, key) = key.into_parts();
                let ours = key.name() == "podq_workqueue_started_total"
                    && key.labels().any(|l| l.value() == "obs-ticked");
                match value {
                    DebugValue::Counter(v) if ours => Some(v),
                    _ => None,
                }
            })
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while started() != Some(10) {
        assert!(
            Instant::now() < deadline,
            "not published in 10 s: {:?}",
            started()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(publisher);
}

/// A run span as the capturing layer saw it.
#[derive(Clone, Debug, Default)]
struct RunSpan {
    workqueue: String,
    pod: Option<u64>,
    queue_to_start_ns: Option<u64>,
}

/// An event as the capturing layer saw it: its message, its `pool` and `reason` fields, and
/// the name of the span it was emitted in.
#[derive(Clone, Debug, Default)]
struct Seen {
    target: String,
    message: String,
    pool: String,
    reason: String,
    in_span: Option<String>,
}

impl Visit for RunSpan {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "workqueue" {
            value.clone_into(&mut self.workqueue);
        }
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "pod" => self.pod = Some(value),
            "queue_to_start_ns" => self.queue_to_start_ns = Some(value),
            _ => {}
        }
    }
    fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
}

impl Visit for Seen {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "pool" => value.clone_into(&mut self.pool),
            "reason" => value.clone_into(&mut self.reason),
            _ => {}
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        }
    }
}

/// Everything the capturing layer saw.
#[derive(Default)]
struct Captured {
    spans: Mutex<Vec<RunSpan>>,
    events: Mutex<Vec<Seen>>,
}

/// A layer that keeps podq's run spans and every event.
struct Capture(Arc<Captured>);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, _: &Id, _: Context<'_, S>) {
        if attrs.metadata().target() == "podq::work" {
            let mut span = RunSpan::default();
            attrs.record(&mut span);
            self.0.spans.lock().expect("spans").push(span);
        }
    }
    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut seen = Seen {
            target: event.metadata().target().to_owned(),
            in_span: ctx.event_span(event).map(|s| s.name().to_owned()),
            ..Seen::default()
        };
        event.record(&mut seen);
        self.0.events.lock().expect("events").push(seen);
    }
}

/// The process's subscriber: the capturing layer, installed once.
fn captured() -> &'static Arc<Captured> {
    static CAPTURED: OnceLock<Arc<Captured>> = OnceLock::new();
    CAPTURED.get_or_init(|| {
        let captured = Arc::new(Captured::default());
        let subscriber = tracing_subscriber::registry().with(Capture(Arc::clone(&captured)));
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        captured
    })
}

/// The worker events of `pool` with this message.
fn worker_events(captured: &Captured, pool: &str, message: &str) -> Vec<Seen> {
    captured
        .events
        .lock()
        .expect("events")
        .iter()
        .filter(|e| e.target == "podq::worker" && e.pool == pool && e.message == message)
        .cloned()
        .collect()
}

#[test]
fn tracing_gives_a_span_per_run_and_the_workers_lives() {
    let captured = captured();
    // A pool of its own (no other test here uses the cache scope).
    let wq = Workqueue::builder("obs-traced")
        .scope(AffinityScope::Cache)
        .build()
        .expect("workqueue");
    for n in 0..50u32 {
        wq.queue(move || {
            if n == 7 {
                tracing::info!(n, "inside");
            }
        });
    }
    assert!(wq.flush());
    let stats = wq.stats();

    let spans: Vec<RunSpan> = captured
        .spans
        .lock()
        .expect("spans")
        .iter()
        .filter(|s| s.workqueue == "obs-traced")
        .cloned()
        .collect();
    assert_eq!(spans.len(), 50, "one span per run");
    let pods: Vec<u64> = stats.pools.iter().map(|p| p.pod as u64).collect();
    for span in &spans {
        assert!(pods.contains(&span.pod.expect("pod field")), "{span:?}");
        // Taken at queue time, as the subscriber was there; a huge bound, not a timing.
        let waited = span.queue_to_start_ns.expect("queue-to-start field");
        assert!(waited < 60_000_000_000, "{span:?}");
    }
    let inside: Vec<Seen> = captured
        .events
        .lock()
        .expect("events")
        .iter()
        .filter(|e| e.message == "inside")
        .cloned()
        .collect();
    assert_eq!(inside.len(), 1);
    assert_eq!(inside[0].in_span.as_deref(), Some("run"));

    let names: Vec<String> = stats.pools.iter().map(|p| p.name.clone()).collect();
    let created: u64 = stats.pools.iter().map(|p| p.workers_created).sum();
    let count = |message: &str| -> u64 {
        names
            .iter()
            .map(|pool| worker_events(captured, pool, message).len() as u64)
            .sum()
    };
    // Every start was a growth, each with its reason, emitted before the thread was asked for.
    assert!(created >= 1);
    assert_eq!(count("pool grows"), created);
    for pool in &names {
        for grow in worker_events(captured, pool, "pool grows") {
            assert!(
                ["busy", "stall"].contains(&grow.reason.as_str()),
                "{grow:?}"
            );
        }
    }

    // A worker says it started on its own thread, which may not have run yet.
    eventually(|| count("worker started"), created);

    drop(wq);
    assert_eq!(count("pool shut down"), names.len() as u64);
    // A worker says it exits just after it has left the pool, which the drop waited for.
    eventually(|| count("worker exits"), created);
}

/// Waits until `count()` reaches `expected` (within 10 s), then checks it is exactly that.
fn eventually(count: impl Fn() -> u64, expected: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while count() < expected {
        assert!(
            Instant::now() < deadline,
            "{} of {expected} in 10 s",
            count()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(count(), expected);
}
