//! Results: [`Workqueue::spawn`] queues a closure that returns a value, and its
//! [`JoinHandle`] gives the value back, by blocking ([`JoinHandle::join`]) or as a
//! [`Future`] from any executor.
//!
//! A spawned execution is one allocation: the closure and its outcome share one [`OneShot`]
//! slot (`oneshot.rs`, J1-J4 of `workqueue/README.md`), which the handle and the queued task
//! both hold; the task knows it as `task::spawned::Spawned`. The task runs it as the
//! workqueue runs a one-shot closure (same accounting, same panic counting), then puts the
//! outcome in; a task dropped unrun (refused, or never run) puts [`JoinError::Cancelled`] in.

use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use crate::here::Here;
use crate::pool::drop_payload;
use crate::workqueue::api::oneshot::OneShot;
use crate::workqueue::api::try_error::TryQueueError;
use crate::workqueue::api::workqueue::Workqueue;
use crate::workqueue::item::flush::Stripe;
use crate::workqueue::item::state;
use crate::workqueue::task::spawned::{SpawnJob, Spawned};
use crate::workqueue::task::{self, Job};

/// Why a [`JoinHandle`] has no value.
///
/// It is `Send + Sync + 'static`, so `?` takes it into `Box<dyn Error + Send + Sync>` or
/// `anyhow::Error`; [`JoinError::into_panic`] gives a panic's payload back for
/// [`std::panic::resume_unwind`].
#[non_exhaustive]
pub enum JoinError {
    /// The closure panicked; this holds the panic's payload and message. The panic is also
    /// counted in the workqueue's statistics, as for any item.
    Panicked(Panic),
    /// The closure was dropped without running: the workqueue refused it (a drain in
    /// progress, or a workqueue built by the parent process of a `fork()`).
    Cancelled,
}

/// A spawned closure's panic: its payload (as [`std::panic::catch_unwind`] gives it: `&str`
/// or `String` for `panic!` with a message) and that message.
///
/// The payload is only `Send`; it is kept behind a lock that only
/// [`Panic::into_payload`] takes, by value, so that the error is `Sync` too.
pub struct Panic {
    /// The payload's message, when it is a `&str` or a `String`.
    message: Option<Cow<'static, str>>,
    /// The payload.
    payload: Mutex<Box<dyn Any + Send + 'static>>,
}

impl Panic {
    /// A panic of `payload`.
    pub(crate) fn new(payload: Box<dyn Any + Send + 'static>) -> Panic {
        let message = match payload.downcast_ref::<&'static str>() {
            Some(s) => Some(Cow::Borrowed(*s)),
            None => payload.downcast_ref::<String>().cloned().map(Cow::Owned),
        };
        Panic {
            message,
            payload: Mutex::new(payload),
        }
    }

    /// The panic's message, when its payload is a `&str` or a `String`.
    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }

    /// The payload, to resume the panic with [`std::panic::resume_unwind`] or to downcast.
    pub fn into_payload(self) -> Box<dyn Any + Send + 'static> {
        self.payload
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for Panic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Panic")
            .field(&self.message().unwrap_or("<non-string payload>"))
            .finish()
    }
}

impl JoinError {
    /// Whether the closure panicked.
    pub fn is_panic(&self) -> bool {
        matches!(self, JoinError::Panicked(_))
    }

    /// Whether the closure was dropped without running.
    pub fn is_cancelled(&self) -> bool {
        matches!(self, JoinError::Cancelled)
    }

    /// The panic's message, when the payload is a `&str` or a `String`.
    pub fn panic_message(&self) -> Option<&str> {
        match self {
            JoinError::Panicked(p) => p.message(),
            JoinError::Cancelled => None,
        }
    }

