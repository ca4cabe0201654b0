//! What a service needs from the API: results (`spawn`, `JoinHandle`), awaiting a reusable
//! item (`Work::flushed`), backpressure (`max_backlog`, `try_queue`), timeouts, and worker
//! options. Counts and outcomes; durations only with huge bounds.

mod support;

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::{Duration, Instant};

use podq::{
    AffinityScope, DelayedWork, Error, JoinError, QueueError, Work, WorkerInfo, Workqueue,
    WorkqueueBuilder,
};
use support::{eventually, PATIENCE};

/// A one-pod workqueue with one worker, so that a blocked item holds every worker. Its pool
/// is its own: pools are shared by equal attributes, and each call gives another idle timeout,
/// so that tests running at once never hold each other's worker.
fn one_worker(name: &str) -> Workqueue {
    one_worker_builder(name).build().expect("workqueue")
}

/// The builder of [`one_worker`].
fn one_worker_builder(name: &str) -> WorkqueueBuilder {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let own = NEXT.fetch_add(1, Ordering::Relaxed) as u64;
    Workqueue::builder(name)
        .scope(AffinityScope::System)
        .max_workers(1)
        .idle_timeout(Duration::from_secs(300 + own))
}

/// A gate that items wait on until the test opens it.
#[derive(Clone, Default)]
struct Gate(Arc<(Mutex<bool>, std::sync::Condvar)>);

impl Gate {
    fn wait(&self) {
        let (open, cv) = &*self.0;
        let mut g = open.lock().unwrap();
        while !*g {
            g = cv.wait(g).unwrap();
        }
    }

    fn open(&self) {
        let (open, cv) = &*self.0;
        *open.lock().unwrap() = true;
        cv.notify_all();
    }

    /// Opens the gate from another thread, after a while.
    fn open_later(&self) -> thread::JoinHandle<()> {
        let gate = self.clone();
        thread::spawn(move || {
            thread::sleep(Duration::from_millis(50));
            gate.open();
        })
    }
}

/// Queues an item that holds the workqueue's one worker until `gate` opens, and returns once
/// it runs.
fn block_worker(wq: &Workqueue, gate: &Gate) {
    let started = Arc::new(Barrier::new(2));
    let (s, g) = (Arc::clone(&started), gate.clone());
    assert!(wq.queue(move || {
        s.wait();
        g.wait();
    }));
    started.wait();
}

// ---- 1. Results ----------------------------------------------------------------------------

#[test]
fn spawn_gives_the_value_back() {
    let wq = Workqueue::builder("spawn-value").build().unwrap();
    let handles: Vec<_> = (0..100u64).map(|i| wq.spawn(move || i * 2)).collect();
    let sum: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(sum, 9900);
    assert_eq!(wq.stats().completed, 100);
}

#[test]
fn a_panic_is_carried_through_the_handle_and_counted() {
    let wq = Workqueue::builder("spawn-panic").build().unwrap();
    let n = Arc::new(7);
    let h = wq.spawn(move || -> u32 { panic!("boom {n}") });
    match h.join() {
        Err(e @ JoinError::Panicked(_)) => {
            assert_eq!(e.panic_message(), Some("boom 7"));
            let payload = e.into_panic();
            assert_eq!(payload.downcast_ref::<String>().unwrap(), "boom 7");
        }
        other => panic!("expected a panic, got {other:?}"),
    }
    // Counted before the handle was woken.
    assert_eq!(wq.stats().panicked, 1);
    // The worker goes on.
    assert_eq!(wq.spawn(|| 5).join().unwrap(), 5);
}

