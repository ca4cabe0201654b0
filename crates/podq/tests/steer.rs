//! Steering: a lightly loaded group's items run on one pod wherever they are issued; a group
//! whose CPU-bound items would overload its pod, or whose home is kept busy by other work,
//! spreads; `steer(false)` does not steer; grouped items keep the workqueue's guarantees. Counts
//! and orders only, never durations.

mod support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use podq::policy::steer;
use podq::{affinity, AffinityScope, CpuSet, Group, Work, Workqueue, WorkqueueBuilder};

/// An idle timeout of its own for test `k`: workqueues with equal attributes share pools, and
/// each test here reads the load of its own pools only.
fn own_pools(k: u64) -> Duration {
    Duration::from_secs(400 + k)
}

/// Two CPUs this process may run on, or `None` (the test is skipped) on a machine with one.
fn two_cpus() -> Option<[usize; 2]> {
    let allowed: Vec<usize> = affinity::allowed_cpus().ok()?.iter().collect();
    if allowed.len() < 2 {
        eprintln!("skipped: needs two CPUs");
        return None;
    }
    Some([allowed[0], allowed[1]])
}

/// A `cpu`-scope workqueue over `cpus` (one pod, one pool each), as `build` adds.
fn workqueue(
    name: &str,
    cpus: [usize; 2],
    build: impl FnOnce(WorkqueueBuilder) -> WorkqueueBuilder,
) -> Workqueue {
    let set: CpuSet = cpus.into_iter().collect();
    build(Workqueue::builder(name).scope(AffinityScope::Cpu).cpus(set))
        .build()
        .expect("workqueue")
}

/// The worker pools that ran the items (by the worker thread's name, `podq/cpu-pN`), and how
/// many items each ran.
type RanOn = Arc<Mutex<HashMap<String, usize>>>;

/// Counts the calling worker's pool in `ran`.
fn count_here(ran: &RanOn) {
    let name = thread::current().name().unwrap_or("").to_owned();
    *ran.lock().unwrap().entry(name).or_default() += 1;
}

/// The pools that ran a sequence of items, in order (by the worker thread's name), and when
/// each started.
type Sequence = Arc<Mutex<Vec<(String, Instant)>>>;

/// How many items of `seq` ran on the same pool as the item before.
fn same_as_before(seq: &[(String, Instant)]) -> usize {
    seq.windows(2).filter(|w| w[0].0 == w[1].0).count()
}

/// The most items of `seq` that ran on one pool.
fn on_one_pool(seq: &[(String, Instant)]) -> usize {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for (name, _) in seq {
        *counts.entry(name).or_default() += 1;
    }
    counts.into_values().max().unwrap_or(0)
}

/// Two threads, pinned to `cpus[0]` and `cpus[1]`, take turns: each queues one item of `group`
/// (which appends where it ran to `seq`) and flushes `wq` (so the item is over, its group
/// counting nothing runnable) before the other queues the next. `items` in all. Returns false
/// when a thread could not be pinned.
fn alternate(
    wq: &Workqueue,
    group: &Group,
    cpus: [usize; 2],
    items: usize,
    seq: &Sequence,
) -> bool {
    let turn = Arc::new(Barrier::new(2));
    let pinned = AtomicUsize::new(0);
    thread::scope(|s| {
        for (k, cpu) in cpus.into_iter().enumerate() {
            let turn = Arc::clone(&turn);
            let pinned = &pinned;
            s.spawn(move || {
                let ok = affinity::pin_current_thread(&[cpu].into_iter().collect()).is_ok();
                if ok {
                    pinned.fetch_add(1, Ordering::Relaxed);
                }
                turn.wait();
                if pinned.load(Ordering::Relaxed) < 2 {
                    return;
                }
                for i in 0..items {
                    if i % 2 == k {
                        let seq = Arc::clone(seq);
                        assert!(group.queue(move || {
                            let name = thread::current().name().unwrap_or("").to_owned();
                            seq.lock().unwrap().push((name, Instant::now()));
                        }));
                        assert!(wq.flush());
                    }
                    turn.wait();
                }
            });
        }
    });
    pinned.load(Ordering::Relaxed) == 2
}

