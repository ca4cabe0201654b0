//! How long work waits behind items that block, and how late delayed work fires while they
//! do: the figures behind a table of `docs/benchmarks.md`.
//!
//! ```sh
//! cargo run --release -p podq --example blocked_items
//! ```
//!
//! For each case, 21 tries: queue N items that sleep (in a blocking call) until the try ends,
//! then at once one short item, and time from its queue call to its start; or queue a 2 ms
//! delayed work while 16 items sleep, and time from the call to its run. Prints the median and
//! the worst try.
//!
//! Then the tail of one burst, in fresh pools each run: 32 items that sleep in 1 ms steps until
//! released, and 3 ms later 21 short items queued one after another on a second workqueue with
//! the same attributes (so the same pools), each started before the next is queued. Prints the
//! worst queue-to-start of the 21, per run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use podq::{DelayedWork, Workqueue};

const TRIES: usize = 21;

/// Queues `blocked` sleeping items on `blockers`, then one short item on `short`; returns the
/// short item's wait. Every sleeping item must start before the try ends.
fn one_try(blockers: &Workqueue, short: &Workqueue, blocked: usize) -> Duration {
    let release = Arc::new(Barrier::new(blocked + 1));
    for _ in 0..blocked {
        let release = Arc::clone(&release);
        blockers.queue(move || {
            release.wait();
        });
    }
    let (tx, rx) = mpsc::channel();
    let queued = Instant::now();
    short.queue(move || {
        let _ = tx.send(queued.elapsed());
    });
    let wait = rx.recv().expect("the short item runs");
    release.wait();
    wait
}

/// A 2 ms delayed work queued while 16 items sleep: how long after the call it ran.
fn delayed_try(wq: &Workqueue) -> Duration {
    let release = Arc::new(Barrier::new(17));
    for _ in 0..16 {
        let release = Arc::clone(&release);
        wq.queue(move || {
            release.wait();
        });
    }
    let (tx, rx) = mpsc::channel();
    let asked = Instant::now();
    let work = DelayedWork::new(move || {
        let _ = tx.send(asked.elapsed());
    });
    wq.queue_delayed(&work, Duration::from_millis(2));
    let fired = rx.recv().expect("the delayed work runs");
    release.wait();
    fired
}

/// Short items queued after the sleeping ones.
const SHORT: usize = 21;

/// One run of the tail case on fresh pools (an idle timeout of their own, `run`): returns the
/// worst queue-to-start of the [`SHORT`] items, and when the last sleeping item started (since
/// the first was queued): the first short item waits behind them in the pools' queue.
fn tail_run(run: u64) -> Result<(Duration, Duration), podq::Error> {
    let own = Duration::from_secs(1000 + run);
    let blockers = Workqueue::builder("tail-blockers")
        .idle_timeout(own)
        .build()?;
    let short = Workqueue::builder("tail-short").idle_timeout(own).build()?;
    let released = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let last_start = Arc::new(std::sync::Mutex::new(Duration::ZERO));
    for _ in 0..32 {
        let released = Arc::clone(&released);
        let last_start = Arc::clone(&last_start);
        blockers.queue(move || {
            let mut last = last_start.lock().expect("not poisoned");
            *last = (*last).max(t0.elapsed());
            drop(last);
            while !released.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
            }
        });
    }
    std::thread::sleep(Duration::from_millis(3));
    let mut worst = Duration::ZERO;
    for _ in 0..SHORT {
        let (tx, rx) = mpsc::channel();
        let queued = Instant::now();
        short.queue(move || {
            let _ = tx.send(queued.elapsed());
        });
        worst = worst.max(rx.recv().expect("the short item runs"));
    }
    let last = *last_start.lock().expect("not poisoned");
    released.store(true, Ordering::Relaxed);
    blockers.flush();
    Ok((worst, last))
}

/// Median and worst of `tries`, in milliseconds.
fn report(what: &str, mut tries: Vec<Duration>) {
    tries.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{what:<44} p50 {:>7.3} ms   worst {:>7.3} ms   ({} tries)",
        ms(tries[tries.len() / 2]),
        ms(tries[tries.len() - 1]),
        tries.len()
    );
}

fn main() -> Result<(), podq::Error> {
    if std::env::args().nth(1).as_deref() == Some("tail") {
        let runs: u64 = std::env::args()
            .nth(2)
            .and_then(|n| n.parse().ok())
            .unwrap_or(4);
        for run in 0..runs {
            let (worst, last) = tail_run(run)?;
            println!(
                "tail run {run}: worst of {SHORT} short items behind 32 sleeping: {:.3} ms (the last sleeping item started at {:.3} ms)",
                worst.as_secs_f64() * 1e3,
                last.as_secs_f64() * 1e3
            );
        }
        return Ok(());
    }
    let a = Workqueue::builder("blockers").build()?;
    let b = Workqueue::builder("short").build()?;
    for blocked in [2, 8, 32] {
        let tries = (0..TRIES).map(|_| one_try(&a, &b, blocked)).collect();
        report(
            &format!("short item behind {blocked} blocked of another wq"),
            tries,
        );
    }
    let own = Workqueue::builder("own").build()?;
    let tries = (0..TRIES).map(|_| one_try(&own, &own, 16)).collect();
    report("short item behind 16 blocked of its own wq", tries);
    let delayed = Workqueue::builder("delayed").build()?;
    let tries = (0..TRIES).map(|_| delayed_try(&delayed)).collect();
    report("2 ms delayed work while 16 items block", tries);
    let stats = a.stats();
    let seen: u64 = stats.pools.iter().map(|p| p.workers_seen_blocked).sum();
    let started: u64 = stats
        .pools
        .iter()
        .map(|p| p.workers_started_for_blocked)
        .sum();
    let workers: usize = stats.pools.iter().map(|p| p.workers).sum();
    println!("pools of the shared workqueues: {seen} workers seen blocked, {started} started for them, {workers} live");
    Ok(())
}
