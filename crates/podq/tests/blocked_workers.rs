//! Workers that block in their items are noticed and replaced: work queued behind them starts
//! long before they wake, and delayed work fires on time. Bounds are generous (never flaky on a
//! busy machine) yet far below what a 10 ms progress check alone gives (20 to 645 ms).

use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use podq::{DelayedWork, Workqueue};

/// How long the blocking items block: far longer than any bound below.
const BLOCK: Duration = Duration::from_secs(5);

/// The bound on a start delay: a tenth of what the progress check alone gives behind 8 blocked
/// items, and two hundred times the mechanism's aim.
const BOUND: Duration = Duration::from_millis(200);

/// Queues `blocked` items on `blockers` that sleep until released, then at once a short item
/// on `short`, and returns how long the short one took to start. Releases the blocked items
/// (once every one of them runs) before returning.
fn start_delay_behind(blockers: &Workqueue, short: &Workqueue, blocked: usize) -> Duration {
    let release = Arc::new(Barrier::new(blocked + 1));
    for _ in 0..blocked {
        let release = Arc::clone(&release);
        // Asleep until every blocked item and the test meet, as in a blocking call.
        assert!(blockers.queue(move || {
            release.wait();
        }));
    }
    let (started, start) = mpsc::channel();
    let queued = Instant::now();
    assert!(short.queue(move || {
        let _ = started.send(queued.elapsed());
    }));
    let delay = start
        .recv_timeout(BLOCK)
        .expect("the short item never started");
    // Every blocked item must get a worker for the barrier to open.
    release.wait();
    delay
}

#[test]
fn a_short_item_starts_soon_behind_blocked_items_of_another_workqueue() {
    // Equal attributes: the two workqueues share their pools.
    let a = Workqueue::builder("blockers").build().expect("workqueue");
    let b = Workqueue::builder("short").build().expect("workqueue");
    for blocked in [2, 8, 32] {
        let delay = start_delay_behind(&a, &b, blocked);
        assert!(delay < BOUND, "behind {blocked}: {delay:?}");
    }
    let stats = a.stats();
    let seen: u64 = stats.pools.iter().map(|p| p.workers_seen_blocked).sum();
    let started: u64 = stats
        .pools
        .iter()
        .map(|p| p.workers_started_for_blocked)
        .sum();
    if cfg!(target_os = "linux") {
        assert!(seen >= 1 && started >= 1, "{stats:?}");
    }
}

#[test]
fn a_short_item_starts_soon_behind_blocked_items_of_its_own_workqueue() {
    let wq = Workqueue::builder("own").build().expect("workqueue");
    let delay = start_delay_behind(&wq, &wq, 16);
    assert!(delay < BOUND, "behind 16 of its own: {delay:?}");
}

#[test]
fn delayed_work_fires_on_time_while_items_block() {
    let wq = Arc::new(Workqueue::builder("delayed").build().expect("workqueue"));
    let release = Arc::new(Barrier::new(17));
    for _ in 0..16 {
        let release = Arc::clone(&release);
        assert!(wq.queue(move || {
            release.wait();
        }));
    }
    thread::sleep(Duration::from_millis(20));
    let (fired, when) = mpsc::channel();
    let asked = Instant::now();
    let work = DelayedWork::new(move || {
        let _ = fired.send(asked.elapsed());
    });
    assert!(wq.queue_delayed(&work, Duration::from_millis(2)));
    let late = when
        .recv_timeout(BLOCK)
        .expect("the delayed work never fired");
    release.wait();
    assert!(late < BOUND, "a 2 ms delayed work fired after {late:?}");
}