#[test]
fn an_item_refused_during_a_drain_is_cancelled() {
    let wq = Arc::new(one_worker("spawn-cancel"));
    let gate = Gate::default();
    block_worker(&wq, &gate);
    let drainer = {
        let wq = Arc::clone(&wq);
        thread::spawn(move || wq.drain())
    };
    // The drain refuses work from outside while it runs: the spawned closure is dropped.
    let dropped = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + PATIENCE;
    let outcome = loop {
        let guard = DropCount(Arc::clone(&dropped));
        let h = wq.spawn(move || {
            let _guard = guard;
            1
        });
        let result = if h.is_finished() {
            Some(h.join())
        } else {
            // Not refused: the drain has not started yet; this one runs after the gate.
            drop(h);
            None
        };
        if let Some(r) = result {
            break r;
        }
        assert!(Instant::now() < deadline, "the drain never refused");
        thread::yield_now();
    };
    assert!(matches!(outcome, Err(JoinError::Cancelled)), "{outcome:?}");
    assert!(outcome.unwrap_err().is_cancelled());
    gate.open();
    assert!(drainer.join().unwrap());
    wq.flush();
    // Every closure made was dropped once, run or not.
    assert!(dropped.load(Ordering::SeqCst) >= 1);
}

/// Counts its drops.
struct DropCount(Arc<AtomicUsize>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn is_finished_turns_true_when_the_item_ran() {
    let wq = one_worker("spawn-finished");
    let gate = Gate::default();
    block_worker(&wq, &gate);
    let h = wq.spawn(|| "done");
    assert!(!h.is_finished());
    gate.open();
    assert!(eventually(|| h.is_finished()));
    assert_eq!(h.join().unwrap(), "done");
}

#[test]
fn a_dropped_handle_lets_the_item_run_and_drops_its_value() {
    let wq = Workqueue::builder("spawn-detach").build().unwrap();
    let dropped = Arc::new(AtomicUsize::new(0));
    for _ in 0..50 {
        let value = DropCount(Arc::clone(&dropped));
        drop(wq.spawn(move || value));
    }
    wq.flush();
    assert_eq!(wq.stats().completed, 50);
    // A value is dropped by the worker after the item is uncounted, or by the handle.
    assert!(eventually(|| dropped.load(Ordering::SeqCst) == 50));
}

/// Wakes by counting, and unparks a thread.
struct CountingWaker {
    wakes: AtomicUsize,
    thread: thread::Thread,
}

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        self.thread.unpark();
    }
}

#[test]
fn a_handle_polled_with_a_new_waker_wakes_the_last_one() {
    let wq = one_worker("spawn-wakers");
    let gate = Gate::default();
    block_worker(&wq, &gate);
    let mut h = pin!(wq.spawn(|| 9));
    let first = Arc::new(CountingWaker {
        wakes: AtomicUsize::new(0),
        thread: thread::current(),
    });
    let second = Arc::new(CountingWaker {
        wakes: AtomicUsize::new(0),
        thread: thread::current(),
    });
    let w1 = Waker::from(Arc::clone(&first));
    let w2 = Waker::from(Arc::clone(&second));
    assert!(h.as_mut().poll(&mut Context::from_waker(&w1)).is_pending());
    assert!(h.as_mut().poll(&mut Context::from_waker(&w2)).is_pending());
    gate.open();
    let deadline = Instant::now() + PATIENCE;
    while second.wakes.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "the last waker was never woken");
        thread::park_timeout(Duration::from_millis(10));
    }
    assert_eq!(
        first.wakes.load(Ordering::SeqCst),
        0,
        "a replaced waker was woken"
    );
    match h.as_mut().poll(&mut Context::from_waker(&w2)) {
        Poll::Ready(Ok(9)) => {}
        other => panic!("expected Ready(Ok(9)), got {other:?}"),
    }
}

#[test]
fn spawn_awaited_from_a_tokio_runtime() {
    let wq = Arc::new(Workqueue::builder("spawn-tokio").build().unwrap());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let total = rt.block_on({
        let wq = Arc::clone(&wq);
        async move {
            let mut tasks = Vec::new();
            for i in 0..20u64 {
                let wq = Arc::clone(&wq);
                // Each handle is awaited from a tokio task, on whichever tokio worker runs it.
                tasks.push(tokio::spawn(async move { wq.spawn(move || i + 1).await }));
            }
            let mut total = 0;
            for t in tasks {
                total += t.await.unwrap().unwrap();
            }
            total
        }
    });
    assert_eq!(total, 210);
}

