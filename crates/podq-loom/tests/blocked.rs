//! loom model of the watchdog's blocked look (`crates/podq/src/pool/README.md`, D2): a busy
//! worker that blocks in its task, waiting for a task queued behind it, is replaced while
//! pushes and the other worker race; the task it waits for runs, so it unblocks.

mod common;

// The protocol files name `crate::sync` and `crate::policy`: here they are loom's and the
// policy compiled beside it.
use podq_loom::{policy, sync};

use common::{check, push, start, Config, Core, Item, Ran, LANES};
use policy::growth::Limits;
use sync::{Arc, Condvar, Mutex};

/// A gate one task waits at until another opens it; the model's watchdog waits until the
/// waiting task has started (it looks only at busy workers).
struct Gate {
    /// Whether the waiting task has started, and whether the gate is open.
    state: Mutex<(bool, bool)>,
    changed: Condvar,
}

impl Gate {
    fn new() -> Arc<Gate> {
        Arc::new(Gate {
            state: Mutex::new((false, false)),
            changed: Condvar::new(),
        })
    }

    /// A task that blocks until the gate opens, then counts itself.
    fn waiter(this: &Arc<Gate>, ran: &Arc<Ran>) -> Item {
        let (gate, done) = (Arc::clone(this), Ran::task(ran));
        Box::new(move || {
            let mut state = gate.state.lock();
            state.0 = true;
            gate.changed.notify_all();
            while !state.1 {
                state = gate.changed.wait(state);
            }
            drop(state);
            done();
        })
    }

    /// A task that opens the gate, then counts itself.
    fn opener(this: &Arc<Gate>, ran: &Arc<Ran>) -> Item {
        let (gate, done) = (Arc::clone(this), Ran::task(ran));
        Box::new(move || {
            gate.state.lock().1 = true;
            gate.changed.notify_all();
            done();
        })
    }

    /// Blocks until the waiting task has started.
    fn wait_until_busy(&self) {
        let mut state = self.state.lock();
        while !state.0 {
            state = self.changed.wait(state);
        }
    }
}

/// One eager worker (a pod of one CPU), up to two: the first task blocks until the second
/// runs. The main thread, as the watchdog once the second task is queued (D1) and the busy
/// worker is asleep in the first, starts a replacement, which runs the second task; the
/// worker's take, the push and the replacement's start race. Without D2 (and with no progress
/// look in the model) this deadlocks.
#[test]
fn a_blocked_worker_is_replaced_and_the_task_behind_it_runs() {
    check(|| {
        let pool: Arc<Core<Item>> = Arc::new(Core::new(Config {
            limits: Limits::new(2, 1),
            idle_timeout: std::time::Duration::from_secs(300),
            spin_rounds: 0,
            yield_only: false,
            lanes: LANES,
        }));
        let gate = Gate::new();
        let ran = Ran::new(2);
        push(&pool, Gate::waiter(&gate, &ran));
        push(&pool, Gate::opener(&gate, &ran));
        gate.wait_until_busy();
        for _ in 0..pool.replace_blocked(1, 1) {
            start(&pool);
        }
        ran.wait_for_all();
        pool.shutdown();
        pool.wait_for_exit();
        assert_eq!(ran.total(), 2);
    });
}
