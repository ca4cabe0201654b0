//! The core driven by hand, without threads: its decisions, its queue's order, cancel, a worker
//! that cannot start; the queue's data and the spinners' mailbox one call at a time
//! (`crates/podq-loom` races them).

use super::*;
use crate::policy::growth::Limits;
use crate::pool::core::queue::mailbox::Mailbox;
use crate::pool::core::queue::{Fifo, LockCounts};
use crate::pool::core::{Config, Core, Grow, Hold, Next, NoSiblings, Push, WorkerSlot};

/// The configuration of cores driven by hand: every worker eager, no spinning.
fn limits(max_workers: usize) -> Config {
    Config {
        limits: Limits::new(max_workers, max_workers),
        idle_timeout: DEFAULT_IDLE_TIMEOUT,
        spin_rounds: 0,
        yield_only: false,
        lanes: 2,
    }
}

#[test]
fn the_core_asks_for_one_worker_at_a_time() {
    let core = Core::<u32>::new(limits(4));
    assert_eq!(core.push(0, 1), Push::Spawn);
    // The first worker is on its way: no second one for the next items yet. The items wait
    // with nobody idle, and the lane's length says whether to offer them to siblings.
    assert_eq!(core.push(0, 2), Push::Busy);
    assert_eq!(core.to_offer(0, true), Some(2));
    assert_eq!(core.push(0, 3), Push::Busy);
    assert_eq!(core.to_offer(0, true), Some(3));
    assert_eq!(core.to_offer(1, false), None);
    let mut slot = WorkerSlot::new();
    // It takes an item while more wait and nobody is idle: it asks for the next worker.
    assert!(matches!(
        core.next(&mut slot, || 0, &mut NoSiblings, true),
        Next::Run {
            item: 1,
            grow: Grow::Spawn
        }
    ));
    assert!(matches!(
        core.next(&mut slot, || 0, &mut NoSiblings, true),
        Next::Run {
            item: 2,
            grow: Grow::No
        }
    ));
    let snap = core.snapshot();
    assert_eq!(
        (snap.workers, snap.workers_created, snap.queue_depth),
        (2, 2, 1)
    );
}

#[test]
fn a_worker_that_cannot_start_gives_its_items_back_to_the_caller() {
    let core = Core::<u32>::new(limits(4));
    assert_eq!(core.push(0, 7), Push::Spawn);
    assert_eq!(core.push(0, 8), Push::Busy);
    // No worker at all: the caller must run what is queued.
    assert!(core.spawn_failed());
    assert_eq!(core.pop(), Some(7));
    assert_eq!(core.pop(), Some(8));
    let snap = core.snapshot();
    assert_eq!((snap.workers, snap.workers_created), (0, 0));
    // The next push asks for a worker again.
    assert_eq!(core.push(0, 9), Push::Spawn);
}

#[test]
fn a_full_pool_queues_without_asking_for_workers() {
    let core = Core::<u32>::new(limits(1));
    assert_eq!(core.push(0, 1), Push::Spawn);
    let mut slot = WorkerSlot::new();
    assert!(matches!(
        core.next(&mut slot, || 0, &mut NoSiblings, true),
        Next::Run {
            item: 1,
            grow: Grow::No
        }
    ));
    assert_eq!(core.push(0, 2), Push::Busy);
    assert_eq!(core.remove_if(|&i| i == 2), Some(2));
    assert_eq!(core.snapshot().queue_depth, 0);
}

#[test]
fn each_lane_keeps_its_order_and_the_lanes_take_turns() {
    let core = Core::<u32>::new(limits(1));
    assert_eq!(core.push(0, 10), Push::Spawn);
    // Lane numbers wrap: 3 is lane 1 of 2.
    for (lane, item, waiting) in [(3, 20, 1), (0, 11, 2), (1, 21, 2), (0, 12, 3)] {
        assert_eq!(core.push(lane, item), Push::Busy);
        assert_eq!(core.to_offer(lane, false), Some(waiting));
    }
    let mut slot = WorkerSlot::new();
    let mut ran = Vec::new();
    for _ in 0..5 {
        match core.next(&mut slot, || 0, &mut NoSiblings, true) {
            Next::Run { item, .. } => ran.push(item),
            Next::Exit => panic!("exit with items waiting"),
        }
    }
    // One lane's whole batch, then the other's.
    assert_eq!(ran, vec![10, 11, 12, 20, 21]);
    assert_eq!(core.snapshot().queue_depth, 0);
}

#[test]
fn a_worker_that_cannot_start_gives_back_the_items_of_every_lane() {
    let core = Core::<u32>::new(limits(4));
    assert_eq!(core.push(1, 7), Push::Spawn);
    assert_eq!(core.push(0, 8), Push::Busy);
    assert!(core.spawn_failed());
    let mut back = std::iter::from_fn(|| core.pop()).collect::<Vec<_>>();
    back.sort_unstable();
    assert_eq!(back, vec![7, 8]);
    assert_eq!(core.remove_if(|_| true), None);
}