#[test]
fn spawn_awaited_from_futures_block_on() {
    let wq = Workqueue::builder("spawn-futures").build().unwrap();
    let v = futures_executor::block_on(wq.spawn(|| String::from("ok")));
    assert_eq!(v.unwrap(), "ok");
    let err = futures_executor::block_on(wq.spawn(|| -> u8 { panic!("async boom") }));
    assert_eq!(err.unwrap_err().panic_message(), Some("async boom"));
}

// ---- 4. Timeouts ---------------------------------------------------------------------------

/// A timeout that expires while an item is held by a closed gate.
const SHORT: Duration = Duration::from_millis(20);

#[test]
fn workqueue_flush_timeout_expires_then_finishes() {
    let wq = one_worker("flush-timeout");
    let gate = Gate::default();
    block_worker(&wq, &gate);
    let (ran, item) = counter();
    wq.queue(item());
    assert!(!wq.flush_timeout(SHORT));
    assert_eq!(ran.load(Ordering::SeqCst), 0, "a timeout cancels nothing");
    // A flush after one that gave up still waits for what was queued before it: here the
    // gate opens only after a while, so a flush that missed the item would return first.
    let opener = gate.open_later();
    assert!(wq.flush_timeout(PATIENCE));
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    opener.join().unwrap();
    // Nothing queued: at once.
    assert!(wq.flush_timeout(Duration::ZERO));
}

#[test]
fn a_plain_flush_after_a_timed_out_one_waits_for_the_old_items() {
    let wq = one_worker("flush-after-timeout");
    let gate = Gate::default();
    block_worker(&wq, &gate);
    let (ran, item) = counter();
    wq.queue(item());
    assert!(!wq.flush_timeout(SHORT));
    assert!(!wq.flush_timeout(SHORT), "a second flush that gives up");
    let opener = gate.open_later();
    assert!(wq.flush());
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    opener.join().unwrap();
}

#[test]
fn drain_timeout_expires_and_stops_refusing_then_finishes() {
    let wq = one_worker("drain-timeout");
    let gate = Gate::default();
    block_worker(&wq, &gate);
    assert!(wq.queue(|| {}));
    assert!(!wq.drain_timeout(SHORT));
    // The drain has ended: work is accepted again.
    let h = wq.spawn(|| 3);
    gate.open();
    assert!(wq.drain_timeout(PATIENCE));
    assert_eq!(h.join().unwrap(), 3);
    assert_eq!(wq.stats().in_flight, 0);
}

#[test]
fn work_flush_timeout_expires_then_finishes() {
    let wq = one_worker("work-flush-timeout");
    let gate = Gate::default();
    let g = gate.clone();
    let w = Work::new(move || g.wait());
    assert!(w.flush_timeout(Duration::ZERO), "nothing to wait for");
    assert!(wq.queue_work(&w));
    assert!(!w.flush_timeout(SHORT));
    assert!(
        w.is_pending() || w.is_running(),
        "a timeout cancels nothing"
    );
    gate.open();
    assert!(w.flush_timeout(PATIENCE));
    assert!(!w.is_pending() && !w.is_running());
}

#[test]
fn cancel_sync_timeout_expires_leaving_the_item_not_pending_then_finishes() {
    let wq = one_worker("cancel-timeout");
    let gate = Gate::default();
    let runs = Arc::new(AtomicUsize::new(0));
    let started = Arc::new(Barrier::new(2));
    let (g, r, s) = (gate.clone(), Arc::clone(&runs), Arc::clone(&started));
    let w = Work::new(move || {
        if r.fetch_add(1, Ordering::SeqCst) == 0 {
            s.wait();
            g.wait();
        }
    });
    assert!(wq.queue_work(&w));
    started.wait();
    // Running, and queued again behind itself.
    assert!(wq.queue_work(&w));
    assert!(!w.cancel_sync_timeout(SHORT));
    assert!(!w.is_pending(), "the pending execution is cancelled");
    assert!(w.is_running(), "the running one goes on");
    gate.open();
    assert!(w.cancel_sync_timeout(PATIENCE));
    assert!(!w.is_pending() && !w.is_running());
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the cancelled execution never ran"
    );
    assert_eq!(wq.stats().cancelled, 1);
}