/// On a workqueue over two CPUs built by `build` (with pools of its own, `k`), 200 items of one
/// group issued from the two CPUs in turn ([`alternate`]); then `check` looks at the
/// workqueue, the group and where the items ran, in order. Skipped on one CPU or where a
/// thread cannot be pinned.
fn alternating(
    name: &str,
    k: u64,
    build: impl FnOnce(WorkqueueBuilder) -> WorkqueueBuilder,
    check: impl FnOnce(&Workqueue, &Group, [usize; 2], &[(String, Instant)]),
) {
    let Some(cpus) = two_cpus() else { return };
    let wq = workqueue(name, cpus, |b| build(b.idle_timeout(own_pools(k))));
    let group = wq.group();
    assert_eq!(group.home(), None);
    let seq = Sequence::default();
    if !alternate(&wq, &group, cpus, 200, &seq) {
        eprintln!("skipped: could not pin a thread");
        return;
    }
    let seq = seq.lock().unwrap();
    assert_eq!(seq.len(), 200);
    check(&wq, &group, cpus, &seq);
}

#[test]
fn a_lightly_loaded_group_runs_on_one_pod_wherever_it_is_issued() {
    // Each item runs where the one before ran, whichever CPU issued it. A pause of the test's
    // threads as long as `policy::steer::EXPIRY` (a loaded machine) forgets the home, and the
    // next item's pod is the new one: so the counts are of items on the pod of the one before,
    // which such a pause costs one of, and of items at home; and, when no such pause came, of
    // items on one pod.
    alternating(
        "steer-light",
        1,
        |b| b,
        |wq, group, cpus, seq| {
            let stats = wq.stats();
            assert!(same_as_before(seq) >= 180, "{seq:?} {stats:?}");
            // The home's time is its last vote, up to a vote interval before a start.
            let pause = steer::EXPIRY - steer::VOTE_INTERVAL;
            let paused = seq.windows(2).any(|w| w[1].1 - w[0].1 >= pause);
            if paused {
                eprintln!("the test paused past the expiry: its items' pods are counted in pairs");
            } else {
                assert!(on_one_pool(seq) >= 180, "{seq:?} {stats:?}");
            }
            assert_eq!(stats.grouped_at_home + stats.grouped_elsewhere, 200);
            assert!(stats.grouped_at_home >= 180, "{stats:?}");
            if let Some(home) = group.home() {
                assert!(cpus.contains(&home));
            }
        },
    );
}

#[test]
fn steering_off_leaves_items_where_they_are_issued() {
    alternating(
        "steer-off",
        2,
        |b| b.steer(false),
        |wq, group, _, seq| {
            // Each item runs on the pool of the CPU that issued it (nothing waits, so nothing is
            // pulled): the pool changes from one item to the next.
            assert!(same_as_before(seq) <= 50, "{seq:?}");
            assert_eq!(group.home(), None);
            let stats = wq.stats();
            let counted = (
                stats.grouped_at_home,
                stats.grouped_elsewhere,
                stats.home_changes,
            );
            assert_eq!(counted, (0, 0, 0));
        },
    );
}

/// Spins for about `rounds` spin-loop hints: a CPU-bound item.
fn spin(rounds: u32) {
    for _ in 0..rounds {
        std::hint::spin_loop();
    }
}