    /// The panic's payload, to resume it on this thread with [`std::panic::resume_unwind`].
    ///
    /// # Panics
    ///
    /// When the closure did not panic ([`JoinError::Cancelled`]); see
    /// [`JoinError::try_into_panic`].
    ///
    /// ```
    /// use podq::Workqueue;
    ///
    /// let wq = Workqueue::builder("resume").build()?;
    /// let err = wq.spawn(|| panic!("deep")).join().unwrap_err();
    /// let caught = std::panic::catch_unwind(|| std::panic::resume_unwind(err.into_panic()));
    /// assert_eq!(*caught.unwrap_err().downcast::<&str>().unwrap(), "deep");
    /// # Ok::<(), podq::Error>(())
    /// ```
    #[track_caller]
    pub fn into_panic(self) -> Box<dyn Any + Send + 'static> {
        self.try_into_panic()
            .expect("JoinError::into_panic of a closure that did not panic")
    }

    /// The panic's payload, or the error itself when the closure did not panic.
    ///
    /// # Errors
    ///
    /// `self` when it is [`JoinError::Cancelled`].
    pub fn try_into_panic(self) -> Result<Box<dyn Any + Send + 'static>, JoinError> {
        match self {
            JoinError::Panicked(p) => Ok(p.into_payload()),
            other => Err(other),
        }
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JoinError::Panicked(_) => f
                .debug_tuple("Panicked")
                .field(&self.panic_message().unwrap_or("<non-string payload>"))
                .finish(),
            JoinError::Cancelled => f.write_str("Cancelled"),
        }
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self, self.panic_message()) {
            (JoinError::Panicked(_), Some(msg)) => write!(f, "the spawned closure panicked: {msg}"),
            (JoinError::Panicked(_), None) => f.write_str("the spawned closure panicked"),
            (JoinError::Cancelled, _) => f.write_str("the spawned closure was dropped unrun"),
        }
    }
}

impl std::error::Error for JoinError {}

/// What a spawned closure ends with.
type Outcome<T> = Result<T, JoinError>;

/// The handle of a closure queued with [`Workqueue::spawn`]: its value, once it has run.
///
/// [`JoinHandle::join`] blocks the calling thread; the handle is also a [`Future`] with the same
/// output, which any executor can await (it keeps the waker of its last poll and wakes it from
/// the worker that finishes the closure). Dropping the handle does not cancel the closure: it
/// still runs, and its value is dropped on the worker.
///
/// ```
/// use podq::{JoinError, Workqueue};
///
/// let wq = Workqueue::builder("sum").build()?;
/// let sum = wq.spawn(|| (1..=10u64).sum::<u64>());
/// assert_eq!(sum.join().unwrap(), 55);
///
/// let oops = wq.spawn(|| -> u64 { panic!("no value") });
/// assert!(matches!(oops.join(), Err(JoinError::Panicked(_))));
/// # Ok::<(), podq::Error>(())
/// ```
#[must_use = "dropping a JoinHandle lets the closure run but loses its value"]
pub struct JoinHandle<T> {
    /// The slot shared with the queued task.
    cell: Arc<dyn Joinable<T>>,
    /// The outcome was taken: the drop has nothing to tell the slot.
    taken: bool,
}

impl<T> JoinHandle<T> {
    /// Waits until the closure has run (or was dropped unrun) and returns its value.
    ///
    /// # Errors
    ///
    /// * [`JoinError::Panicked`] with the payload when the closure panicked;
    /// * [`JoinError::Cancelled`] when it was dropped without running.
    ///
    /// A closure spawned on a workqueue of the parent process of a `fork()` before the fork,
    /// and still queued then, never runs in the child: joining it there waits forever.
    pub fn join(mut self) -> Result<T, JoinError> {
        let outcome = self.cell.wait();
        self.taken = true;
        outcome
    }

    /// Whether the value is in: [`JoinHandle::join`] would return at once.
    pub fn is_finished(&self) -> bool {
        self.cell.is_finished()
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    /// # Panics
    ///
    /// When polled again after it returned `Ready`.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let poll = this.cell.poll_outcome(cx);
        this.taken = poll.is_ready();
        poll
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        if !self.taken {
            drop(self.cell.detach());
        }
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("finished", &self.is_finished())
            .finish()
    }
}

/// The handle's view of a spawned closure's slot, whatever the closure's type.
trait Joinable<T>: Send + Sync {
    /// See [`OneShot::wait`].
    fn wait(&self) -> Outcome<T>;
    /// See [`OneShot::poll`].
    fn poll_outcome(&self, cx: &mut Context<'_>) -> Poll<Outcome<T>>;
    /// See [`OneShot::is_finished`].
    fn is_finished(&self) -> bool;
    /// See [`OneShot::detach`].
    fn detach(&self) -> Option<Outcome<T>>;
}

/// A spawned closure and its outcome, in one allocation.
struct SpawnCell<F, T> {
    /// The closure, then its outcome.
    slot: OneShot<F, Outcome<T>>,
}

impl<F, T> Joinable<T> for SpawnCell<F, T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    fn wait(&self) -> Outcome<T> {
        // The same budget as an item's flush: both wait for one short closure to end.
        self.slot.wait(state::WAIT_SPIN_ROUNDS)
    }

