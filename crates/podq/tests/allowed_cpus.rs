//! Workers are never pinned outside the CPUs the process may use at the moment they start (its
//! main thread's affinity, as `taskset -p` sets it), even when the thread that starts them
//! allows more; `queue_on` a CPU the process may not use is an error, and a workqueue follows
//! the process when its CPUs are widened again. Its own test binary: it narrows the process's
//! main thread.

use std::sync::mpsc;
use std::time::{Duration, Instant};

mod reform_support;

use reform_support::{main_thread_cpus, set_main_thread_cpus};

use podq::{AffinityScope, CpuSet, Workqueue};

/// A new strict `cpu`-scope workqueue of attributes of its own (`tag` sets its idle timeout,
/// so its pools and workers are new).
fn strict_workqueue(tag: u64) -> Workqueue {
    Workqueue::builder("allowed")
        .scope(AffinityScope::Cpu)
        .strict(true)
        .idle_timeout(Duration::from_secs(600 + tag))
        .build()
        .expect("workqueue")
}

/// Runs one item queued on `cpu` of `wq` and returns the CPUs its worker may run on.
fn worker_cpus_on(wq: &Workqueue, cpu: usize) -> CpuSet {
    let (tx, rx) = mpsc::channel();
    wq.queue_on(cpu, move || {
        let _ = tx.send(podq::affinity::allowed_cpus().expect("affinity"));
    })
    .expect("cpu");
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the item ran")
}

/// Waits until `wq`'s CPUs are `cpus` (it follows the process's limits within a second; the
/// bound is far above that, for a loaded machine).
fn wait_for_cpus(wq: &Workqueue, cpus: &CpuSet) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while wq.cpus() != cpus {
        assert!(
            Instant::now() < deadline,
            "the workqueue kept CPUs {} while the process may use {cpus}",
            wq.cpus()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn workers_stay_within_the_cpus_the_process_may_use() {
    let all = main_thread_cpus();
    if all.len() < 2 {
        eprintln!("skipped: needs two CPUs");
        return;
    }
    let (first, second) = (all[0], all[1]);
    let only_first: CpuSet = [first].into_iter().collect();
    // This test thread keeps its own, wider affinity, which a worker it starts would inherit.
    set_main_thread_cpus(&[first]);
    let narrowed = strict_workqueue(1);
    assert_eq!(narrowed.cpus(), &only_first, "formed on the allowed CPUs");
    let refused = narrowed.queue_on(second, || {});
    set_main_thread_cpus(&all);
    match refused {
        Err(podq::Error::CpuNotAllowed { cpu, allowed }) => {
            assert_eq!((cpu, allowed), (second, first.to_string()));
        }
        other => panic!("queue_on a CPU the process may not use: {other:?}"),
    }
    // Widened again: the workqueue follows, and a worker for the CPU goes to it.
    let everything: CpuSet = all.iter().copied().collect();
    wait_for_cpus(&narrowed, &everything);
    let widened = worker_cpus_on(&narrowed, second);
    assert_eq!(widened, [second].into_iter().collect::<CpuSet>());
    assert!(narrowed.stats().reformations >= 1);
    let failures: u64 = narrowed.stats().pools.iter().map(|p| p.pin_failures).sum();
    assert_eq!(failures, 0);
    // And a workqueue built while it is narrowed places its workers within it.
    set_main_thread_cpus(&[first]);
    let wq = strict_workqueue(2);
    let cpus = worker_cpus_on(&wq, first);
    set_main_thread_cpus(&all);
    assert!(
        cpus.is_subset(&only_first),
        "a worker may run on {cpus} while the process may use {first} only"
    );
}
