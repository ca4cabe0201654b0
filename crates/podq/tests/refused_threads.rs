//! When the machine refuses threads: workqueues whose worker starts a gate refuses (as the OS
//! does at the process's thread limit) still run everything queued, on their rescuer and
//! never on the caller; a build whose helper threads are refused fails cleanly; and no lock is
//! held while an item runs, on a worker, on the rescuer, or pulled by another pod's worker.
//!
//! The first build of this process is refused on purpose ([`first_build_is_refused`]), so
//! every test calls it before it builds anything.

mod support;

use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, Once};
use std::thread::{self, ThreadId};
use std::time::Duration;

use podq::threads::ThreadStarts;
use podq::{AffinityScope, DelayedWork, Error, QueueError, Workqueue};
use support::{eventually, PATIENCE};

/// The helper threads a build starts.
const HELPERS: [&str; 5] = [
    "podq/rescuer",
    "podq/timer",
    "podq/watchdog",
    "podq/reaper",
    "podq/limits",
];

/// Refuses every thread while `helpers` is set, and workers (not the helpers) while
/// `workers` is set; counts the workers it refused.
#[derive(Debug, Default)]
struct Refuse {
    helpers: AtomicBool,
    workers: AtomicBool,
    refused: AtomicUsize,
}

impl Refuse {
    fn workers() -> Arc<Refuse> {
        let gate = Arc::new(Refuse::default());
        gate.workers.store(true, Ordering::SeqCst);
        gate
    }
}

impl ThreadStarts for Refuse {
    fn check(&self, name: &str) -> io::Result<()> {
        let helper = HELPERS.contains(&name);
        let refuse =
            self.helpers.load(Ordering::SeqCst) || (!helper && self.workers.load(Ordering::SeqCst));
        if refuse {
            if !helper {
                self.refused.fetch_add(1, Ordering::SeqCst);
            }
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                "Resource temporarily unavailable (refused by the test)",
            ));
        }
        Ok(())
    }
}

/// The first build in this process, with every thread refused: it fails with the rescuer's
/// refusal, since no helper runs yet. Every test calls this before building anything.
fn first_build_is_refused() {
    static FIRST: Once = Once::new();
    FIRST.call_once(|| {
        let gate = Arc::new(Refuse::default());
        gate.helpers.store(true, Ordering::SeqCst);
        let err = Workqueue::builder("refused")
            .thread_starts(gate)
            .build()
            .expect_err("a build whose helpers are refused");
        match &err {
            Error::ThreadRefused { thread, .. } => assert_eq!(thread, "podq/rescuer"),
            other => panic!("expected ThreadRefused, got {other:?}"),
        }
        assert!(err.to_string().contains("RLIMIT_NPROC"), "{err}");
    });
}

/// Runs `f` on another thread; fails the test if it has not returned within [`PATIENCE`].
fn within_patience<R: Send + 'static>(what: &str, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (done, result) = mpsc::channel();
    thread::spawn(move || {
        let _ = done.send(f());
    });
    result
        .recv_timeout(PATIENCE)
        .unwrap_or_else(|_| panic!("{what} did not return within {PATIENCE:?}"))
}

fn thread_name() -> String {
    thread::current().name().unwrap_or("").to_owned()
}

/// A workqueue whose workers `gate` refuses, with pools of its own (the gate is part of the
/// pools' attributes).
fn refused(name: &str, gate: &Arc<Refuse>) -> podq::WorkqueueBuilder {
    Workqueue::builder(name)
        .scope(AffinityScope::System)
        .thread_starts(Arc::clone(gate) as Arc<dyn ThreadStarts>)
}

/// From another thread, takes every lock an item's run could hold: the workqueue's stats read
/// each pool's head, lane and pool locks, and a queue call takes a lane lock (and the
/// `max_active` FIFO's lock when the workqueue has one). Fails if that thread cannot finish,
/// that is if the calling item's thread holds one of them.
fn no_lock_held(wq: &Arc<Workqueue>) {
    let other = Arc::clone(wq);
    let (done, finished) = mpsc::channel();
    thread::spawn(move || {
        let _ = other.stats();
        other.queue(|| {});
        let _ = done.send(());
    });
    finished
        .recv_timeout(PATIENCE)
        .expect("another thread could not take the workqueue's locks while an item ran");
}

