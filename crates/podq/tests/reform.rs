//! The process's affinity narrowed while producers flood a strict workqueue: nothing queued is
//! lost, and every item queued after the workqueue re-formed its pods runs on a CPU the process
//! may use. Its own test binary: it narrows the process's main thread.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod reform_support;

use reform_support::{main_thread_cpus, set_main_thread_cpus};

use podq::{AffinityScope, CpuSet, Workqueue};

/// What the producers and the items count.
#[derive(Default)]
struct Tally {
    queued: AtomicU64,
    ran: AtomicU64,
    /// Items queued after the re-formation was seen.
    after: AtomicU64,
    /// Of those, items that ran on a CPU the process may no longer use.
    outside: AtomicU64,
}

#[test]
fn an_affinity_change_mid_run_loses_nothing_and_strict_items_stay_inside() {
    let all = main_thread_cpus();
    if all.len() < 2 {
        eprintln!("skipped: needs two CPUs");
        return;
    }
    let first = all[0];
    let wq = Arc::new(
        Workqueue::builder("reform")
            .scope(AffinityScope::Cpu)
            .strict(true)
            .build()
            .expect("workqueue"),
    );
    let tally = Arc::new(Tally::default());
    let narrowed = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let producers: Vec<_> = (0..2)
        .map(|_| {
            let (wq, tally, narrowed, stop) = (
                Arc::clone(&wq),
                Arc::clone(&tally),
                Arc::clone(&narrowed),
                Arc::clone(&stop),
            );
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    // A bounded backlog: the change, not the queue's length, is the test.
                    if tally.queued.load(Ordering::Relaxed)
                        > tally.ran.load(Ordering::Relaxed) + 4096
                    {
                        std::thread::yield_now();
                        continue;
                    }
                    // Read before the queue call: an item marked `after` was queued after the
                    // workqueue was seen re-formed.
                    let after = narrowed.load(Ordering::SeqCst);
                    let t = Arc::clone(&tally);
                    tally.queued.fetch_add(1, Ordering::Relaxed);
                    assert!(wq.queue(move || {
                        if after {
                            t.after.fetch_add(1, Ordering::Relaxed);
                            if podq::affinity::current_cpu().is_some_and(|c| c != first) {
                                t.outside.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        t.ran.fetch_add(1, Ordering::Relaxed);
                    }));
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(50));
    set_main_thread_cpus(&[first]);
    let only_first: CpuSet = [first].into_iter().collect();
    let changed = Instant::now();
    while wq.cpus() != &only_first {
        assert!(
            changed.elapsed() < Duration::from_secs(30),
            "the change was never followed"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    // Reported, not asserted: within `LIMITS_POLL_INTERVAL` and the forming of the new pools.
    eprintln!("the change was followed in {:?}", changed.elapsed());
    narrowed.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(100));
    stop.store(true, Ordering::Relaxed);
    for p in producers {
        p.join().expect("producer");
    }
    assert!(wq.flush());
    set_main_thread_cpus(&all);
    let queued = tally.queued.load(Ordering::Relaxed);
    assert_eq!(tally.ran.load(Ordering::Relaxed), queued, "items lost");
    assert!(tally.after.load(Ordering::Relaxed) > 0, "nothing ran after");
    assert_eq!(
        tally.outside.load(Ordering::Relaxed),
        0,
        "strict items queued after the change ran outside CPU {first}"
    );
    let stats = wq.stats();
    assert!(stats.reformations >= 1);
    assert_eq!(stats.completed, queued);
    assert!(stats.pools.iter().all(|p| p.cpus.is_subset(&only_first)));
}
