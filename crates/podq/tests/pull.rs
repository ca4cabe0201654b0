//! Pull: the sibling order on presets and real machines, and the runtime's pulls: an idle pod
//! takes waiting work of a busy one, never from a strict workqueue or one with pull off, and
//! every item runs exactly once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use podq::policy::pull::{siblings, Level, PodPlace};
use podq::scope::DEFAULT_SHARD_SIZE;
use podq::{AffinityScope, Pods, Topology, Workqueue};

// The sibling order checks the pods against the topology, not against the expected pods.
#[allow(dead_code)]
mod machines;

/// The places of `pods`, every pod serving.
fn places(pods: &Pods) -> Vec<PodPlace> {
    pods.pods()
        .iter()
        .map(|pod| PodPlace {
            cache_domain: pod.cache_domain(),
            node: pod.node(),
            serves: true,
        })
        .collect()
}

/// Checks the sibling order of every pod of `pods` on `topo`: every other pod once, each at
/// the level the topology says. Returns the problems found.
fn check_order(name: &str, topo: &Topology, pods: &Pods) -> Vec<String> {
    let places = places(pods);
    let mut problems = Vec::new();
    for pod in pods.pods() {
        let order = siblings(&places, pod.id());
        let mut seen: Vec<usize> = order.iter().map(|(_, p)| p).collect();
        seen.sort_unstable();
        let want: Vec<usize> = (0..pods.len()).filter(|&p| p != pod.id()).collect();
        if seen != want {
            problems.push(format!("{name} pod {}: siblings {seen:?}", pod.id()));
        }
        let a = pod.cpus().iter().next().expect("a pod has CPUs");
        for (level, other) in order.iter() {
            let b = pods.pods()[other].cpus().iter().next().expect("CPUs");
            let one_domain = pod.cache_domain().is_some()
                && pod.cache_domain() == pods.pods()[other].cache_domain();
            let one_node = pod.node().is_some() && pod.node() == pods.pods()[other].node();
            let right = match level {
                Level::CacheDomain => one_domain && topo.shares_cache(a, b),
                Level::Node => !one_domain && one_node && topo.shares_node(a, b),
                Level::Machine => !one_domain && !one_node,
            };
            if !right {
                problems.push(format!(
                    "{name} {}: pod {} sees pod {other} at {level:?}",
                    pods.scope(),
                    pod.id()
                ));
            }
        }
    }
    problems
}

#[test]
fn grace_pulls_within_its_one_cache_domain() {
    let grace = Topology::from_machine("grace").expect("preset");
    let pods = Pods::new(&grace, AffinityScope::CacheShard, 8).expect("pods");
    assert_eq!(pods.len(), 9);
    let order = siblings(&places(&pods), 3);
    assert_eq!(order.level(Level::CacheDomain), &[4, 5, 6, 7, 8, 0, 1, 2]);
    assert!(order.level(Level::Node).is_empty());
    assert!(order.level(Level::Machine).is_empty());
    assert!(check_order("grace", &grace, &pods).is_empty());
}

