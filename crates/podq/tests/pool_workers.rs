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

/// What an issuer thread is asked to queue (`a_worker_moved_out_of_its_pod_...`).
enum Issue {
    /// A group item that reports the CPU it ran on and the worker's affinity.
    Grouped,
    /// The same as a plain item to the pod of the CPU given.
    Plain(usize),
}

/// The CPU an item ran on and its worker's affinity.
type Ran = (Option<usize>, CpuSet);

/// Reports where the calling item runs.
fn report(tx: mpsc::Sender<Ran>) -> impl FnOnce() + Send + 'static {
    move || {
        let ran = (
            affinity::current_cpu(),
            affinity::allowed_cpus().expect("affinity"),
        );
        tx.send(ran).expect("test alive");
    }
}

#[test]
fn a_worker_keeps_to_its_pod_for_group_items_steered_there_from_outside() {
    let topo = Topology::discover().expect("this machine");
    let cpus = topo.cpu_set();
    if affinity::current_cpu().is_none() || allowed() != cpus || cpus.len() < 2 {
        eprintln!("skipped: needs a system that tells the CPU, and all of its 2+ CPUs to use");
        return;
    }
    let mut two = cpus.iter();
    let (home, away) = (two.next().expect("a CPU"), two.next().expect("a CPU"));
    let wq = Workqueue::builder("repatriate")
        .scope(AffinityScope::Cpu)
        .strict(false)
        // The pod of `away` must not take the home's items.
        .pull(false)
        .idle_timeout(private_timeout(6))
        .build()
        .expect("workqueue");
    let group = wq.group();
    let moved = || total(&wq, |p| p.workers_repatriated);
    thread::scope(|s| {
        // An issuer thread pinned to `cpu`, queueing what it is told.
        let issuer = |cpu: usize| {
            let (go, orders) = mpsc::channel::<(Issue, mpsc::Sender<Ran>)>();
            let (group, wq) = (group.clone(), &wq);
            s.spawn(move || {
                affinity::pin_current_thread(&std::iter::once(cpu).collect()).expect("pin");
                for (issue, tx) in orders {
                    // Woken on the worker's CPU, the issuer may have preempted it inside the
                    // item that sent the order: it lets the item end first, so that the home
                    // pod is not busy when the group's item is steered.
                    for _ in 0..3 {
                        thread::yield_now();
                    }
                    let queued = match issue {
                        Issue::Grouped => group.queue(report(tx)),
                        Issue::Plain(to) => wq.queue_on(to, report(tx)).expect("a CPU"),
                    };
                    assert!(queued);
                }
            });
            go
        };
        let (inside, outside) = (issuer(home), issuer(away));
        // One round: the worker of the home pod goes to `away` and gets its wide affinity
        // back, as the OS's load balancer may move it, and at once has `by` queue `issue`: the
        // worker goes straight on to it from its spin on `away`, with no wake-up for the OS to
        // place it again.
        let round = |by: &mpsc::Sender<(Issue, mpsc::Sender<Ran>)>, issue: Issue| -> Ran {
            let (tx, rx) = mpsc::channel();
            let (by, wide) = (by.clone(), cpus.clone());
            on_worker(&wq, home, move || {
                affinity::pin_current_thread(&std::iter::once(away).collect()).expect("pin");
                affinity::pin_current_thread(&wide).expect("widen");
                by.send((issue, tx)).expect("issuer alive");
            });
            let ran = rx.recv_timeout(PATIENCE).expect("the item ran");
            // Past the shortest time between two moves back of one worker.
            thread::sleep(Duration::from_millis(5));
            ran
        };
        // The group's home: the pod of `home`, where its first item, queued there, runs.
        let (tx, rx) = mpsc::channel();
        inside.send((Issue::Grouped, tx)).expect("issuer alive");
        rx.recv_timeout(PATIENCE).expect("the first item ran");
        let home_pod = group.home().expect("a home once an item ran");
        let rounds: u64 = 5;
        // A group item queued from inside its pod, and a plain item from outside, move
        // nobody: their issuers may run on the pod's CPU.
        for _ in 0..rounds {
            let (_, wide) = round(&inside, Issue::Grouped);
            assert_eq!(wide, cpus);
            round(&outside, Issue::Plain(home));
        }
        assert_eq!(moved(), 0);
        assert_eq!(group.home(), Some(home_pod));
        // Steered home from outside, the item finds its worker moved back onto the pod's CPU
        // and kept there.
        let pod: CpuSet = std::iter::once(home).collect();
        let mut at_home = 0;
        for _ in 0..rounds {
            let (cpu, kept) = round(&outside, Issue::Grouped);
            assert_eq!(kept, pod);
            at_home += u64::from(cpu == Some(home));
        }
        assert_eq!(group.home(), Some(home_pod));
        // Once its queue ran empty the worker is a non-strict worker again: the OS may move it,
        // and a wake-up may place it on any CPU that is free.
        let affinity = || affinity::allowed_cpus().expect("affinity");
        assert_eq!(on_worker(&wq, home, affinity), cpus);
        // The OS may itself move the worker home before the item (then there is nothing to
        // do) or away again while it runs, so two rounds of five may go without; without
        // moves back there are none.
        let moved = moved();
        assert!(moved + 2 >= rounds, "{moved} moves back in {rounds} rounds");
        assert!(
            at_home + 2 >= rounds,
            "{at_home} of {rounds} items on the pod's CPU"
        );
    });
}
