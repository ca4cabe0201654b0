//! Pods re-formed while work flows, driven through injected limits (a cpuset change or CPU
//! hotplug needs root otherwise): nothing queued is lost, flush, cancel and delayed work reach
//! the items of earlier layouts, ordering and `max_active` hold across the change, and
//! `queue_on` a CPU no longer allowed is an error.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

mod reform_support;

use podq::limits::CpuLimits;
use podq::{AffinityScope, CpuSet, DelayedWork, Topology, Work, Workqueue};
use reform_support::{Flood, Sequenced};

/// Limits a test sets by hand, as a cgroup's cpuset or the online CPUs would change.
#[derive(Debug)]
struct Fixed(Mutex<CpuSet>);

impl Fixed {
    fn new(cpus: &CpuSet) -> Arc<Fixed> {
        Arc::new(Fixed(Mutex::new(cpus.clone())))
    }

    fn set(&self, cpus: &CpuSet) {
        *self.0.lock().unwrap() = cpus.clone();
    }
}

impl CpuLimits for Fixed {
    fn allowed(&self) -> std::io::Result<CpuSet> {
        Ok(self.0.lock().unwrap().clone())
    }
}

/// Generous: the change is followed within a second; this only guards against a hang.
const PATIENCE: Duration = Duration::from_secs(30);

