//! [`TryQueueError`]: a `try_` call's refusal that gives the closure back, as crossbeam's
//! `TrySendError<T>` gives back the value it did not send.

use std::fmt;

use crate::workqueue::api::backlog::QueueError;

/// Why [`Workqueue::try_queue`](crate::Workqueue::try_queue) or
/// [`Workqueue::try_spawn`](crate::Workqueue::try_spawn) did not queue a closure, with the
/// closure, unrun, to retry, run elsewhere or drop.
///
/// [`TryQueueError::reason`] says why (a [`QueueError`]); `?` converts it into that
/// [`QueueError`], dropping the closure:
///
/// ```
/// use podq::{QueueError, Workqueue};
///
/// fn submit(wq: &Workqueue) -> Result<(), QueueError> {
///     wq.try_queue(|| println!("ran"))?;
///     Ok(())
/// }
///
/// let wq = Workqueue::builder("svc").max_backlog(64).build()?;
/// submit(&wq)?;
/// wq.flush();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TryQueueError<F> {
    /// The closure, unrun.
    item: F,
    /// Why it was not queued.
    reason: QueueError,
}

impl<F> TryQueueError<F> {
    /// A refusal of `item` for `reason`.
    pub(crate) fn new(item: F, reason: QueueError) -> Self {
        TryQueueError { item, reason }
    }

    /// Why the closure was not queued.
    pub fn reason(&self) -> QueueError {
        self.reason
    }

    /// The closure, unrun.
    pub fn into_inner(self) -> F {
        self.item
    }
}

impl<F> From<TryQueueError<F>> for QueueError {
    fn from(e: TryQueueError<F>) -> QueueError {
        e.reason
    }
}

impl<F> fmt::Debug for TryQueueError<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TryQueueError")
            .field("reason", &self.reason)
            .finish_non_exhaustive()
    }
}

impl<F> fmt::Display for TryQueueError<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.reason, f)
    }
}

impl<F> std::error::Error for TryQueueError<F> {}
