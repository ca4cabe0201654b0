//! A lane's chain of segments on its own: order across segments, claims, drops, the spare, and
//! one pusher racing one reader (`crates/podq-loom` checks their accesses under loom).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::pool::core::queue::chain::{Chain, Consumer, Producer, Spares, KEPT_SEGMENTS};

/// Counts its drops.
struct Counted(Arc<AtomicUsize>, usize);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// A chain with spares of its own.
fn new_chain<T, const N: usize>() -> (Chain<T, N>, Producer, Consumer) {
    Chain::new(Arc::new(Spares::new()))
}

/// Claims what is published and reads it all.
fn claim_and_read<T, const N: usize>(chain: &Chain<T, N>, consumer: &mut Consumer) -> Vec<T> {
    chain.claim(consumer);
    std::iter::from_fn(|| chain.next(consumer)).collect()
}

#[test]
fn tasks_come_out_in_order_across_segments_and_claims_leave_the_length() {
    let (chain, mut p, mut c) = new_chain::<usize, 3>();
    for i in 0..10 {
        chain.push(&mut p, i);
        assert_eq!(chain.len(), i + 1);
    }
    assert_eq!(chain.claim(&mut c), 10);
    // Claimed tasks count as the reader's, no longer as the chain's.
    assert_eq!((chain.len(), chain.claimed_left(&c)), (0, 10));
    let first: Vec<_> = (0..4).filter_map(|_| chain.next(&mut c)).collect();
    assert_eq!(first, [0, 1, 2, 3]);
    chain.push(&mut p, 10);
    assert_eq!((chain.len(), chain.claimed_left(&c)), (1, 6));
    // Reading stops at the claim: the task pushed after it waits for the next claim.
    let rest: Vec<_> = std::iter::from_fn(|| chain.next(&mut c)).collect();
    assert_eq!(rest, [4, 5, 6, 7, 8, 9]);
    assert_eq!(claim_and_read(&chain, &mut c), [10]);
    assert_eq!(chain.claim(&mut c), 0);
    assert!(chain.next(&mut c).is_none());
}

#[test]
fn dropping_a_chain_drops_each_task_not_read_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (chain, mut p, mut c) = new_chain::<Counted, 4>();
    for i in 0..11 {
        chain.push(&mut p, Counted(Arc::clone(&drops), i));
    }
    chain.claim(&mut c);
    let read: Vec<_> = (0..5).filter_map(|_| chain.next(&mut c)).collect();
    assert_eq!(
        read.iter().map(|t| t.1).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4]
    );
    drop(read);
    assert_eq!(drops.load(Ordering::Relaxed), 5);
    // Claimed and unclaimed tasks alike go with the chain.
    chain.push(&mut p, Counted(Arc::clone(&drops), 11));
    drop(chain);
    assert_eq!(drops.load(Ordering::Relaxed), 12);
    // A chain never pushed to has no segment, and goes without one.
    let (unused, _, _) = new_chain::<Counted, 4>();
    assert_eq!(unused.len(), 0);
    drop(unused);
}

#[test]
fn segments_are_reused_through_the_spare_without_losing_a_task() {
    // Two slots a segment, batches of 1 to 5: a segment is done with every other task.
    let (chain, mut p, mut c) = new_chain::<usize, 2>();
    let (mut pushed, mut read) = (Vec::new(), Vec::new());
    for round in 0..50 {
        for i in 0..=(round % 5) {
            chain.push(&mut p, round * 10 + i);
            pushed.push(round * 10 + i);
        }
        read.extend(claim_and_read(&chain, &mut c));
    }
    assert_eq!(read, pushed);
}

#[test]
fn chains_of_one_pool_reuse_each_others_segments_up_to_the_bound() {
    // Two slots a segment, so a backlog of 2k tasks moves through k segments.
    let spares = Arc::new(Spares::<usize, 2>::new());
    let (one, mut p1, mut c1) = Chain::new(Arc::clone(&spares));
    let (two, mut p2, mut c2) = Chain::new(Arc::clone(&spares));
    for i in 0..40 {
        one.push(&mut p1, i);
    }
    assert_eq!(claim_and_read(&one, &mut c1), (0..40).collect::<Vec<_>>());
    // 20 segments: the last one is still the chain's, one more is its spare, the rest kept.
    assert_eq!(spares.len(), 18);
    // The other chain's backlog takes the kept segments before it allocates.
    for i in 0..20 {
        two.push(&mut p2, i);
    }
    assert_eq!(spares.len(), 8);
    assert_eq!(claim_and_read(&two, &mut c2), (0..20).collect::<Vec<_>>());
    assert_eq!(spares.len(), 8 + 8);
    // A backlog past the bound: the segments past it are freed, not kept.
    let many = 2 * (KEPT_SEGMENTS + 10);
    for i in 0..many {
        one.push(&mut p1, i);
    }
    assert_eq!(claim_and_read(&one, &mut c1), (0..many).collect::<Vec<_>>());
    assert_eq!(spares.len(), KEPT_SEGMENTS);
    spares.free_all();
    assert_eq!(spares.len(), 0);
    // Freed, the chains go on with segments of their own.
    one.push(&mut p1, 7);
    assert_eq!(claim_and_read(&one, &mut c1), [7]);
}

#[test]
#[should_panic(expected = "another chain")]
fn a_token_of_another_chain_is_refused() {
    let (one, _, _) = new_chain::<u8, 2>();
    let (_, mut other, _) = new_chain::<u8, 2>();
    one.push(&mut other, 1);
}

/// Counting stress: one pusher thread and one reader thread; every task read once, in order.
#[test]
fn a_pusher_and_a_reader_on_two_threads_move_every_task_once_in_order() {
    const TASKS: usize = 200_000;
    let (chain, mut p, mut c) = new_chain::<usize, 7>();
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..TASKS {
                chain.push(&mut p, i);
            }
        });
        let mut next = 0;
        while next < TASKS {
            chain.claim(&mut c);
            while let Some(task) = chain.next(&mut c) {
                assert_eq!(task, next, "out of order");
                next += 1;
            }
            std::hint::spin_loop();
        }
    });
    assert_eq!(chain.len(), 0);
}
