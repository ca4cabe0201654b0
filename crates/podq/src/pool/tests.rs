//! Pool behaviour with real threads: worker growth, retirement, names, placement, shutdown,
//! contention counts, and the registry's sharing rules.

use std::sync::atomic::AtomicUsize;
use std::sync::mpsc;
use std::sync::Barrier;
use std::thread;
use std::time::Duration;

use super::mailbox::Mailbox;
use super::*;
use crate::test_support::{eventually, PATIENCE};
use crate::Topology;

/// A one-shot closure, as a pool job.
struct TestJob(Box<dyn FnOnce() + Send>);

impl Job for TestJob {
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
    }
}

fn pool(pod_cpus: CpuSet, attrs: &PoolAttrs) -> Pool<TestJob> {
    let pod = Pod {
        id: 0,
        cpus: pod_cpus,
        node: Some(0),
        cache_domain: Some(0),
    };
    Pool::new(pool_name(attrs.scope, attrs.shard_size, 0), pod, attrs)
}

/// Runs `f` on a pool worker and returns what it computed.
fn on_worker<R: Send + 'static>(pool: &Pool<TestJob>, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = mpsc::channel();
    pool.push(job(move || tx.send(f()).expect("test alive")));
    rx.recv_timeout(PATIENCE).expect("the item ran")
}

