//! A held slot on its own (`crates/podq-loom` checks its interleavings): the owner takes its
//! tasks oldest first, others take the oldest or the one they look for, and the tasks behind
//! keep their order and their put.

use std::sync::Arc;

use crate::pool::core::queue::held_slot::{HeldCell, MOST};

#[test]
fn the_owner_takes_its_tasks_oldest_first_and_others_take_what_they_look_for() {
    let slot = HeldCell::new();
    let mut next = 2..;
    assert_eq!(slot.put_all(1, 4, || next.next()), 4);
    assert_eq!(slot.len(), 4);
    let puts = slot.held().expect("held");
    assert_eq!(slot.take_own(), Some(1));
    // Another takes the one it looks for; the tasks behind it move up.
    assert_eq!(slot.take_if(|&t| t == 3), Some(3));
    assert_eq!(slot.take_if(|&t| t == 9), None);
    assert_eq!(slot.len(), 2);
    // The tasks left keep their put.
    assert_eq!(slot.take_seen(puts + 1), None);
    assert_eq!(slot.take_seen(puts), Some(2));
    assert_eq!(slot.take_own(), Some(4));
    assert_eq!(slot.take_own(), None);
    assert_eq!(slot.held(), None);
    slot.put(7);
    assert_eq!(slot.held(), Some(puts + 1));
    assert_eq!(slot.take_own(), Some(7));
}

#[test]
fn the_owner_and_others_take_from_the_front_and_the_middle_put_after_put() {
    let slot = HeldCell::new();
    for round in 0..20u32 {
        let base = round * 10;
        let mut next = base + 1..;
        assert_eq!(slot.put_all(base, MOST, || next.next()), MOST);
        let last = base + MOST as u32 - 1;
        let mut expected: Vec<u32> = (base..=last).collect();
        // Some taken by their holder, one by a look for it, one by a take-over.
        for _ in 0..round as usize % 3 {
            assert_eq!(slot.take_own(), Some(expected.remove(0)));
        }
        let sought = expected[expected.len() / 2];
        assert_eq!(slot.take_if(|&t| t == sought), Some(sought));
        expected.retain(|&t| t != sought);
        let puts = slot.held().expect("held");
        assert_eq!(slot.take_seen(puts), Some(expected.remove(0)));
        assert_eq!(slot.len(), expected.len());
        let rest: Vec<u32> = std::iter::from_fn(|| slot.take_own()).collect();
        assert_eq!(rest, expected);
    }
}

#[test]
fn a_put_stops_at_what_the_head_gives_and_at_the_most_a_slot_holds() {
    let slot = HeldCell::new();
    let mut next = 2..4;
    assert_eq!(slot.put_all(1, 6, || next.next()), 3);
    while slot.take_own().is_some() {}
    let mut next = 2..;
    assert_eq!(slot.put_all(1, 100, || next.next()), MOST);
    assert_eq!(slot.len(), MOST);
}

#[test]
fn the_tasks_left_in_a_slot_are_dropped_with_it() {
    let task = Arc::new(());
    let slot = HeldCell::new();
    let mut more = std::iter::repeat_with(|| Arc::clone(&task));
    slot.put_all(Arc::clone(&task), 3, || more.next());
    drop(slot.take_own());
    drop(slot);
    assert_eq!(Arc::strong_count(&task), 1);
}

#[test]
fn the_owner_and_three_takers_take_each_task_once() {
    const ROUNDS: u32 = 2_000;
    let slot = Arc::new(HeldCell::new());
    let taken = Arc::new(std::sync::Mutex::new(Vec::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let takers: Vec<_> = (0..3)
        .map(|t| {
            let (slot, taken, stop) = (Arc::clone(&slot), Arc::clone(&taken), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let task = match (t, slot.held()) {
                        (0, Some(puts)) => slot.take_seen(puts),
                        (1, _) => slot.take_if(|&task: &u32| task % 2 == 1),
                        _ => slot.take_if(|_| true),
                    };
                    if let Some(task) = task {
                        taken.lock().expect("no panic").push(task);
                    }
                }
            })
        })
        .collect();
    let mut own = Vec::new();
    for round in 0..ROUNDS {
        let base = round * 8;
        let mut next = base + 1..base + MOST as u32;
        slot.put_all(base, MOST, || next.next());
        own.extend(std::iter::from_fn(|| slot.take_own()));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for taker in takers {
        taker.join().expect("a taker panicked");
    }
    let mut all = own;
    all.extend(taken.lock().expect("no panic").iter().copied());
    all.sort_unstable();
    let expected: Vec<u32> = (0..ROUNDS)
        .flat_map(|round| round * 8..round * 8 + MOST as u32)
        .collect();
    assert_eq!(all, expected);
}
