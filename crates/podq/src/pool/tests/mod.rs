//! Pool behaviour with real threads: worker growth, retirement, names, placement, shutdown,
//! contention counts (here), the registry's sharing rules (`registry.rs`), the core driven
//! by hand, without threads (`core_by_hand.rs`), and the load signal (`load.rs`).

use std::sync::atomic::AtomicUsize;
use std::sync::mpsc;
use std::sync::Barrier;
use std::thread;
use std::time::Duration;

use super::*;
use crate::scope::Pods;
use crate::test_support::{eventually, PATIENCE};
use crate::topology::Topology;

mod chain;
mod core_by_hand;
mod held_slot;
mod lane_lock;
mod load;
mod registry;

/// A one-shot closure, as a pool job.
struct TestJob(Box<dyn FnOnce() + Send>);

impl Runnable for TestJob {
    fn run(self) {
        (self.0)();
    }
}

fn job(f: impl FnOnce() + Send + 'static) -> TestJob {
    TestJob(Box::new(f))
}

/// The CPUs this test process may use.
fn allowed() -> CpuSet {
    crate::sys::allowed_cpus()
        .expect("sched_getaffinity")
        .into_iter()
        .collect()
}

/// One allowed CPU, as a one-CPU pod.
fn one_cpu() -> CpuSet {
    std::iter::once(allowed().last().expect("a usable CPU")).collect()
}

fn attrs(strict: bool, cpus: CpuSet) -> PoolAttrs {
    attrs_of(AffinityScope::CacheShard, strict, cpus)
}

/// Attributes with shard size 8 and the default worker limit and idle timeout.
fn attrs_of(scope: AffinityScope, strict: bool, cpus: CpuSet) -> PoolAttrs {
    PoolAttrs {
        scope,
        shard_size: 8,
        strict,
        cpus,
        max_workers: DEFAULT_MAX_WORKERS,
        idle_timeout: DEFAULT_IDLE_TIMEOUT,
        pull: !strict,
        worker: super::WorkerOptions::default(),
    }
}

/// A pool serving pod 0 (node 0) with `pod_cpus`.
fn pool(pod_cpus: CpuSet, attrs: &PoolAttrs) -> Pool<TestJob> {
    let topo = Topology::from_machine("sockets=1,nodes=1,caches=1,cores=1,smt=1").expect("m");
    let pods = Pods::new(&topo, AffinityScope::System, 8).expect("pods");
    let pod = pods.pods()[0].with_cpus(pod_cpus);
    Pool::new(
        pool_name(attrs.scope, attrs.shard_size, 0),
        pod,
        attrs,
        Arc::default(),
    )
}

impl Pool<TestJob> {
    /// Pushes `task` from the calling thread's CPU, as a queue call does.
    fn push_here(&self, task: TestJob) {
        self.push(task, crate::here::cpu_or_thread(), false);
    }
}

/// Runs `f` on a pool worker and returns what it computed.
fn on_worker<R: Send + 'static>(pool: &Pool<TestJob>, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = mpsc::channel();
    pool.push_here(job(move || tx.send(f()).expect("test alive")));
    rx.recv_timeout(PATIENCE).expect("the item ran")
}

/// A pod of the first two allowed CPUs and a starter's CPU, the first of them; `None`, with a
/// message that the test is skipped, when fewer than two are allowed.
fn two_cpus_and_a_starter() -> Option<(CpuSet, usize)> {
    let all = allowed();
    let pod: CpuSet = all.iter().take(2).collect();
    let starter = pod.first().filter(|_| pod.len() == 2);
    if starter.is_none() {
        eprintln!("skipped: needs two allowed CPUs, this process has {all:?}");
    }
    starter.map(|starter| (pod, starter))
}

/// Runs `f` on a new thread pinned to `cpu` (a starter whose workers would inherit its pin)
/// and returns what it computed.
fn from_pinned<R: Send>(cpu: usize, f: impl FnOnce() -> R + Send) -> R {
    thread::scope(|scope| {
        scope
            .spawn(|| {
                crate::sys::pin_current_thread(&[cpu]).expect("pin the starter");
                f()
            })
            .join()
            .expect("starter")
    })
}