#[test]
fn cancel_finds_an_item_in_any_lane() {
    let core = Core::<u32>::new(limits(1));
    assert_eq!(core.push(0, 1), Push::Spawn);
    assert_eq!(core.push(1, 2), Push::Busy);
    assert_eq!(core.remove_if(|&i| i == 2), Some(2));
    assert_eq!(core.remove_if(|&i| i == 2), None);
    assert_eq!(core.snapshot().queue_depth, 1);
    assert_eq!(core.pop(), Some(1));
}

#[test]
fn a_re_formation_takes_every_matching_item_from_the_head_and_the_lanes() {
    let core = Core::<u32>::new(limits(1));
    assert_eq!(core.push(0, 1), Push::Spawn);
    for (lane, item) in [(1, 2), (0, 3), (1, 4), (0, 5)] {
        assert!(matches!(core.push(lane, item), Push::Busy));
    }
    // A worker's take moves one lane to the head first.
    assert_eq!(core.pop(), Some(1));
    let mut taken = core.take_all_if(|&i| i % 2 == 1);
    taken.sort_unstable();
    assert_eq!(taken, vec![3, 5]);
    assert_eq!(core.snapshot().queue_depth, 2);
    let mut rest = std::iter::from_fn(|| core.pop()).collect::<Vec<_>>();
    rest.sort_unstable();
    assert_eq!(rest, vec![2, 4]);
}

// The spinners' mailbox (P1, W5-W6), one call at a time; crates/podq-loom races them.
#[test]
fn a_closed_mailbox_gives_the_task_back() {
    let mailbox = Mailbox::new();
    assert_eq!(mailbox.hand(0, 7), Err(7));
    assert_eq!(mailbox.close(), None);
}

#[test]
fn an_open_mailbox_takes_one_task_from_another_lane() {
    let mailbox = Mailbox::new();
    assert!(mailbox.open(1));
    assert!(!mailbox.open(0), "one owner at a time");
    assert_eq!(
        mailbox.hand(1, 1),
        Err(1),
        "the owner's own lane is skipped"
    );
    assert!(!mailbox.is_full());
    assert_eq!(mailbox.hand(0, 2), Ok(()));
    assert!(mailbox.is_full());
    assert_eq!(
        mailbox.hand(0, 3),
        Err(3),
        "full: a second task goes to its lane"
    );
    assert_eq!(mailbox.close(), Some(2));
    assert_eq!(mailbox.hand(0, 4), Err(4), "closed again");
}

#[test]
fn an_owner_that_closes_unused_can_open_again() {
    let mailbox = Mailbox::new();
    assert!(mailbox.open(3));
    assert_eq!(mailbox.close(), None);
    assert!(mailbox.open(5));
    assert_eq!(mailbox.hand(5, 6), Err(6));
    assert_eq!(mailbox.hand(2, 6), Ok(()));
    assert_eq!(mailbox.close(), Some(6));
}

// The queue's data, one call at a time.
#[test]
fn items_come_out_in_queueing_order() {
    let mut q = Fifo::new();
    assert_eq!(q.len(), 0);
    for i in 0..5 {
        q.push_back(i);
    }
    assert_eq!(q.len(), 5);
    let out: Vec<i32> = std::iter::from_fn(|| q.pop_front()).collect();
    assert_eq!(out, vec![0, 1, 2, 3, 4]);
    assert_eq!(q.len(), 0);
}

#[test]
fn take_all_if_keeps_the_order_of_both_parts() {
    let mut q = Fifo::new();
    for i in [1, 2, 3, 4, 5, 6] {
        q.push_back(i);
    }
    let mut out = Vec::new();
    q.take_all_if(|&i| i % 3 == 0 || i == 1, &mut out);
    assert_eq!(out, vec![1, 3, 6]);
    let rest: Vec<i32> = std::iter::from_fn(|| q.pop_front()).collect();
    assert_eq!(rest, vec![2, 4, 5]);
}

#[test]
fn remove_if_takes_the_oldest_match_and_keeps_the_order_of_the_rest() {
    let mut q = Fifo::new();
    for i in [1, 2, 3, 4, 2] {
        q.push_back(i);
    }
    assert_eq!(q.remove_if(|&i| i == 2), Some(2));
    assert_eq!(q.remove_if(|&i| i == 9), None);
    let out: Vec<i32> = std::iter::from_fn(|| q.pop_front()).collect();
    assert_eq!(out, vec![1, 3, 4, 2]);
}