#[test]
fn epyc_9d64_pulls_from_other_ccds_at_node_level() {
    // 11 cache domains (CCDs) of 8 cores, one node: a cache_shard pod is a whole CCD, so its
    // siblings are the other CCDs, at node level; under `cpu`, the 15 other CPUs of the CCD come
    // first.
    let epyc = Topology::from_machine("epyc-9d64").expect("preset");
    let shards = Pods::new(&epyc, AffinityScope::CacheShard, 8).expect("pods");
    assert_eq!(shards.len(), 11);
    let order = siblings(&places(&shards), 0);
    assert!(order.level(Level::CacheDomain).is_empty());
    assert_eq!(order.level(Level::Node), &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    let cpus = Pods::new(&epyc, AffinityScope::Cpu, 8).expect("pods");
    let order = siblings(&places(&cpus), 0);
    assert_eq!(order.level(Level::CacheDomain).len(), 15);
    assert_eq!(order.level(Level::Node).len(), 176 - 16);
    for scope in AffinityScope::ALL {
        let pods = Pods::new(&epyc, scope, 8).expect("pods");
        let problems = check_order("epyc-9d64", &epyc, &pods);
        assert!(problems.is_empty(), "{problems:#?}");
    }
}

#[test]
fn a_two_node_machine_pulls_from_the_other_node_last() {
    let two = Topology::from_machine("sockets=2,nodes=2,caches=2,cores=8,smt=1").expect("m");
    let pods = Pods::new(&two, AffinityScope::Cpu, 8).expect("pods");
    let order = siblings(&places(&pods), 1);
    assert_eq!(order.level(Level::CacheDomain), &[2, 3, 0]);
    assert!(order.level(Level::Node).is_empty());
    assert_eq!(order.level(Level::Machine), &[4, 5, 6, 7]);
    // Under `numa` a pod is a whole node: the other node is at machine level.
    let nodes = Pods::new(&two, AffinityScope::Numa, 8).expect("pods");
    let order = siblings(&places(&nodes), 0);
    assert_eq!(order.level(Level::Machine), &[1]);
}

#[test]
fn real_machines_order_siblings_by_cache_domain_then_node() {
    let Some(machines) = machines::machines() else {
        return;
    };
    let mut problems = Vec::new();
    let mut checked = 0;
    for machine in &machines {
        let (_scratch, root) = match machine.unpack() {
            Ok(unpacked) => unpacked,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        let Ok(topo) = Topology::from_sysfs(&root) else {
            // The topology tests report machines that do not read.
            continue;
        };
        for scope in AffinityScope::ALL {
            let pods = Pods::new(&topo, scope, DEFAULT_SHARD_SIZE).expect("pods");
            problems.extend(check_order(&machine.name, &topo, &pods));
        }
        checked += 1;
    }
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(checked > 0, "no machine could be read");
}

/// An idle timeout of its own for test `k`: workqueues with equal attributes share pools, and
/// the tests that block a pool's only worker must not block each other's.
fn own_pools(k: u64) -> Duration {
    Duration::from_secs(300 + k)
}

/// The name of the calling thread.
fn thread_name() -> String {
    std::thread::current().name().unwrap_or("").to_owned()
}

/// A `cpu`-scope workqueue named `name` with one worker per pool, built by `build`; `None`
/// (skipped, with a message) unless it has two pools and `cpus` among its CPUs.
fn one_worker_per_pod(
    name: &str,
    build: impl FnOnce(podq::WorkqueueBuilder) -> podq::WorkqueueBuilder,
    cpus: &[usize],
) -> Option<Workqueue> {
    let wq = build(
        Workqueue::builder(name)
            .scope(AffinityScope::Cpu)
            .max_workers(1),
    )
    .build()
    .expect("workqueue");
    if wq.pools() < 2 || !cpus.iter().all(|&cpu| wq.cpus().contains(cpu)) {
        eprintln!("skipped: needs two CPUs, {cpus:?} among them");
        return None;
    }
    Some(wq)
}

/// On a `cpu`-scope workqueue built by `build`, with one worker per pool: item A, queued on
/// CPU 0, waits up to `patience` for item B, which is queued on CPU 0 with a third item C once A
/// runs. A is running before B and C are queued, so both wait in pod 0's queue behind a busy
/// worker, and the push that leaves two of them there (or B's, from a thread outside pod 0)
/// offers them (O1): where a sibling may pull, B does not wait for A. Returns the threads that
/// ran A and B and the workqueue (to read its stats), or `None` on a machine with one CPU.
fn blocked_behind(
    build: impl FnOnce(podq::WorkqueueBuilder) -> podq::WorkqueueBuilder,
    patience: Duration,
) -> Option<([String; 2], Workqueue)> {
    blocked_behind_after(build, patience, |_| {})
}

/// As [`blocked_behind`], with `before` run on the workqueue first.
fn blocked_behind_after(
    build: impl FnOnce(podq::WorkqueueBuilder) -> podq::WorkqueueBuilder,
    patience: Duration,
    before: impl FnOnce(&Workqueue),
) -> Option<([String; 2], Workqueue)> {
    let wq = one_worker_per_pod("pull-test", build, &[0])?;
    before(&wq);
    let (a_started, a_running) = mpsc::channel::<()>();
    let (b_ran, b_seen) = mpsc::channel::<()>();
    let who = Arc::new(Mutex::new([String::new(), String::new()]));
    let who_a = Arc::clone(&who);
    wq.queue_on(0, move || {
        who_a.lock().unwrap()[0] = thread_name();
        let _ = a_started.send(());
        // A: blocks its worker until B has run on another, or until `patience`.
        let _ = b_seen.recv_timeout(patience);
    })
    .expect("cpu 0");
    a_running
        .recv_timeout(Duration::from_secs(60))
        .expect("A never started");
    let who_b = Arc::clone(&who);
    wq.queue_on(0, move || {
        who_b.lock().unwrap()[1] = thread_name();
        let _ = b_ran.send(());
    })
    .expect("cpu 0");
    wq.queue_on(0, || {}).expect("cpu 0");
    assert!(wq.flush());
    let names = who.lock().unwrap().clone();
    Some((names, wq))
}

/// Checks that A ran on pod 0's worker and B on pod 1's, and that pod 0 counts an item pulled
/// out; returns the workqueue's stats.
fn ran_on_both_pods(who: &[String; 2], wq: &Workqueue) -> podq::WorkqueueStats {
    assert_eq!(
        who,
        &["podq/cpu-p0", "podq/cpu-p1"],
        "A and B ran on {who:?}"
    );
    let stats = wq.stats();
    let pod_0 = stats.pools.iter().find(|p| p.pod == 0).expect("pool 0");
    assert!(pod_0.pulled_out >= 1, "{pod_0:?}");
    stats
}

#[test]
fn an_idle_pod_pulls_the_work_waiting_behind_a_busy_one() {
    // Without pull B would wait for A's whole patience; with it, pod 1's worker takes B, so A
    // and B run on the workers of both pods.
    let Some((who, wq)) = blocked_behind(|b| b.idle_timeout(own_pools(1)), Duration::from_secs(60))
    else {
        return;
    };
    let stats = ran_on_both_pods(&who, &wq);
    let pool = |pod: usize| stats.pools.iter().find(|p| p.pod == pod).expect("pool");
    assert!(pool(1).pulled_in >= 1, "{:?}", pool(1));
    let gate = pool(1).pull.as_ref().expect("pull stats");
    assert_eq!(gate.levels.len(), 3);
    let found: u64 = gate.levels.iter().map(|l| l.found).sum();
    assert!(found >= 1, "{gate:?}");
    let total_in: u64 = stats.pools.iter().map(|p| p.pulled_in).sum();
    let total_out: u64 = stats.pools.iter().map(|p| p.pulled_out).sum();
    assert_eq!(total_in, total_out);
}

#[test]
fn one_item_queued_from_outside_a_busy_pod_is_offered_to_an_idle_one() {
    // A runs on pod 0's only worker and waits for B; B alone is queued to pod 0 from a thread
    // on CPU 1, outside the pod. With the pod's own threshold (two waiting items) B would wait
    // for A's whole patience; one item queued from elsewhere is offered, and pod 1 runs it.
    let Some(wq) = one_worker_per_pod("pull-away", |b| b.idle_timeout(own_pools(3)), &[0, 1])
    else {
        return;
    };
    let (a_started, a_running) = mpsc::channel::<()>();
    let (b_ran, b_seen) = mpsc::channel::<String>();
    let a_ran_on = Arc::new(Mutex::new(String::new()));
    let a_on = Arc::clone(&a_ran_on);
    wq.queue_on(0, move || {
        *a_on.lock().unwrap() = thread_name();
        let _ = a_started.send(());
        // The pod's worker stays busy until B has run elsewhere, or for a minute.
        let _ = b_seen.recv_timeout(Duration::from_secs(60));
    })
    .expect("cpu 0");
    a_running
        .recv_timeout(Duration::from_secs(60))
        .expect("A started");
    let queued = std::thread::scope(|s| {
        s.spawn(|| {
            if podq::affinity::pin_current_thread(&[1].into_iter().collect()).is_err() {
                return None;
            }
            let b_ran = b_ran.clone();
            Some(wq.queue_on(0, move || {
                let _ = b_ran.send(thread_name());
            }))
        })
        .join()
        .expect("the queuing thread")
    });
    let Some(queued) = queued else {
        eprintln!("skipped: cannot pin a thread to CPU 1");
        let _ = b_ran.send(String::new());
        assert!(wq.flush());
        return;
    };
    assert!(matches!(queued, Ok(true)), "{queued:?}");
    assert!(wq.flush());
    assert_eq!(*a_ran_on.lock().unwrap(), "podq/cpu-p0");
    let stats = wq.stats();
    let pool = |pod: usize| stats.pools.iter().find(|p| p.pod == pod).expect("pool");
    assert_eq!(
        (pool(0).pulled_out, pool(1).pulled_in),
        (1, 1),
        "{:?}",
        stats.pools
    );
}

#[test]
fn a_parked_worker_of_an_idle_pod_is_woken_to_pull() {
    // Pod 1's worker has run an item and parked: the offer of pod 0 wakes it (O2), and once
    // woken it asks its siblings again, though it asked before it parked.
    let park_pod_1 = |wq: &Workqueue| {
        wq.queue_on(1, || {}).expect("cpu 1");
        assert!(wq.flush());
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let stats = wq.stats();
            let pool = stats.pools.iter().find(|p| p.pod == 1).expect("pool 1");
            if pool.idle_workers == 1 {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{pool:?}");
            std::thread::sleep(Duration::from_millis(1));
        }
    };
    let Some((who, wq)) = blocked_behind_after(
        |b| b.idle_timeout(own_pools(2)),
        Duration::from_secs(60),
        park_pod_1,
    ) else {
        return;
    };
    let stats = ran_on_both_pods(&who, &wq);
    let pool = |pod: usize| stats.pools.iter().find(|p| p.pod == pod).expect("pool");
    assert_eq!(pool(1).workers_created, 1, "woken, not a new worker");
}

/// On a workqueue built by `build`, the items behind a blocked one wait for it on its own pod:
/// nothing is pulled, and the pools have no pull stats.
fn never_pulls(build: impl FnOnce(podq::WorkqueueBuilder) -> podq::WorkqueueBuilder) {
    let Some((who, wq)) = blocked_behind(build, Duration::from_millis(300)) else {
        return;
    };
    assert_eq!(who, ["podq/cpu-p0", "podq/cpu-p0"]);
    for pool in wq.stats().pools {
        assert_eq!((pool.pulled_in, pool.pulled_out), (0, 0), "{pool:?}");
        assert!(pool.pull.is_none());
    }
}

#[test]
fn a_strict_workqueue_never_pulls() {
    never_pulls(|b| b.strict(true));
}

#[test]
fn pull_off_keeps_items_on_their_pool() {
    never_pulls(|b| b.pull(false));
}

#[test]
fn every_item_runs_once_while_pods_pull_from_each_other() {
    // Producers on every CPU, items of uneven length: pods run dry at different times and pull.
    let wq = Arc::new(
        Workqueue::builder("pull-count")
            .scope(AffinityScope::Cpu)
            .build()
            .expect("workqueue"),
    );
    const PER_PRODUCER: usize = 2_000;
    let cpus: Vec<usize> = wq.cpus().iter().collect();
    let runs: Arc<Vec<AtomicUsize>> = Arc::new(
        (0..cpus.len() * PER_PRODUCER)
            .map(|_| AtomicUsize::new(0))
            .collect(),
    );
    std::thread::scope(|s| {
        for (k, &cpu) in cpus.iter().enumerate() {
            let wq = Arc::clone(&wq);
            let runs = Arc::clone(&runs);
            s.spawn(move || {
                for i in 0..PER_PRODUCER {
                    let id = k * PER_PRODUCER + i;
                    let runs = Arc::clone(&runs);
                    // Producer 0 queues long items, the others short ones.
                    let spin = if k == 0 { 2_000 } else { 10 };
                    wq.queue_on(cpu, move || {
                        for _ in 0..spin {
                            std::hint::spin_loop();
                        }
                        runs[id].fetch_add(1, Ordering::Relaxed);
                    })
                    .expect("cpu");
                }
            });
        }
    });
    assert!(wq.flush());
    assert!(runs.iter().all(|r| r.load(Ordering::Relaxed) == 1));
    let stats = wq.stats();
    assert_eq!(stats.completed, (cpus.len() * PER_PRODUCER) as u64);
    let total_in: u64 = stats.pools.iter().map(|p| p.pulled_in).sum();
    let total_out: u64 = stats.pools.iter().map(|p| p.pulled_out).sum();
    assert_eq!(total_in, total_out);
}

#[test]
fn an_ordered_cpu_scope_workqueue_keeps_its_order_with_pull() {
    let wq = Workqueue::builder("pull-ordered")
        .scope(AffinityScope::Cpu)
        .max_active(1)
        .build()
        .expect("workqueue");
    let order = Arc::new(Mutex::new(Vec::new()));
    let running = Arc::new(AtomicUsize::new(0));
    let cpus: Vec<usize> = wq.cpus().iter().collect();
    for i in 0..500 {
        let order = Arc::clone(&order);
        let running = Arc::clone(&running);
        wq.queue_on(cpus[i % cpus.len()], move || {
            assert_eq!(running.fetch_add(1, Ordering::SeqCst), 0, "two at once");
            order.lock().unwrap().push(i);
            running.fetch_sub(1, Ordering::SeqCst);
        })
        .expect("cpu");
    }
    assert!(wq.flush());
    let order = order.lock().unwrap();
    assert_eq!(*order, (0..500).collect::<Vec<_>>());
    assert_eq!(wq.stats().panicked, 0);
}
