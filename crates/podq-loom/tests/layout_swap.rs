//! loom models of a layout change racing with queue calls and flushes
//! (`crates/podq/src/workqueue/README.md`, R2-R4), compiled from
//! `crates/podq/src/workqueue/item/flush.rs` against loom: a queue call that read the old layout
//! either lands in the new one or is seen by the change, and a flush waits for an execution in
//! whichever layout it was counted, while the layout changes.

// The protocol file names `crate::sync` and `crate::here`: here they are loom's and the
// model's.
use podq_loom::sync;

/// Every model thread counts on stripe 0.
mod here {
    /// The calling thread's stripe.
    pub(crate) fn cpu_or_thread() -> usize {
        0
    }
}

#[allow(dead_code)]
#[path = "../../podq/src/workqueue/item/flush.rs"]
mod flush;

use flush::{Flush, FlushWait, PodCounters};
use sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use sync::{thread, Arc};

/// Two layouts of one pod each, the index of the current one, and the workqueue's flush state.
struct Model {
    flush: Flush,
    layouts: [PodCounters; 2],
    /// The current layout (R2: stored Release after the layout exists).
    current: AtomicUsize,
}

/// The layout ids, for `enter_with` to hand back.
const IDS: [usize; 2] = [0, 1];

fn model() -> Arc<Model> {
    let wait: &'static FlushWait = Box::leak(Box::default());
    Arc::new(Model {
        flush: Flush::new(wait),
        layouts: [PodCounters::new(1), PodCounters::new(1)],
        current: AtomicUsize::new(0),
    })
}

impl Model {
    /// A queue call (Q2 and R3): counts in the current layout, again if the epoch moved.
    /// Returns the layout and the colour.
    fn enter(&self) -> (usize, usize) {
        let entered = self.flush.enter_with(here::cpu_or_thread(), || {
            let i = self.current.load(Ordering::Acquire);
            Some((&IDS[i], &self.layouts[i]))
        });
        let (layout, colour) = entered.expect("a layout is always picked");
        (*layout, colour)
    }

    /// A layout change (R2 and R3): layout 1 becomes current, then the epoch moves.
    fn swap(&self) {
        self.current.store(1, Ordering::Release);
        self.flush.advance_epoch();
    }

    /// A workqueue flush over every layout (R4).
    fn flush_all(&self) {
        self.flush.flush_until(
            |colour| self.layouts.iter().any(|p| p.in_flight_of(colour) != 0),
            None,
        );
    }
}

/// A queue call races with a layout change: once the change has moved the epoch, an old layout
/// it sees empty stays empty (the queue call counted in the new layout, or the change saw it),
/// so nothing is ever counted in a layout after it was seen drained.
#[test]
fn a_queue_call_lands_in_the_new_layout_or_is_seen_by_the_change() {
    podq_loom::check(3, || {
        let m = model();
        let queuer = {
            let m = Arc::clone(&m);
            thread::spawn(move || {
                let (layout, colour) = m.enter();
                (layout, colour)
            })
        };
        m.swap();
        let old_seen_empty = m.layouts[0].in_flight() == 0;
        let (layout, _colour) = queuer.join().expect("queuer");
        if old_seen_empty {
            assert_eq!(
                layout, 1,
                "counted in a layout seen drained after the change"
            );
        }
        assert_eq!(m.layouts[layout].in_flight(), 1);
        assert_eq!(m.layouts[1 - layout].in_flight(), 0, "a retry left a count");
    });
}

/// A flush started after a queue call returned waits for that execution, in whichever layout it
/// was counted, while the layout changes.
#[test]
fn a_flush_waits_for_an_execution_of_either_layout_across_a_change() {
    podq_loom::check(2, || {
        let m = model();
        let entered = Arc::new(AtomicBool::new(false));
        let finished = Arc::new(AtomicBool::new(false));
        let queuer = {
            let (m, entered, finished) =
                (Arc::clone(&m), Arc::clone(&entered), Arc::clone(&finished));
            thread::spawn(move || {
                let (layout, colour) = m.enter();
                entered.store(true, Ordering::SeqCst);
                finished.store(true, Ordering::SeqCst);
                m.flush.leave(&m.layouts[layout], colour);
            })
        };
        let swapper = {
            let m = Arc::clone(&m);
            thread::spawn(move || m.swap())
        };
        if entered.load(Ordering::SeqCst) {
            m.flush_all();
            assert!(finished.load(Ordering::SeqCst), "flush returned early");
        }
        queuer.join().expect("queuer");
        swapper.join().expect("swapper");
        assert!(m.layouts.iter().all(|p| p.in_flight() == 0));
    });
}
