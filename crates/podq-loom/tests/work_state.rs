//! loom models of one work item's pending/queue/cancel/flush state
//! (`crates/podq/src/workqueue/README.md`, Q1, Q5, E1-E3, C1, C2, C4 and C5), compiled from
//! `crates/podq/src/workqueue/item/state.rs` against loom.
//!
//! A "pool" here is a locked queue of execution tokens; a worker pops a token, calls `start`,
//! runs (counting concurrent runs) and calls `finish`, pushing a deferred token back. The
//! checks: the item never runs twice at once, every claimed execution is run or discarded
//! exactly once (no lost run), and when `cancel_sync` returns nothing is pending or running.

// The protocol file names `crate::sync`: here it is loom's.
use podq_loom::sync;

#[allow(dead_code)]
#[path = "../../podq/src/workqueue/item/state.rs"]
mod state;

use std::collections::VecDeque;

use state::{Claim, ItemState, Start, CANCELING, PENDING, RUNNING};
use sync::atomic::{AtomicUsize, Ordering};
use sync::{thread, Arc, Mutex};

/// The item, its pool and the counts the checks use.
struct Model {
    item: ItemState<u32, ()>,
    pool: Mutex<VecDeque<u32>>,
    claims: AtomicUsize,
    runs: AtomicUsize,
    discards: AtomicUsize,
    in_run: AtomicUsize,
}

impl Model {
    fn new() -> Arc<Model> {
        Arc::new(Model {
            item: ItemState::default(),
            pool: Mutex::new(VecDeque::new()),
            claims: AtomicUsize::new(0),
            runs: AtomicUsize::new(0),
            discards: AtomicUsize::new(0),
            in_run: AtomicUsize::new(0),
        })
    }

    /// `queue_work`: claim, then push (or hand to the runner) (Q1, Q5).
    fn queue(&self, token: u32) -> bool {
        match self.item.try_claim() {
            Claim::Refused => false,
            Claim::Claimed { .. } => {
                self.claims.fetch_add(1, Ordering::SeqCst);
                self.dispatch(token);
                true
            }
        }
    }

    fn dispatch(&self, token: u32) {
        let token = if self.item.load() & RUNNING != 0 {
            match self.item.defer(token) {
                None => return,
                Some(t) => t,
            }
        } else {
            token
        };
        self.pool.lock().push_back(token);
    }

    /// A worker's turn: pop one token, start, run, finish (E1-E3). Returns whether it
    /// popped one.
    fn work_once(&self, requeue: Option<u32>) -> bool {
        let Some(_token) = self.pool.lock().pop_front() else {
            return false;
        };
        match self.item.start() {
            Start::Discarded => {
                self.discards.fetch_add(1, Ordering::SeqCst);
            }
            Start::Run => {
                assert_eq!(
                    self.in_run.fetch_add(1, Ordering::SeqCst),
                    0,
                    "two runs at once"
                );
                self.runs.fetch_add(1, Ordering::SeqCst);
                if let Some(t) = requeue {
                    // A self-requeueing item.
                    self.queue(t);
                }
                self.in_run.fetch_sub(1, Ordering::SeqCst);
                if let Some(next) = self.item.finish() {
                    self.pool.lock().push_back(next);
                }
            }
        }
        true
    }

    /// `cancel_sync`, as `item/cancel.rs` does it: C1, C2, C4 and C5. Returns whether it was
    /// pending.
    fn cancel(&self) -> bool {
        let before = self.item.begin_cancel_until(None).expect("no deadline");
        while self.item.load() & PENDING != 0 {
            let grabbed = self
                .item
                .take_deferred()
                .or_else(|| self.pool.lock().pop_front());
            match grabbed {
                Some(_) => {
                    self.item.release_claim();
                    self.discards.fetch_add(1, Ordering::SeqCst);
                }
                None => thread::yield_now(),
            }
        }
        self.item
            .wait_until_deadline(|s| s & (PENDING | RUNNING) == 0, None);
        let s = self.item.load();
        assert_eq!(
            s & (PENDING | RUNNING),
            0,
            "cancel returns with the item busy"
        );
        assert_ne!(s & CANCELING, 0);
        self.item.end_cancel();
        before & PENDING != 0
    }

    /// Runs what is left, serially, after the model threads ended.
    fn drain(&self) {
        while self.work_once(None) {}
    }

