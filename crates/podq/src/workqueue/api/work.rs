//! [`Work`]: a reusable work item, pending at most once at a time and never running on two
//! workers at once.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::workqueue::item::state::{self, ItemState, CANCELING, PENDING, RUNNING};
use crate::workqueue::task::{self, Task};

use crate::workqueue::item::group_slot::GroupSlot;
use crate::workqueue::task::steering::Ticket;
use crate::workqueue::task::timer::{self, Fire, TimerKey};
use crate::workqueue::WqShared;
use crate::fork;
use crate::sync::Mutex;

/// A reusable work item: a closure that can be queued again and again.
///
/// Clones share the same item. While an item is pending, queueing it again returns `false`
/// (it runs once for both requests; every case of `false` is listed at
/// [`Workqueue::queue_work`](crate::Workqueue::queue_work)). It may be queued while it runs;
/// the new execution then starts when the running one ends, so the closure never runs on two
/// workers at once.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// use podq::{Work, Workqueue};
///
/// let wq = Workqueue::builder("example").build()?;
/// let runs = Arc::new(AtomicUsize::new(0));
/// let counter = Arc::clone(&runs);
/// let work = Work::new(move || {
///     counter.fetch_add(1, Ordering::Relaxed);
/// });
/// wq.queue_work(&work);
/// work.flush();
/// assert_eq!(runs.load(Ordering::Relaxed), 1);
/// # Ok::<(), podq::Error>(())
/// ```
#[derive(Clone)]
pub struct Work {
    /// The shared item.
    pub(crate) inner: Arc<WorkInner>,
}

/// The shared part of a [`Work`].
pub(crate) struct WorkInner {
    /// Pending/running/canceling, the deferred execution, and where it was queued.
    pub(crate) state: ItemState<Task, Home>,
    /// A: id of the workqueue this item was last queued on (0: never); written only by the
    /// owner of a claim. Relaxed: a hint checked again under `state`'s lock.
    home_id: AtomicU64,
    /// A: pod it was last queued to; a hint for cancel, which falls back to every pool.
    home_pod: AtomicUsize,
    /// The closure; locked only by the one worker running the item.
    pub(crate) func: Mutex<Box<dyn FnMut() + Send + 'static>>,
    /// The group ticket of the pending execution, when a group queued it (`steering.rs`, G4).
    pub(crate) group: GroupSlot<Ticket>,
}

/// What [`Work::flushed`] returns.
struct Flushed {
    /// The item.
    item: Arc<WorkInner>,
    /// The generation to wait for; `None`: nothing to wait for.
    target: Option<u64>,
}

impl Future for Flushed {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match self.target {
            Some(target)
                if !self
                    .item
                    .state
                    .poll_until(|s| state::flushed(s, target), cx.waker()) =>
            {
                Poll::Pending
            }
            _ => Poll::Ready(()),
        }
    }
}

/// Where a pending item can be found, kept under the item's lock.
#[derive(Default)]
pub(crate) struct Home {
    /// The workqueue it was last queued on.
    wq: Weak<WqShared>,
    /// The timer entry of a pending delayed execution.
    pub(crate) timer: Option<TimerKey>,
}

/// A pending execution taken back out of wherever it waited; its claim is the holder's.
pub(crate) enum Grabbed {
    /// From a pool's queue, a `max_active` FIFO or the item's runner.
    Task(Task),
    /// From the timer: counted in its colour, holding no `max_active` slot.
    Timer(Fire),
}

impl Work {
    /// A new item running `f` each time it is queued.
    pub fn new(f: impl FnMut() + Send + 'static) -> Work {
        Work {
            inner: Arc::new(WorkInner {
                state: ItemState::default(),
                home_id: AtomicU64::new(0),
                home_pod: AtomicUsize::new(0),
                func: Mutex::new(Box::new(f)),
                group: GroupSlot::new(),
            }),
        }
    }

    /// Whether the item is queued (or waiting for its delay, or for a `max_active` slot) and
    /// has not started yet.
    pub fn is_pending(&self) -> bool {
        self.inner.state.load() & PENDING != 0
    }

    /// Whether a worker is running the item now.
    pub fn is_running(&self) -> bool {
        self.inner.state.load() & RUNNING != 0
    }

    /// Waits until the last queueing of this item has finished running. Returns `false` when
    /// there was nothing to wait for (the item was neither pending nor running).
    ///
    /// Called from the item's own closure, it returns `false` at once: the item cannot wait
    /// for itself. As with the kernel's `flush_work`, a work item must not flush an item that
    /// waits behind it on an ordered workqueue (`max_active` 1), or on a pool whose workers
    /// are all busy and may not grow (`max_workers` reached, one worker): the flushed item
    /// can only start after the caller returns, so the flush waits forever.
    ///
    /// In a child process of `fork()`, an item that was pending or running in the parent when
    /// it forked never runs here: this returns `false` at once.
    pub fn flush(&self) -> bool {
        flush_item(&self.inner)
    }