/// Sets `limits` to `cpus` and waits until `wq` has re-formed its pods on them.
fn change(wq: &Workqueue, limits: &Fixed, cpus: &CpuSet) {
    let before = wq.stats().reformations;
    limits.set(cpus);
    let deadline = Instant::now() + PATIENCE;
    while wq.stats().reformations == before || wq.cpus() != cpus {
        assert!(Instant::now() < deadline, "limits {cpus} never followed");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn set(cpus: &[usize]) -> CpuSet {
    cpus.iter().copied().collect()
}

/// A 4-CPU synthetic machine: the shapes do not depend on this machine's CPUs (workers of CPUs
/// it lacks run unpinned).
fn four_cpus() -> Topology {
    Topology::from_machine("sockets=1,nodes=1,caches=2,cores=4,smt=1").expect("machine")
}

#[test]
fn queue_on_a_cpu_taken_away_is_an_error_and_strict_items_follow_the_limits() {
    let all = podq::affinity::allowed_cpus().expect("affinity");
    if all.len() < 2 {
        eprintln!("skipped: needs two CPUs");
        return;
    }
    let (first, second) = (all.first().unwrap(), all.iter().nth(1).unwrap());
    let limits = Fixed::new(&all);
    let wq = Workqueue::builder("limits-strict")
        .scope(AffinityScope::Cpu)
        .strict(true)
        .idle_timeout(Duration::from_secs(901))
        .cpu_limits(limits.clone())
        .build()
        .expect("workqueue");
    assert_eq!(wq.cpus(), &all);
    change(&wq, &limits, &set(&[first]));
    match wq.queue_on(second, || {}) {
        Err(podq::Error::CpuNotAllowed { cpu, allowed }) => {
            assert_eq!((cpu, allowed), (second, first.to_string()));
        }
        other => panic!("queue_on a CPU taken away: {other:?}"),
    }
    let ran_on = |cpu: usize| {
        let (tx, rx) = mpsc::channel();
        wq.queue_on(cpu, move || {
            let _ = tx.send(podq::affinity::current_cpu());
        })
        .expect("allowed CPU");
        rx.recv_timeout(PATIENCE).expect("the item ran")
    };
    for _ in 0..20 {
        assert_eq!(ran_on(first), Some(first));
    }
    // CPUs brought back: the earlier pods again.
    change(&wq, &limits, &all);
    assert_eq!(ran_on(second), Some(second));
    assert_eq!(wq.stats().reformations, 2);
}

#[test]
fn a_flood_across_changes_loses_nothing_and_flush_waits_for_every_layout() {
    let limits = Fixed::new(&set(&[0, 1, 2, 3]));
    let wq = Arc::new(
        Workqueue::builder("limits-flood")
            .topology(four_cpus())
            .scope(AffinityScope::Cpu)
            .idle_timeout(Duration::from_secs(902))
            .cpu_limits(limits.clone())
            .build()
            .expect("workqueue"),
    );
    let flood = Flood::start(&wq, false, &[0, 1]);
    for cpus in [&[0, 1][..], &[0, 1, 3], &[1, 0, 2, 3], &[0, 1]] {
        change(&wq, &limits, &set(cpus));
        // Everything queued before the flush has run, in whichever layout it was counted.
        flood.flush();
    }
    let queued = flood.finish();
    let stats = wq.stats();
    assert_eq!(stats.completed, queued);
    assert_eq!(stats.in_flight, 0);
    assert_eq!(stats.reformations, 4);
    assert_eq!(
        stats.pools.iter().map(|p| p.pod).collect::<Vec<_>>(),
        vec![0, 1]
    );
}

#[test]
fn ordered_and_max_active_hold_across_changes() {
    for max_active in [1, 2] {
        let limits = Fixed::new(&set(&[0, 1, 2, 3]));
        let wq = Arc::new(
            Workqueue::builder("limits-ordered")
                .topology(four_cpus())
                .scope(if max_active == 1 {
                    AffinityScope::System
                } else {
                    AffinityScope::Cpu
                })
                .max_active(max_active)
                .idle_timeout(Duration::from_secs(903))
                .cpu_limits(limits.clone())
                .build()
                .expect("workqueue"),
        );
        let producer = Sequenced::start(&wq, max_active);
        for cpus in [&[2, 3][..], &[0, 1, 2, 3], &[1]] {
            change(&wq, &limits, &set(cpus));
        }
        producer.finish();
    }
}

/// Holds the one worker of the pool that `wq`'s next item goes to, until the sender is used
/// or dropped.
fn hold_worker(wq: &Workqueue) -> mpsc::Sender<()> {
    let (release, gate) = mpsc::channel::<()>();
    let (started, running) = mpsc::channel();
    wq.queue(move || {
        started.send(()).unwrap();
        let _ = gate.recv();
    });
    running
        .recv_timeout(PATIENCE)
        .expect("the holding item runs");
    release
}

#[test]
fn items_waiting_on_pods_that_went_away_move_and_cancel_and_delayed_work_follow() {
    let limits = Fixed::new(&set(&[0, 1, 2, 3]));
    let wq = Workqueue::builder("limits-move")
        .topology(four_cpus())
        .scope(AffinityScope::System)
        .max_workers(1)
        .idle_timeout(Duration::from_secs(904))
        .cpu_limits(limits.clone())
        .build()
        .expect("workqueue");
    // The first pods' one worker is held: what is queued now waits there.
    let first = hold_worker(&wq);
    let (ran, runs) = mpsc::channel();
    for i in 0..10 {
        let ran = ran.clone();
        wq.queue(move || ran.send(i).unwrap());
    }
    let (fired, fire) = mpsc::channel();
    let delayed = DelayedWork::new(move || fired.send(()).unwrap());
    assert!(wq.queue_delayed(&delayed, Duration::from_secs(3600)));
    change(&wq, &limits, &set(&[1, 2]));
    // Moved to the new pods' pool, they run while the first worker is still held...
    let got: Vec<i32> = (0..10)
        .map(|_| runs.recv_timeout(PATIENCE).expect("a moved item ran"))
        .collect();
    assert_eq!(got, (0..10).collect::<Vec<_>>());
    // ...and so does a delayed item armed before the change, when it is queued.
    assert!(delayed.flush());
    fire.recv_timeout(PATIENCE).expect("the delayed item ran");
    // An item waiting on the new pods, moved back to the first ones (held), is cancelled
    // there.
    let second = hold_worker(&wq);
    let pending_ran = Arc::new(AtomicBool::new(false));
    let pending = {
        let ran = Arc::clone(&pending_ran);
        Work::new(move || ran.store(true, Ordering::SeqCst))
    };
    assert!(wq.queue_work(&pending));
    change(&wq, &limits, &set(&[0, 1, 2, 3]));
    assert!(pending.cancel_sync());
    drop((first, second));
    assert!(wq.flush());
    assert!(!pending_ran.load(Ordering::SeqCst));
    let stats = wq.stats();
    assert_eq!((stats.cancelled, stats.completed), (1, 13));
}

#[test]
fn a_narrower_mask_set_on_a_worker_is_never_widened() {
    let all = podq::affinity::allowed_cpus().expect("affinity");
    if all.len() < 2 {
        eprintln!("skipped: needs two CPUs");
        return;
    }
    let first = all.first().unwrap();
    let limits = Fixed::new(&all);
    let wq = Workqueue::builder("limits-narrowed")
        .scope(AffinityScope::System)
        .max_workers(1)
        .idle_timeout(Duration::from_secs(905))
        .cpu_limits(limits.clone())
        .build()
        .expect("workqueue");
    // The pool's one worker, as its items see it.
    let on_worker = |narrow: bool| {
        let (tx, rx) = mpsc::channel();
        wq.queue(move || {
            if narrow {
                let only_first = CpuSet::from_iter([first]);
                podq::affinity::pin_current_thread(&only_first).expect("pin");
            }
            let me = std::thread::current().id();
            let _ = tx.send((me, podq::affinity::allowed_cpus().expect("affinity")));
        });
        rx.recv_timeout(PATIENCE).expect("the item ran")
    };
    let (worker, narrowed) = on_worker(true);
    assert_eq!(narrowed, set(&[first]));
    // Taken away and given back: the first pods again, and their worker keeps its mask.
    change(&wq, &limits, &set(&[first]));
    change(&wq, &limits, &all);
    let (again, cpus) = on_worker(false);
    assert_eq!(again, worker, "the same worker");
    assert_eq!(cpus, set(&[first]), "its mask was widened");
}
