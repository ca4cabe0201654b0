//! The harness of the pool models: podq's pool protocol files compiled against loom, a worker
//! loop like `pool/worker.rs`, and a counter that model threads can wait on.
// Each model file uses a different part of the harness.
#![allow(dead_code)]

use podq_loom::policy::growth::Limits;
use podq_loom::sync::atomic::{AtomicUsize, Ordering};
use podq_loom::sync::{thread, Arc, Condvar, Mutex};

// The pool's core: `queue/`, `idle.rs`, `growth.rs` and `lifecycle.rs` come with it.
#[path = "../../../podq/src/pool/core/mod.rs"]
mod core;

pub(crate) use self::core::{
    Config, Core, Grow, Hold, Next, NoSiblings, Push, Siblings, Stolen, WorkerSlot,
};

/// A task in the models: a closure, as the pool's tasks are.
pub(crate) type Item = Box<dyn FnOnce() + Send>;

/// The tasks a [`Core::hold`] leaves for the caller to push, in order (H2).
pub(crate) fn pushed(hold: Hold<Item>) -> Vec<Item> {
    match hold {
        Hold::Held { .. } => Vec::new(),
        Hold::Push(task) => vec![task],
        Hold::PushBoth(first, task) => vec![first, task],
    }
}

/// The preemption bound of the pool models (see [`podq_loom::check`]).
pub(crate) const PREEMPTION_BOUND: usize = 3;

/// Runs `model` under loom with [`PREEMPTION_BOUND`].
pub(crate) fn check(model: impl Fn() + Sync + Send + 'static) {
    podq_loom::check(PREEMPTION_BOUND, model);
}

/// A pool core with `max_workers`, all eager, that parks at once, and an idle timeout (which
/// loom fires at any point).
pub(crate) fn core(max_workers: usize) -> Arc<Core<Item>> {
    spinning_core(max_workers, 0)
}

/// A pool core like [`core`] whose idle workers spin `spin_rounds` before they park.
pub(crate) fn spinning_core(max_workers: usize, spin_rounds: u32) -> Arc<Core<Item>> {
    Arc::new(Core::new(Config {
        limits: Limits::new(max_workers, max_workers),
        idle_timeout: std::time::Duration::from_secs(300),
        spin_rounds,
        yield_only: false,
        lanes: LANES,
    }))
}

/// Lanes of the models' cores: two, so that pushers on two lanes race a worker's last look
/// (W10) at both.
pub(crate) const LANES: usize = 2;

/// The lane of the CPU the models' workers run on.
pub(crate) const WORKER_LANE: usize = 1;

/// Pushes `item` on lane 0 (the models' main thread), starting a worker when the core asks
/// for one (P6).
pub(crate) fn push(core: &Arc<Core<Item>>, item: Item) {
    push_on(core, 0, item);
}

/// Pushes `item` on lane `lane`, starting a worker when the core asks for one (P6).
pub(crate) fn push_on(core: &Arc<Core<Item>>, lane: usize, item: Item) {
    if core.push(lane, item) == Push::Spawn {
        start(core);
    }
}

/// Starts one detached worker thread running the pool's worker loop.
pub(crate) fn start(core: &Arc<Core<Item>>) {
    start_with(core, NoSiblings);
}

/// Starts one detached worker of `core` that pulls from `victim` when its own queue is empty
/// (O4), as a worker of a pull group does.
pub(crate) fn start_pulling(core: &Arc<Core<Item>>, victim: &Arc<Core<Item>>) {
    start_with(core, StealFrom(Arc::clone(victim)));
}

/// A worker's one sibling: `victim`, whose tasks it takes as the pull group's search does.
pub(crate) struct StealFrom(pub(crate) Arc<Core<Item>>);

impl Siblings<Item> for StealFrom {
    fn drained(&mut self) {}

    fn pull(&mut self) -> Option<Item> {
        steal(&self.0)
    }
}

/// Takes `victim`'s oldest task as a sibling's worker does, acting on what the victim asks for
/// the tasks left behind (W4).
pub(crate) fn steal(victim: &Arc<Core<Item>>) -> Option<Item> {
    match victim.steal() {
        Stolen::Empty => None,
        Stolen::Took { item, grow, .. } => {
            if grow == Grow::Spawn {
                start(victim);
            }
            Some(item)
        }
    }
}

/// The worker loop's step as `pool/worker.rs` takes it: the held task first (H3), else the
/// queue's step; `None` when the worker leaves.
pub(crate) fn next_task(
    core: &Core<Item>,
    slot: &mut WorkerSlot,
    siblings: &mut impl Siblings<Item>,
) -> Option<(Item, Grow)> {
    let (looked, held) = core.take_held_first(slot, || WORKER_LANE);
    if let Some(item) = held {
        return Some((item, Grow::No));
    }
    match core.next(slot, || WORKER_LANE, siblings, !looked) {
        Next::Run { item, grow } => Some((item, grow)),
        Next::Exit => None,
    }
}

/// Starts one detached worker thread running the pool's worker loop with `siblings`.
fn start_with(core: &Arc<Core<Item>>, mut siblings: impl Siblings<Item> + Send + 'static) {
    let core = Arc::clone(core);
    drop(thread::spawn(move || {
        let mut slot = WorkerSlot::new();
        // Workers spin on lane 1's CPU: pushes on lane 0 may hand their task over through the
        // mailbox (P1), pushes on lane 1 may not (the spinner would be on their own CPU).
        while let Some((item, grow)) = next_task(&core, &mut slot, &mut siblings) {
            // A model whose pool may grow past its eager size has its watchdog as a thread of
            // its own, which looks whether asked or not; elsewhere every worker is eager and
            // the core never asks for it.
            if grow == Grow::Spawn {
                start(&core);
            }
            item();
        }
    }));
}

/// Counts tasks that ran; a thread can wait until all of them have. Waiting for a task that
/// never runs leaves every thread blocked, which loom reports as a deadlock: that is how a lost
/// wake-up shows. Only the last task takes the lock, to keep the models small.
pub(crate) struct Ran {
    expected: usize,
    total: AtomicUsize,
    lock: Mutex<()>,
    all_done: Condvar,
}

impl Ran {
    /// A counter at 0 that expects `expected` tasks.
    pub(crate) fn new(expected: usize) -> Arc<Self> {
        Arc::new(Self {
            expected,
            total: AtomicUsize::new(0),
            lock: Mutex::new(()),
            all_done: Condvar::new(),
        })
    }

    /// A task that counts itself.
    pub(crate) fn task(this: &Arc<Self>) -> Item {
        let ran = Arc::clone(this);
        Box::new(move || {
            if ran.total.fetch_add(1, Ordering::SeqCst) + 1 == ran.expected {
                let _lock = ran.lock.lock();
                ran.all_done.notify_all();
            }
        })
    }

    /// Blocks until every expected task has run.
    pub(crate) fn wait_for_all(&self) {
        let mut lock = self.lock.lock();
        while self.total() < self.expected {
            lock = self.all_done.wait(lock);
        }
    }

    /// How many tasks have run.
    pub(crate) fn total(&self) -> usize {
        self.total.load(Ordering::SeqCst)
    }
}
