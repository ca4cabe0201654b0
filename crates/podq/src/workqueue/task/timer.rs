//! The timer of delayed work: one thread (`podq/timer`), started by the first workqueue's
//! build ([`ensure`]; see `crate::threads`), with a deadline heap shared by every workqueue.
//!
//! An armed entry owns its item's claim (the item is pending while it waits). When its deadline
//! has passed (checked against `Instant::now()`, so never early), the thread queues the item
//! on its workqueue, to the pod of the CPU that armed it.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use crate::fork::PerFork;
use crate::sync::{Condvar, Mutex};
use crate::threads::{Gate, Helper};

use crate::workqueue::task::dispatch;
use crate::workqueue::task::pod_ref::Counted;
use crate::workqueue::task::shared::PodShared;
use crate::workqueue::task::work_item::WorkInner;

/// Identifies one armed entry: its deadline, then a sequence number for equal deadlines.
pub(crate) type TimerKey = (Instant, u64);

/// An armed delayed execution, waiting in the heap.
pub(crate) struct Armed {
    /// The item; this entry owns its claim.
    pub(crate) work: Arc<WorkInner>,
    /// The workqueue's part for the pod of the CPU the delayed item was issued on.
    pub(crate) pod: Arc<CachePadded<PodShared>>,
}

/// A delayed execution taken out of the heap, already counted in its workqueue's flush colour.
///
/// It is counted while the heap's lock is held, before it leaves the heap, so that a
/// workqueue's drop (which empties the heap of its entries under that lock, then drains) sees
/// an entry that fires concurrently: it is either still in the heap or counted.
pub(crate) struct Fire {
    /// The item; this execution owns its claim.
    work: Arc<WorkInner>,
    /// Its count in the pod of the CPU the delayed item was issued on, which holds that pod.
    pub(crate) counted: Counted,
    /// The CPU (or thread index) of the thread that took it out of the heap, read once: the
    /// stripe it is counted in, and the lane it is pushed to if it fires.
    at: usize,
}

impl Armed {
    /// Counts the execution in its workqueue's flush colour (Q2), in its current layout
    /// (R5); called under the heap's lock as the entry leaves the heap.
    fn take(self) -> Fire {
        let Armed { work, pod } = self;
        let at = crate::here::cpu_or_thread();
        let counted = match pod.wq.layouts.get().and_then(Weak::upgrade) {
            Some(layouts) => layouts.enter_current(&pod, at),
            None => Counted::enter(&pod, at),
        };
        Fire { work, counted, at }
    }
}

impl Fire {
    /// Queues the execution now, on its workqueue, to the pod of the CPU that armed it.
    pub(crate) fn fire(self) {
        let Fire { work, counted, at } = self;
        dispatch::enqueue_counted(work, counted, at);
    }

    /// Drops the execution without running (cancel, `mod_delayed`): uncounts its colour
    /// (E5). The claim stays with the caller.
    pub(crate) fn discard(self) {
        drop(self.counted);
    }
}

/// The entries, by deadline.
#[derive(Default)]
struct Heap {
    /// L: armed entries, earliest first.
    entries: BTreeMap<TimerKey, Armed>,
    /// L: the next sequence number.
    next: u64,
}

/// The timer thread's shared state.
#[derive(Default)]
struct Timer {
    /// The entries.
    heap: Mutex<Heap>,
    /// Signalled when an entry becomes the earliest.
    wake: Condvar,
    /// Its thread, started at a workqueue's build.
    thread: Helper,
}

/// The process-wide timer. Its thread was started when the first workqueue was built; should
/// it not run (the OS refused it to a build, which then failed, and a delayed item is armed on
/// a workqueue built before), every use tries again: entries wait in the heap meanwhile,
/// nothing armed is lost, and `DelayedWork::flush` or `cancel_sync` still reach it.
fn timer() -> &'static Timer {
    let timer = TIMER.get(Timer::default);
    drop(ensure_thread(timer, None));
    timer
}

/// Starts the timer's thread unless it runs (at a workqueue's build), through `gate`.
///
/// # Errors
///
/// The gate's or the OS's refusal.
pub(crate) fn ensure(gate: Option<&Gate>) -> std::io::Result<()> {
    ensure_thread(TIMER.get(Timer::default), gate)
}

fn ensure_thread(timer: &'static Timer, gate: Option<&Gate>) -> std::io::Result<()> {
    // On the process's CPUs, not the pin of whichever thread first needed it.
    timer.thread.ensure("podq/timer", gate, move || run(timer))
}

/// The timer thread: fires every entry whose deadline has passed, sleeps until the next one.
fn run(timer: &'static Timer) {
    let mut heap = timer.heap.lock();
    loop {
        let now = Instant::now();
        let first = heap.entries.first_key_value().map(|(key, _)| *key);
        match first {
            // Never early: the deadline is compared with the clock, not with a wake-up.
            Some(key) if key.0 <= now => {
                if let Some(fire) = heap.entries.remove(&key).map(Armed::take) {
                    drop(heap);
                    fire.fire();
                    heap = timer.heap.lock();
                }
            }
            Some(key) => heap = timer.wake.wait_timeout(heap, key.0 - now).0,
            None => heap = timer.wake.wait(heap),
        }
    }
}

/// The deadline `delay` from now. A delay past the end of the clock (`Instant + delay`
/// overflows) becomes the farthest deadline the clock holds within about 136 years: it never
/// fires early, and in practice only a flush, cancel or the workqueue's drop queues it.
pub(crate) fn deadline_after(delay: Duration) -> Instant {
    let now = Instant::now();
    if let Some(deadline) = now.checked_add(delay) {
        return deadline;
    }
    let mut far = Duration::from_secs(u64::from(u32::MAX));
    loop {
        // Ends: `far` halves down to zero, and `now + 0` always fits.
        if let Some(deadline) = now.checked_add(far.min(delay)) {
            return deadline;
        }
        far /= 2;
    }
}

/// Arms `fire` for `deadline`. Returns its key, for [`disarm`].
pub(crate) fn arm(deadline: Instant, fire: Armed) -> TimerKey {
    let timer = timer();
    let mut heap = timer.heap.lock();
    let key = (deadline, heap.next);
    heap.next += 1;
    let earliest = heap.entries.first_key_value().is_none_or(|(k, _)| key < *k);
    heap.entries.insert(key, fire);
    if earliest {
        timer.wake.notify_one();
    }
    key
}

/// Takes the entry `key` out before it fires; `None` when it has fired (or was taken).
pub(crate) fn disarm(key: TimerKey) -> Option<Fire> {
    timer().heap.lock().entries.remove(&key).map(Armed::take)
}

/// Takes out every entry of the workqueue `wq_id` (for its teardown).
pub(crate) fn take_for(wq_id: u64) -> Vec<Fire> {
    let Some(timer) = started() else {
        return Vec::new();
    };
    let mut heap = timer.heap.lock();
    let keys: Vec<TimerKey> = heap
        .entries
        .iter()
        .filter(|(_, f)| f.pod.wq.id == wq_id)
        .map(|(k, _)| *k)
        .collect();
    keys.iter()
        .filter_map(|k| heap.entries.remove(k).map(Armed::take))
        .collect()
}

/// The timer, if it was started in this process (teardown does not start it).
fn started() -> Option<&'static Timer> {
    TIMER.built()
}

/// The process-wide timer: leaked on purpose, its thread lives as long as the process. One per
/// fork generation (`fork.rs`): a child of `fork()` starts its own timer and thread, and never
/// takes the parent's heap lock, which the parent's timer thread may have held.
static TIMER: PerFork<Timer> = PerFork::new();