#[test]
fn delayed_work_timeouts_expire_then_finish() {
    let wq = one_worker("delayed-timeouts");
    let gate = Gate::default();
    let g = gate.clone();
    let d = DelayedWork::new(move || g.wait());
    // Waiting for an hour: cancelled in time, the timer disarmed.
    assert!(wq.queue_delayed(&d, Duration::from_secs(3600)));
    assert!(d.cancel_sync_timeout(PATIENCE));
    assert!(!d.is_pending());
    // Run now by the flush, and held by the gate: the flush and a cancel give up.
    assert!(wq.queue_delayed(&d, Duration::from_secs(3600)));
    assert!(!d.flush_timeout(SHORT));
    assert!(eventually(|| d.is_running()));
    assert!(!d.cancel_sync_timeout(SHORT));
    assert!(d.is_running());
    gate.open();
    assert!(d.flush_timeout(PATIENCE));
    assert!(d.cancel_sync_timeout(PATIENCE));
    assert_eq!(wq.stats().completed, 1);
}

// ---- 2. Awaiting a reusable item -----------------------------------------------------------

#[test]
fn work_flushed_completes_when_the_queueing_has_run() {
    let wq = one_worker("work-flushed");
    let gate = Gate::default();
    let runs = Arc::new(AtomicUsize::new(0));
    let (g, r) = (gate.clone(), Arc::clone(&runs));
    let w = Work::new(move || {
        g.wait();
        r.fetch_add(1, Ordering::SeqCst);
    });
    // Nothing queued: ready at once.
    futures_executor::block_on(w.flushed());
    assert!(wq.queue_work(&w));
    let waker = Arc::new(CountingWaker {
        wakes: AtomicUsize::new(0),
        thread: thread::current(),
    });
    let mut flushed = pin!(w.flushed());
    let w1 = Waker::from(Arc::clone(&waker));
    assert!(flushed
        .as_mut()
        .poll(&mut Context::from_waker(&w1))
        .is_pending());
    gate.open();
    assert!(eventually(|| waker.wakes.load(Ordering::SeqCst) > 0));
    assert!(flushed
        .as_mut()
        .poll(&mut Context::from_waker(&w1))
        .is_ready());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn work_flushed_awaited_from_tokio() {
    let wq = Workqueue::builder("work-flushed-tokio").build().unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&runs);
    let w = Work::new(move || {
        r.fetch_add(1, Ordering::SeqCst);
    });
    let d = {
        let r = Arc::clone(&runs);
        DelayedWork::new(move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        for _ in 0..10 {
            wq.queue_work(&w);
            w.flushed().await;
        }
        // A delayed item runs now, and is awaited.
        assert!(wq.queue_delayed(&d, Duration::from_secs(3600)));
        d.flushed().await;
    });
    assert_eq!(runs.load(Ordering::SeqCst), 11);
}

// ---- 3. Backpressure -----------------------------------------------------------------------

/// Counts its runs.
fn counter() -> (Arc<AtomicUsize>, impl Fn() -> Box<dyn FnOnce() + Send>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&runs);
    let make = move || -> Box<dyn FnOnce() + Send> {
        let r = Arc::clone(&r);
        Box::new(move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
    };
    (runs, make)
}

#[test]
fn try_queue_is_full_at_exactly_the_bound() {
    const BOUND: usize = 5;
    let wq = one_worker_builder("backlog-full")
        .max_backlog(BOUND)
        .build()
        .unwrap();
    let gate = Gate::default();
    // Running, so not waiting: the bound counts only what waits.
    block_worker(&wq, &gate);
    let (runs, item) = counter();
    for i in 0..BOUND {
        assert!(wq.try_queue(item()).is_ok(), "item {i} of {BOUND}");
    }
    assert_eq!(wq.stats().backlog, BOUND as u64);
    assert_eq!(
        wq.try_queue(item()).map_err(QueueError::from),
        Err(QueueError::Full)
    );
    let work_runs = Arc::new(AtomicUsize::new(0));
    let w = {
        let work_runs = Arc::clone(&work_runs);
        Work::new(move || {
            work_runs.fetch_add(1, Ordering::SeqCst);
        })
    };
    assert_eq!(wq.try_queue_work(&w), Err(QueueError::Full));
    assert!(!w.is_pending());
    gate.open();
    assert!(wq.flush());
    assert_eq!(runs.load(Ordering::SeqCst), BOUND);
    assert_eq!(wq.stats().backlog, 0);
    assert_eq!(wq.try_queue_work(&w), Ok(()));
    // It may have run before the flush began (then the flush says `false`): the count tells.
    w.flush();
    assert_eq!(work_runs.load(Ordering::SeqCst), 1);
}

