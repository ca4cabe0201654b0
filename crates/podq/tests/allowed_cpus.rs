//! Workers are never pinned outside the CPUs the process may use at the moment they start (its
//! main thread's affinity, as `taskset -p` sets it), even when the thread that starts them, or
//! the pod they serve, allows more. Its own test binary: it narrows the process's main thread.

use std::sync::mpsc;
use std::time::Duration;

use podq::{AffinityScope, CpuSet, Workqueue};

/// The main thread's affinity.
fn main_thread_cpus() -> Vec<usize> {
    // SAFETY: an all-zero cpu_set_t is an empty set; we pass its size and a live pointer.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let rc = libc::sched_getaffinity(
            libc::getpid(),
            std::mem::size_of::<libc::cpu_set_t>(),
            &mut set,
        );
        assert_eq!(rc, 0, "sched_getaffinity");
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Sets the main thread's affinity.
fn set_main_thread_cpus(cpus: &[usize]) {
    // SAFETY: as above; every id is below CPU_SETSIZE (they come from the kernel).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        let rc =
            libc::sched_setaffinity(libc::getpid(), std::mem::size_of::<libc::cpu_set_t>(), &set);
        assert_eq!(rc, 0, "sched_setaffinity");
    }
}

/// Runs one item queued on `cpu` of a new strict `cpu`-scope workqueue (attributes of its own:
/// `tag` sets its idle timeout, so its pools and workers are new) and returns the CPUs its
/// worker may run on.
fn worker_cpus_for(cpu: usize, tag: u64) -> (CpuSet, u64) {
    let wq = Workqueue::builder("allowed")
        .scope(AffinityScope::Cpu)
        .strict(true)
        .idle_timeout(Duration::from_secs(600 + tag))
        .build()
        .expect("workqueue");
    let (tx, rx) = mpsc::channel();
    wq.queue_on(cpu, move || {
        let _ = tx.send(podq::affinity::allowed_cpus().expect("affinity"));
    })
    .expect("cpu");
    let cpus = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the item ran");
    let failures = wq.stats().pools.iter().map(|p| p.pin_failures).sum();
    (cpus, failures)
}

#[test]
fn workers_stay_within_the_cpus_the_process_may_use() {
    let all = main_thread_cpus();
    if all.len() < 2 {
        eprintln!("skipped: needs two CPUs");
        return;
    }
    let (first, second) = (all[0], all[1]);
    // This test thread keeps its own, wider affinity, which a worker it starts would inherit.
    set_main_thread_cpus(&[first]);
    let (narrowed, failures) = worker_cpus_for(second, 1);
    set_main_thread_cpus(&all);
    let only_first: CpuSet = [first].into_iter().collect();
    assert!(
        narrowed.is_subset(&only_first),
        "a worker for CPU {second} may run on {narrowed} while the process may use {first} only"
    );
    assert_eq!(failures, 1, "the pod's CPU was not allowed: counted");
    // Widened again: a new worker goes to its pod's CPU.
    let (widened, failures) = worker_cpus_for(second, 2);
    assert_eq!(widened, [second].into_iter().collect::<CpuSet>());
    assert_eq!(failures, 0);
}
