//! loom models of pull (`crates/podq/src/pool/README.md`, "Pull"): a sibling's worker taking
//! a pool's tasks (`Core::steal`) races the pool's own pushes, its worker's take and park, and
//! a kick; every task runs exactly once, and none is stranded.

mod common;

// The protocol files name `crate::sync` and `crate::policy`: here they are loom's and the
// policy compiled beside it.
use podq_loom::{policy, sync};

use common::{check, core, push, start, start_pulling, steal, Ran};
use policy::pull::Kick;
use sync::thread;

/// A sibling's worker steals while the pool's own worker takes and parks and a second task is
/// pushed: both tasks run, once each, and the pool's worker, parked or not, leaves nothing
/// behind (a steal that moved a lane to the head hands the rest on as W4 does).
#[test]
fn steal_vs_push_and_park() {
    check(|| {
        let victim = core(1);
        let ran = Ran::new(2);
        push(&victim, Ran::task(&ran));
        let thief = {
            let victim = victim.clone();
            thread::spawn(move || {
                if let Some(item) = steal(&victim) {
                    item();
                }
            })
        };
        push(&victim, Ran::task(&ran));
        thief.join().expect("thief");
        ran.wait_for_all();
        victim.shutdown();
        victim.wait_for_exit();
        assert_eq!(ran.total(), 2);
    });
}

/// A pool kicked by an offering sibling starts a worker that pulls (O4) from the sibling while
/// the sibling's own worker runs its queue: every task runs once, and both pools' workers exit
/// at shutdown.
#[test]
fn a_kicked_worker_pulls_beside_the_pools_own() {
    check(|| {
        let victim = core(1);
        let helper = core(1);
        let ran = Ran::new(2);
        push(&victim, Ran::task(&ran));
        push(&victim, Ran::task(&ran));
        assert_eq!(helper.kick(), Kick::Spawn);
        start_pulling(&helper, &victim);
        ran.wait_for_all();
        for core in [&victim, &helper] {
            core.shutdown();
            core.wait_for_exit();
        }
        assert_eq!(ran.total(), 2);
    });
}

/// A kick that wakes a parked worker races a push that wakes it too: the worker is taken off
/// the idle stack once, and the pushed task runs.
#[test]
fn a_kick_and_a_push_wake_a_parked_worker_once() {
    check(|| {
        let pool = core(1);
        let ran = Ran::new(2);
        push(&pool, Ran::task(&ran));
        let kicker = {
            let pool = pool.clone();
            thread::spawn(move || {
                if pool.kick() == Kick::Spawn {
                    start(&pool);
                }
            })
        };
        push(&pool, Ran::task(&ran));
        kicker.join().expect("kicker");
        ran.wait_for_all();
        pool.shutdown();
        pool.wait_for_exit();
        assert_eq!(ran.total(), 2);
    });
}