#[test]
fn try_queue_work_says_already_pending() {
    let wq = one_worker_builder("backlog-pending")
        .max_backlog(2)
        .build()
        .unwrap();
    let gate = Gate::default();
    block_worker(&wq, &gate);
    let w = Work::new(|| {});
    assert_eq!(wq.try_queue_work(&w), Ok(()));
    assert_eq!(wq.try_queue_work(&w), Err(QueueError::AlreadyPending));
    assert_eq!(wq.stats().backlog, 1, "a refused claim gives its room back");
    // Full and pending: pending is said.
    assert!(wq.try_queue(|| {}).is_ok());
    assert_eq!(wq.try_queue_work(&w), Err(QueueError::AlreadyPending));
    gate.open();
    assert!(wq.flush());
}

#[test]
fn plain_queue_on_a_full_workqueue_waits_for_room() {
    let wq = Arc::new(
        one_worker_builder("backlog-wait")
            .max_backlog(2)
            .build()
            .unwrap(),
    );
    let gate = Gate::default();
    block_worker(&wq, &gate);
    let (runs, item) = counter();
    assert!(wq.queue(item()));
    assert!(wq.queue(item()));
    let returned = Arc::new(AtomicUsize::new(0));
    let producer = {
        let (wq, returned) = (Arc::clone(&wq), Arc::clone(&returned));
        let (a, b) = (item(), item());
        thread::spawn(move || {
            assert_eq!(wq.spawn(a).join().map_err(|e| e.to_string()), Ok(()));
            returned.fetch_add(1, Ordering::SeqCst);
            assert!(wq.queue(b));
            returned.fetch_add(1, Ordering::SeqCst);
        })
    };
    thread::sleep(Duration::from_millis(50));
    assert_eq!(
        returned.load(Ordering::SeqCst),
        0,
        "queued past a full backlog"
    );
    assert_eq!(wq.stats().backlog, 2);
    gate.open();
    producer.join().unwrap();
    assert!(wq.flush());
    assert_eq!(runs.load(Ordering::SeqCst), 4);
}

#[test]
fn an_item_queueing_onto_its_own_full_workqueue_goes_over_the_bound() {
    let wq = Arc::new(
        one_worker_builder("backlog-own")
            .max_backlog(1)
            .build()
            .unwrap(),
    );
    let (runs, item) = counter();
    let item = Arc::new(Mutex::new(item));
    let refused = Arc::new(AtomicUsize::new(0));
    let (inner, item2, refused2) = (Arc::clone(&wq), Arc::clone(&item), Arc::clone(&refused));
    // Its one worker runs this item, which fills the backlog and goes on queueing onto it:
    // waiting there would wait for itself.
    let h = wq.spawn(move || {
        let make = item2.lock().unwrap();
        for _ in 0..5 {
            assert!(inner.queue(make()));
        }
        if inner.try_queue(make()).map_err(QueueError::from) == Err(QueueError::Full) {
            refused2.fetch_add(1, Ordering::SeqCst);
        }
    });
    h.join().unwrap();
    assert!(wq.flush());
    assert_eq!(runs.load(Ordering::SeqCst), 5);
    assert_eq!(
        refused.load(Ordering::SeqCst),
        1,
        "try_queue never goes over the bound"
    );
}

