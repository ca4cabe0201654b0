//! loom models of the pool's park/wake protocol (`crates/podq/src/pool/README.md`, P1-P7 and
//! W1-W12):
//! no lost wake-up, whatever the interleaving of pushers and parking workers.

mod common;

// The protocol files name `crate::sync` and `crate::policy`: here they are loom's and the
// policy compiled beside it.
use podq_loom::{policy, sync};

use common::{check, core, push, push_on, spinning_core, Ran};
use std::sync::atomic::{AtomicBool, Ordering};
use sync::{thread, Arc, Condvar, Mutex};

/// One worker finishing its task and parking while the next task is pushed: the second task
/// always runs (a lost wake-up would leave the waiter below blocked forever, which loom
/// reports).
#[test]
fn push_vs_park_never_loses_a_wake_up() {
    check(|| {
        let core = core(1);
        let ran = Ran::new(2);
        push(&core, Ran::task(&ran));
        push(&core, Ran::task(&ran));
        ran.wait_for_all();
        core.shutdown();
        core.wait_for_exit();
        assert_eq!(ran.total(), 2);
    });
}

/// A worker that found the queue empty spins before it parks (W5) while the next task is
/// pushed from another thread: the push leaves the task to the spinner (P4), and the task
/// runs whether the spinner saw it while spinning or only when it looked again under the lock.
/// The pusher is on the spinner's lane (`common::WORKER_LANE`), so it cannot use the mailbox.
#[test]
fn push_vs_spin_never_loses_a_task() {
    check(|| push_while_one_worker_spins(1));
}

/// As above, but the pusher is on another lane than the spinner, so it may hand its task over
/// through the mailbox (P1) while the spinner opens it, spins, and closes it or takes the task
/// (W6): the task runs exactly once whichever comes first.
#[test]
fn hand_over_vs_spin_never_loses_a_task() {
    check(|| push_while_one_worker_spins(0));
}

/// One spinning worker's first task pushed from the main thread, then a second from a thread
/// on `lane`, racing the worker's spin: both run, once each.
fn push_while_one_worker_spins(lane: usize) {
    let core = spinning_core(1, 1);
    let ran = Ran::new(2);
    push(&core, Ran::task(&ran));
    let pusher = {
        let (core, ran) = (core.clone(), ran.clone());
        thread::spawn(move || push_on(&core, lane, Ran::task(&ran)))
    };
    pusher.join().expect("pusher");
    ran.wait_for_all();
    core.shutdown();
    core.wait_for_exit();
    assert_eq!(ran.total(), 2);
}

/// Two tasks pushed (from two threads) while one worker spins in a pool of two: the second
/// push must not count on the spinner for both, so it starts or wakes the second worker; all
/// run, none twice. (Four threads: main, one pusher, two workers: loom's limit.) At one
/// preemption, a second; two take four minutes on a 2-core machine, where all of `cargo test
/// --workspace` takes nine.
#[test]
fn two_pushes_one_spinner() {
    podq_loom::check(1, || {
        let core = spinning_core(2, 1);
        let ran = Ran::new(3);
        push(&core, Ran::task(&ran));
        let pusher = {
            let (core, ran) = (core.clone(), ran.clone());
            thread::spawn(move || push_on(&core, 1, Ran::task(&ran)))
        };
        push(&core, Ran::task(&ran));
        pusher.join().expect("pusher");
        ran.wait_for_all();
        core.shutdown();
        core.wait_for_exit();
        assert_eq!(ran.total(), 3);
    });
}

/// Two tasks pushed together to a pool of two workers, the first of which blocks until the
/// second has run: the worker that moves both to the head (W3) and runs the first must hand
/// the second on (W4, here by starting the second worker), or the first waits forever, which
/// loom reports as a deadlock.
#[test]
fn a_batch_moved_to_the_head_is_handed_on() {
    check(|| first_blocks_until_second_ran(0, false));
}