#[test]
fn lock_counts_of_two_locks_add_up() {
    let a = LockCounts {
        acquisitions: 5,
        contended: 1,
    };
    let b = LockCounts {
        acquisitions: 2,
        contended: 2,
    };
    assert_eq!(
        a.plus(b),
        LockCounts {
            acquisitions: 7,
            contended: 3
        }
    );
}

#[test]
fn lock_counts_count_contention_separately() {
    let mut c = LockCounts::default();
    c.record(false);
    c.record(true);
    c.record(false);
    assert_eq!(
        c,
        LockCounts {
            acquisitions: 3,
            contended: 1
        }
    );
}

#[test]
fn a_task_that_queues_one_has_it_held_and_one_that_queues_more_has_them_all_pushed() {
    let core = Core::<u32>::new(limits(2));
    assert_eq!(core.push(0, 1), Push::Spawn);
    let mut slot = WorkerSlot::new();
    let index = core.claim_held(&mut slot).expect("a free held slot");
    assert!(matches!(
        core.next(&mut slot, || 0, &mut NoSiblings, true),
        Next::Run { item: 1, .. }
    ));
    // Task 1 queues 2 (H2): held, and its put asks for a watch.
    assert_eq!(core.hold(index, 2), Hold::Held { watch: true });
    assert_eq!(core.snapshot().held.held, 1);
    // Back from 1: the held 2 (H3), which queues 3, 4 and 5. 3 is held; at 4, 3 comes back
    // out and both are for the caller to push, in their order; 5 too.
    assert!(matches!(
        core.next(&mut slot, || 0, &mut NoSiblings, true),
        Next::Run { item: 2, .. }
    ));
    assert_eq!(core.hold(index, 3), Hold::Held { watch: false });
    assert_eq!(core.hold(index, 4), Hold::PushBoth(3, 4));
    assert_eq!(core.hold(index, 5), Hold::Push(5));
    assert_eq!(core.snapshot().held.held, 0);
    for item in [3, 4, 5] {
        assert_ne!(core.push(0, item), Push::Handed);
    }
    // Back from 2: 3, 4 and 5 from the queue, in their order; then 6, queued by 5, is held
    // again: the task that queued several has ended.
    let mut ran = Vec::new();
    while ran.len() < 3 {
        match core.next(&mut slot, || 0, &mut NoSiblings, true) {
            Next::Run { item, .. } => ran.push(item),
            Next::Exit => panic!("the worker left with items queued"),
        }
    }
    assert_eq!(ran, [3, 4, 5]);
    assert_eq!(core.hold(index, 6), Hold::Held { watch: false });
    assert_eq!(core.snapshot().held.held, 1);
    assert_eq!(core.snapshot().held.ran, 1);
}

#[test]
fn a_busy_worker_holds_the_next_task_ahead_and_runs_the_queue_in_order() {
    let core = Core::<u32>::new(limits(2));
    assert_eq!(core.push(0, 1), Push::Spawn);
    for item in 2..=6 {
        assert_eq!(core.push(0, item), Push::Busy);
    }
    let mut slot = WorkerSlot::new();
    let index = core.claim_held(&mut slot).expect("a free held slot");
    // 1 taken with room to grow: a second worker is asked for, and nothing held (H8 waits
    // until nobody is idle and the pool cannot grow). Then, the second on its way: 2 taken and
    // its share of the four behind it, 3 and 4, held ahead (5 and 6 wait); 3 and 4 from the
    // slot; 5 taken alone (one left behind it); 6 taken alone.
    assert!(matches!(
        core.next(&mut slot, || 0, &mut NoSiblings, true),
        Next::Run {
            item: 1,
            grow: Grow::Spawn
        }
    ));
    assert_eq!(core.snapshot().held.held, 0);
    let mut ran = vec![1];
    while ran.len() < 6 {
        match core.next(&mut slot, || 0, &mut NoSiblings, true) {
            Next::Run { item, .. } => ran.push(item),
            Next::Exit => panic!("the worker left with items queued"),
        }
        if ran == [1, 2] {
            assert_eq!(core.snapshot().held.held, 2, "3 and 4 are held ahead");
            assert_eq!(
                core.snapshot().queue_depth,
                4,
                "held tasks count as waiting"
            );
            assert!(
                slot.take_watch_held(),
                "the first put into an empty slot is watched"
            );
            // A task that the running one queues meanwhile does not displace it (H2).
            assert_eq!(core.hold(index, 9), Hold::Push(9));
        }
    }
    assert_eq!(ran, [1, 2, 3, 4, 5, 6]);
    let snap = core.snapshot();
    assert_eq!(
        (snap.held.ahead_ran, snap.held.ran, snap.held.held),
        (2, 0, 0)
    );
}