#[test]
fn the_rescuer_runs_a_chain_of_items_on_a_max_active_workqueue() {
    first_build_is_refused();
    let gate = Refuse::workers();
    let wq = Arc::new(
        refused("chain", &gate)
            .max_active(1)
            .build()
            .expect("workqueue"),
    );
    let caller = thread::current().id();
    let (ran, seen) = mpsc::channel::<(char, ThreadId, String)>();
    // A queues B, B queues C, on max_active(1): each is admitted from the FIFO when the one
    // before finishes.
    let (wq_a, ran_a) = (Arc::clone(&wq), ran.clone());
    assert!(wq.queue(move || {
        let (wq_b, ran_b) = (Arc::clone(&wq_a), ran_a.clone());
        assert!(wq_a.queue(move || {
            let ran_c = ran_b.clone();
            assert!(wq_b.queue(move || {
                let _ = ran_c.send(('C', thread::current().id(), thread_name()));
            }));
            let _ = ran_b.send(('B', thread::current().id(), thread_name()));
        }));
        let _ = ran_a.send(('A', thread::current().id(), thread_name()));
    }));
    drop(ran);
    let mut order = Vec::new();
    for _ in 0..3 {
        let (item, thread, name) = seen.recv_timeout(PATIENCE).expect("an item never ran");
        assert_ne!(thread, caller, "{item} ran on the caller");
        assert_eq!(name, "podq/rescuer", "{item} ran on {name}");
        order.push(item);
    }
    assert_eq!(order, ['A', 'B', 'C']);
    let wq2 = Arc::clone(&wq);
    assert!(within_patience("flush", move || wq2.flush()));
    let stats = wq.stats();
    let pool = &stats.pools[0];
    assert_eq!(pool.workers, 0, "{pool:?}");
    // The rescuer counts an item once its run has returned, a moment after the flush may.
    assert!(
        eventually(|| wq.stats().pools[0].rescued >= 3),
        "{:?}",
        wq.stats()
    );
    assert!(pool.spawn_failures >= 1, "{pool:?}");
    assert!(pool.workers_refused_since.is_some(), "{pool:?}");
    assert!(gate.refused.load(Ordering::SeqCst) >= 1);
}

#[test]
fn try_queue_and_queue_under_a_lock_never_run_the_item_on_the_caller() {
    first_build_is_refused();
    let gate = Refuse::workers();
    let wq = Arc::new(refused("caller", &gate).build().expect("workqueue"));
    let caller = thread::current().id();
    // try_queue of an item that waits until released: returns while the item waits.
    let (release, released) = mpsc::channel::<()>();
    let (ran, seen) = mpsc::channel::<ThreadId>();
    let ran_long = ran.clone();
    let wq2 = Arc::clone(&wq);
    let queued = within_patience("try_queue", move || {
        wq2.try_queue(move || {
            let _ = released.recv_timeout(PATIENCE);
            let _ = ran_long.send(thread::current().id());
        })
        .map_err(QueueError::from)
    });
    assert_eq!(queued, Ok::<(), QueueError>(()));
    release.send(()).expect("the item is gone without running");
    assert_ne!(seen.recv_timeout(PATIENCE).expect("never ran"), caller);
    // queue while holding a lock that the item takes.
    let lock = Arc::new(Mutex::new(0));
    let held = lock.lock().unwrap();
    let (for_item, ran_locked) = (Arc::clone(&lock), ran.clone());
    let wq3 = Arc::clone(&wq);
    assert!(within_patience("queue under a lock", move || wq3.queue(
        move || {
            *for_item.lock().unwrap() += 1;
            let _ = ran_locked.send(thread::current().id());
        }
    )));
    drop(held);
    assert_ne!(seen.recv_timeout(PATIENCE).expect("never ran"), caller);
    assert_eq!(*lock.lock().unwrap(), 1);
}

#[test]
fn delayed_work_fires_on_a_workqueue_refused_workers() {
    first_build_is_refused();
    let gate = Refuse::workers();
    let wq = refused("delayed", &gate).build().expect("workqueue");
    let (ran, seen) = mpsc::channel::<String>();
    let d = DelayedWork::new(move || {
        let _ = ran.send(thread_name());
    });
    assert!(wq.queue_delayed(&d, Duration::from_millis(10)));
    assert_eq!(
        seen.recv_timeout(PATIENCE)
            .expect("the delayed item never ran"),
        "podq/rescuer"
    );
}

#[test]
fn a_pool_that_cannot_grow_past_blocked_workers_has_its_waiting_items_rescued() {
    first_build_is_refused();
    // Workers allowed at first: the pool grows to one worker per CPU, each blocked in an item.
    let gate = Arc::new(Refuse::default());
    let wq = refused("grow", &gate)
        .max_workers(64)
        .build()
        .expect("workqueue");
    let eager = wq.cpus().len();
    let started = Arc::new(AtomicUsize::new(0));
    let (release, released) = crossbeam_channel::unbounded::<()>();
    for _ in 0..eager {
        let (started, released) = (Arc::clone(&started), released.clone());
        assert!(wq.queue(move || {
            started.fetch_add(1, Ordering::SeqCst);
            let _ = released.recv_timeout(PATIENCE);
        }));
    }
    assert!(
        eventually(|| started.load(Ordering::SeqCst) == eager),
        "{} of {eager} items started: {:?}",
        started.load(Ordering::SeqCst),
        wq.stats().pools
    );
    // Now the OS says no: the item behind them runs on the rescuer while they block.
    gate.workers.store(true, Ordering::SeqCst);
    let (ran, seen) = mpsc::channel::<String>();
    assert!(wq.queue(move || {
        let _ = ran.send(thread_name());
    }));
    let name = seen
        .recv_timeout(PATIENCE)
        .expect("the item behind blocked workers never ran");
    for _ in 0..eager {
        release.send(()).expect("release");
    }
    assert_eq!(name, "podq/rescuer");
    assert!(wq.stats().pools[0].workers_refused_since.is_some());
}

