//! [`DelayedWork`]: a [`Work`] item that is queued after a delay, and the calls that arm it,
//! [`Workqueue::queue_delayed`] and [`Workqueue::mod_delayed`]; the timer thread that queues it
//! when its delay ends is `task/timer.rs`.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::here::Here;
use crate::workqueue::api::work::{self, Work};
use crate::workqueue::api::workqueue::Workqueue;
use crate::workqueue::item::state::{Claim, PENDING};
use crate::workqueue::task::dispatch;
use crate::workqueue::task::timer;
use crate::workqueue::task::work_item::{self, WorkInner};

/// A reusable work item queued after a delay, with [`Workqueue::queue_delayed`] or
/// [`Workqueue::mod_delayed`].
///
/// While it waits for its delay it is pending (queueing it again returns `false`: every case
/// of `false` is listed at [`Workqueue::queue_delayed`] and [`Workqueue::mod_delayed`]). When
/// the delay ends it is queued to the pod of the CPU that armed it. It never runs early.
///
/// ```
/// use std::time::{Duration, Instant};
/// use podq::{DelayedWork, Workqueue};
///
/// let wq = Workqueue::builder("timers").build()?;
/// let armed = Instant::now();
/// let d = DelayedWork::new(move || assert!(armed.elapsed() >= Duration::from_millis(5)));
/// wq.queue_delayed(&d, Duration::from_millis(5));
/// assert!(d.is_pending());
/// d.flush(); // runs it now instead of waiting for the delay
/// assert!(!d.is_pending());
/// # Ok::<(), podq::Error>(())
/// ```
///
/// [`Workqueue::queue_delayed`]: crate::Workqueue::queue_delayed
/// [`Workqueue::mod_delayed`]: crate::Workqueue::mod_delayed
#[derive(Clone)]
pub struct DelayedWork {
    /// The item; its claim is held by the timer while the delay runs.
    pub(crate) work: Work,
}

impl DelayedWork {
    /// A new delayed item running `f` each time it is queued.
    pub fn new(f: impl FnMut() + Send + 'static) -> DelayedWork {
        DelayedWork { work: Work::new(f) }
    }

    /// Whether it waits for its delay, or is queued and has not started.
    pub fn is_pending(&self) -> bool {
        self.work.is_pending()
    }

    /// Whether a worker is running it now.
    pub fn is_running(&self) -> bool {
        self.work.is_running()
    }

    /// Runs it now if it waits for its delay (queued at once, to the pod of the CPU that armed
    /// it), then waits until its last queueing has finished. Returns `false` when there was
    /// nothing to wait for.
    ///
    /// In a child process of `fork()`, an item that was pending or running in the parent when
    /// it forked never runs here: this returns `false` at once.
    pub fn flush(&self) -> bool {
        let item = &self.work.inner;
        if work_item::stranded(item) {
            return false;
        }
        let fired = self.fire_now();
        // A fired item may have run already: there was something to wait for all the same.
        work::flush_item(item) || fired
    }

    /// [`DelayedWork::flush`], waiting at most `timeout`: runs it now if it waits for its
    /// delay, then waits for its last queueing. Returns whether that finished in time: `true`
    /// also when there was nothing to wait for; `false` when `timeout` passed first (the
    /// execution, queued now if it waited for its delay, goes on and finishes normally), when
    /// called from the item's own closure, and in a child process for an item stranded by
    /// `fork()`.
    pub fn flush_timeout(&self, timeout: Duration) -> bool {
        let item = &self.work.inner;
        if work_item::stranded(item) {
            return false;
        }
        self.fire_now();
        self.work.flush_timeout(timeout)
    }

    /// [`DelayedWork::flush`] without a thread blocked on it: runs it now if it waits for its
    /// delay (at this call, not at the first poll), and returns a future that completes when
    /// its last queueing has finished, as [`Work::flushed`].
    pub fn flushed(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        if !work_item::stranded(&self.work.inner) {
            self.fire_now();
        }
        self.work.flushed()
    }

    /// Queues it now if it waits for its delay; returns whether it did.
    fn fire_now(&self) -> bool {
        let item = &self.work.inner;
        if item.state.load() & PENDING != 0 {
            if let Some(key) = item.state.with_extra(|home| home.timer.take()) {
                if let Some(fire) = timer::disarm(key) {
                    fire.fire();
                    return true;
                }
            }
        }
        false
    }