/// Items 1 to `last` queued on a pool of two eager workers; the first worker has run 1 (asking
/// for the second) and taken 2, holding its share of those behind it ahead (H8): `held` tasks,
/// from 3 on.
fn holding_ahead(last: u32, held: usize) -> (Core<u32>, WorkerSlot) {
    let core = Core::<u32>::new(limits(2));
    assert_eq!(core.push(0, 1), Push::Spawn);
    for item in 2..=last {
        assert_eq!(core.push(0, item), Push::Busy);
    }
    let mut slot = WorkerSlot::new();
    core.claim_held(&mut slot).expect("a free held slot");
    for expected in [1, 2] {
        assert!(matches!(
            core.next(&mut slot, || 0, &mut NoSiblings, true),
            Next::Run { item, .. } if item == expected
        ));
    }
    assert_eq!(core.snapshot().held.held, held, "held ahead");
    (core, slot)
}

/// [`holding_ahead`] with 10 items: 3 to 6 held.
fn holding_four_ahead() -> (Core<u32>, WorkerSlot) {
    holding_ahead(10, 4)
}

#[test]
fn a_worker_runs_the_tasks_it_holds_ahead_oldest_first_and_others_take_the_rest() {
    use crate::pool::core::Stolen;
    let (core, mut slot) = holding_four_ahead();
    // A sibling's steal takes the oldest held ahead, cancel the one it looks for.
    assert!(matches!(core.steal(), Stolen::Took { item: 3, .. }));
    assert_eq!(core.remove_if(|&i| i == 5), Some(5));
    assert_eq!(core.snapshot().held.held, 2);
    // The holder runs what is left in its slot, in order, then the head's (7 taken with its
    // share of the three behind it, 8, held ahead).
    let mut ran = Vec::new();
    while ran.len() < 6 {
        match core.next(&mut slot, || 0, &mut NoSiblings, true) {
            Next::Run { item, .. } => ran.push(item),
            Next::Exit => panic!("the worker left with items queued"),
        }
    }
    assert_eq!(ran, [4, 6, 7, 8, 9, 10]);
    let snap = core.snapshot();
    assert_eq!(
        (snap.held.held, snap.held.taken, snap.held.ahead_ran),
        (0, 1, 3)
    );
}

#[test]
fn a_re_formation_takes_every_task_held_ahead_in_order() {
    let (core, _slot) = holding_four_ahead();
    // The head's first (7 to 10), then the held ones, oldest first.
    assert_eq!(core.take_all_if(|&i| i % 2 == 0), [8, 10, 4, 6]);
    assert_eq!(core.snapshot().held.held, 2);
    assert_eq!(core.take_all_if(|_| true), [7, 9, 3, 5]);
    assert_eq!(core.snapshot().queue_depth, 0);
}

/// [`holding_ahead`] with 5 items: 3 held.
fn holding_three_ahead() -> (Core<u32>, WorkerSlot) {
    holding_ahead(5, 1)
}

#[test]
fn cancel_finds_a_task_held_ahead() {
    let (core, mut slot) = holding_three_ahead();
    assert_eq!(core.remove_if(|&i| i == 3), Some(3));
    // The slot is empty: the worker goes on with the head, and holds nothing more ahead.
    for expected in [4, 5] {
        assert!(matches!(
            core.next(&mut slot, || 0, &mut NoSiblings, true),
            Next::Run { item, .. } if item == expected
        ));
    }
    assert_eq!(core.snapshot().held.ahead_ran, 0);
}

#[test]
fn one_worker_alone_holds_nothing_ahead() {
    let core = Core::<u32>::new(limits(1));
    assert_eq!(core.push(0, 1), Push::Spawn);
    for item in 2..=5 {
        assert_eq!(core.push(0, item), Push::Busy);
    }
    let mut slot = WorkerSlot::new();
    core.claim_held(&mut slot).expect("a free held slot");
    for expected in 1..=5 {
        assert!(matches!(
            core.next(&mut slot, || 0, &mut NoSiblings, true),
            Next::Run { item, .. } if item == expected
        ));
        assert_eq!(core.snapshot().held.held, 0);
    }
}

#[test]
fn a_siblings_steal_takes_a_task_held_ahead_before_the_heads() {
    use crate::pool::core::Stolen;
    let (core, _slot) = holding_three_ahead();
    // 3 is held ahead while its holder runs 2: it left the head before 4 and 5 (O4, H8).
    for expected in [3, 4, 5] {
        assert!(matches!(core.steal(), Stolen::Took { item, .. } if item == expected));
    }
    assert!(matches!(core.steal(), Stolen::Empty));
    let snap = core.snapshot();
    assert_eq!(
        (snap.held.held, snap.held.taken, snap.held.ahead_ran),
        (0, 1, 0)
    );
    // The holder comes back to an empty slot and an empty queue.
    assert_eq!(core.snapshot().queue_depth, 0);
}