    fn check_counts(&self) {
        assert_eq!(
            self.claims.load(Ordering::SeqCst),
            self.runs.load(Ordering::SeqCst) + self.discards.load(Ordering::SeqCst),
            "a claimed execution was lost or counted twice"
        );
        assert_eq!(self.item.load() & (PENDING | RUNNING | CANCELING), 0);
    }
}

/// The item models have three threads and long protocols: bound 2 keeps each to seconds.
fn check(model: impl Fn() + Sync + Send + 'static) {
    podq_loom::check(2, model);
}

/// Queueing while the item runs: the new execution waits for the running one (never two runs
/// at once) and is not lost.
#[test]
fn queue_while_running_defers_and_never_loses_a_run() {
    check(|| {
        let m = Model::new();
        assert!(m.queue(1));
        let worker = {
            let m = m.clone();
            thread::spawn(move || {
                m.work_once(None);
                m.work_once(None);
            })
        };
        m.queue(2);
        worker.join().unwrap();
        m.drain();
        m.check_counts();
        assert!(m.runs.load(Ordering::SeqCst) >= 1);
    });
}

/// `cancel_sync` against a worker and a concurrent queuer: when it returns nothing is pending
/// or running, and it reports "was pending" only for an execution that then never ran.
#[test]
fn cancel_vs_worker_vs_queuer() {
    check(|| {
        let m = Model::new();
        assert!(m.queue(1));
        let worker = {
            let m = m.clone();
            thread::spawn(move || {
                m.work_once(None);
            })
        };
        let queuer = {
            let m = m.clone();
            thread::spawn(move || {
                m.queue(2);
            })
        };
        let was_pending = m.cancel();
        worker.join().unwrap();
        queuer.join().unwrap();
        // "Was pending" means the execution pending when the cancel began was discarded, by
        // the cancel itself or by a worker that popped it while CANCELING was set.
        let discards = m.discards.load(Ordering::SeqCst);
        assert!(
            !was_pending || discards >= 1,
            "cancel reported a pending execution, but none was discarded"
        );
        m.drain();
        m.check_counts();
    });
}

/// `cancel_sync` against a self-requeueing item: it returns with the item idle.
#[test]
fn cancel_vs_self_requeue() {
    check(|| {
        let m = Model::new();
        assert!(m.queue(1));
        let worker = {
            let m = m.clone();
            thread::spawn(move || {
                m.work_once(Some(2));
                m.work_once(Some(3));
            })
        };
        m.cancel();
        worker.join().unwrap();
        m.drain();
        m.check_counts();
    });
}

/// Item flush: once `wait_until_deadline(flushed)` returns, the execution pending at the call has run.
#[test]
fn flush_waits_for_the_pending_execution() {
    check(|| {
        let m = Model::new();
        assert!(m.queue(1));
        let worker = {
            let m = m.clone();
            thread::spawn(move || {
                while !m.work_once(None) {
                    thread::yield_now();
                }
            })
        };
        let target = state::generation(m.item.load());
        m.item
            .wait_until_deadline(|s| state::flushed(s, target), None);
        assert_eq!(
            m.runs.load(Ordering::SeqCst),
            1,
            "flush returned before the run"
        );
        worker.join().unwrap();
        m.check_counts();
    });
}

/// A refused queue call is not a lost request: when `try_claim` finds the item pending, the
/// execution that then starts sees every store made before the call, so "it runs once for
/// both requests" holds (the kernel's barrier in `set_work_pool_and_clear_pending`).
#[test]
fn a_refused_queue_call_is_seen_by_the_pending_run() {
    check(|| {
        let m = Model::new();
        let data = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(AtomicUsize::new(usize::MAX));
        assert!(m.queue(1));
        let worker = {
            let (m, data, seen) = (m.clone(), data.clone(), seen.clone());
            thread::spawn(move || {
                let token = m.pool.lock().pop_front();
                assert!(token.is_some());
                assert_eq!(m.item.start(), Start::Run);
                // Relaxed: only the claim protocol may order the queuer's store before this.
                seen.store(data.load(Ordering::Relaxed), Ordering::SeqCst);
                m.runs.fetch_add(1, Ordering::SeqCst);
                if let Some(next) = m.item.finish() {
                    m.pool.lock().push_back(next);
                }
            })
        };
        data.store(1, Ordering::Relaxed);
        let queued = m.queue(2);
        worker.join().unwrap();
        if !queued {
            assert_eq!(
                seen.load(Ordering::SeqCst),
                1,
                "the queue call was refused, and the pending run missed its store"
            );
        }
        m.drain();
        m.check_counts();
    });
}