#[test]
fn a_group_that_would_overload_its_pod_spreads() {
    // Pull off, so that only steering decides where items go. The group's home is the pod of
    // cpus[0]; then both CPUs queue CPU-bound items of it as fast as they can. Steered all
    // home, every item would run on that pod; with as many runnable as the pod has CPUs (1),
    // the items issued on cpus[1] go to its own pod.
    let Some(cpus) = two_cpus() else { return };
    let wq = workqueue("steer-crowd", cpus, |b| {
        b.idle_timeout(own_pools(3)).pull(false)
    });
    let group = wq.group();
    let ran = RanOn::default();
    let first = Arc::clone(&ran);
    let (done, wait) = mpsc::channel();
    let pinned = affinity::pin_current_thread(&[cpus[0]].into_iter().collect()).is_ok();
    if !pinned {
        eprintln!("skipped: could not pin a thread");
        return;
    }
    assert!(group.queue(move || {
        count_here(&first);
        done.send(thread::current().name().unwrap_or("").to_owned())
            .unwrap();
    }));
    // The pool of the home (unless a pause of the test expires it: then items spread anyway).
    let home = wait.recv_timeout(support::PATIENCE).expect("item ran");
    const PER_CPU: usize = 300;
    let pinned = AtomicUsize::new(0);
    thread::scope(|s| {
        for cpu in cpus {
            let (group, ran, pinned) = (&group, &ran, &pinned);
            s.spawn(move || {
                if affinity::pin_current_thread(&[cpu].into_iter().collect()).is_err() {
                    return;
                }
                pinned.fetch_add(1, Ordering::Relaxed);
                for _ in 0..PER_CPU {
                    let ran = Arc::clone(ran);
                    assert!(group.queue(move || {
                        spin(20_000);
                        count_here(&ran);
                    }));
                }
            });
        }
    });
    assert!(wq.flush());
    if pinned.load(Ordering::Relaxed) < 2 {
        eprintln!("skipped: could not pin a thread");
        return;
    }
    let ran = ran.lock().unwrap();
    assert_eq!(ran.values().sum::<usize>(), 2 * PER_CPU + 1);
    let away: usize = ran
        .iter()
        .filter(|(name, _)| **name != home)
        .map(|(_, n)| n)
        .sum();
    assert!(away * 4 >= PER_CPU, "{home}: {ran:?}");
    // Its home may have moved meanwhile (its items ran on both pods): every one is counted,
    // at home or elsewhere.
    let stats = wq.stats();
    assert_eq!(
        stats.grouped_at_home + stats.grouped_elsewhere,
        2 * PER_CPU as u64 + 1
    );
}

#[test]
fn a_home_kept_busy_by_other_work_gets_no_steered_items() {
    // The load signal reads busy workers from their probes, which need procfs.
    if !std::path::Path::new("/proc/thread-self/stat").exists() {
        eprintln!("skipped: no procfs to see busy workers");
        return;
    }
    let Some(cpus) = two_cpus() else { return };
    let wq = workqueue("steer-busy", cpus, |b| b.idle_timeout(own_pools(4)));
    let group = wq.group();
    // The group's home: the pod of cpus[0].
    let (done, wait) = mpsc::channel();
    let home_item = Work::new(move || done.send(()).unwrap());
    let pinned = affinity::pin_current_thread(&[cpus[0]].into_iter().collect()).is_ok();
    if !pinned {
        eprintln!("skipped: could not pin a thread");
        return;
    }
    assert!(group.queue_work(&home_item));
    wait.recv_timeout(support::PATIENCE).expect("item ran");
    // Unless a pause of the test expired it since (then the items below go where they are
    // issued, as when it is loaded).
    if let Some(home) = group.home() {
        assert_eq!(home, cpus[0]);
    }
    // An ungrouped item keeps the home pod's only CPU busy until released.
    let (started, running) = mpsc::channel();
    let (release, hold) = mpsc::channel::<()>();
    assert!(wq
        .queue_on(cpus[0], move || {
            started.send(()).unwrap();
            let _ = hold.recv_timeout(support::PATIENCE);
        })
        .expect("cpu"));
    running
        .recv_timeout(support::PATIENCE)
        .expect("busy item ran");
    // The home's busy fraction is a moving mean of samples, each standing for the time since
    // the one before: a sample taken a whole window after the last (the next steering
    // decision's) is the mean alone, whatever the home item's decision sampled before.
    thread::sleep(2 * steer::LOAD_WINDOW);
    // Items issued on cpus[1] now go to its own pod: the home is above the busy limit.
    let ran = RanOn::default();
    let ok = thread::scope(|s| {
        s.spawn(|| {
            if affinity::pin_current_thread(&[cpus[1]].into_iter().collect()).is_err() {
                return false;
            }
            for _ in 0..20 {
                let (done, wait) = mpsc::channel();
                let ran = Arc::clone(&ran);
                assert!(group.queue(move || {
                    count_here(&ran);
                    done.send(()).unwrap();
                }));
                wait.recv_timeout(support::PATIENCE).expect("item ran");
            }
            true
        })
        .join()
        .unwrap()
    });
    release.send(()).unwrap();
    assert!(wq.flush());
    if !ok {
        eprintln!("skipped: could not pin a thread");
        return;
    }
    let ran = ran.lock().unwrap();
    assert_eq!(
        ran.get(&format!("podq/cpu-p{}", cpus[1])).copied(),
        Some(20),
        "{ran:?}"
    );
}

