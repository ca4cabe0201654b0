//! [`Work`]: a reusable work item, pending at most once at a time and never running on two
//! workers at once; its flush and cancel (C1-C5 of `workqueue/README.md`).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::workqueue::item::cancel::{self, Waited};
use crate::workqueue::item::state::{self, PENDING, RUNNING};
use crate::workqueue::task;
use crate::workqueue::task::timer;
use crate::workqueue::task::work_item::{self, WorkInner};

/// A reusable work item: a closure that can be queued again and again.
///
/// Clones share the same item. While an item is pending, queueing it again returns `false`
/// (it runs once for both requests; every case of `false` is listed at
/// [`Workqueue::queue_work`](crate::Workqueue::queue_work)). It may be queued while it runs;
/// the new execution then starts when the running one ends, so the closure never runs on two
/// workers at once. An item that queues itself again is made with [`Work::with_self`].
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
pub struct Work {
    /// The shared item.
    pub(crate) inner: Arc<WorkInner>,
}

impl Clone for Work {
    fn clone(&self) -> Work {
        // Relaxed: a count of references, as `Arc`'s own (see `Drop`).
        self.inner.handles.fetch_add(1, Ordering::Relaxed);
        Work {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        // Release: a run that reads the count at zero (`Work::with_self`) sees what the
        // handles did before they went.
        self.inner.handles.fetch_sub(1, Ordering::Release);
    }
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

impl Work {
    /// A new item running `f` each time it is queued.
    pub fn new(mut f: impl FnMut() + Send + 'static) -> Work {
        Work {
            inner: Arc::new(WorkInner::new(move |_: &Arc<WorkInner>| f())),
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
        if task::is_running_item(item) || work_item::stranded(item) {
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
        Flushed {
            item: Arc::clone(item),
            target: cancel::flush_target(&item.state, || skips_flush(item)),
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

/// Waits until the last queueing of `item` has finished (see [`Work::flush`]; C4).
pub(crate) fn flush_item(item: &Arc<WorkInner>) -> bool {
    flush_item_until(item, None) == Waited::Done
}

/// [`flush_item`] giving up at `deadline` (`None`: never).
fn flush_item_until(item: &Arc<WorkInner>, deadline: Option<Instant>) -> Waited {
    cancel::flush_until(&item.state, || skips_flush(item), deadline)
}

/// Whether a flush of `item` waits for nothing although it is pending or running: it is
/// called from the item's own run, or the item is stranded by a fork (K4).
fn skips_flush(item: &WorkInner) -> bool {
    task::is_running_item(item) || work_item::stranded(item)
}

/// Cancels `item` (see [`Work::cancel_sync`]): C1-C5.
fn cancel_item(item: &Arc<WorkInner>) -> bool {
    loop {
        if let Some(was_pending) = cancel_item_until(item, None) {
            return was_pending;
        }
    }
}

/// [`cancel_item`] giving up at `deadline` (`None`: never): `None` when it gave up (see
/// `item::cancel::cancel_until`). An item stranded by a fork (K4) is left as it is.
fn cancel_item_until(item: &Arc<WorkInner>, deadline: Option<Instant>) -> Option<bool> {
    if work_item::stranded(item) {
        return Some(item.state.load() & PENDING != 0);
    }
    let own = task::is_running_item(item);
    cancel::cancel_until(&item.state, own, deadline, || item.take_back())
}
