//! A worker that keeps being preempted by the thread that feeds it moves to another CPU of its
//! pool (step W13 of `pool/README.md`).
//!
//! A producer that queues one item and waits for it, on a CPU where a worker of the pool also
//! runs, ping-pongs with that worker: the worker's completion wakes the producer, which
//! preempts the worker at once, re-queues the item (the workqueue hands it to the worker still
//! running it: P2w), and sleeps again. Nothing then reaches the pool's queue, no other worker is
//! woken, and every item costs two context switches on one CPU while the pod's other CPUs may
//! idle. The scheduler does not end it: the worker never sleeps, so it is never placed again
//! at a wake-up, and to the load balancer the pair fits one CPU.
//!
//! The worker sees it from its side: the items it keeps for itself (P2w) come with an
//! involuntary context switch each. Every [`CHECK_EVERY`] such items it reads its count of
//! preemptions (one system call); when at least [`PREEMPTED_OF`] of them were preempted and
//! the pool has room for another worker (one idle, or below its eager size: a CPU of the pod is
//! not used by this pool), it restricts itself to its CPUs less the one it runs on. It takes
//! back its usual CPUs when it is next woken from parking, unless someone else changed its
//! affinity meanwhile (podq never widens a mask it did not set).

use std::cell::RefCell;

use super::Shared;
use crate::cpuset::CpuSet;

/// Items kept for itself (P2w) between two looks at the worker's preemption count.
///
/// 16: a look costs one `getrusage`, 0.43-0.60 us on the 2-CPU test machine (a C loop of
/// 200,000 calls, three times), so 27-38 ns per item kept; a worker caught in the ping-pong,
/// at 9-11 us per item there, moves after 16 to 32 items, 0.15-0.35 ms (the first look only
/// takes the count).
pub(crate) const CHECK_EVERY: u32 = 16;

/// Of the last [`CHECK_EVERY`] items kept, how many must have come with a preemption for the
/// worker to move: 12, three in four. In the ping-pong every item does (one preemption per
/// item, `perf record -e sched:sched_switch` on `podq bench --threads 1`); a worker on a CPU
/// of its own is preempted only by other programs' time slices, milliseconds apart (33 times
/// for 50,000 items in the same trace, once moved).
pub(crate) const PREEMPTED_OF: u64 = 12;

/// What a worker thread keeps to decide whether to move.
#[derive(Debug, Default)]
struct Apart {
    /// Items kept for itself since the last look.
    kept: u32,
    /// The preemption count at the last look.
    preempted: Option<u64>,
    /// Its wake-ups from parking, as last reported by [`woken`].
    wakes: u64,
    /// While it keeps off a CPU: its affinity, and its wake-ups when it moved.
    moved: Option<(Moved, u64)>,
}

/// A worker's affinity while it keeps off a CPU.
#[derive(Debug)]
struct Moved {
    /// What it set.
    to: CpuSet,
    /// What it had before.
    from: CpuSet,
}

thread_local! {
    /// The calling worker's state; unused on other threads.
    static APART: RefCell<Apart> = RefCell::new(Apart::default());
}

/// Called on a worker of `shared`'s pool when it keeps an item re-queued while it ran (P2w):
/// moves the worker to its other CPUs when it keeps being preempted with room in the pool
/// (W13).
pub(super) fn kept<T>(shared: &Shared<T>) {
    APART.with(|apart| {
        let mut apart = apart.borrow_mut();
        apart.kept += 1;
        if apart.kept < CHECK_EVERY {
            return;
        }
        apart.kept = 0;
        let Some(now) = crate::sys::preemptions() else {
            return;
        };
        let Some(before) = apart.preempted.replace(now) else {
            return;
        };
        if apart.moved.is_some() || !ping_pong(now.saturating_sub(before)) {
            return;
        }
        if !shared.core.has_room() {
            return;
        }
        if let Some((moved, _left)) = move_off_this_cpu() {
            apart.moved = Some((moved, apart.wakes));
        }
    });
}