    /// Cancels the item: on return it is neither pending nor running, even if it re-queues
    /// itself. Returns whether it was pending (that execution will not run).
    ///
    /// While the cancel is in progress, queueing the item fails. Called from the item's own
    /// closure, it cancels a pending re-queue but does not wait for the running call (itself).
    ///
    /// In a child process of `fork()`, an item that was pending or running in the parent when
    /// it forked never runs here; this returns at once (whether it was pending) and leaves the
    /// item as the fork found it, so it cannot be queued again in the child.
    pub fn cancel_sync(&self) -> bool {
        cancel_item(&self.inner)
    }

    /// [`Work::flush`], waiting at most `timeout`. Returns whether the last queueing of the
    /// item has finished: `true` also when there was nothing to wait for; `false` when
    /// `timeout` passed first (the execution goes on and finishes normally), when called from
    /// the item's own closure, and in a child process for an item stranded by `fork()` (as
    /// [`Work::flush`], at once).
    pub fn flush_timeout(&self, timeout: Duration) -> bool {
        let item = &self.inner;
        if task::is_running_item(item) || stranded(item) {
            return false;
        }
        flush_item_until(item, Some(timer::deadline_after(timeout))) != Waited::TimedOut
    }

    /// [`Work::cancel_sync`], waiting at most `timeout`. Returns whether the cancel finished in
    /// time: then the item is neither pending nor running, as after [`Work::cancel_sync`].
    ///
    /// When `timeout` passes first it returns `false` and changes this much:
    ///
    /// * if another cancel of the item was still in progress, nothing: this one never began;
    /// * otherwise the item is not pending (the execution that was pending is discarded and
    ///   never runs), and the cancel has ended: the execution running at the call goes on and
    ///   finishes normally, and, as any running item, it may queue the item again.
    ///
    /// Called from the item's own closure it cancels a pending re-queue and does not wait for
    /// the running call, as [`Work::cancel_sync`].
    pub fn cancel_sync_timeout(&self, timeout: Duration) -> bool {
        cancel_item_until(&self.inner, Some(timer::deadline_after(timeout))).is_some()
    }

    /// A future that completes when the last queueing of this item, as of this call, has
    /// finished running: what [`Work::flush`] waits for, without a thread blocked on it. It
    /// completes at once where [`Work::flush`] returns `false` at once (nothing pending or
    /// running, called from the item's own closure, or an item stranded by `fork()`).
    ///
    /// ```
    /// use podq::{Work, Workqueue};
    ///
    /// let wq = Workqueue::builder("flushed").build()?;
    /// let w = Work::new(|| {});
    /// wq.queue_work(&w);
    /// futures_executor::block_on(w.flushed());
    /// assert!(!w.is_pending() && !w.is_running());
    /// # Ok::<(), podq::Error>(())
    /// ```
    pub fn flushed(&self) -> impl Future<Output = ()> + Send + 'static {
        let item = &self.inner;
        let s = item.state.load();
        let target =
            (s & (PENDING | RUNNING) != 0 && !task::is_running_item(item) && !stranded(item))
                .then(|| state::generation(s));
        Flushed {
            item: Arc::clone(item),
            target,
        }
    }

    /// Whether `self` and `other` are the same item.
    pub fn ptr_eq(&self, other: &Work) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl fmt::Debug for Work {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Work")
            .field("pending", &self.is_pending())
            .field("running", &self.is_running())
            .finish_non_exhaustive()
    }
}

impl WorkInner {
    /// Records where the owner of a claim queues the item, for cancel to find it.
    pub(crate) fn record_home(&self, wq: &Arc<WqShared>, pod: usize) {
        self.home_pod.store(pod, Ordering::Relaxed);
        if self.home_id.load(Ordering::Relaxed) != wq.id {
            self.state.with_extra(|home| home.wq = Arc::downgrade(wq));
            self.home_id.store(wq.id, Ordering::Relaxed);
        }
    }

    /// C2: takes the pending execution back from wherever it waits: the runner's hand,
    /// the timer, the `max_active` FIFO or a pool's queue. `None` when it is not in any of them
    /// (nothing pending, or it is moving between two of them).
    pub(crate) fn grab(self: &Arc<Self>) -> Option<Grabbed> {
        if let Some(task) = self.state.take_deferred() {
            return Some(Grabbed::Task(task));
        }
        if let Some(key) = self.state.with_extra(|home| home.timer.take()) {
            if let Some(fire) = timer::disarm(key) {
                return Some(Grabbed::Timer(fire));
            }
        }
        let wq = self.state.with_extra(|home| home.wq.upgrade())?;
        if let Some(active) = &wq.active {
            if let Some(task) = active.remove_if(|t| t.is_work(self)) {
                return Some(Grabbed::Task(task));
            }
        }
        // In the pool sets of every layout, the newest first: the hint is a pod of the one the
        // item was last queued in.
        let hint = self.home_pod.load(Ordering::Relaxed);
        let sets: Vec<_> = wq.pools.iter().collect();
        sets.iter()
            .rev()
            .find_map(|pools| pools.remove_if(hint, |t| t.is_work(self)))
            .map(Grabbed::Task)
    }
}

