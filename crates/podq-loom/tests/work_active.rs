//! loom model of the `max_active` slot protocol (`crates/podq/src/workqueue/README.md`, Q3, Q4 and
//! E4), compiled from `crates/podq/src/workqueue/task/active.rs` against loom: never more than
//! `limit` executions hold a slot, and no waiting execution is left behind when slots free up (no
//! lost activation).

// The protocol file names `crate::sync`: here it is loom's.
use podq_loom::sync;

#[allow(dead_code)]
#[path = "../../podq/src/workqueue/task/active.rs"]
mod active;

use active::ActiveLimit;
use sync::atomic::{AtomicUsize, Ordering};
use sync::{thread, Arc, Mutex};

struct Model {
    limit: ActiveLimit<u32>,
    /// Activated executions, not run yet.
    ready: Mutex<Vec<u32>>,
    /// Executions ever activated.
    activated: AtomicUsize,
}

impl Model {
    fn push(&self, task: u32) {
        assert!(self.limit.active() <= 1, "over the limit");
        self.activated.fetch_add(1, Ordering::SeqCst);
        self.ready.lock().push(task);
    }

    /// Runs one activated execution, if any, and frees its slot.
    fn run_one(&self) -> bool {
        let Some(_task) = self.ready.lock().pop() else {
            return false;
        };
        self.limit.release(|t| self.push(t));
        true
    }
}

/// Two queuers and a finishing execution race with a limit of 1: every execution is
/// activated, one at a time.
#[test]
fn no_lost_activation_and_never_over_the_limit() {
    podq_loom::check(3, || {
        let m = Arc::new(Model {
            limit: ActiveLimit::new(1),
            ready: Mutex::new(Vec::new()),
            activated: AtomicUsize::new(0),
        });
        m.limit.admit(0, |t| m.push(t));
        let threads: Vec<_> = (1..3)
            .map(|i| {
                let m = m.clone();
                thread::spawn(move || {
                    m.limit.admit(i, |t| m.push(t));
                    m.run_one();
                })
            })
            .collect();
        m.run_one();
        for t in threads {
            t.join().unwrap();
        }
        while m.run_one() {}
        assert_eq!(
            m.activated.load(Ordering::SeqCst),
            3,
            "an execution was never activated"
        );
        assert_eq!(m.limit.waiting(), 0);
        assert_eq!(m.limit.active(), 0);
    });
}