#[test]
fn items_that_block_get_more_workers_on_a_one_cpu_pod() {
    let p = pool(one_cpu(), &attrs(false, allowed()));
    let barrier = Arc::new(Barrier::new(4));
    let (tx, rx) = mpsc::channel();
    for i in 0..4 {
        let (barrier, tx) = (Arc::clone(&barrier), tx.clone());
        p.push_here(job(move || {
            barrier.wait();
            tx.send(i).expect("test alive");
        }));
    }
    let mut done: Vec<i32> = (0..4)
        .map(|_| rx.recv_timeout(PATIENCE).expect("all four items ran"))
        .collect();
    done.sort_unstable();
    assert_eq!(done, vec![0, 1, 2, 3]);
    assert!(p.stats().workers_created >= 4, "{:?}", p.stats());
    // Counted just after each run returns: the last count may trail the last message.
    assert!(eventually(|| p.stats().executed == 4), "{:?}", p.stats());
}

#[test]
fn workers_never_exceed_max_workers() {
    let mut a = attrs(false, allowed());
    a.max_workers = 2;
    let p = pool(one_cpu(), &a);
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel();
    for _ in 0..12 {
        let (running, most, tx) = (Arc::clone(&running), Arc::clone(&most), tx.clone());
        p.push_here(job(move || {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            thread::sleep(Duration::from_millis(2));
            running.fetch_sub(1, Ordering::SeqCst);
            tx.send(()).expect("test alive");
        }));
    }
    for _ in 0..12 {
        rx.recv_timeout(PATIENCE).expect("every item ran");
    }
    assert!(most.load(Ordering::SeqCst) <= 2);
    assert!(p.stats().workers_created <= 2, "{:?}", p.stats());
}

#[test]
fn idle_workers_retire_after_the_timeout_but_one_stays() {
    let mut a = attrs(false, allowed());
    a.idle_timeout = Duration::from_millis(20);
    let p = pool(one_cpu(), &a);
    let barrier = Arc::new(Barrier::new(3));
    let (tx, rx) = mpsc::channel();
    for _ in 0..3 {
        let (barrier, tx) = (Arc::clone(&barrier), tx.clone());
        p.push_here(job(move || {
            barrier.wait();
            tx.send(()).expect("test alive");
        }));
    }
    for _ in 0..3 {
        rx.recv_timeout(PATIENCE).expect("every item ran");
    }
    assert!(p.stats().workers_created >= 3);
    assert!(
        eventually(|| p.stats().workers == 1),
        "idle workers did not retire: {:?}",
        p.stats()
    );
    let stats = p.stats();
    assert_eq!(stats.workers_retired, stats.workers_created - 1);
    // The one that stays still serves the pool.
    assert_eq!(on_worker(&p, || 7), 7);
}

#[test]
fn segments_kept_after_a_backlog_are_freed_once_a_worker_has_been_idle_for_the_timeout() {
    use crate::pool::core::queue::chain::{KEPT_SEGMENTS, SEGMENT_SLOTS};
    let mut a = attrs(false, allowed());
    a.max_workers = 1;
    a.idle_timeout = Duration::from_millis(50);
    let p = pool(one_cpu(), &a);
    // One worker, held at the first item while forty segments' worth queue behind it.
    let (open, gate) = mpsc::channel::<()>();
    p.push_here(job(move || gate.recv().expect("test alive")));
    for _ in 0..40 * SEGMENT_SLOTS - 2 {
        p.push_here(job(|| {}));
    }
    let (tx, rx) = mpsc::channel();
    let shared = Arc::clone(&p.shared);
    p.push_here(job(move || {
        tx.send(shared.core.kept_segments()).expect("test alive");
    }));
    open.send(()).expect("the gate is waited on");
    // The last item runs on the one worker, busy since the backlog began: nothing freed yet.
    let kept = rx.recv_timeout(PATIENCE).expect("the backlog ran");
    assert!((30..=KEPT_SEGMENTS).contains(&kept), "kept {kept}");
    assert!(
        eventually(|| p.shared.core.kept_segments() == 0),
        "the kept segments stayed after the worker idled"
    );
    // The pool goes on, with segments of its own again.
    assert_eq!(on_worker(&p, || 7), 7);
}

#[test]
fn worker_threads_carry_the_pool_name() {
    let p = pool(one_cpu(), &attrs(false, allowed()));
    let name = on_worker(&p, || thread::current().name().map(str::to_owned));
    assert_eq!(name.as_deref(), Some("podq/cs8-p0"));
    assert!(name.expect("named").len() <= 15, "Linux keeps 15 bytes");
}

