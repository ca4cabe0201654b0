//! loom models of steering's shared words: a pool's load signal (`crates/podq/src/pool/load.rs`:
//! one sampler per interval, whatever readers race for it, and every value read is one a sample
//! could give) and a work item's group slot (`crates/podq/src/workqueue/item/group_slot.rs`, G4 of
//! the workqueue's `README.md`: every ticket put is dropped exactly once, whoever takes it, also
//! when a take reads the slot's flag stale).

// The protocol files name `crate::sync` and `crate::policy`: here they are loom's and the
// policy compiled beside it.
use podq_loom::{policy, sync};

#[path = "../../podq/src/pool/load.rs"]
mod load;

#[path = "../../podq/src/workqueue/item/group_slot.rs"]
mod group_slot;

use std::time::Duration;

use group_slot::GroupSlot;
use load::{LoadSignal, Sample};
use policy::steer::{Busy, SAMPLE_INTERVAL};
use sync::atomic::{AtomicUsize, Ordering};
use sync::{thread, Arc};

/// Two readers find the last sample old at the same moment: exactly one of them samples, and
/// both, and a reader after them, read a busy fraction that one of the samples gives.
#[test]
fn one_of_two_racing_readers_samples() {
    podq_loom::check(3, || {
        let signal = Arc::new(LoadSignal::new(1));
        let sampled = Arc::new(AtomicUsize::new(0));
        // A first sample: the pod idle.
        signal.read(Duration::ZERO, || {
            Some(Sample {
                waiting: 0,
                busy_workers: Some(0),
            })
        });
        let later = SAMPLE_INTERVAL * 2;
        let readers: Vec<_> = [0usize, 1]
            .into_iter()
            .map(|busy| {
                let (signal, sampled) = (Arc::clone(&signal), Arc::clone(&sampled));
                thread::spawn(move || {
                    let load = signal.read(later, || {
                        sampled.fetch_add(1, Ordering::Relaxed);
                        Some(Sample {
                            waiting: busy,
                            busy_workers: Some(busy),
                        })
                    });
                    assert!(load.pod.busy <= Busy::FULL);
                    assert!(load.busy_workers <= 1);
                })
            })
            .collect();
        for reader in readers {
            reader.join().expect("reader");
        }
        assert_eq!(
            sampled.load(Ordering::Relaxed),
            1,
            "one sampler per interval"
        );
        // The idle first sample (standing for one interval) averaged with one busy or one
        // idle second sample (standing for the two intervals since).
        let busy = signal.now().pod.busy;
        assert!(
            busy == Busy::IDLE || busy == Busy::from_raw(Busy::FULL.raw() * 2 / 3),
            "{busy:?}"
        );
    });
}

/// A ticket that counts its drops.
struct Ticket(Arc<AtomicUsize>);

impl Drop for Ticket {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// The owner of a claim puts a ticket, then (a claim later) a second one, while a worker and a
/// cancel each take what they find: each ticket is dropped exactly once, by whoever took it,
/// by the put that replaced it, or with the slot.
#[test]
fn every_ticket_is_dropped_once() {
    podq_loom::check(3, || {
        let slot = Arc::new(GroupSlot::new());
        let drops = Arc::new(AtomicUsize::new(0));
        let owner = {
            let (slot, drops) = (Arc::clone(&slot), Arc::clone(&drops));
            thread::spawn(move || {
                slot.put(Ticket(Arc::clone(&drops)));
                slot.put(Ticket(drops));
            })
        };
        let takers: Vec<_> = (0..2)
            .map(|_| {
                let slot = Arc::clone(&slot);
                thread::spawn(move || drop(slot.take()))
            })
            .collect();
        owner.join().expect("owner");
        for taker in takers {
            taker.join().expect("taker");
        }
        drop(slot);
        assert_eq!(drops.load(Ordering::Relaxed), 2);
    });
}