#[test]
fn try_queue_says_draining_and_cancelling() {
    let wq = Arc::new(
        one_worker_builder("backlog-draining")
            .max_backlog(8)
            .build()
            .unwrap(),
    );
    // Cancelling: a cancel waits for the running item, and claims fail meanwhile.
    let gate = Gate::default();
    let started = Arc::new(Barrier::new(2));
    let (g, st) = (gate.clone(), Arc::clone(&started));
    let w = Work::new(move || {
        st.wait();
        g.wait();
    });
    assert!(wq.queue_work(&w));
    started.wait();
    let canceller = {
        let w = w.clone();
        thread::spawn(move || w.cancel_sync())
    };
    assert!(eventually(
        || wq.try_queue_work(&w) == Err(QueueError::Cancelling)
    ));
    // Draining: the drain waits for the same running item.
    let drainer = {
        let wq = Arc::clone(&wq);
        thread::spawn(move || wq.drain())
    };
    assert!(eventually(
        || wq.try_queue(|| {}).map_err(QueueError::from) == Err(QueueError::Draining)
    ));
    gate.open();
    // Whether it cancelled a pending execution depends on which came first: the cancel, or
    // a try_queue_work above made before it began.
    canceller.join().unwrap();
    assert!(!w.is_pending());
    assert!(drainer.join().unwrap());
    assert!(wq.try_queue(|| {}).is_ok());
    assert!(wq.flush());
}

#[test]
fn a_max_backlog_of_zero_is_an_error() {
    let err = Workqueue::builder("backlog-zero").max_backlog(0).build();
    assert!(matches!(err, Err(Error::ZeroMaxBacklog)), "{err:?}");
}

// ---- 5. Worker options ---------------------------------------------------------------------

#[test]
fn hooks_see_every_worker_start_and_stop() {
    let started: Arc<Mutex<Vec<WorkerInfo>>> = Arc::default();
    let stopped: Arc<Mutex<Vec<WorkerInfo>>> = Arc::default();
    let (s1, s2) = (Arc::clone(&started), Arc::clone(&stopped));
    let wq = Workqueue::builder("hooks")
        .scope(AffinityScope::Cpu)
        .on_worker_start(move |w| s1.lock().unwrap().push(w.clone()))
        .on_worker_stop(move |w| s2.lock().unwrap().push(w.clone()))
        .build()
        .unwrap();
    let handles: Vec<_> = (0..200u32)
        .map(|i| wq.spawn(move || thread::current().name().map(str::to_owned).map(|n| (n, i))))
        .collect();
    for h in handles {
        let (thread_name, _) = h.join().unwrap().expect("a named worker");
        assert!(thread_name.starts_with("podq/cpu-p"), "{thread_name}");
    }
    let stats = wq.stats();
    let created: u64 = stats.pools.iter().map(|p| p.workers_created).sum();
    assert!(created >= 1);
    assert!(eventually(
        || started.lock().unwrap().len() as u64 == created
    ));
    for info in started.lock().unwrap().iter() {
        let pool = stats
            .pools
            .iter()
            .find(|p| p.name == info.pool)
            .unwrap_or_else(|| panic!("{info:?} names no pool of {stats:?}"));
        assert_eq!((info.pod, &info.cpus), (pool.pod, &pool.cpus));
    }
    drop(wq);
    // The pools shut down with the workqueue (theirs alone: a hook is equal only to itself),
    // and every worker that started stops.
    assert!(eventually(
        || stopped.lock().unwrap().len() as u64 == created
    ));
    let mut a = started.lock().unwrap().clone();
    let mut b = stopped.lock().unwrap().clone();
    a.sort_by_key(|w| w.pod);
    b.sort_by_key(|w| w.pod);
    assert_eq!(a, b);
}

#[test]
fn workqueues_whose_worker_options_differ_do_not_share_pools() {
    let base = one_worker_builder("options-base");
    let plain = base.clone().build().unwrap();
    let shared = base.clone().build().unwrap();
    let big_stack = base.clone().worker_stack_size(4 << 20).build().unwrap();
    let nicer = base.clone().worker_nice(10).build().unwrap();
    let hooked = base.clone().on_worker_start(|_| {}).build().unwrap();
    for _ in 0..20 {
        plain.queue(|| {});
    }
    assert!(plain.flush());
    assert!(eventually(|| shared.stats().pools[0].executed == 20));
    for other in [&big_stack, &nicer, &hooked] {
        assert_eq!(other.stats().pools[0].executed, 0, "{other:?}");
    }
}