#[test]
fn strict_workers_stay_on_the_pod() {
    let pod = one_cpu();
    let p = pool(pod.clone(), &attrs(true, allowed()));
    let on = on_worker(&p, || {
        crate::sys::allowed_cpus().expect("sched_getaffinity")
    });
    assert_eq!(on.into_iter().collect::<CpuSet>(), pod);
    assert_eq!(p.stats().pin_failures, 0);
}

#[test]
fn non_strict_workers_may_use_all_the_workqueue_cpus() {
    let all = allowed();
    let p = pool(one_cpu(), &attrs(false, all.clone()));
    let on = on_worker(&p, || {
        crate::sys::allowed_cpus().expect("sched_getaffinity")
    });
    assert_eq!(on.into_iter().collect::<CpuSet>(), all);
    assert_eq!(p.stats().pin_failures, 0);
}

#[test]
fn a_worker_started_by_a_pinned_thread_first_runs_elsewhere_and_keeps_its_whole_pod() {
    let Some((pod, starter)) = two_cpus_and_a_starter() else {
        return;
    };
    let p = pool(pod.clone(), &attrs(true, pod.clone()));
    // A new thread inherits the starter's pin: without the launch move, the worker's first
    // instructions would run there.
    let (launched_on, cpus) = from_pinned(starter, || {
        on_worker(&p, || {
            let cpus: CpuSet = crate::sys::allowed_cpus()
                .expect("sched_getaffinity")
                .into_iter()
                .collect();
            (crate::launch::launched_on(), cpus)
        })
    });
    let launched_on = launched_on.expect("the CPU can be read on Linux");
    assert_ne!(
        launched_on, starter,
        "the worker first ran on its starter's CPU"
    );
    assert!(pod.contains(launched_on), "{launched_on} outside {pod:?}");
    // The launch set did not outlive the start: the worker placed itself on its whole pod.
    assert_eq!(cpus, pod);
    assert_eq!(p.stats().pin_failures, 0);
}

#[test]
fn a_pinned_thread_that_starts_two_workers_of_a_two_cpu_pod_launches_one_on_each() {
    let Some((pod, starter)) = two_cpus_and_a_starter() else {
        return;
    };
    let p = pool(pod.clone(), &attrs(false, pod.clone()));
    let (first, second) = from_pinned(starter, || {
        // The first worker computes until released (it never sleeps, so the watchdog
        // starts nobody for it); the second item then finds it busy and starts the second.
        let release = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let (first_tx, hold) = (tx.clone(), Arc::clone(&release));
        p.push_here(job(move || {
            first_tx
                .send(crate::launch::launched_on())
                .expect("test alive");
            while !hold.load(Ordering::Acquire) {
                std::hint::spin_loop();
            }
        }));
        let first = rx.recv_timeout(PATIENCE).expect("the first item ran");
        p.push_here(job(move || {
            tx.send(crate::launch::launched_on()).expect("test alive");
        }));
        let second = rx.recv_timeout(PATIENCE).expect("the second item ran");
        release.store(true, Ordering::Release);
        (first, second)
    });
    let first = first.expect("the CPU can be read on Linux");
    let second = second.expect("the CPU can be read on Linux");
    assert_ne!(
        first, starter,
        "the first worker began on its starter's CPU"
    );
    assert_eq!(
        [first, second].into_iter().collect::<CpuSet>(),
        pod,
        "both workers began on one CPU of {pod:?}"
    );
    assert_eq!(p.stats().workers_created, 2, "{:?}", p.stats());
    // Counted where they were launched while they live.
    let launched = &p.shared.launched;
    assert_eq!((launched.on(first), launched.on(second)), (1, 1));
}

#[test]
fn a_pin_that_fails_is_counted_and_the_work_still_runs() {
    // CPU 100000 exists on no machine (and is beyond CPU_SETSIZE): pinning must fail.
    let missing: CpuSet = std::iter::once(100_000).collect();
    let p = pool(missing.clone(), &attrs(true, missing));
    assert_eq!(on_worker(&p, || 42), 42);
    assert_eq!(p.stats().pin_failures, 1);
}

#[test]
fn dropping_the_pool_runs_everything_queued_first() {
    let mut a = attrs(false, allowed());
    a.max_workers = 1;
    let p = pool(one_cpu(), &a);
    let ran = Arc::new(AtomicUsize::new(0));
    let (release, gate) = mpsc::channel::<()>();
    // The first item holds the only worker until the test lets go, so the rest are queued.
    p.push_here(job(move || gate.recv().expect("released")));
    for _ in 0..100 {
        let ran = Arc::clone(&ran);
        p.push_here(job(move || {
            ran.fetch_add(1, Ordering::SeqCst);
        }));
    }
    assert!(p.stats().queue_depth > 0);
    release.send(()).expect("worker waits");
    drop(p);
    assert_eq!(ran.load(Ordering::SeqCst), 100);
}

