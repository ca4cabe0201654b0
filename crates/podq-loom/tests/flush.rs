//! loom models of the flush colours (`crates/podq/src/workqueue/README.md`, Q2, E5, E6 and
//! F1), compiled from `crates/podq/src/workqueue/item/flush.rs` against loom: a flush returns
//! only after every execution counted before it has finished, whether its finisher announced
//! itself (a flusher was seen) or not, and it is never left asleep (no lost wake-up), also when
//! the finisher is on another stripe or an execution enters while the colour moves.

// The protocol file names `crate::sync` and `crate::here`: here they are loom's and the
// model's.
use podq_loom::sync;

/// Which stripe the calling model thread counts on: set by each thread, 0 by default.
mod here {
    use std::cell::Cell;

    loom::thread_local! {
        static STRIPE: Cell<usize> = Cell::new(0);
    }

    /// The calling thread's stripe (its "CPU").
    pub(crate) fn cpu_or_thread() -> usize {
        STRIPE.with(Cell::get)
    }

    /// Puts the calling thread on stripe `stripe`.
    pub(crate) fn set(stripe: usize) {
        STRIPE.with(|s| s.set(stripe));
    }
}

#[allow(dead_code)]
#[path = "../../podq/src/workqueue/item/flush.rs"]
mod flush;

use flush::{Flush, FlushWait, PodCounters};
use sync::atomic::{AtomicBool, Ordering};
use sync::{thread, Arc};

/// A pod of two CPUs (so two stripes at least) and its workqueue's flush state.
struct Model {
    flush: Flush,
    pod: PodCounters,
}

fn model() -> Arc<Model> {
    // The wait outlives the workqueue in podq (a process-wide table); here one per execution.
    let wait: &'static FlushWait = Box::leak(Box::default());
    Arc::new(Model {
        flush: Flush::new(wait),
        pod: PodCounters::new(2),
    })
}

/// An execution counted on stripe 0 finishes on stripe 1 while the main thread flushes: the
/// flush returns, and only after the execution finished.
#[test]
fn a_flush_waits_for_an_execution_finishing_on_another_stripe() {
    podq_loom::check(3, || {
        let m = model();
        let colour = m.flush.enter(&m.pod, here::cpu_or_thread());
        let finished = Arc::new(AtomicBool::new(false));
        let finisher = {
            let (m, finished) = (Arc::clone(&m), Arc::clone(&finished));
            thread::spawn(move || {
                here::set(1);
                finished.store(true, Ordering::SeqCst);
                m.flush.leave(&m.pod, colour);
            })
        };
        m.flush.flush(|| std::iter::once(&m.pod));
        assert!(finished.load(Ordering::SeqCst), "flush returned early");
        finisher.join().expect("finisher");
        assert_eq!(m.pod.in_flight(), 0);
    });
}

/// Two executions counted before the flush finish on two threads, one per stripe, while an
/// execution entering during the flush may land in either colour: the flush waits for both
/// earlier ones and is never left asleep, waits for the late one too if it was counted under
/// the flushed colour, and every count comes back to zero.
#[test]
fn a_flush_is_woken_by_the_last_of_two_finishers_while_work_enters() {
    podq_loom::check(2, || {
        let m = model();
        let first = m.flush.enter(&m.pod, here::cpu_or_thread());
        let second = m.flush.enter(&m.pod, here::cpu_or_thread());
        let finished = Arc::new(sync::atomic::AtomicUsize::new(0));
        // The late execution's colour plus one (0: not counted yet), and whether it finished.
        let late_colour = Arc::new(sync::atomic::AtomicUsize::new(0));
        let late_finished = Arc::new(AtomicBool::new(false));
        let threads: Vec<_> = [(0, first), (1, second)]
            .into_iter()
            .map(|(stripe, colour)| {
                let (m, finished) = (Arc::clone(&m), Arc::clone(&finished));
                let (late_colour, late_finished) =
                    (Arc::clone(&late_colour), Arc::clone(&late_finished));
                thread::spawn(move || {
                    here::set(stripe);
                    finished.fetch_add(1, Ordering::SeqCst);
                    m.flush.leave(&m.pod, colour);
                    if stripe == 1 {
                        // New work while the flush may be moving the colour; it finishes at
                        // once and never holds the flush up.
                        let late = m.flush.enter(&m.pod, here::cpu_or_thread());
                        late_colour.store(late + 1, Ordering::SeqCst);
                        late_finished.store(true, Ordering::SeqCst);
                        m.flush.leave(&m.pod, late);
                    }
                })
            })
            .collect();
        m.flush.flush(|| std::iter::once(&m.pod));
        assert_eq!(finished.load(Ordering::SeqCst), 2, "flush returned early");
        // The flush moved the colour from `first`: an execution counted under it is waited for.
        if late_colour.load(Ordering::SeqCst) == first + 1 {
            assert!(
                late_finished.load(Ordering::SeqCst),
                "flush missed a late execution"
            );
        }
        for t in threads {
            t.join().expect("finisher");
        }
        assert_eq!(m.pod.in_flight(), 0);
    });
}

/// A drop's sequence (flush until empty, then wait for announced finishers) against a
/// finisher that may or may not announce itself: it always ends (the announcement is always
/// withdrawn, and the flush is woken either way) with every count at zero. That the pod is not
/// read after the wait is an argument about the code (`pod_ref.rs`), not checked here.
#[test]
fn a_drop_waits_for_finishers_that_announced_themselves() {
    podq_loom::check(3, || {
        let m = model();
        let colour = m.flush.enter(&m.pod, here::cpu_or_thread());
        let finisher = {
            let m = Arc::clone(&m);
            thread::spawn(move || {
                here::set(1);
                m.flush.leave(&m.pod, colour);
            })
        };
        loop {
            m.flush.flush(|| std::iter::once(&m.pod));
            if m.pod.in_flight() == 0 {
                break;
            }
        }
        Flush::wait_for_leavers(std::iter::once(&m.pod));
        assert_eq!(m.pod.in_flight(), 0);
        finisher.join().expect("finisher");
    });
}

/// An execution enters while a flush moves the colour: if it was counted under the colour
/// being flushed, the flush waits for it; otherwise it is in the new colour.
#[test]
fn an_execution_entering_during_a_flush_is_waited_for_or_in_the_new_colour() {
    podq_loom::check(3, || {
        let m = model();
        let counted = Arc::new(sync::atomic::AtomicUsize::new(0));
        let finished = Arc::new(AtomicBool::new(false));
        let enterer = {
            let (m, counted, finished) =
                (Arc::clone(&m), Arc::clone(&counted), Arc::clone(&finished));
            thread::spawn(move || {
                here::set(1);
                let colour = m.flush.enter(&m.pod, here::cpu_or_thread());
                counted.store(colour + 1, Ordering::SeqCst);
                finished.store(true, Ordering::SeqCst);
                m.flush.leave(&m.pod, colour);
            })
        };
        m.flush.flush(|| std::iter::once(&m.pod));
        // The flush moved the colour from 0.
        if counted.load(Ordering::SeqCst) == 1 {
            assert!(finished.load(Ordering::SeqCst), "flush missed an execution");
        }
        enterer.join().expect("enterer");
        assert_eq!(m.pod.in_flight(), 0);
    });
}