    /// Cancels it, disarming its timer: on return it is neither pending nor running, even if
    /// it re-queues itself. Returns whether it was pending.
    pub fn cancel_sync(&self) -> bool {
        self.work.cancel_sync()
    }

    /// [`DelayedWork::cancel_sync`], waiting at most `timeout`: returns whether it finished in
    /// time, and leaves the item as [`Work::cancel_sync_timeout`] says when it did not (a
    /// timer that was armed is disarmed either way, unless another cancel was in progress).
    pub fn cancel_sync_timeout(&self, timeout: Duration) -> bool {
        self.work.cancel_sync_timeout(timeout)
    }

    /// The item itself, to queue it without delay or to compare it.
    pub fn work(&self) -> &Work {
        &self.work
    }
}

impl fmt::Debug for DelayedWork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayedWork")
            .field("pending", &self.is_pending())
            .field("running", &self.is_running())
            .finish_non_exhaustive()
    }
}

impl Workqueue {
    /// Queues `work` after `delay` (at once for a zero delay), to the pod of the calling
    /// thread's CPU when the delay ends. The work never runs before `delay` has passed.
    ///
    /// Returns `true` when this call armed it. `false` when it did not:
    ///
    /// * `work` was already pending (waiting for its delay, or queued and not started): its
    ///   delay is left as it was (to replace it, see [`Workqueue::mod_delayed`]), and that
    ///   pending execution runs once for both requests;
    /// * a [`DelayedWork::cancel_sync`] of it is in progress: nothing is armed;
    /// * a [`Workqueue::drain`] runs and the caller is not one of this workqueue's own items:
    ///   nothing is armed;
    /// * in a child process of `fork()`, as for [`Workqueue::queue_work`]: nothing is armed.
    pub fn queue_delayed(&self, work: &DelayedWork, delay: Duration) -> bool {
        if self.refused() {
            return false;
        }
        let item = &work.work.inner;
        match item.state.try_claim() {
            Claim::Refused => false,
            Claim::Claimed { running } if work_item::stranded_claim(item, running) => false,
            Claim::Claimed { .. } => {
                self.arm(item, delay);
                true
            }
        }
    }

    /// Sets `work` to run after `delay` from now, whether it was pending or not.
    ///
    /// Returns `true` when it was pending: its old delay is replaced by `delay`. `false` when
    /// it was not:
    ///
    /// * `work` was idle: it is armed as by [`Workqueue::queue_delayed`];
    /// * a [`DelayedWork::cancel_sync`] of it is in progress: nothing is armed;
    /// * a [`Workqueue::drain`] runs and the caller is not one of this workqueue's own items:
    ///   nothing is armed;
    /// * in a child process of `fork()`, as for [`Workqueue::queue_work`]: nothing is armed.
    pub fn mod_delayed(&self, work: &DelayedWork, delay: Duration) -> bool {
        let item = &work.work.inner;
        loop {
            if work_item::canceling(item) || self.refused() || work_item::stranded(item) {
                return false;
            }
            if let Some(grabbed) = item.grab() {
                // The claim is ours again: re-arm it.
                grabbed.unqueue();
                self.arm(item, delay);
                return true;
            }
            match item.state.try_claim() {
                Claim::Claimed { .. } => {
                    self.arm(item, delay);
                    return false;
                }
                // Pending somewhere the grab did not see yet (between two places): retry.
                Claim::Refused => std::thread::yield_now(),
            }
        }
    }

    /// Arms the timer for a claimed delayed item (or queues it now for a zero delay).
    pub(super) fn arm(&self, item: &Arc<WorkInner>, delay: Duration) {
        let here = Here::now();
        let layout = self.layouts.current();
        let pod = &layout.pods[layout.pod_for(here.cpu(), &self.shared.rotation)];
        if delay.is_zero() {
            dispatch::enqueue_claimed(Arc::clone(item), pod, here.index());
            return;
        }
        item.record_home(&self.shared, pod.index);
        let deadline = timer::deadline_after(delay);
        let fire = timer::Armed {
            work: Arc::clone(item),
            pod: Arc::clone(pod),
        };
        // Under the item's lock, so that the key it keeps is never older than the entry.
        item.state
            .with_extra(|home| home.timer = Some(timer::arm(deadline, fire)));
    }
}
