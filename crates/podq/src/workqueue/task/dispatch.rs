//! The way from a queue call to a pool: an execution is counted in its pod's flush colour,
//! passes `max_active`, and is pushed to its pod's pool, or handed to the worker that runs its
//! item (Q2, Q3 and Q5 of `workqueue/README.md`).

use std::sync::Arc;

use crossbeam_utils::CachePadded;

use crate::here;
use crate::workqueue::item::state::RUNNING;
use crate::workqueue::task::once_fn::PackedJob;
use crate::workqueue::task::pod_ref::Counted;
use crate::workqueue::task::shared::{PodShared, WqShared};
use crate::workqueue::task::work_item::WorkInner;
use crate::workqueue::task::{Acct, Job, Task};

/// Counts a new execution in the pod that `pick` chooses (in the current layout: the caller
/// reads it), and sends it through `max_active` to its pool (Q2, Q3 and R3). `pick` is asked
/// again when the epoch moved while the execution was counted (`Counted::enter_with`).
///
/// `wq` is the pods' workqueue, passed borrowed so that the hot path writes no
/// workqueue-wide reference count, and the pod is held by the count alone (`pod_ref.rs`).
#[inline]
pub(crate) fn submit<'p>(
    wq: &WqShared,
    pick: impl FnMut() -> &'p Arc<CachePadded<PodShared>>,
    job: Job,
    at: usize,
) {
    let counted = Counted::enter_with(&wq.flush, at, pick);
    submit_counted(wq, counted, job, at);
}

/// Counts a new execution in `pod` (of any layout of its workqueue) and sends it on, as
/// [`submit`] does.
#[inline]
fn submit_to(wq: &WqShared, pod: &Arc<CachePadded<PodShared>>, job: Job, at: usize) {
    submit_counted(wq, Counted::enter(pod, at), job, at);
}

/// Sends an execution already counted through `max_active` to its pool (Q3), from `at`
/// (the pushing thread's CPU or thread index).
#[inline]
fn submit_counted(wq: &WqShared, counted: Counted, job: Job, at: usize) {
    if wq.active.is_none() && !matches!(job, Job::Work(_)) {
        // A closure, queued or spawned: no `max_active` to pass and no item to defer to
        // (Q5), so the task is built where it goes to its pool, and moves once less.
        to_pool(
            wq,
            Task {
                job: PackedJob::pack(job),
                acct: Acct { counted },
                #[cfg(feature = "tracing")]
                queued: crate::trace::Stamp::now(),
            },
            at,
            true,
        );
        return;
    }
    let task = Task {
        job: PackedJob::pack(job),
        acct: Acct { counted },
        #[cfg(feature = "tracing")]
        queued: crate::trace::Stamp::now(),
    };
    match &wq.active {
        None => dispatch(wq, task, at, true),
        Some(active) => active.admit(task, |next| activate_at(wq, next, at)),
    }
}

/// Queues an item whose claim the caller owns (a zero delay) to `pod`, from `at`.
pub(crate) fn enqueue_claimed(item: Arc<WorkInner>, pod: &Arc<CachePadded<PodShared>>, at: usize) {
    item.record_home(&pod.wq, pod.index);
    force_room(&pod.wq);
    submit_to(&pod.wq, pod, Job::Work(item), at);
}

/// Queues an item whose claim the caller owns and whose execution is already counted (a fired
/// timer) to its pod, from `at` (the CPU it was counted on).
pub(crate) fn enqueue_counted(item: Arc<WorkInner>, counted: Counted, at: usize) {
    // Its own handle: once pushed, the execution may finish and the workqueue go before the
    // push returns.
    let wq = Arc::clone(&counted.pod().wq);
    item.record_home(&wq, counted.pod().index);
    force_room(&wq);
    submit_counted(&wq, counted, Job::Work(item), at);
}

/// An execution got a `max_active` slot from a finishing one: it holds it until it finishes,
/// and the finishing thread pushes it from its own CPU.
pub(crate) fn activate(wq: &WqShared, task: Task) {
    activate_at(wq, task, here::cpu_or_thread());
}

/// An execution got a `max_active` slot, and is pushed from `at`.
fn activate_at(wq: &WqShared, mut task: Task, at: usize) {
    task.acct.counted.hold_slot();
    dispatch(wq, task, at, false);
}

/// Pushes an execution to its pool from `at`, or hands it to the worker running its item
/// (Q5). With `hold` (the execution holds no `max_active` slot, so ordered workqueues and
/// `max_active` never see it), a push from a running item to its own pool is held by that
/// item's worker, which runs it next (H2 of `pool/README.md`).
#[inline]
fn dispatch(wq: &WqShared, task: Task, at: usize, hold: bool) {
    let task = match task.job.work() {
        Some(item) if item.state.load() & RUNNING != 0 => {
            let item = Arc::clone(item);
            match item.state.defer(task) {
                None => return,
                Some(task) => task,
            }
        }
        _ => task,
    };
    to_pool(wq, task, at, hold);
}

/// Pushes an execution that its item does not defer to its pool from `at`, or to the held
/// slot of the pool's worker that runs the calling task (see [`dispatch`]).
#[inline(always)]
fn to_pool(wq: &WqShared, task: Task, at: usize, hold: bool) {
    let (set, index) = {
        let pod = task.acct.counted.pod();
        (pod.set, pod.index)
    };
    let pools = wq
        .pools
        .get(set)
        .expect("a pod's pool set is pushed before the pod");
    match hold.then(|| pools.held_slot_here(index)).flatten() {
        Some(slot) => pools.push_held(index, slot, task, at),
        None => pools.push(index, task, at),
    }
}

/// B1 for an execution that never waits for room (a delayed item whose delay ended, or
/// armed with none): counted in the backlog, over the limit if need be.
fn force_room(wq: &WqShared) {
    if let Some(backlog) = &wq.backlog {
        backlog.force();
    }
}