impl Grabbed {
    /// Uncounts the execution from its workqueue; the claim stays with the caller.
    pub(crate) fn unqueue(self) {
        match self {
            Grabbed::Task(task) => drop(task.unqueue()),
            Grabbed::Timer(fire) => fire.discard(),
        }
    }

    /// Counts the execution as cancelled in its pod, then uncounts it as
    /// [`Grabbed::unqueue`] does. In that order: once uncounted, its workqueue may go.
    pub(crate) fn cancel(self) {
        let counted = match &self {
            Grabbed::Task(task) => &task.acct.counted,
            Grabbed::Timer(fire) => &fire.counted,
        };
        counted
            .pod()
            .counters
            .mine()
            .cancelled
            .fetch_add(1, Ordering::Relaxed);
        self.unqueue();
    }
}

/// Whether `item` is pending or running on a workqueue of a parent process (K4 of `README.md`):
/// that execution never runs here.
///
/// The item's last workqueue is written by the owner of a claim after it claims, so a first
/// queueing in the child may be seen as the parent's for a moment: a flush or cancel that
/// reads that moment is one made before that queue call returned, and answers as if it came
/// first.
pub(crate) fn stranded(item: &WorkInner) -> bool {
    if item.state.load() & (PENDING | RUNNING) == 0 {
        return false;
    }
    let id = item.home_id.load(Ordering::Relaxed);
    id != 0 && fork::is_foreign(id)
}

/// Whether a claim just made on `item`, which found it `running`, must be given back: the run
/// is a parent process's (K4), whose runner is not here to take the deferred execution.
/// Then the claim is released. Only a claim on a running item looks further than `running`.
pub(crate) fn stranded_claim(item: &WorkInner, running: bool) -> bool {
    if running && stranded(item) {
        item.state.release_claim();
        return true;
    }
    false
}

/// Waits until the last queueing of `item` has finished (see [`Work::flush`]; C4).
pub(crate) fn flush_item(item: &Arc<WorkInner>) -> bool {
    flush_item_until(item, None) == Waited::Done
}

/// What a wait with a deadline came to.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Waited {
    /// There was nothing to wait for (see [`Work::flush`]'s `false`).
    Nothing,
    /// It waited, and what it waited for happened.
    Done,
    /// The deadline passed first.
    TimedOut,
}

/// [`flush_item`] giving up at `deadline` (`None`: never).
pub(crate) fn flush_item_until(item: &Arc<WorkInner>, deadline: Option<Instant>) -> Waited {
    let s = item.state.load();
    if s & (PENDING | RUNNING) == 0 || task::is_running_item(item) || stranded(item) {
        return Waited::Nothing;
    }
    let target = state::generation(s);
    if item
        .state
        .wait_until_deadline(|now| state::flushed(now, target), deadline)
    {
        Waited::Done
    } else {
        Waited::TimedOut
    }
}

/// Cancels `item` (see [`Work::cancel_sync`]): C1-C5.
pub(crate) fn cancel_item(item: &Arc<WorkInner>) -> bool {
    loop {
        if let Some(was_pending) = cancel_item_until(item, None) {
            return was_pending;
        }
    }
}

/// [`cancel_item`] giving up at `deadline` (`None`: never): `None` when it gave up. It gives
/// up only while it waits: for another cancel of the item to end (then nothing changed), or
/// for the running execution to end (then the pending one is cancelled already, and the cancel
/// ends: the running execution finishes normally).
pub(crate) fn cancel_item_until(item: &Arc<WorkInner>, deadline: Option<Instant>) -> Option<bool> {
    if stranded(item) {
        return Some(item.state.load() & PENDING != 0);
    }
    let own = task::is_running_item(item);
    let before = if own {
        match item.state.begin_cancel_or_join() {
            Ok(before) => before,
            Err(now) => {
                // Another cancel is in progress and waits for this very run: it discards the
                // pending execution (claims fail meanwhile); waiting for it would deadlock.
                // Wait only until nothing is pending, as a cancel from here does.
                if !item
                    .state
                    .wait_until_deadline(|s| s & PENDING == 0, deadline)
                {
                    return None;
                }
                return Some(now & PENDING != 0);
            }
        }
    } else {
        item.state.begin_cancel_until(deadline)?
    };
    // With CANCELING set no claim succeeds, and a worker that pops the pending execution
    // discards it: the execution pending at `before` never runs.
    while item.state.load() & PENDING != 0 {
        match item.grab() {
            Some(grabbed) => {
                grabbed.cancel();
                // The cancelled execution's group ticket, if a group queued it (G5).
                drop(item.group.take());
                item.state.release_claim();
            }
            // Between two places (a queuer about to push, a worker about to start): short.
            None => std::thread::yield_now(),
        }
    }
    let idle = own
        || item
            .state
            .wait_until_deadline(|s| s & (PENDING | RUNNING) == 0, deadline);
    item.state.end_cancel();
    idle.then_some(before & PENDING != 0)
}

/// Whether a cancel of `item` is in progress.
pub(crate) fn canceling(item: &WorkInner) -> bool {
    item.state.load() & CANCELING != 0
}