#[test]
fn flush_waits_for_grouped_items_and_drain_refuses_others() {
    let wq = Workqueue::builder("steer-flush")
        .idle_timeout(own_pools(5))
        .build()
        .expect("workqueue");
    let groups: Vec<Group> = (0..4).map(|_| wq.group()).collect();
    let done = Arc::new(AtomicUsize::new(0));
    for i in 0..400 {
        let done = Arc::clone(&done);
        assert!(groups[i % 4].queue(move || {
            thread::sleep(Duration::from_micros(50));
            done.fetch_add(1, Ordering::Relaxed);
        }));
    }
    assert!(wq.flush());
    assert_eq!(done.load(Ordering::Relaxed), 400);
    let stats = wq.stats();
    assert_eq!(stats.completed, 400);
    assert_eq!(stats.grouped_at_home + stats.grouped_elsewhere, 400);
    // While a drain runs, a group's call from outside the workqueue's items is refused.
    let (started, running) = mpsc::channel();
    let (release, hold) = mpsc::channel::<()>();
    assert!(groups[0].queue(move || {
        started.send(()).unwrap();
        let _ = hold.recv_timeout(support::PATIENCE);
    }));
    running.recv_timeout(support::PATIENCE).expect("ran");
    thread::scope(|s| {
        let draining = s.spawn(|| wq.drain());
        let refused = support::eventually(|| !groups[1].queue(|| panic!("queued in a drain")));
        let work = Work::new(|| panic!("queued in a drain"));
        let work_refused = !groups[1].queue_work(&work);
        release.send(()).unwrap();
        assert!(draining.join().unwrap());
        assert!(refused && work_refused);
    });
}

#[test]
fn a_grouped_work_item_is_pending_once_and_cancel_stops_it() {
    let wq = Workqueue::builder("steer-cancel")
        .scope(AffinityScope::System)
        .max_workers(1)
        .idle_timeout(own_pools(6))
        .build()
        .expect("workqueue");
    let group = wq.group();
    // The pool's only worker is held, so the grouped item waits in the queue.
    let (started, running) = mpsc::channel();
    let (release, hold) = mpsc::channel::<()>();
    assert!(wq.queue(move || {
        started.send(()).unwrap();
        let _ = hold.recv_timeout(support::PATIENCE);
    }));
    running.recv_timeout(support::PATIENCE).expect("ran");
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&runs);
    let work = Work::new(move || {
        counted.fetch_add(1, Ordering::Relaxed);
    });
    assert!(group.queue_work(&work));
    assert!(!group.queue_work(&work), "pending: once");
    assert!(!wq.queue_work(&work), "pending through the workqueue too");
    assert!(work.cancel_sync(), "it was pending");
    release.send(()).unwrap();
    assert!(wq.flush());
    assert_eq!(runs.load(Ordering::Relaxed), 0);
    assert_eq!(wq.stats().cancelled, 1);
    // Queued again, it runs once, and its flush waits for it (it may have run before the
    // flush began, and then the flush says `false`: the count tells).
    assert!(group.queue_work(&work));
    work.flush();
    assert_eq!(runs.load(Ordering::Relaxed), 1);
    assert!(format!("{group:?}").contains("runnable: 0"), "{group:?}");
}

