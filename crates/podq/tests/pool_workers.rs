//! Worker pools seen through the public API: workers grow when items block, idle workers
//! retire, threads carry their pool's name, strict workers stay on their pod, a failed pin
//! still runs the work.
//!
//! Pools are shared by every workqueue with equal attributes in the process, and the tests of
//! this file run in parallel; each test gives its workqueues an idle timeout of its own, so
//! that no two tests share a pool and every count seen is the test's own.

use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

mod support;
use support::{eventually, PATIENCE};

use podq::{affinity, AffinityScope, CpuSet, PoolStats, Topology, Workqueue};

/// An idle timeout no other test uses, so the test's pools are its own (see the file docs).
fn private_timeout(n: u64) -> Duration {
    Duration::from_secs(3_600 + n)
}

/// The CPUs this process may use.
fn allowed() -> CpuSet {
    affinity::allowed_cpus().expect("sched_getaffinity")
}

/// One CPU of this machine that the process may use.
fn one_cpu() -> usize {
    allowed().last().expect("a usable CPU")
}

/// Runs `f` on a worker of `wq` (through `cpu`'s pool) and returns its result.
fn on_worker<R: Send + 'static>(
    wq: &Workqueue,
    cpu: usize,
    f: impl FnOnce() -> R + Send + 'static,
) -> R {
    let (tx, rx) = mpsc::channel();
    let queued = wq
        .queue_on(cpu, move || tx.send(f()).expect("test alive"))
        .expect("a CPU of the workqueue");
    assert!(queued);
    rx.recv_timeout(PATIENCE).expect("the item ran")
}

/// The sum of a count over a workqueue's pools.
fn total(wq: &Workqueue, count: impl Fn(&PoolStats) -> u64) -> u64 {
    wq.stats().pools.iter().map(count).sum()
}

#[test]
fn four_items_waiting_for_each_other_all_complete_on_a_one_cpu_pod() {
    let cpu = one_cpu();
    let wq = Workqueue::builder("grow")
        .scope(AffinityScope::Cpu)
        .cpus(std::iter::once(cpu).collect())
        .idle_timeout(private_timeout(1))
        .build()
        .expect("workqueue");
    assert_eq!(wq.pools(), 1);
    let barrier = Arc::new(Barrier::new(4));
    let (tx, rx) = mpsc::channel();
    for i in 0..4 {
        let (barrier, tx) = (Arc::clone(&barrier), tx.clone());
        wq.queue(move || {
            barrier.wait();
            tx.send(i).expect("test alive");
        });
    }
    let mut done: Vec<i32> = (0..4)
        .map(|_| rx.recv_timeout(PATIENCE).expect("every item ran"))
        .collect();
    done.sort_unstable();
    assert_eq!(done, vec![0, 1, 2, 3]);
    assert!(total(&wq, |p| p.workers_created) >= 4, "{:?}", wq.stats());
}

#[test]
fn idle_workers_retire_after_the_idle_timeout_and_one_stays() {
    let cpu = one_cpu();
    let wq = Workqueue::builder("retire")
        .scope(AffinityScope::Cpu)
        .cpus(std::iter::once(cpu).collect())
        .idle_timeout(Duration::from_millis(30))
        .build()
        .expect("workqueue");
    let barrier = Arc::new(Barrier::new(3));
    for _ in 0..3 {
        let barrier = Arc::clone(&barrier);
        wq.queue(move || {
            barrier.wait();
        });
    }
    wq.flush();
    assert!(total(&wq, |p| p.workers_created) >= 3);
    assert!(
        eventually(|| wq.stats().pools[0].workers == 1),
        "idle workers did not retire: {:?}",
        wq.stats()
    );
    let pool = &wq.stats().pools[0];
    assert_eq!(pool.workers_retired, pool.workers_created - 1);
    // The worker that stayed still serves the pool.
    assert_eq!(on_worker(&wq, cpu, || 5), 5);
}

#[test]
fn worker_threads_are_named_after_their_pool() {
    let cpu = one_cpu();
    let wq = Workqueue::builder("names")
        .scope(AffinityScope::Cpu)
        .cpus(std::iter::once(cpu).collect())
        .idle_timeout(private_timeout(2))
        .build()
        .expect("workqueue");
    let name = on_worker(&wq, cpu, || thread::current().name().map(str::to_owned));
    let pool = &wq.stats().pools[0];
    assert_eq!(pool.name, format!("cpu-p{}", pool.pod));
    assert_eq!(name, Some(format!("podq/{}", pool.name)));
}

#[test]
fn strict_workers_run_only_on_their_pod() {
    let topo = Topology::discover().expect("this machine");
    let wq = Workqueue::builder("strict")
        .scope(AffinityScope::Cpu)
        .strict(true)
        .idle_timeout(private_timeout(3))
        .build()
        .expect("workqueue");
    for cpu in topo.cpu_set().iter() {
        let on = on_worker(&wq, cpu, || affinity::allowed_cpus().expect("affinity"));
        assert_eq!(on, std::iter::once(cpu).collect(), "worker of CPU {cpu}");
    }
    assert_eq!(total(&wq, |p| p.pin_failures), 0);
}

#[test]
fn non_strict_workers_may_use_every_cpu_of_the_workqueue() {
    let topo = Topology::discover().expect("this machine");
    let cpus = topo.cpu_set();
    let wq = Workqueue::builder("loose")
        .scope(AffinityScope::Cpu)
        .strict(false)
        .idle_timeout(private_timeout(4))
        .build()
        .expect("workqueue");
    let cpu = cpus.first().expect("a CPU");
    let on = on_worker(&wq, cpu, || affinity::allowed_cpus().expect("affinity"));
    assert_eq!(on, cpus);
}

#[test]
fn a_worker_that_cannot_be_pinned_still_runs_the_work_and_is_counted() {
    // A synthetic machine larger than this one: its highest CPU does not exist here.
    let big = Topology::from_machine("cores=512").expect("machine");
    let last = big.cpu_set().last().expect("a CPU");
    let wq = Workqueue::builder("phantom")
        .topology(big)
        .scope(AffinityScope::Cpu)
        .strict(true)
        .idle_timeout(private_timeout(5))
        .build()
        .expect("workqueue");
    assert_eq!(on_worker(&wq, last, || "ran"), "ran");
    assert_eq!(total(&wq, |p| p.pin_failures), 1);
}
