//! loom models of held tasks (`crates/podq/src/pool/README.md`, H1-H8): a task that a running
//! task queues to its own pool, or the head's next task taken ahead, is held by that worker,
//! which runs it next; a spinning worker, the watchdog, cancel and shutdown race the holder
//! for it. Every task runs exactly
//! once (or, cancelled, never), and none is stranded.

mod common;

use std::cell::Cell;

// The protocol files name `crate::sync` and `crate::policy`: here they are loom's and the
// policy compiled beside it.
use podq_loom::{policy, sync};

use sync::atomic::{AtomicUsize, Ordering};
use sync::{thread, Arc, Condvar, Mutex};

use common::{check, spinning_core, Core, Grow, Hold, Item, NoSiblings, Push, Ran, WorkerSlot};
use common::{next_task, pushed, PREEMPTION_BOUND};

loom::thread_local! {
    /// The held slot of the model worker this thread is, as `pool/held.rs` keeps it.
    static SLOT: Cell<Option<usize>> = Cell::new(None);
}

/// Pushes `item` on lane 0, starting a holding worker when the core asks for one (P6).
fn push(core: &Arc<Core<Item>>, item: Item) {
    if core.push(0, item) == Push::Spawn {
        start(core);
    }
}

/// Starts a worker that claims a held slot (H1), runs the loop as `pool/worker.rs` does, and
/// gives its slot back when it leaves (H7).
fn start(core: &Arc<Core<Item>>) {
    let core = Arc::clone(core);
    drop(thread::spawn(move || {
        let mut slot = WorkerSlot::new();
        let index = core.claim_held(&mut slot);
        SLOT.with(|s| s.set(index));
        while let Some((item, grow)) = next_task(&core, &mut slot, &mut NoSiblings) {
            if grow == Grow::Spawn {
                start(&core);
            }
            item();
        }
        for left in index.map_or_else(Vec::new, |index| core.release_held(index)) {
            push(&core, left);
        }
    }));
}

/// What a running task does to queue `item` to its own pool (`Pool::push_held`): held by its
/// worker (H2) when it is the running task's first; from its second on, pushed, and the first
/// with it. The watchdog's registration is the model's own.
fn queue_from_task(core: &Arc<Core<Item>>, item: Item) {
    match SLOT.with(Cell::get) {
        Some(index) => {
            for task in pushed(core.hold(index, item)) {
                push(core, task);
            }
        }
        None => push(core, item),
    }
}

/// A task that queues `held` from its worker, then runs `after`.
fn queuer(core: &Arc<Core<Item>>, held: Item, after: impl FnOnce() + Send + 'static) -> Item {
    let core = Arc::clone(core);
    Box::new(move || {
        queue_from_task(&core, held);
        after();
    })
}

/// A task that counts its runs in `runs`, for a model that cancels it.
fn counting(runs: &Arc<AtomicUsize>) -> Item {
    let runs = Arc::clone(runs);
    Box::new(move || {
        runs.fetch_add(1, Ordering::SeqCst);
    })
}

/// The address of a task, to tell it apart in `remove_if`. An address names a task only while
/// its box lives: running a `Box<dyn FnOnce()>` frees the box before the body runs, and a task
/// made after that may get the same address. So a model that finds a task by address makes
/// every task before it pushes the first.
fn addr(item: &Item) -> usize {
    std::ptr::from_ref::<dyn FnOnce() + Send>(&**item).cast::<()>() as usize
}

/// (H3 vs H5) The holder comes back for its task while an idle worker, which spun, takes it
/// over: one of them runs it, once. Three threads and two workers: one preemption fewer than
/// the others, as for loom's four-thread models.
#[test]
fn the_holder_and_a_spinner_run_a_held_task_once() {
    podq_loom::check(PREEMPTION_BOUND - 1, || {
        let core = spinning_core(2, 1);
        let ran = Ran::new(3);
        push(&core, Ran::task(&ran));
        push(
            &core,
            queuer(&core, Ran::task(&ran), {
                let ran = Arc::clone(&ran);
                move || Ran::task(&ran)()
            }),
        );
        ran.wait_for_all();
        core.shutdown();
        core.wait_for_exit();
        assert_eq!(ran.total(), 3);
    });
}

/// (H6) The holder blocks until its held task has run: only the watchdog's looks can free it.
/// Two looks that see it held take it and push it; another worker runs it, and the holder
/// goes on. Without the take-over this deadlocks.
#[test]
fn the_watchdog_takes_the_task_of_a_holder_that_blocks() {
    check(|| {
        let core = spinning_core(2, 0);
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let ran = Ran::new(2);
        let opener = {
            let (gate, done) = (Arc::clone(&gate), Ran::task(&ran));
            Box::new(move || {
                *gate.0.lock() = true;
                gate.1.notify_all();
                done();
            }) as Item
        };
        let holding = Arc::new((Mutex::new(false), Condvar::new()));
        let waiter = {
            let (gate, holding, done) = (Arc::clone(&gate), Arc::clone(&holding), Ran::task(&ran));
            move || {
                *holding.0.lock() = true;
                holding.1.notify_all();
                let mut open = gate.0.lock();
                while !*open {
                    open = gate.1.wait(open);
                }
                drop(open);
                done();
            }
        };
        push(&core, queuer(&core, opener, waiter));
        // The watchdog, once the task is held: a look that records it, a look that takes it.
        let mut held = holding.0.lock();
        while !*held {
            held = holding.1.wait(held);
        }
        drop(held);
        let mut looks = 0;
        loop {
            let look = core.look_held();
            looks += 1;
            let took = !look.taken.is_empty();
            for task in look.taken {
                push(&core, task);
            }
            if took || looks == 2 {
                break;
            }
        }
        ran.wait_for_all();
        core.shutdown();
        core.wait_for_exit();
        assert_eq!(ran.total(), 2);
    });
}