    fn poll_outcome(&self, cx: &mut Context<'_>) -> Poll<Outcome<T>> {
        self.slot.poll(cx)
    }

    fn is_finished(&self) -> bool {
        self.slot.is_finished()
    }

    fn detach(&self) -> Option<Outcome<T>> {
        self.slot.detach()
    }
}

impl<F, T> Spawned for SpawnCell<F, T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    fn run(&self, counters: &Stripe) -> bool {
        let Some(f) = self.slot.take_func() else {
            return false;
        };
        let outcome =
            catch_unwind(AssertUnwindSafe(f)).map_err(|p| JoinError::Panicked(Panic::new(p)));
        task::count_completion(counters, outcome.is_err());
        match self.slot.complete(outcome) {
            None => false,
            Some(unwanted) => drop_contained(unwanted),
        }
    }

    fn cancel(&self) {
        if let Some((f, unwanted)) = self.slot.cancel(Err(JoinError::Cancelled)) {
            drop(f);
            drop(unwanted);
        }
    }
}

/// Drops an outcome nobody waits for, containing a panic of its drop (a panic payload is
/// dropped as the workqueue drops any, see `pool::drop_payload`). Returns whether its drop
/// panicked.
fn drop_contained<T>(outcome: Outcome<T>) -> bool {
    match outcome {
        Err(JoinError::Panicked(panic)) => {
            drop_payload(panic.into_payload());
            false
        }
        other => match catch_unwind(AssertUnwindSafe(move || drop(other))) {
            Ok(()) => false,
            Err(payload) => {
                drop_payload(payload);
                true
            }
        },
    }
}

impl Workqueue {
    /// Queues a closure that returns a value, as [`Workqueue::queue`] queues one that does not,
    /// and returns the handle that gives the value back.
    ///
    /// The closure goes to the pool of the calling thread's pod and is counted, flushed and
    /// drained as any item. When the workqueue refuses it (while a [`Workqueue::drain`] runs
    /// and the caller is not one of its own items, or in a child process of `fork()` for a
    /// workqueue its parent built), it is dropped unrun and the handle gives
    /// [`JoinError::Cancelled`]. On a workqueue with
    /// [`max_backlog`](crate::WorkqueueBuilder::max_backlog), it waits for room as
    /// [`Workqueue::queue`] does.
    ///
    /// ```
    /// use podq::Workqueue;
    ///
    /// let wq = Workqueue::builder("results").build()?;
    /// let handles: Vec<_> = (0..4u64).map(|i| wq.spawn(move || i * i)).collect();
    /// let squares: Vec<u64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    /// assert_eq!(squares, [0, 1, 4, 9]);
    /// # Ok::<(), podq::Error>(())
    /// ```
    pub fn spawn<F, T>(&self, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let (handle, job) = spawned(f);
        self.queue_job(job);
        handle
    }

    /// Queues a closure that returns a value as [`Workqueue::spawn`] does, but never waits:
    /// when the workqueue cannot take it now, it says why and gives the closure back unrun.
    ///
    /// # Errors
    ///
    /// A [`TryQueueError`] holding the closure, for the reasons of [`Workqueue::try_queue`].
    pub fn try_spawn<F, T>(&self, f: F) -> Result<JoinHandle<T>, TryQueueError<F>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        if let Err(reason) = self.try_room() {
            return Err(TryQueueError::new(f, reason));
        }
        let (handle, job) = spawned(f);
        let here = Here::now();
        self.submit(job, self.pick_here(here), here.index());
        Ok(handle)
    }
}

/// A new spawned closure: its handle, and the job that runs it.
pub(super) fn spawned<F, T>(f: F) -> (JoinHandle<T>, Job)
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let cell = Arc::new(SpawnCell {
        slot: OneShot::new(f),
    });
    let job = Job::Spawned(SpawnJob::new(Arc::clone(&cell) as Arc<dyn Spawned>));
    (JoinHandle { cell, taken: false }, job)
}