#[test]
fn a_worker_may_drop_the_last_handle_of_its_own_pool() {
    let mut a = attrs(false, allowed());
    a.max_workers = 1;
    let slot = Arc::new(crate::sync::Mutex::new(Some(pool(one_cpu(), &a))));
    let (tx, rx) = mpsc::channel();
    let (release, gate) = mpsc::channel::<()>();
    {
        let guard = slot.lock();
        let p = guard.as_ref().expect("pool");
        let slot = Arc::clone(&slot);
        p.push_here(job(move || {
            gate.recv().expect("released");
            // The last handle goes away on the pool's own worker: no waiting for itself.
            drop(slot.lock().take());
        }));
        for i in 0..10 {
            let tx = tx.clone();
            p.push_here(job(move || tx.send(i).expect("test alive")));
        }
    }
    release.send(()).expect("worker waits");
    let got: Vec<i32> = (0..10)
        .map(|_| rx.recv_timeout(PATIENCE).expect("queued items still run"))
        .collect();
    assert_eq!(got, (0..10).collect::<Vec<_>>());
    assert!(slot.lock().is_none());
}

#[test]
fn every_item_runs_exactly_once_with_many_pushers() {
    const PUSHERS: usize = 4;
    const EACH: usize = 2_000;
    let p = Arc::new(pool(one_cpu(), &attrs(false, allowed())));
    let seen: Arc<Vec<AtomicUsize>> =
        Arc::new((0..PUSHERS * EACH).map(|_| AtomicUsize::new(0)).collect());
    let pushers: Vec<_> = (0..PUSHERS)
        .map(|t| {
            let (p, seen) = (Arc::clone(&p), Arc::clone(&seen));
            thread::spawn(move || {
                for i in 0..EACH {
                    let seen = Arc::clone(&seen);
                    p.push_here(job(move || {
                        seen[t * EACH + i].fetch_add(1, Ordering::SeqCst);
                    }));
                }
            })
        })
        .collect();
    for pusher in pushers {
        pusher.join().expect("pusher");
    }
    let p = Arc::into_inner(p).expect("last handle");
    let stats = p.stats();
    drop(p);
    assert!(seen.iter().all(|n| n.load(Ordering::SeqCst) == 1));
    assert!(stats.lock_acquisitions >= (PUSHERS * EACH) as u64);
    assert!(stats.lock_contended <= stats.lock_acquisitions);
}

#[test]
fn a_push_that_finds_the_lock_held_counts_as_contended() {
    let p = Arc::new(pool(one_cpu(), &attrs(false, allowed())));
    // The pusher must reach the lock while the test holds it; give it a few chances.
    for _ in 0..50 {
        let held = p.shared.core.hold_lane(p.shared.lanes.here());
        let pusher = {
            let p = Arc::clone(&p);
            thread::spawn(move || p.push_here(job(|| {})))
        };
        thread::sleep(Duration::from_millis(10));
        drop(held);
        pusher.join().expect("pusher");
        if p.stats().lock_contended > 0 {
            break;
        }
    }
    let stats = p.stats();
    assert!(stats.lock_contended >= 1, "{stats:?}");
    assert!(stats.lock_acquisitions >= stats.lock_contended);
}

#[test]
fn a_task_that_unwinds_is_contained_and_the_worker_goes_on() {
    let mut a = attrs(false, allowed());
    a.max_workers = 1;
    let p = pool(one_cpu(), &a);
    p.push_here(job(|| panic!("a task that should never unwind")));
    assert_eq!(on_worker(&p, || "still here"), "still here");
    let stats = p.stats();
    assert_eq!(stats.worker_panics, 1);
    assert_eq!(stats.workers_created, 1);
}

#[test]
fn idle_workers_yield_instead_of_spinning_only_when_the_process_has_one_cpu() {
    use super::{idle_wait, ONE_CPU_YIELD_ROUNDS, SPIN_ROUNDS};
    assert_eq!(idle_wait(Some(1)), (ONE_CPU_YIELD_ROUNDS, true));
    for cpus in [Some(2), Some(72), None] {
        assert_eq!(idle_wait(cpus), (SPIN_ROUNDS, false), "{cpus:?}");
    }
}
