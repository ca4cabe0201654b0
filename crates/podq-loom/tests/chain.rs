//! loom models of a lane's chain of segments (`crates/podq/src/pool/core/queue/chain.rs`): a
//! pusher and a reader racing across segment ends, the spare and the pool's kept segments, every access to a slot or an
//! end's cell checked by loom's cell.

// The chain names `crate::sync`: here it is loom's.
use podq_loom::sync;

#[path = "../../podq/src/pool/core/queue/chain.rs"]
#[allow(dead_code)]
mod chain;

use chain::{Chain, Consumer, Producer, Spares};
use sync::{thread, Arc};

/// Two slots a segment: five tasks cross two segment ends, and the reader's first segment can
/// come back to the pusher as the spare.
type Small = Chain<usize, 2>;

/// A pusher thread publishing `tasks` tasks (`0..tasks`) into `chain` while this thread claims
/// and reads until it has them all, yielding between tries so that loom runs the pusher
/// between any two of its steps; returns the tasks in the order read.
fn push_while_reading<const N: usize>(
    chain: Chain<usize, N>,
    mut producer: Producer,
    mut consumer: Consumer,
    tasks: usize,
) -> Vec<usize> {
    let chain = Arc::new(chain);
    let pusher = {
        let chain = Arc::clone(&chain);
        thread::spawn(move || {
            for task in 0..tasks {
                chain.push(&mut producer, task);
            }
        })
    };
    let mut seen = Vec::new();
    while seen.len() < tasks {
        chain.claim(&mut consumer);
        while let Some(task) = chain.next(&mut consumer) {
            seen.push(task);
        }
        thread::yield_now();
    }
    pusher.join().expect("the pusher");
    assert_eq!(chain.len(), 0);
    seen
}

/// A pusher publishing five tasks while the reader claims and reads until it has them all:
/// every task is read once, in order, and no slot is read while it is written.
#[test]
fn a_pusher_and_a_reader_move_every_task_once_in_order() {
    podq_loom::check(3, || {
        let (chain, producer, consumer) = Small::new(Arc::new(Spares::new()));
        assert_eq!(
            push_while_reading(chain, producer, consumer, 5),
            [0, 1, 2, 3, 4]
        );
    });
}

/// The chain dropped by the reader's thread after a race with the pusher: the tasks it did not
/// read go with it (each an `Arc`, which loom checks is dropped).
#[test]
fn a_chain_dropped_after_a_race_drops_the_tasks_left() {
    podq_loom::check(3, || {
        let (chain, mut producer, mut consumer) = Chain::<Arc<()>, 2>::new(Arc::new(Spares::new()));
        let chain = Arc::new(chain);
        let task = Arc::new(());
        let pusher = {
            let chain = Arc::clone(&chain);
            let task = Arc::clone(&task);
            thread::spawn(move || {
                for _ in 0..3 {
                    chain.push(&mut producer, Arc::clone(&task));
                }
            })
        };
        chain.claim(&mut consumer);
        thread::yield_now();
        let first = chain.next(&mut consumer);
        pusher.join().expect("the pusher");
        drop(first);
        drop(chain);
        assert_eq!(Arc::strong_count(&task), 1);
    });
}

/// One slot a segment: the reader is done with a segment at every task, so segments go to the
/// chain's spare and past it to the kept ones, which the pusher takes back while the reader
/// puts others there. Every task is read once, in order, and no slot is written while it is
/// read.
#[test]
fn segments_move_through_the_kept_ones_without_an_overlap() {
    podq_loom::check(2, || {
        let spares = Arc::new(Spares::<usize, 1>::new());
        let (chain, producer, consumer) = Chain::new(Arc::clone(&spares));
        assert_eq!(
            push_while_reading(chain, producer, consumer, 4),
            [0, 1, 2, 3]
        );
        spares.free_all();
    });
}
