//! What a queued task is and how it is dispatched. [`Task`] (this file) is one queued
//! execution (a one-shot closure, a spawned closure or a [`Work`](crate::Work) item's) with
//! what its workqueue needs to account for it; pools queue and run tasks, and everything about
//! pending state, flush colours, `max_active`, the backlog and statistics happens here when a
//! task runs (E1-E6 of `workqueue/README.md`).
//!
//! This group sits above `item/`, whose words it changes, and below `layout/` and `api/`.
//! Files:
//!
//! * `once_fn.rs`: a task's job packed in one buffer, a small closure kept inline;
//! * `spawned.rs`: a spawned closure as its task holds it (`Job::Spawned`);
//! * `work_item.rs`: a work item's shared part (`Job::Work`), and where a cancel finds its
//!   pending execution;
//! * `shared.rs`: what a task reaches of its workqueue: its shared part and its part for a pod;
//! * `pod_ref.rs`: a task's count in its pod, which holds the pod;
//! * `slots.rs`: the lock-free table of a workqueue's pool sets (and layouts);
//! * `dispatch.rs`: from a queue call to a pool: count, `max_active`, push (Q2-Q5);
//! * `active.rs`: the `max_active` word and FIFO;
//! * `backlog.rs`: the `max_backlog` word;
//! * `timer.rs`: the timer thread of delayed items;
//! * `steering.rs`: a group's state and ticket, and the workqueue's steering counters.

pub(crate) mod active;
pub(crate) mod admission;
pub(crate) mod backlog;
pub(crate) mod dispatch;
pub(crate) mod once_fn;
pub(crate) mod pod_ref;
pub(crate) mod shared;
pub(crate) mod slots;
pub(crate) mod spawned;
pub(crate) mod steering;
pub(crate) mod timer;
pub(crate) mod work_item;

use std::cell::Cell;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::pool::{drop_payload, Runnable};
use crate::workqueue::item::flush::Stripe;
use crate::workqueue::item::state::Start;
use crate::workqueue::task::once_fn::{OnceFn, PackedJob};
use crate::workqueue::task::pod_ref::Counted;
use crate::workqueue::task::spawned::SpawnJob;
use crate::workqueue::task::work_item::WorkInner;

/// What a task runs.
pub(crate) enum Job {
    /// A closure queued with `Workqueue::queue`: runs once, cannot be flushed or cancelled alone.
    Once(OnceFn),
    /// One pending execution of a reusable item; the task owns the item's claim.
    Work(Arc<WorkInner>),
    /// A closure queued with `Workqueue::spawn`, whose outcome goes to its `JoinHandle`.
    Spawned(SpawnJob),
}

impl Job {
    /// A closure queued with `Workqueue::queue`, kept inline when it fits ([`OnceFn`]).
    #[inline]
    pub(crate) fn once(f: impl FnOnce() + Send + 'static) -> Job {
        Job::Once(OnceFn::new(f))
    }
}

/// One queued execution.
///
/// Laid out in declaration order (`repr(C)`, as [`PackedJob`] and [`OnceFn`] are), the job's
/// buffer first: a task's moves on the way from the queue call to its slot then copy the buffer
/// in the aligned 16-byte pieces it was written in. With the compiler's order (the vtable
/// first), each 16-byte load of a move straddled two 8-byte stores made just before, which the
/// CPU cannot forward from its store buffer, and waited for them to reach the cache (what that
/// cost `rpc`: `docs/benchmarks.md`, "Instruction counts").
#[repr(C)]
pub(crate) struct Task {
    /// What to run, packed (`once_fn.rs`): a task is one cache line.
    pub(crate) job: PackedJob,
    /// Where it is counted.
    pub(crate) acct: Acct,
    /// When it was queued, for the run span's queue-to-start time.
    #[cfg(feature = "tracing")]
    pub(crate) queued: crate::trace::Stamp,
}

/// Where an execution is counted: its workqueue's pod, flush colour and `max_active` slot.
pub(crate) struct Acct {
    /// Its count in the pod it was queued to, which also holds that pod (`pod_ref.rs`), and
    /// whether it holds a `max_active` slot (it was activated by a reachable limit).
    pub(crate) counted: Counted,
}

thread_local! {
    /// The id of the workqueue whose item this thread is running (0: none), so that a drain
    /// lets the workqueue's own items queue more work.
    static RUNNING_WQ: Cell<u64> = const { Cell::new(0) };
    /// The address of the `WorkInner` this thread is running (0: none), so that an item's own
    /// `flush` or `cancel_sync` does not wait for itself.
    static RUNNING_ITEM: Cell<usize> = const { Cell::new(0) };
}

/// The id of the workqueue whose item the calling thread runs (0: none).
pub(crate) fn running_wq() -> u64 {
    RUNNING_WQ.with(Cell::get)
}

/// Whether the calling thread is running `item`'s closure.
pub(crate) fn is_running_item(item: &WorkInner) -> bool {
    RUNNING_ITEM.with(Cell::get) == item_addr(item)
}