#[test]
fn an_ordered_workqueue_runs_grouped_items_in_order() {
    let wq = Workqueue::ordered("steer-ordered").expect("workqueue");
    let groups = [wq.group(), wq.group()];
    let order = Arc::new(Mutex::new(Vec::new()));
    let running = Arc::new(AtomicUsize::new(0));
    for i in 0..300 {
        let order = Arc::clone(&order);
        let running = Arc::clone(&running);
        assert!(groups[i % 2].queue(move || {
            assert_eq!(running.fetch_add(1, Ordering::SeqCst), 0, "two at once");
            order.lock().unwrap().push(i);
            running.fetch_sub(1, Ordering::SeqCst);
        }));
    }
    assert!(wq.flush());
    assert_eq!(*order.lock().unwrap(), (0..300).collect::<Vec<_>>());
    assert_eq!(wq.stats().panicked, 0);
}

#[test]
fn every_grouped_item_runs_once_under_producers_cancels_and_panics() {
    // Producers on every CPU queue closures and reusable items of eight groups, some of which
    // panic; a canceller cancels the items meanwhile. Every closure runs once, every item at
    // most once per successful queue call, and every group ends with nothing runnable.
    let wq = Workqueue::builder("steer-count")
        .scope(AffinityScope::Cpu)
        .idle_timeout(own_pools(7))
        .build()
        .expect("workqueue");
    let groups: Vec<Group> = (0..8).map(|_| wq.group()).collect();
    const PER_PRODUCER: usize = 3_000;
    let producers = wq.cpus().len().max(2);
    let closures = Arc::new(AtomicUsize::new(0));
    let item_runs = Arc::new(AtomicUsize::new(0));
    let items: Vec<Work> = (0..16)
        .map(|k| {
            let item_runs = Arc::clone(&item_runs);
            Work::new(move || {
                item_runs.fetch_add(1, Ordering::Relaxed);
                if k == 0 {
                    panic!("a grouped item that panics");
                }
            })
        })
        .collect();
    let queued_items = AtomicUsize::new(0);
    let cancelled = AtomicUsize::new(0);
    thread::scope(|s| {
        for p in 0..producers {
            let (groups, items, closures, queued_items) =
                (&groups, &items, &closures, &queued_items);
            s.spawn(move || {
                for i in 0..PER_PRODUCER {
                    let group = &groups[(p + i) % groups.len()];
                    if i % 3 == 0 {
                        if group.queue_work(&items[i % items.len()]) {
                            queued_items.fetch_add(1, Ordering::Relaxed);
                        }
                    } else {
                        let closures = Arc::clone(closures);
                        assert!(group.queue(move || {
                            closures.fetch_add(1, Ordering::Relaxed);
                        }));
                    }
                }
            });
        }
        let (items, cancelled) = (&items, &cancelled);
        s.spawn(move || {
            for i in 0..2_000 {
                if items[i % items.len()].cancel_sync() {
                    cancelled.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    });
    assert!(wq.flush());
    let closures_queued =
        producers * PER_PRODUCER - (0..PER_PRODUCER).step_by(3).count() * producers;
    assert_eq!(closures.load(Ordering::Relaxed), closures_queued);
    let queued = queued_items.load(Ordering::Relaxed);
    assert_eq!(
        item_runs.load(Ordering::Relaxed) + cancelled.load(Ordering::Relaxed),
        queued
    );
    let stats = wq.stats();
    assert_eq!(
        stats.completed as usize,
        closures_queued + item_runs.load(Ordering::Relaxed)
    );
    assert_eq!(
        (stats.grouped_at_home + stats.grouped_elsewhere) as usize,
        stats.completed as usize
    );
    for group in &groups {
        assert!(format!("{group:?}").contains("runnable: 0"), "{group:?}");
    }
}

#[test]
fn a_group_is_a_cheap_handle_for_any_thread() {
    fn handle<T: Clone + Send + Sync>(_: &T) {}
    let wq = Workqueue::builder("steer-handle")
        .idle_timeout(own_pools(8))
        .build()
        .expect("workqueue");
    let group = wq.group();
    handle(&group);
    // Clones are one group: the item a clone queues on another thread makes the home that
    // the first handle reads.
    let clone = group.clone();
    let ran_on = Arc::new(Mutex::new(String::new()));
    thread::scope(|s| {
        s.spawn(|| {
            let ran_on = Arc::clone(&ran_on);
            assert!(clone.queue(move || {
                *ran_on.lock().unwrap() = thread::current().name().unwrap_or("").to_owned();
            }));
        });
    });
    assert!(wq.flush());
    let stats = wq.stats();
    assert_eq!(stats.grouped_at_home + stats.grouped_elsewhere, 1);
    // None only if the test paused past the expiry since.
    if let Some(home) = group.home() {
        let pool = stats.pools.iter().find(|p| p.pod == home).expect("a pool");
        assert_eq!(*ran_on.lock().unwrap(), format!("podq/{}", pool.name));
    }
}

#[test]
fn grouped_items_take_and_give_back_room_in_a_bounded_backlog() {
    let wq = Workqueue::builder("steer-backlog")
        .idle_timeout(own_pools(9))
        .max_backlog(4)
        .build()
        .expect("workqueue");
    let group = wq.group();
    let work = Work::new(|| {});
    let done = Arc::new(AtomicUsize::new(0));
    for i in 0..200 {
        let done = Arc::clone(&done);
        // Waits for room whenever 4 wait already, as a plain queue call does.
        assert!(group.queue(move || {
            done.fetch_add(1, Ordering::Relaxed);
        }));
        if i % 10 == 0 {
            group.queue_work(&work);
        }
    }
    assert!(wq.flush());
    assert_eq!(done.load(Ordering::Relaxed), 200);
    let stats = wq.stats();
    // Every execution that took room gave it back when it started.
    assert_eq!(stats.backlog, 0, "{stats:?}");
    assert_eq!(
        stats.grouped_at_home + stats.grouped_elsewhere,
        stats.completed
    );
}

#[test]
fn a_group_keeps_queueing_across_a_scope_change() {
    let wq = Workqueue::builder("steer-reshape")
        .idle_timeout(own_pools(10))
        .scope(AffinityScope::Cpu)
        .max_backlog(8)
        .build()
        .expect("workqueue");
    let group = wq.group();
    let done = Arc::new(AtomicUsize::new(0));
    let queue_some = |n: usize| {
        for _ in 0..n {
            let done = Arc::clone(&done);
            assert!(group.queue(move || {
                done.fetch_add(1, Ordering::Relaxed);
            }));
        }
    };
    queue_some(100);
    // A home learnt under one scope is a pod id of that layout; under the new scope it only
    // counts where it names a pod serving the workqueue's CPUs.
    wq.set_scope(AffinityScope::System).expect("set_scope");
    queue_some(100);
    wq.set_scope(AffinityScope::Cpu).expect("set_scope");
    queue_some(100);
    assert!(wq.flush());
    assert_eq!(done.load(Ordering::Relaxed), 300);
    let stats = wq.stats();
    assert_eq!(stats.completed, 300);
    assert_eq!(stats.backlog, 0, "{stats:?}");
    assert_eq!(stats.grouped_at_home + stats.grouped_elsewhere, 300);
    assert_eq!(stats.reformations, 2);
    if let Some(home) = group.home() {
        assert!(
            stats.pools.iter().any(|p| p.pod == home),
            "{home}: {stats:?}"
        );
    }
}

/// A group owns what it needs: it moves into a thread, queues there, outlives its workqueue,
/// and answers `false` once the workqueue is dropped.
#[test]
fn a_group_moves_into_a_thread_and_outlives_its_workqueue() {
    fn owned<T: Clone + Send + Sync + 'static>(_: &T) {}
    for steering in [true, false] {
        let wq = Workqueue::builder("owned-group")
            .steer(steering)
            .build()
            .unwrap();
        let group = wq.group();
        owned(&group);
        let ran = Arc::new(AtomicUsize::new(0));
        let work = {
            let ran = Arc::clone(&ran);
            Work::new(move || {
                ran.fetch_add(1, Ordering::SeqCst);
            })
        };
        let (queued, seen) = mpsc::channel::<()>();
        let (close, closed) = mpsc::channel::<()>();
        let worker = {
            let (group, ran, work) = (group.clone(), Arc::clone(&ran), work.clone());
            thread::spawn(move || {
                for _ in 0..10 {
                    let ran = Arc::clone(&ran);
                    assert!(group.queue(move || {
                        ran.fetch_add(1, Ordering::SeqCst);
                    }));
                }
                work.flush();
                assert!(group.queue_work(&work));
                queued.send(()).unwrap();
                closed.recv().unwrap();
                // The workqueue is gone: nothing is queued, the closure is dropped unrun.
                let dropped = Arc::new(());
                let held = Arc::clone(&dropped);
                assert!(!group.queue(move || drop(held)));
                assert_eq!(Arc::strong_count(&dropped), 1);
                assert!(!group.queue_work(&work));
                assert_eq!(group.home(), None);
                group
            })
        };
        seen.recv().unwrap();
        // The drop runs everything the group queued before it.
        drop(wq);
        assert_eq!(ran.load(Ordering::SeqCst), 11);
        close.send(()).unwrap();
        let group = worker.join().unwrap();
        assert!(format!("{group:?}").contains("None"));
        assert_eq!(ran.load(Ordering::SeqCst), 11);
        assert!(!work.is_pending());
    }
}

/// Group calls from many threads racing the workqueue's drop (G6, G7): every call that said
/// `true` ran its closure before the drop returned, and every later call says `false`.
#[test]
fn group_calls_racing_the_drop_run_or_say_false() {
    for round in 0..20 {
        let wq = Workqueue::builder(format!("group-drop-{round}"))
            .build()
            .unwrap();
        let group = wq.group();
        let ran = Arc::new(AtomicUsize::new(0));
        let start = Arc::new(Barrier::new(4));
        let callers: Vec<_> = (0..3)
            .map(|_| {
                let (group, ran, start) = (group.clone(), Arc::clone(&ran), Arc::clone(&start));
                thread::spawn(move || {
                    start.wait();
                    let mut said_true = 0;
                    for _ in 0..200 {
                        let ran = Arc::clone(&ran);
                        if group.queue(move || {
                            ran.fetch_add(1, Ordering::SeqCst);
                        }) {
                            said_true += 1;
                        }
                    }
                    said_true
                })
            })
            .collect();
        start.wait();
        drop(wq);
        let ran_at_drop = ran.load(Ordering::SeqCst);
        let said_true: usize = callers.into_iter().map(|c| c.join().unwrap()).sum();
        assert_eq!(ran_at_drop, said_true, "round {round}");
        assert_eq!(ran.load(Ordering::SeqCst), said_true);
    }
}
