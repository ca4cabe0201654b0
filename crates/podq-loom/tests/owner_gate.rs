//! loom models of the gate between a workqueue's groups and its drop
//! (`crates/podq/src/workqueue/README.md`, G6 and G7), compiled from
//! `crates/podq/src/workqueue/api/owner_gate.rs` against loom: a call either finds the gate
//! closed or the close waits for what it did; no call reads the value once the close took it
//! (loom's cell checks every access); the value is taken once.

// The protocol file names `crate::sync`: here it is loom's.
use podq_loom::sync;

#[allow(dead_code)]
#[path = "../../podq/src/workqueue/api/owner_gate.rs"]
mod owner_gate;

use owner_gate::OwnerGate;
use sync::atomic::{AtomicUsize, Ordering};
use sync::{thread, Arc};

/// A gate over a count of "queued items", on two stripes.
fn gate() -> Arc<OwnerGate<Arc<AtomicUsize>>> {
    Arc::new(OwnerGate::new(Arc::new(AtomicUsize::new(0)), 2))
}

/// A group call that counts an item (relaxed: the gate's leave must publish it).
fn call(gate: &OwnerGate<Arc<AtomicUsize>>, at: usize) -> bool {
    gate.with(at, |queued| {
        queued.fetch_add(1, Ordering::Relaxed);
    })
    .is_some()
}

/// One group call racing the drop's close: when the call got in, the close saw its item.
#[test]
fn a_call_racing_the_close_is_seen_or_refused() {
    podq_loom::check(3, || {
        let gate = gate();
        let caller = {
            let gate = Arc::clone(&gate);
            thread::spawn(move || call(&gate, 0))
        };
        let queued = gate.close().expect("the first close takes the value");
        let seen = queued.load(Ordering::Relaxed);
        let entered = caller.join().expect("caller");
        assert_eq!(seen, usize::from(entered), "a call got in after the close");
        assert!(gate.close().is_none(), "taken twice");
        assert!(!call(&gate, 1), "a call after the close got in");
    });
}

/// Two calls on different stripes and the close: every call that got in is counted before
/// the close returns.
#[test]
fn calls_on_two_stripes_racing_the_close() {
    podq_loom::check(2, || {
        let gate = gate();
        let callers: Vec<_> = (0..2)
            .map(|at| {
                let gate = Arc::clone(&gate);
                thread::spawn(move || call(&gate, at))
            })
            .collect();
        let queued = gate.close().expect("the value");
        let seen = queued.load(Ordering::Relaxed);
        let entered = callers
            .into_iter()
            .map(|c| usize::from(c.join().expect("caller")))
            .sum::<usize>();
        assert_eq!(seen, entered);
    });
}