#[test]
fn an_impossible_worker_stack_size_is_refused_at_build() {
    first_build_is_refused();
    // 1 PiB: more than any address space gives a thread's stack.
    let err = Workqueue::builder("huge-stack")
        .worker_stack_size(1 << 50)
        .build()
        .expect_err("a stack no thread can have");
    assert!(
        matches!(err, Error::WorkerStackSize { bytes, .. } if bytes == 1 << 50),
        "{err:?}"
    );
}

#[test]
fn no_lock_is_held_while_an_item_runs_on_a_worker_or_the_rescuer() {
    first_build_is_refused();
    for (name, gate) in [
        ("locks-worker", Arc::new(Refuse::default())),
        ("locks-rescuer", Refuse::workers()),
    ] {
        let wq = Arc::new(refused(name, &gate).max_active(1).build().expect("wq"));
        let (ran, seen) = mpsc::channel::<String>();
        let inner = Arc::clone(&wq);
        assert!(wq.queue(move || {
            no_lock_held(&inner);
            let _ = ran.send(thread_name());
        }));
        let on = seen.recv_timeout(PATIENCE).expect("never ran");
        assert_eq!(
            on == "podq/rescuer",
            name == "locks-rescuer",
            "{name} ran on {on}"
        );
        let flusher = Arc::clone(&wq);
        assert!(within_patience("flush", move || flusher.flush()));
    }
}

#[test]
fn no_lock_is_held_while_a_pulled_item_runs() {
    first_build_is_refused();
    // Two pods of one worker each: A runs on CPU 0's pod and waits for B, which is queued on
    // CPU 0 behind it (with a third item, so that the push offers them), so pod 1's worker
    // pulls B. Both check the locks first.
    let wq = Arc::new(
        Workqueue::builder("locks-pull")
            .scope(AffinityScope::Cpu)
            .max_workers(1)
            .idle_timeout(Duration::from_secs(377))
            .build()
            .expect("wq"),
    );
    if wq.pools() < 2 || !wq.cpus().contains(0) {
        eprintln!("skipped: needs two CPUs, CPU 0 among them");
        return;
    }
    let (a_started, a_running) = crossbeam_channel::bounded::<()>(1);
    let (b_done, b_seen) = crossbeam_channel::bounded::<()>(1);
    let who = Arc::new(Mutex::new(Vec::new()));
    let (inner, who_a) = (Arc::clone(&wq), Arc::clone(&who));
    wq.queue_on(0, move || {
        no_lock_held(&inner);
        who_a.lock().unwrap().push(thread_name());
        let _ = a_started.send(());
        let _ = b_seen.recv_timeout(PATIENCE);
    })
    .expect("cpu 0");
    a_running.recv_timeout(PATIENCE).expect("A never started");
    let (inner, who_b) = (Arc::clone(&wq), Arc::clone(&who));
    wq.queue_on(0, move || {
        no_lock_held(&inner);
        who_b.lock().unwrap().push(thread_name());
        let _ = b_done.send(());
    })
    .expect("cpu 0");
    wq.queue_on(0, || {}).expect("cpu 0");
    let flusher = Arc::clone(&wq);
    assert!(within_patience("flush", move || flusher.flush()));
    // A on CPU 0's pod, B on whichever other pod's worker pulled it (pod 1 on two CPUs).
    let who = who.lock().unwrap().clone();
    assert_eq!(who.len(), 2, "{who:?}");
    assert_eq!(who[0], "podq/cpu-p0");
    assert!(
        who[1].starts_with("podq/cpu-p") && who[1] != who[0],
        "{who:?}"
    );
    let pulled: u64 = wq.stats().pools.iter().map(|p| p.pulled_in).sum();
    assert!(pulled >= 1);
}

#[test]
fn a_refused_pool_asks_again_once_per_retry_interval_not_per_push() {
    first_build_is_refused();
    let gate = Refuse::workers();
    let wq = refused("backoff", &gate).build().expect("workqueue");
    let start = std::time::Instant::now();
    let ran = Arc::new(AtomicUsize::new(0));
    for _ in 0..1000 {
        let ran = Arc::clone(&ran);
        assert!(wq.queue(move || {
            ran.fetch_add(1, Ordering::SeqCst);
        }));
    }
    assert!(wq.flush());
    let elapsed = start.elapsed();
    assert_eq!(ran.load(Ordering::SeqCst), 1000);
    // Each push that wants a worker within the interval is refused without asking (M3); the
    // pushes and the rescuer's retries (M5) ask at most once per interval each.
    let intervals = (elapsed.as_nanos() / podq::threads::RETRY_INTERVAL.as_nanos()) as usize + 1;
    let asked = gate.refused.load(Ordering::SeqCst);
    assert!(asked <= 2 * intervals, "{asked} refusals in {elapsed:?}");
    assert_eq!(wq.stats().pools[0].spawn_failures as usize, asked);
}
