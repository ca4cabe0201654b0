//! loom models of pool shutdown (`crates/podq/src/pool/README.md`, T1-T3): every task queued
//! runs before the workers are gone, whatever races the shutdown.

mod common;

// The protocol files name `crate::sync` and `crate::policy`: here they are loom's and the
// policy compiled beside it.
use podq_loom::{policy, sync};

use common::{check, core, push, push_on, Ran};
use sync::thread;

/// Shutdown right after three pushes to a one-worker pool: all three run before
/// `wait_for_exit` returns.
#[test]
fn shutdown_runs_everything_queued() {
    check(|| {
        let core = core(1);
        let ran = Ran::new(3);
        for _ in 0..3 {
            push(&core, Ran::task(&ran));
        }
        core.shutdown();
        core.wait_for_exit();
        assert_eq!(ran.total(), 3);
    });
}

/// A push racing the shutdown of a pool that has no worker yet: the task runs, even when it
/// arrives after shutdown (it then gets a worker of its own).
#[test]
fn shutdown_vs_push() {
    check(|| {
        let core = core(1);
        let ran = Ran::new(1);
        let pusher = {
            let (core, ran) = (core.clone(), ran.clone());
            thread::spawn(move || push_on(&core, 1, Ran::task(&ran)))
        };
        core.shutdown();
        pusher.join().expect("pusher");
        core.wait_for_exit();
        assert_eq!(ran.total(), 1);
    });
}

/// Shutdown racing a push while the pool's worker is going idle (parking) after its first
/// task: both tasks run and the worker leaves.
#[test]
fn shutdown_vs_push_and_park() {
    check(|| {
        let core = core(1);
        let ran = Ran::new(2);
        push(&core, Ran::task(&ran));
        let pusher = {
            let (core, ran) = (core.clone(), ran.clone());
            thread::spawn(move || push_on(&core, 1, Ran::task(&ran)))
        };
        core.shutdown();
        core.wait_for_exit();
        pusher.join().expect("pusher");
        // A push after every worker left starts a new one, which leaves in turn.
        core.wait_for_exit();
        assert_eq!(ran.total(), 2);
        assert_eq!(core.snapshot().workers, 0);
    });
}