/// Restores the thread-local markers when a run ends, even by a panic.
struct Marker {
    /// The workqueue id before this run (a task may run inside another's closure in tests).
    wq: u64,
    /// The item address before this run.
    item: usize,
}

impl Marker {
    fn enter(wq: u64, item: usize) -> Marker {
        Marker {
            wq: RUNNING_WQ.with(|c| c.replace(wq)),
            item: RUNNING_ITEM.with(|c| c.replace(item)),
        }
    }
}

impl Drop for Marker {
    fn drop(&mut self) {
        RUNNING_WQ.with(|c| c.set(self.wq));
        RUNNING_ITEM.with(|c| c.set(self.item));
    }
}

impl Task {
    /// E1-E5: runs the execution, catches a panic, and does all accounting (pending
    /// state, flush colour, `max_active`, statistics). Never unwinds.
    pub(crate) fn run(self) {
        #[cfg(feature = "tracing")]
        let _span = {
            let pod = self.acct.counted.pod();
            crate::trace::run_span(&pod.wq.name, pod.index, self.queued)
        };
        let Task { job, acct, .. } = self;
        let job = job.unpack();
        // The run's stripe, read once: its start, its end and its uncounting (E5) go there.
        let at = crate::here::cpu_or_thread();
        let counters = acct.counted.pod().counters.stripe(at);
        let wq_id = acct.counted.pod().wq.id;
        // B3: it waits no more.
        if let Some(backlog) = &acct.counted.pod().wq.backlog {
            backlog.leave();
        }
        // The item's handle is dropped only after the accounting (see `release`).
        let item = match job {
            Job::Once(f) => {
                counters.started.fetch_add(1, Ordering::Relaxed);
                let panicked = {
                    let _marker = Marker::enter(wq_id, 0);
                    ended_in_panic(catch_unwind(AssertUnwindSafe(|| f.call())))
                };
                count_completion(counters, panicked);
                None
            }
            Job::Spawned(job) => {
                counters.started.fetch_add(1, Ordering::Relaxed);
                // The closure, its outcome and the slot are dropped inside the marker, as a
                // one-shot closure is: a drop that lets the workqueue go does not wait for it.
                let _marker = Marker::enter(wq_id, 0);
                if job.run(counters) {
                    acct.counted
                        .pod()
                        .wq
                        .drop_panics
                        .fetch_add(1, Ordering::Relaxed);
                }
                None
            }
            Job::Work(item) => {
                // The execution's group ticket, before the start lets a new claim put the
                // next one (G4); dropped when the run is over (G5).
                let ticket = item.group.take();
                if item.state.start() == Start::Discarded {
                    drop(ticket);
                    counters.cancelled.fetch_add(1, Ordering::Relaxed);
                    release(item, acct, wq_id, at);
                    return;
                }
                if let Some(ticket) = &ticket {
                    ticket.started();
                }
                counters.started.fetch_add(1, Ordering::Relaxed);
                let panicked = {
                    let _marker = Marker::enter(wq_id, item_addr(&item));
                    // Only the runner takes this lock: RUNNING excludes every other runner.
                    let mut func = item.func.lock();
                    ended_in_panic(catch_unwind(AssertUnwindSafe(|| (*func)(&item))))
                };
                count_completion(counters, panicked);
                drop(ticket);
                if let Some(next) = item.state.finish() {
                    // Claimed while this run went on: it goes to the pool its queue call chose.
                    // Nobody else can start it (it is in no queue, and PENDING is ours), so it
                    // goes straight to the pool; this worker takes it next if it is its own.
                    // Its own handle of the workqueue: once pushed, `next` may finish and its
                    // workqueue (not necessarily this one) go before the push returns.
                    let wq = Arc::clone(&next.acct.counted.pod().wq);
                    let (set, pod) = (next.acct.counted.pod().set, next.acct.counted.pod().index);
                    wq.pools
                        .get(set)
                        .expect("a pod's pool set is pushed before the pod")
                        .push_after_run(pod, next);
                }
                Some(item)
            }
        };
        match item {
            Some(item) => release(item, acct, wq_id, at),
            None => acct.retire_at(at),
        }
    }

    /// Whether this task is an execution of the workqueue `id` (for a re-formation).
    pub(crate) fn is_of(&self, id: u64) -> bool {
        self.acct.counted.pod().wq.id == id
    }

    /// Whether this task is an execution of `work` (for cancel).
    pub(crate) fn is_work(&self, work: &Arc<WorkInner>) -> bool {
        self.job.work().is_some_and(|w| Arc::ptr_eq(w, work))
    }

    /// An execution taken out of a queue that will never start (a bounded shutdown's, E7):
    /// counts it as cancelled in its pod, then uncounts it; a work item's claim ends (its group
    /// ticket dropped, G5), a spawned closure's handle gives `Cancelled`, a closure is dropped.
    pub(crate) fn cancel_unstarted(self) {
        self.acct
            .counted
            .pod()
            .counters
            .mine()
            .cancelled
            .fetch_add(1, Ordering::Relaxed);
        if let Some(item) = self.unqueue() {
            drop(item.group.take());
            item.state.release_claim();
        }
    }

