//! A small service on podq with both observability features on: request handlers on one
//! workqueue, a periodic flush on an ordered one, a handler that panics now and then, and a
//! cancelled item; then what a Prometheus scrape of the process would see.
//!
//! `cargo run -p podq --example service_metrics --features metrics,tracing`
//!
//! Standard error shows the `tracing` output: the worker events (debug level) and, for every
//! thousandth request, the handler's own event inside podq's run span, which carries the
//! workqueue, the pod and the queue-to-start time, and at the end what one publish cost.
//! Standard output is the scrape.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use metrics_exporter_prometheus::PrometheusBuilder;
use podq::{DelayedWork, Work, Workqueue};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Requests the example serves.
const REQUESTS: u64 = 20_000;

/// Publishes timed to measure one publish.
const PUBLISHES: u32 = 1_000;

/// Every how many requests one panics (the workqueue catches and counts it).
const PANIC_EVERY: u64 = 5_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let recorder = PrometheusBuilder::new().build_recorder();
    let scrape = recorder.handle();
    metrics::set_global_recorder(recorder)?;
    tracing_subscriber::registry()
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
        .with(
            Targets::new()
                .with_target("podq::worker", LevelFilter::DEBUG)
                .with_target("podq::work", LevelFilter::TRACE)
                .with_target("service_metrics", LevelFilter::INFO),
        )
        .try_init()?;
    // Panics are part of the load: keep the default hook's messages off the output.
    std::panic::set_hook(Box::new(|_| {}));

    let requests = Workqueue::builder("requests").max_active(64).build()?;
    let disk = Workqueue::ordered("disk")?;
    let served = Arc::new(AtomicU64::new(0));
    let flushes = Arc::new(AtomicU64::new(0));
    let flush = {
        let flushes = Arc::clone(&flushes);
        DelayedWork::new(move || {
            flushes.fetch_add(1, Ordering::Relaxed);
        })
    };

    for n in 1..=REQUESTS {
        let served = Arc::clone(&served);
        requests.queue(move || {
            // A request: a little computing, then the answer.
            let answer = (0..200u64).fold(n, |acc, k| acc.wrapping_mul(31).wrapping_add(k));
            std::hint::black_box(answer);
            if n % PANIC_EVERY == 0 {
                panic!("request {n} failed");
            }
            if n % 1_000 == 0 {
                tracing::info!(request = n, "served");
            }
            served.fetch_add(1, Ordering::Relaxed);
        });
        if n % 4_000 == 0 {
            disk.queue_delayed(&flush, Duration::from_millis(1));
        }
    }
    // An item queued and cancelled before it runs: counted as cancelled.
    let never = Work::new(|| {});
    requests.queue_work(&never);
    never.cancel_sync();

    requests.flush();
    flush.flush();
    disk.flush();

    // What one publish costs here: both workqueues' statistics, handed to the recorder.
    let start = Instant::now();
    for _ in 0..PUBLISHES {
        podq::metrics::publish();
    }
    let per_publish = start.elapsed() / PUBLISHES;
    println!("{}", scrape.render());
    let pools = requests.stats().pools.len() + disk.stats().pools.len();
    eprintln!(
        "served {} requests, {} disk flushes; one publish of 2 workqueues ({pools} pools): \
         {per_publish:?} (mean of {PUBLISHES})",
        served.load(Ordering::Relaxed),
        flushes.load(Ordering::Relaxed)
    );
    Ok(())
}
