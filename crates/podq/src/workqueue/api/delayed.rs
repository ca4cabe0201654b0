//! [`DelayedWork`]: a [`Work`] item that is queued after a delay.

use std::fmt;
use std::time::Duration;

use crate::workqueue::item::state::PENDING;
use crate::workqueue::api::work::{self, Work};

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
        if work::stranded(item) {
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
        if work::stranded(item) {
            return false;
        }
        self.fire_now();
        self.work.flush_timeout(timeout)
    }

    /// [`DelayedWork::flush`] without a thread blocked on it: runs it now if it waits for its
    /// delay (at this call, not at the first poll), and returns a future that completes when
    /// its last queueing has finished, as [`Work::flushed`].
    pub fn flushed(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        if !work::stranded(&self.work.inner) {
            self.fire_now();
        }
        self.work.flushed()
    }

    /// Queues it now if it waits for its delay; returns whether it did.
    fn fire_now(&self) -> bool {
        let item = &self.work.inner;
        if item.state.load() & PENDING != 0 {
            if let Some(key) = item.state.with_extra(|home| home.timer.take()) {
                if let Some(fire) = crate::workqueue::task::timer::disarm(key) {
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