    /// Ends the accounting of an execution taken out of a queue without running: frees its
    /// `max_active` slot and uncounts its colour. Returns the item whose claim is now the
    /// caller's (`None` for a one-shot closure, which is dropped).
    pub(crate) fn unqueue(self) -> Option<Arc<WorkInner>> {
        let Task { job, acct, .. } = self;
        // B3: it waits no more.
        if let Some(backlog) = &acct.counted.pod().wq.backlog {
            backlog.leave();
        }
        acct.retire();
        match job.unpack() {
            Job::Once(_) | Job::Spawned(_) => None,
            Job::Work(item) => Some(item),
        }
    }
}

/// Whether a run ended in a panic; drops the panic's payload, containing a panic of the
/// payload's own drop, so that the run's accounting always follows.
fn ended_in_panic(result: std::thread::Result<()>) -> bool {
    match result {
        Ok(()) => false,
        Err(payload) => {
            drop_payload(payload);
            true
        }
    }
}

/// Ends the accounting of an execution of `item` (`acct.retire_at`, on the run's stripe
/// `at`), then drops the task's handle of the item. It may be the last handle (the user let
/// go of the item while it was queued): that drops the user's closure, after the accounting,
/// because the closure may hold the workqueue's last handle, whose drop waits for the
/// workqueue's executions. The drop runs
/// inside the workqueue's marker, so such a drop knows it runs on one of the workqueue's own
/// workers and does not wait for the items behind it (F3). The closure's captures may
/// panic in their drop: the panic hook has reported it, it is caught here so that the worker
/// goes on, and counted in the workqueue's `drop_panics`.
fn release(item: Arc<WorkInner>, acct: Acct, wq_id: u64, at: usize) {
    // Nobody else holds a handle, so nobody can make one: this task drops the closure.
    let wq = (Arc::strong_count(&item) == 1).then(|| Arc::clone(&acct.counted.pod().wq));
    acct.retire_at(at);
    let _marker = Marker::enter(wq_id, 0);
    if let Err(payload) = catch_unwind(AssertUnwindSafe(move || drop(item))) {
        drop_payload(payload);
        if let Some(wq) = wq {
            wq.drop_panics.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The address of an item, as the thread-local marker keeps it.
fn item_addr(item: &WorkInner) -> usize {
    std::ptr::from_ref(item) as usize
}

/// Counts the end of a run, in the stripe the run's start was counted in.
///
/// `completed` before `panicked`, each `Release` (a statistic, so nothing else orders them):
/// a reader that sees a panic counted sees its completion, and one that sees a completion sees
/// its start (see `PodCounters::total`).
pub(crate) fn count_completion(counters: &Stripe, panicked: bool) {
    counters.completed.fetch_add(1, Ordering::Release);
    if panicked {
        counters.panicked.fetch_add(1, Ordering::Release);
    }
}

impl Acct {
    /// Frees the `max_active` slot (activating waiting executions), then uncounts the colour,
    /// last, so that a flush that returns sees everything about this execution done (and the
    /// workqueue may go as soon as it is uncounted).
    pub(crate) fn retire(self) {
        self.retire_at(crate::here::cpu_or_thread());
    }

    /// [`Acct::retire`], uncounting on the stripe for `at` (see `Counted::leave_at`).
    pub(crate) fn retire_at(self, at: usize) {
        let Acct { counted } = self;
        if counted.holds_slot() {
            release_slot(&counted);
        }
        counted.leave_at(at);
    }
}

/// A finished execution that held a `max_active` slot hands it on (Q3). Out of line, so that
/// an execution without a slot, the common case, uncounts without its frame.
#[inline(never)]
fn release_slot(counted: &Counted) {
    let wq = &counted.pod().wq;
    if let Some(active) = &wq.active {
        active.release(|next| dispatch::activate(wq, next));
    }
}

impl Runnable for Task {
    fn run(self) {
        Task::run(self);
    }
}

impl fmt::Debug for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("job", &self.job.kind())
            .field("counted", &self.acct.counted)
            .finish()
    }
}

/// Without the `tracing` feature: its queue-time stamp (8 bytes) is a cost of that opt-in
/// feature.
#[cfg(all(test, not(feature = "tracing")))]
mod tests {
    use super::Task;
    use crate::workqueue::task::once_fn::INLINE_BYTES;

    /// A task is an inline closure, its vtable (which also says the job's kind) and the
    /// accounting's one word: one cache line of a lane's chain; the spinners' mailbox with its
    /// state word fits two lines.
    #[test]
    fn the_pools_task_is_an_inline_closure_and_its_accounting() {
        assert_eq!(std::mem::size_of::<Task>(), INLINE_BYTES + 16);
        assert_eq!(std::mem::size_of::<Task>(), 64);
        assert!(crate::pool::mailbox_size::<Task>() <= 128);
    }
}