/// Called on a worker after each step of its loop with its count of wake-ups from parking
/// (`WorkerSlot::wakes`): a moved worker woken since it moved takes its usual CPUs back.
pub(super) fn woken(wakes: u64) {
    APART.with(|apart| {
        let mut apart = apart.borrow_mut();
        apart.wakes = wakes;
        match &apart.moved {
            Some((_, at)) if *at != wakes => {}
            _ => return,
        }
        if let Some((moved, _)) = apart.moved.take() {
            move_back(moved);
        }
    });
}

/// Gives the calling thread back the CPUs it had before `moved`, within the CPUs the process
/// may use now, unless its affinity is no longer the one it set (someone else narrowed it).
fn move_back(moved: Moved) {
    let now: Option<CpuSet> = crate::sys::allowed_cpus()
        .ok()
        .map(|cpus| cpus.into_iter().collect());
    if now.as_ref() != Some(&moved.to) {
        return;
    }
    let back = match crate::sys::process_allowed_cpus() {
        Ok(allowed) => moved.from.intersection(&allowed.into_iter().collect()),
        Err(_) => moved.from,
    };
    if !back.is_empty() {
        let ids: Vec<usize> = back.iter().collect();
        // A failure leaves it on the CPUs it moved to, all of them allowed.
        let _ = crate::sys::pin_current_thread(&ids);
    }
}

/// Whether a worker preempted `preempted` times over its last [`CHECK_EVERY`] kept items is
/// in the ping-pong with their producer.
fn ping_pong(preempted: u64) -> bool {
    preempted >= PREEMPTED_OF
}

/// Restricts the calling thread to the CPUs it may use less the one it runs on, within the
/// CPUs the process may use now; returns the new affinity and the CPU it left, or `None` (and
/// nothing changed) when there is no other CPU or the affinity cannot be read or set.
fn move_off_this_cpu() -> Option<(Moved, usize)> {
    let here = crate::sys::current_cpu()?;
    let from: CpuSet = crate::sys::allowed_cpus().ok()?.into_iter().collect();
    let mut to = from.clone();
    if let Ok(allowed) = crate::sys::process_allowed_cpus() {
        to = to.intersection(&allowed.into_iter().collect());
    }
    to.remove(here);
    if to.is_empty() {
        return None;
    }
    let ids: Vec<usize> = to.iter().collect();
    crate::sys::pin_current_thread(&ids).ok()?;
    Some((Moved { to, from }, here))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_preemptions_in_four_kept_items_is_the_ping_pong() {
        assert!(!ping_pong(0));
        assert!(!ping_pong(PREEMPTED_OF - 1));
        assert!(ping_pong(PREEMPTED_OF));
        assert!(ping_pong(u64::from(CHECK_EVERY)));
        assert_eq!(PREEMPTED_OF * 4, u64::from(CHECK_EVERY) * 3);
    }

    /// The calling thread's affinity.
    fn affinity() -> CpuSet {
        crate::sys::allowed_cpus()
            .expect("affinity")
            .into_iter()
            .collect()
    }

    /// Runs `check` on a thread of its own (only that thread's affinity changes), where the
    /// system tells the CPU and the test may use 2 CPUs; says it skipped otherwise.
    fn on_own_thread_with_two_cpus(check: fn()) {
        if crate::sys::current_cpu().is_none() || affinity().len() < 2 {
            eprintln!("skipped: needs a system that tells the CPU, and 2 CPUs to use");
            return;
        }
        std::thread::spawn(check).join().expect("thread");
    }

    #[test]
    fn a_move_leaves_out_the_cpu_it_ran_on_and_is_undone_after() {
        on_own_thread_with_two_cpus(|| {
            let before = affinity();
            let (moved, left) = move_off_this_cpu().expect("another CPU to move to");
            assert!(before.contains(left));
            assert!(!moved.to.contains(left));
            assert_eq!(affinity(), moved.to);
            assert_ne!(crate::sys::current_cpu(), Some(left));
            move_back(moved);
            assert_eq!(affinity(), before);
        });
    }

    #[test]
    fn a_mask_someone_else_set_is_never_widened() {
        on_own_thread_with_two_cpus(|| {
            let (moved, left) = move_off_this_cpu().expect("another CPU to move to");
            // Someone narrows it to the CPU it left, not one it moved to.
            crate::sys::pin_current_thread(&[left]).expect("pin");
            move_back(moved);
            assert_eq!(affinity().iter().collect::<Vec<_>>(), vec![left]);
        });
    }
}
