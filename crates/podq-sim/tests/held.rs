//! Items queued by running items (`chain`, `yield`, `spawn-local`): the podq profile holds them
//! for their queuer as `podq::policy::held` decides (steps H1-H6 of the pool's README), the
//! kernel profile pushes every one to the pool's queue. And items of any workload that a busy
//! podq worker takes from its pool's head ahead, with the one it takes (H8).

use podq::policy::held::{AHEAD_MAX, MAX_IN_A_ROW};
use podq::{AffinityScope, Topology};
use podq_sim::{simulate, Outcome, Profile, Scenario, SimMachine, Workload};

/// A one-socket machine of `cores` cores, one CPU each, in one cache domain.
fn machine(cores: usize) -> SimMachine {
    let desc = format!("sockets=1,nodes=1,caches=1,cores={cores},smt=1");
    SimMachine::new(Topology::from_machine(&desc).unwrap(), &desc)
}

fn run(profile: &Profile, workload: Workload, threads: usize, items: u64, work_ns: u64) -> Outcome {
    let m = machine(4);
    let s = Scenario {
        workload,
        threads,
        items,
        work_ns,
        pull: profile.mechanism.pulls,
        ..Scenario::kernel_test(AffinityScope::System, threads)
    };
    // An error, Stuck included, is a run that left items unrun.
    simulate(&m, profile, &s).unwrap_or_else(|e| panic!("{} {workload:?}: {e}", profile.name))
}

#[test]
fn podq_runs_nearly_every_link_of_a_chain_on_its_queuer_and_the_kernel_none() {
    let chain = Workload::Chain { depth: 200 };
    // One producer: the pod has no other work. Four: each chain's first link waits in the
    // queue behind the others' chains now and then, and the bound lets it in.
    for (threads, share) in [(1, 0.98), (4, 0.9)] {
        let links = 5 * 200 * threads as u64;
        // Each chain's first link comes from its producer, the others from a running link.
        let from_links = links - 5 * threads as u64;
        let podq = run(&Profile::podq(), chain, threads, 5, 0);
        assert!(
            podq.held.ran_by_queuer as f64 >= share * from_links as f64,
            "{threads} producers: {:?} of {from_links}",
            podq.held
        );
        assert!(podq.held.ran_by_queuer <= from_links);
        let kernel = run(&Profile::kernel(), chain, threads, 5, 0);
        assert_eq!(kernel.held, Default::default(), "{threads} producers");
    }
}

#[test]
fn an_item_waiting_in_the_queue_runs_after_at_most_the_bound_of_held_runs() {
    // Twelve yielding items on four workers: most of the time items wait in the queue.
    let many = run(&Profile::podq(), Workload::Yield { yields: 60 }, 1, 12, 0);
    assert!(many.held.bounded > 0, "{:?}", many.held);
    assert!(many.held.ran_by_queuer > 0, "{:?}", many.held);
    assert!(
        (1..=MAX_IN_A_ROW).contains(&many.held.most_in_a_row_while_waiting),
        "{:?}",
        many.held
    );
    // One yielding item: nothing waits, so its worker runs every continuation it holds.
    let one = run(&Profile::podq(), Workload::Yield { yields: 60 }, 1, 1, 0);
    assert_eq!(one.held.bounded, 0, "{:?}", one.held);
    assert_eq!(one.held.ran_by_queuer, 60, "{:?}", one.held);
}

#[test]
fn a_held_item_whose_queuer_runs_on_is_taken_by_another_worker() {
    // The one item queues one item, then works 5 ms: the item it holds must not wait for that.
    let work = 5_000_000;
    let o = run(&Profile::podq(), Workload::SpawnLocal, 1, 1, work);
    assert_eq!(o.held.taken_from_queuer, 1, "{:?}", o.held);
    assert_eq!(o.held.ran_by_queuer, 0, "{:?}", o.held);
    // Taken within the watchdog's two looks (1 to 2 ms), so both items end well before the
    // 10 ms they would take one after the other.
    assert!(
        o.simulated_ns < 2 * work - work / 4,
        "{} ns",
        o.simulated_ns
    );
    // One item queueing 3, then working 5 ms: a fan-out's items are all pushed (H2), none is
    // held, and none waits for that work either.
    let o = run(&Profile::podq(), Workload::SpawnLocal, 1, 3, work);
    let counts = (o.held.taken_from_queuer, o.held.ran_by_queuer);
    assert_eq!(counts, (0, 0), "{:?}", o.held);
    assert!(
        o.simulated_ns < 2 * work - work / 4,
        "{} ns",
        o.simulated_ns
    );
    // Two producers, each item queueing 3: an item that a worker took ahead (H8) before it ran
    // its own for 5 ms is taken over.
    let o = run(&Profile::podq(), Workload::SpawnLocal, 2, 3, work);
    assert!(o.held.taken_from_queuer >= 1, "{:?}", o.held);
    assert_eq!(o.held.ran_by_queuer, 0, "{:?}", o.held);
}

#[test]
fn a_busy_pool_takes_the_heads_next_items_ahead_and_a_pool_that_never_backs_up_does_not() {
    // Four producers flood four workers: the head backs up while every worker is busy.
    let items = 4 * 2000;
    let o = run(&Profile::podq(), Workload::Flood, 4, 2000, 0);
    assert!(o.held.ran_ahead > 0, "{:?}", o.held);
    // At most AHEAD_MAX items ahead per item taken.
    let most = items * AHEAD_MAX as u64 / (AHEAD_MAX as u64 + 1);
    assert!(o.held.ran_ahead <= most, "{:?}", o.held);
    // Items taken ahead are items of the queue, none queued by a running item.
    assert_eq!(o.held.ran_by_queuer, 0, "{:?}", o.held);
    let kernel = run(&Profile::kernel(), Workload::Flood, 4, 2000, 0);
    assert_eq!(kernel.held, Default::default());
    // One producer waiting for each item before it queues the next: never two items waiting.
    let o = run(&Profile::podq(), Workload::Queue, 1, 2000, 0);
    assert_eq!(o.held.ran_ahead, 0, "{:?}", o.held);
}

#[test]
fn a_chain_of_no_link_is_refused() {
    let s = Scenario {
        workload: Workload::Chain { depth: 0 },
        ..Scenario::kernel_test(AffinityScope::System, 1)
    };
    let err = simulate(&machine(2), &Profile::podq(), &s).unwrap_err();
    assert!(matches!(err, podq_sim::SimError::Items), "{err}");
}

#[test]
fn every_item_of_the_spawning_workloads_runs_and_one_seed_replays() {
    for profile in [Profile::kernel(), Profile::podq()] {
        for workload in [
            Workload::Chain { depth: 30 },
            Workload::Yield { yields: 20 },
            Workload::SpawnLocal,
        ] {
            for scope in AffinityScope::ALL {
                let m = SimMachine::new(
                    Topology::from_machine("sockets=1,nodes=2,caches=4,cores=8,smt=2").unwrap(),
                    "test",
                );
                let s = Scenario {
                    workload,
                    items: 40,
                    pull: profile.mechanism.pulls,
                    ..Scenario::kernel_test(scope, 16)
                };
                let a = simulate(&m, &profile, &s)
                    .unwrap_or_else(|e| panic!("{} {workload:?} {scope}: {e}", profile.name));
                assert!(a.items_per_sec > 0.0);
                assert_eq!(a, simulate(&m, &profile, &s).unwrap());
                assert!(a.queue_to_start.is_none());
            }
        }
    }
}