#[test]
fn items_that_block_get_more_workers_on_a_one_cpu_pod() {
    let p = pool(one_cpu(), &attrs(false, allowed()));
    let barrier = Arc::new(Barrier::new(4));
    let (tx, rx) = mpsc::channel();
    for i in 0..4 {
        let (barrier, tx) = (Arc::clone(&barrier), tx.clone());
        p.push(job(move || {
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
        p.push(job(move || {
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
        p.push(job(move || {
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
    p.push(job(move || gate.recv().expect("released")));
    for _ in 0..100 {
        let ran = Arc::clone(&ran);
        p.push(job(move || {
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
        p.push(job(move || {
            gate.recv().expect("released");
            // The last handle goes away on the pool's own worker: no waiting for itself.
            drop(slot.lock().take());
        }));
        for i in 0..10 {
            let tx = tx.clone();
            p.push(job(move || tx.send(i).expect("test alive")));
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
                    p.push(job(move || {
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
            thread::spawn(move || p.push(job(|| {})))
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
    p.push(job(|| panic!("a task that should never unwind")));
    assert_eq!(on_worker(&p, || "still here"), "still here");
    let stats = p.stats();
    assert_eq!(stats.worker_panics, 1);
    assert_eq!(stats.workers_created, 1);
}

// ---- the registry ----------------------------------------------------------------------------

fn machine() -> Topology {
    Topology::from_machine("sockets=1,nodes=1,caches=2,cores=8,smt=2").expect("machine")
}

#[test]
fn equal_attributes_share_pools_and_others_do_not() {
    let topo = machine();
    let a = attrs_of(AffinityScope::Cache, false, topo.cpu_set());
    let first = pools_for(&topo, &a).expect("pools");
    let second = pools_for(&topo, &a).expect("pools");
    assert_eq!(first.pools.len(), 2);
    for (x, y) in first.pools.iter().zip(&second.pools) {
        assert!(Arc::ptr_eq(x, y));
    }
    let strict = PoolAttrs {
        strict: true,
        ..a.clone()
    };
    let other = pools_for(&topo, &strict).expect("pools");
    assert!(!Arc::ptr_eq(&first.pools[0], &other.pools[0]));
    let shards = PoolAttrs {
        scope: AffinityScope::CacheShard,
        ..a.clone()
    };
    let other = pools_for(&topo, &shards).expect("pools");
    assert!(!Arc::ptr_eq(&first.pools[0], &other.pools[0]));
    // Another machine with the same attributes gets its own pools too.
    let wide = Topology::from_machine("sockets=1,nodes=1,caches=1,cores=16,smt=2").expect("m");
    let wide_attrs = attrs_of(AffinityScope::Cache, false, topo.cpu_set());
    let other = pools_for(&wide, &wide_attrs).expect("pools");
    assert!(!Arc::ptr_eq(&first.pools[0], &other.pools[0]));
}

#[test]
fn a_pool_is_dropped_with_its_last_user_and_made_anew() {
    let topo = machine();
    let a = attrs_of(AffinityScope::Numa, true, topo.cpu_set());
    let first = pools_for(&topo, &a).expect("pools");
    let weak = Arc::downgrade(&first.pools[0]);
    drop(first);
    assert!(weak.upgrade().is_none());
    let again = pools_for(&topo, &a).expect("pools");
    assert_eq!(again.pools[0].stats().lock_acquisitions, 0);
}

#[test]
fn pools_serve_their_pod_within_the_workqueue_cpus() {
    let topo = machine();
    // Two cache domains of 4 cores (8 CPUs each); the workqueue may use CPUs 0-1 and 8-9 only.
    let cpus: CpuSet = [0, 1, 8, 9].into_iter().collect();
    let a = attrs_of(AffinityScope::Cache, false, cpus);
    let set = pools_for(&topo, &a).expect("pools");
    assert_eq!(set.pods.len(), 2);
    assert_eq!(set.pools[0].pod().cpus, [0, 1, 8, 9].into_iter().collect());
    assert_eq!(set.pools[1].pod().cpus, CpuSet::new());
    assert_eq!(set.pools[0].stats().name, "cache-p0");
    assert_eq!(set.pools[1].stats().pod, 1);
}

#[test]
fn bad_attributes_are_typed_errors() {
    let topo = machine();
    let good = attrs_of(AffinityScope::CacheShard, false, topo.cpu_set());
    let zero_workers = PoolAttrs {
        max_workers: 0,
        ..good.clone()
    };
    assert!(matches!(
        pools_for(&topo, &zero_workers),
        Err(crate::Error::ZeroMaxWorkers)
    ));
    let empty = PoolAttrs {
        cpus: CpuSet::new(),
        ..good.clone()
    };
    assert!(matches!(
        pools_for(&topo, &empty),
        Err(crate::Error::EmptyCpuSet { .. })
    ));
    let outside = PoolAttrs {
        cpus: [0, 999].into_iter().collect(),
        ..good.clone()
    };
    let err = pools_for(&topo, &outside).expect_err("CPU 999 is not usable");
    assert!(matches!(err, crate::Error::UnknownCpu { cpu: 999, .. }));
    assert!(err.to_string().contains("0-15"), "{err}");
    let zero_shard = PoolAttrs {
        shard_size: 0,
        ..good
    };
    assert!(matches!(
        pools_for(&topo, &zero_shard),
        Err(crate::Error::ZeroShardSize)
    ));
}

#[test]
fn pool_names_fit_in_a_linux_thread_name() {
    assert_eq!(pool_name(AffinityScope::CacheShard, 8, 2), "cs8-p2");
    assert_eq!(pool_name(AffinityScope::Cpu, 8, 5), "cpu-p5");
    assert_eq!(pool_name(AffinityScope::System, 8, 0), "sys-p0");
    for scope in AffinityScope::ALL {
        let name = format!("podq/{}", pool_name(scope, 16, 999));
        assert!(name.len() <= 15, "{name}");
    }
}

// ---- the core's decisions, without threads -----------------------------------------------------

/// Limits for cores driven by hand: every worker eager, no spinning.
fn limits(max_workers: usize) -> idle::Limits {
    idle::Limits {
        max_workers,
        eager_workers: max_workers,
        idle_timeout: DEFAULT_IDLE_TIMEOUT,
        spin_rounds: 0,
        lanes: 2,
    }
}

#[test]
fn the_core_asks_for_one_worker_at_a_time() {
    let core = idle::Core::<u32>::new(limits(4));
    assert_eq!(core.push(0, 1), idle::Push::Spawn);
    // The first worker is on its way: no second one for the next items yet.
    assert_eq!(core.push(0, 2), idle::Push::Queued);
    assert_eq!(core.push(0, 3), idle::Push::Queued);
    let mut slot = idle::WorkerSlot::new();
    // It takes an item while more wait and nobody is idle: it asks for the next worker.
    assert!(matches!(
        core.next(&mut slot, || 0),
        idle::Next::Run {
            item: 1,
            grow: idle::Grow::Spawn
        }
    ));
    assert!(matches!(
        core.next(&mut slot, || 0),
        idle::Next::Run {
            item: 2,
            grow: idle::Grow::No
        }
    ));
    let snap = core.snapshot();
    assert_eq!(
        (snap.workers, snap.workers_created, snap.queue_depth),
        (2, 2, 1)
    );
}

#[test]
fn a_worker_that_cannot_start_gives_its_items_back_to_the_caller() {
    let core = idle::Core::<u32>::new(limits(4));
    assert_eq!(core.push(0, 7), idle::Push::Spawn);
    assert_eq!(core.push(0, 8), idle::Push::Queued);
    // No worker at all: the caller must run what is queued.
    assert!(core.spawn_failed());
    assert_eq!(core.pop(), Some(7));
    assert_eq!(core.pop(), Some(8));
    let snap = core.snapshot();
    assert_eq!((snap.workers, snap.workers_created), (0, 0));
    // The next push asks for a worker again.
    assert_eq!(core.push(0, 9), idle::Push::Spawn);
}

#[test]
fn a_full_pool_queues_without_asking_for_workers() {
    let core = idle::Core::<u32>::new(limits(1));
    assert_eq!(core.push(0, 1), idle::Push::Spawn);
    let mut slot = idle::WorkerSlot::new();
    assert!(matches!(
        core.next(&mut slot, || 0),
        idle::Next::Run {
            item: 1,
            grow: idle::Grow::No
        }
    ));
    assert_eq!(core.push(0, 2), idle::Push::Queued);
    assert_eq!(core.remove_if(|&i| i == 2), Some(2));
    assert_eq!(core.snapshot().queue_depth, 0);
}

#[test]
fn each_lane_keeps_its_order_and_the_lanes_take_turns() {
    let core = idle::Core::<u32>::new(limits(1));
    assert_eq!(core.push(0, 10), idle::Push::Spawn);
    // Lane numbers wrap: 3 is lane 1 of 2.
    for (lane, item) in [(3, 20), (0, 11), (1, 21), (0, 12)] {
        assert_eq!(core.push(lane, item), idle::Push::Queued);
    }
    let mut slot = idle::WorkerSlot::new();
    let mut ran = Vec::new();
    for _ in 0..5 {
        match core.next(&mut slot, || 0) {
            idle::Next::Run { item, .. } => ran.push(item),
            idle::Next::Exit => panic!("exit with items waiting"),
        }
    }
    // One lane's whole batch, then the other's.
    assert_eq!(ran, vec![10, 11, 12, 20, 21]);
    assert_eq!(core.snapshot().queue_depth, 0);
}

#[test]
fn a_worker_that_cannot_start_gives_back_the_items_of_every_lane() {
    let core = idle::Core::<u32>::new(limits(4));
    assert_eq!(core.push(1, 7), idle::Push::Spawn);
    assert_eq!(core.push(0, 8), idle::Push::Queued);
    assert!(core.spawn_failed());
    let mut back = std::iter::from_fn(|| core.pop()).collect::<Vec<_>>();
    back.sort_unstable();
    assert_eq!(back, vec![7, 8]);
    assert_eq!(core.remove_if(|_| true), None);
}

#[test]
fn cancel_finds_an_item_in_any_lane() {
    let core = idle::Core::<u32>::new(limits(1));
    assert_eq!(core.push(0, 1), idle::Push::Spawn);
    assert_eq!(core.push(1, 2), idle::Push::Queued);
    assert_eq!(core.remove_if(|&i| i == 2), Some(2));
    assert_eq!(core.remove_if(|&i| i == 2), None);
    assert_eq!(core.snapshot().queue_depth, 1);
    assert_eq!(core.pop(), Some(1));
}

// The spinners' mailbox (P1m, P6m), one call at a time; crates/podq-loom races them.
#[test]
fn a_closed_mailbox_gives_the_task_back() {
    let mailbox = Mailbox::new();
    assert_eq!(mailbox.hand(0, 7), Err(7));
    assert_eq!(mailbox.close(), None);
}

#[test]
fn an_open_mailbox_takes_one_task_from_another_lane() {
    let mailbox = Mailbox::new();
    assert!(mailbox.open(1));
    assert!(!mailbox.open(0), "one owner at a time");
    assert_eq!(
        mailbox.hand(1, 1),
        Err(1),
        "the owner's own lane is skipped"
    );
    assert!(!mailbox.is_full());
    assert_eq!(mailbox.hand(0, 2), Ok(()));
    assert!(mailbox.is_full());
    assert_eq!(
        mailbox.hand(0, 3),
        Err(3),
        "full: a second task goes to its lane"
    );
    assert_eq!(mailbox.close(), Some(2));
    assert_eq!(mailbox.hand(0, 4), Err(4), "closed again");
}

#[test]
fn an_owner_that_closes_unused_can_open_again() {
    let mailbox = Mailbox::new();
    assert!(mailbox.open(3));
    assert_eq!(mailbox.close(), None);
    assert!(mailbox.open(5));
    assert_eq!(mailbox.hand(5, 6), Err(6));
    assert_eq!(mailbox.hand(2, 6), Ok(()));
    assert_eq!(mailbox.close(), Some(6));
}

#[test]
fn the_pools_task_and_the_state_fit_one_cache_line() {
    assert!(std::mem::size_of::<Mailbox<super::Task>>() <= 64);
}