/// (H2, H6) A holder queues two tasks, then blocks until the second has run. Its second
/// queue call takes the first back out of the slot, unless the watchdog's looks, which the
/// first put registered, took it meanwhile, and both are pushed: the pool's other worker runs
/// them. Were the second held behind the first, the holder would wait for it forever. One
/// preemption fewer than the others, as the watchdog's looks repeat.
#[test]
fn a_holder_that_queues_two_has_both_pushed_and_runs_on() {
    podq_loom::check(PREEMPTION_BOUND - 1, || {
        let core = spinning_core(2, 0);
        let watch = Arc::new((Mutex::new(false), Condvar::new()));
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let ran = Ran::new(3);
        let opener = {
            let (gate, done) = (Arc::clone(&gate), Ran::task(&ran));
            Box::new(move || {
                *gate.0.lock() = true;
                gate.1.notify_all();
                done();
            }) as Item
        };
        let holder = {
            let (core, watch, gate) = (Arc::clone(&core), Arc::clone(&watch), Arc::clone(&gate));
            let (first, done) = (Ran::task(&ran), Ran::task(&ran));
            Box::new(move || {
                let index = SLOT.with(Cell::get).expect("a worker with a held slot");
                for item in [first, opener] {
                    let hold = core.hold(index, item);
                    if matches!(hold, Hold::Held { watch: true }) {
                        *watch.0.lock() = true;
                        watch.1.notify_all();
                    }
                    for task in pushed(hold) {
                        push(&core, task);
                    }
                }
                let mut open = gate.0.lock();
                while !*open {
                    open = gate.1.wait(open);
                }
                drop(open);
                done();
            }) as Item
        };
        push(&core, holder);
        // The watchdog: the put of the first task registered a watch, which looks until a look
        // ends it.
        let mut registered = watch.0.lock();
        while !*registered {
            registered = watch.1.wait(registered);
        }
        drop(registered);
        loop {
            let look = core.look_held();
            for task in look.taken {
                push(&core, task);
            }
            if !look.keep {
                break;
            }
            // The next look comes later (`BLOCK_CHECK_INTERVAL`): the others go first.
            thread::yield_now();
        }
        ran.wait_for_all();
        core.shutdown();
        core.wait_for_exit();
        assert_eq!(ran.total(), 3);
    });
}

/// (H7) Cancel takes a held task out (it never runs) or misses it (its holder runs it):
/// exactly one of the two.
#[test]
fn cancel_takes_a_held_task_or_its_holder_runs_it() {
    check(|| {
        let core = spinning_core(2, 0);
        let held_ran = Arc::new(AtomicUsize::new(0));
        let held = counting(&held_ran);
        let target = addr(&held);
        let ran = Ran::new(1);
        let done = Ran::task(&ran);
        push(&core, queuer(&core, held, done));
        let removed = core.remove_if(|task| addr(task) == target);
        ran.wait_for_all();
        core.shutdown();
        core.wait_for_exit();
        assert_eq!(
            usize::from(removed.is_some()) + held_ran.load(Ordering::SeqCst),
            1
        );
    });
}

/// (H3, W8, T1-T3) The pool is shut down while a task holds another: the holder runs it before
/// the workers are gone.
#[test]
fn shutdown_waits_for_a_held_task() {
    check(|| {
        let core = spinning_core(1, 0);
        let ran = Ran::new(2);
        push(&core, queuer(&core, Ran::task(&ran), Ran::task(&ran)));
        core.shutdown();
        core.wait_for_exit();
        assert_eq!(ran.total(), 2);
    });
}

/// (H8 vs H7, C2) Four tasks queued on a pool of two eager workers: the second worker may take
/// a task and hold the next one ahead (two wait behind it, its share is one, and nobody is
/// idle), or a worker finds the sought one in the head or its lane, while cancel looks for the
/// third in the head,
/// the lanes (through `Lane::take_out` and `Lane::put_back`) and the slots. Cancel takes it out
/// or a worker runs it, exactly one of the two, and the others run once. Every task is made
/// before the first push (`addr`). One preemption fewer than the others, as for the models
/// with two workers and a third thread.
#[test]
fn cancel_takes_a_task_held_ahead_or_its_holder_runs_it() {
    podq_loom::check(PREEMPTION_BOUND - 1, || {
        let core = spinning_core(2, 0);
        let target_ran = Arc::new(AtomicUsize::new(0));
        let target_task = counting(&target_ran);
        let target = addr(&target_task);
        let ran = Ran::new(3);
        let (first, second, fourth) = (Ran::task(&ran), Ran::task(&ran), Ran::task(&ran));
        push(&core, first);
        push(&core, second);
        push(&core, target_task);
        push(&core, fourth);
        let removed = core.remove_if(|task| addr(task) == target);
        ran.wait_for_all();
        core.shutdown();
        core.wait_for_exit();
        assert_eq!(
            usize::from(removed.is_some()) + target_ran.load(Ordering::SeqCst),
            1
        );
    });
}
