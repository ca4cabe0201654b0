//! loom models of a held slot on its own (`crates/podq/src/pool/core/queue/held_slot.rs`,
//! H2-H8 of `crates/podq/src/pool/README.md`): its owner takes the tasks it holds, oldest
//! first, with one compare-and-swap each, while others take the oldest (a take-over, H5 and
//! H6) or the one they look for (cancel, H7), through `BUSY`. Every task is taken exactly once,
//! loom's cell finds no two accesses to a cell overlapping, and the owner's next put waits for
//! nobody.

// The slot's file names `crate::sync`: here it is loom's.
use podq_loom::sync;

#[path = "../../podq/src/pool/core/queue/held_slot.rs"]
#[allow(dead_code)]
mod held_slot;

use held_slot::HeldCell;
use sync::{thread, Arc};

/// Three tasks held; the owner takes its tasks while a take-over takes the oldest and cancel
/// looks for the second (whose take moves the third up a cell when the first is still there).
/// Each of the three is taken once.
#[test]
fn the_owner_a_take_over_and_cancel_take_each_task_once() {
    podq_loom::check(2, || {
        let slot = Arc::new(HeldCell::new());
        let mut more = [2, 3].into_iter();
        assert_eq!(slot.put_all(1, 3, || more.next()), 3);
        let puts = slot.held().expect("held");
        let take_over = {
            let slot = Arc::clone(&slot);
            thread::spawn(move || slot.take_seen(puts))
        };
        let cancel = {
            let slot = Arc::clone(&slot);
            thread::spawn(move || slot.take_if(|&task: &u32| task == 2))
        };
        let mut taken: Vec<u32> = std::iter::from_fn(|| slot.take_own()).collect();
        taken.extend(take_over.join().expect("no panic"));
        taken.extend(cancel.join().expect("no panic"));
        // A take that lost every race may leave a task the owner looked past: it takes it now.
        taken.extend(std::iter::from_fn(|| slot.take_own()));
        taken.sort_unstable();
        assert_eq!(taken, [1, 2, 3]);
    });
}

/// Two tasks held; another takes them over while the owner takes, empties its slot and puts a
/// new task: the put waits for nobody, reaches no cell another still reads, and the take-over
/// never takes the new task (its `puts` differ).
#[test]
fn a_put_after_the_owner_emptied_its_slot_meets_no_take_over() {
    podq_loom::check(2, || {
        let slot = Arc::new(HeldCell::new());
        let mut more = [2].into_iter();
        assert_eq!(slot.put_all(1, 2, || more.next()), 2);
        let puts = slot.held().expect("held");
        let take_over = {
            let slot = Arc::clone(&slot);
            thread::spawn(move || {
                let first = slot.take_seen(puts);
                let second = slot.take_seen(puts);
                first.into_iter().chain(second).collect::<Vec<u32>>()
            })
        };
        let mut own: Vec<u32> = std::iter::from_fn(|| slot.take_own()).collect();
        slot.put(3);
        let mut taken = take_over.join().expect("no panic");
        assert!(
            !taken.contains(&3),
            "a take-over of an earlier put took a new task"
        );
        own.extend(std::iter::from_fn(|| slot.take_own()));
        taken.extend(own);
        taken.sort_unstable();
        assert_eq!(taken, [1, 2, 3]);
    });
}