/// As above, but the second task is pushed on another lane (its pusher moved to another CPU),
/// while the first one's worker may still be on its way: that push leaves its task to the coming
/// worker (P4), which takes only the first lane's batch (W3), so on arriving it must count the
/// other lanes too when it hands on (W4). Two preemptions find that deadlock (W4 counting only
/// the head) in seconds; three take half a minute and find nothing more.
#[test]
fn a_task_left_to_a_coming_worker_on_another_lane_is_handed_on() {
    podq_loom::check(2, || first_blocks_until_second_ran(1, false));
}

/// As above, with the pool's first worker started by an earlier task, so that it may have
/// parked: the first push wakes it (P5), and the woken worker, on its way as a started one is,
/// must count the other lanes too (W11, W4).
#[test]
fn a_task_left_to_a_woken_worker_on_another_lane_is_handed_on() {
    podq_loom::check(2, || first_blocks_until_second_ran(1, true));
}

/// Two tasks pushed to a pool of two workers, the second on `second_lane`: the first blocks
/// until the second has run. With `warm`, a task has run on the pool first.
fn first_blocks_until_second_ran(second_lane: usize, warm: bool) {
    let core = core(2);
    if warm {
        // On lane 1, so that the lanes' turn (W3) comes back to lane 0, the first task's.
        let earlier = Ran::new(1);
        push_on(&core, 1, Ran::task(&earlier));
        earlier.wait_for_all();
    }
    let ran = Ran::new(2);
    let second_ran = Arc::new((Mutex::new(false), Condvar::new()));
    let first = {
        let (ran, second_ran) = (Arc::clone(&ran), Arc::clone(&second_ran));
        Box::new(move || {
            let (done, cv) = &*second_ran;
            let mut done_now = done.lock();
            while !*done_now {
                done_now = cv.wait(done_now);
            }
            drop(done_now);
            Ran::task(&ran)();
        })
    };
    let second = {
        let (ran, second_ran) = (Arc::clone(&ran), Arc::clone(&second_ran));
        Box::new(move || {
            let (done, cv) = &*second_ran;
            *done.lock() = true;
            cv.notify_all();
            Ran::task(&ran)();
        })
    };
    push(&core, first);
    push_on(&core, second_lane, second);
    ran.wait_for_all();
    core.shutdown();
    core.wait_for_exit();
    assert_eq!(ran.total(), 2);
}

/// Two threads push at once, each on its own lane, to a pool of one worker: both tasks run,
/// on that one worker.
#[test]
fn two_pushers_one_worker() {
    check(|| {
        let core = core(1);
        let ran = Ran::new(2);
        let pushers: Vec<_> = (0..2)
            .map(|lane| {
                let (core, ran) = (core.clone(), ran.clone());
                thread::spawn(move || push_on(&core, lane, Ran::task(&ran)))
            })
            .collect();
        for pusher in pushers {
            pusher.join().expect("pusher");
        }
        ran.wait_for_all();
        core.shutdown();
        core.wait_for_exit();
        let snap = core.snapshot();
        assert_eq!(snap.workers_created, 1);
        assert_eq!(snap.workers, 0);
    });
}

/// A worker retiring after its idle timeout (loom fires it at any point) while a task is
/// pushed: every task runs, by the worker that stays or by one the push starts, and the
/// worker counts stay consistent.
#[test]
fn retirement_vs_push_never_loses_a_task() {
    static RETIRED_IN_SOME_RUN: AtomicBool = AtomicBool::new(false);
    check(|| {
        let core = core(2);
        let ran = Ran::new(3);
        // With a busy worker and a task waiting, the pool starts a second worker (W4); the
        // one that finds the queue empty parks and retires (W12) while the third push comes.
        for _ in 0..3 {
            push(&core, Ran::task(&ran));
        }
        ran.wait_for_all();
        let snap = core.snapshot();
        assert!(snap.workers >= 1, "{snap:?}");
        assert_eq!(
            snap.workers as u64,
            snap.workers_created - snap.workers_retired
        );
        core.shutdown();
        core.wait_for_exit();
        assert_eq!(ran.total(), 3);
        if core.snapshot().workers_retired > 0 {
            RETIRED_IN_SOME_RUN.store(true, Ordering::Relaxed);
        }
    });
    // The model is only worth its time if it reaches the retirement path.
    assert!(RETIRED_IN_SOME_RUN.load(Ordering::Relaxed));
}