#[test]
fn a_worker_stack_size_is_given_to_the_workers() {
    // About 8 MiB of frames: past the standard library's 2 MiB stack, within 32 MiB.
    fn deep(frames: usize) -> u64 {
        let pad = std::hint::black_box([frames as u8; 64 << 10]);
        if frames == 0 {
            return u64::from(pad[0]);
        }
        deep(frames - 1) + u64::from(pad[1])
    }
    let wq = one_worker_builder("stack")
        .worker_stack_size(32 << 20)
        .build()
        .unwrap();
    assert_eq!(wq.spawn(|| deep(128)).join().unwrap(), (1..=128).sum());
}

#[cfg(target_os = "linux")]
#[test]
fn a_worker_nice_value_is_set_on_the_workers() {
    /// The calling thread's nice value, from the 19th field of its stat line.
    fn own_nice() -> i64 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        let after_name = &stat[stat.rfind(')').unwrap() + 1..];
        after_name
            .split_whitespace()
            .nth(16)
            .unwrap()
            .parse()
            .unwrap()
    }
    let wq = one_worker_builder("nice").worker_nice(15).build().unwrap();
    assert_eq!(wq.spawn(own_nice).join().unwrap(), 15);
    let err = Workqueue::builder("too-nice").worker_nice(25).build();
    assert!(
        matches!(err, Err(Error::WorkerNice { nice: 25, .. })),
        "{err:?}"
    );
}

#[test]
fn try_queue_and_try_spawn_give_the_closure_back() {
    let wq = one_worker_builder("give-back")
        .max_backlog(1)
        .build()
        .unwrap();
    let gate = Gate::default();
    block_worker(&wq, &gate);
    assert!(wq.try_queue(|| {}).is_ok());
    let ran = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&ran);
    let refused = wq
        .try_queue(move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap_err();
    assert_eq!(refused.reason(), QueueError::Full);
    assert_eq!(refused.to_string(), QueueError::Full.to_string());
    // The closure comes back unrun, and runs when called.
    (refused.into_inner())();
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    let refused = wq.try_spawn(|| 6 * 7).unwrap_err();
    assert_eq!(refused.reason(), QueueError::Full);
    assert_eq!((refused.into_inner())(), 42);
    // `?` into QueueError, and into a boxed error.
    let full = || -> Result<(), QueueError> {
        wq.try_queue(|| {})?;
        Ok(())
    };
    assert_eq!(full(), Err(QueueError::Full));
    gate.open();
    wq.flush();
    assert_eq!(wq.try_spawn(|| 6 * 7).unwrap().join().unwrap(), 42);
}

#[test]
fn join_error_is_send_sync_and_goes_through_question_mark() {
    fn send_sync_static<T: Send + Sync + 'static>() {}
    send_sync_static::<JoinError>();
    let wq = Workqueue::builder("join-error").build().unwrap();
    let boxed = || -> Result<u32, Box<dyn std::error::Error + Send + Sync>> {
        Ok(wq.spawn(|| -> u32 { panic!("kept message") }).join()?)
    };
    let err = boxed().unwrap_err();
    assert_eq!(
        err.to_string(),
        "the spawned closure panicked: kept message"
    );
    let err = wq
        .spawn(|| -> u32 { panic!("resume me") })
        .join()
        .unwrap_err();
    assert_eq!(err.panic_message(), Some("resume me"));
    let resumed =
        std::panic::catch_unwind(move || std::panic::resume_unwind(err.into_panic())).unwrap_err();
    assert_eq!(resumed.downcast_ref::<&str>(), Some(&"resume me"));
    assert!(JoinError::Cancelled
        .try_into_panic()
        .unwrap_err()
        .is_cancelled());
}
