//! Backpressure, the user's side: a queue call takes room in the backlog before anything else
//! (B1 of `workqueue/README.md`); [`Workqueue::try_queue`] and [`Workqueue::try_queue_work`]
//! never wait and say why an item was not taken ([`QueueError`]; a closure comes back in a
//! [`TryQueueError`], `try_error.rs`). The backlog word is `task/backlog.rs`'s.

use crate::here::Here;
use crate::workqueue::api::try_error::TryQueueError;
use crate::workqueue::api::work::Work;
use crate::workqueue::api::workqueue::Workqueue;
use crate::workqueue::item::state::{Claim, CANCELING, PENDING};
use crate::workqueue::task::backlog::Backlog;
use crate::workqueue::task::work_item;
use crate::workqueue::task::Job;

/// Why a `try_queue` call did not queue its item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QueueError {
    /// `max_backlog` executions of the workqueue wait already (see
    /// [`WorkqueueBuilder::max_backlog`](crate::WorkqueueBuilder::max_backlog)). Retry later,
    /// or use the plain call, which waits for room.
    #[error("the workqueue's backlog is full (max_backlog items wait)")]
    Full,
    /// The item is pending already (queued and not started, waiting for its delay or for a
    /// `max_active` slot): that pending execution runs once for both requests, and sees
    /// everything stored before this call.
    #[error("the work item is already pending")]
    AlreadyPending,
    /// A `cancel_sync` of the item is in progress.
    #[error("the work item is being cancelled")]
    Cancelling,
    /// A [`Workqueue::drain`] runs and the caller is not one of the workqueue's own items.
    #[error("the workqueue is draining")]
    Draining,
    /// In a child process of `fork()`: the workqueue was built by its parent, or the item was
    /// pending or running there at the fork (see the crate's "Fork" section).
    #[error("the workqueue or the item belongs to the parent process of a fork()")]
    ParentProcess,
}

impl Workqueue {
    /// Whether a queue call that may wait goes on (every plain and grouped queue call asks
    /// this first): it is not refused ([`Workqueue::refused`]), and with a `max_backlog` it
    /// takes room (B1), waiting for it, or over the limit from one of this workqueue's
    /// own items. `false`: refused, also when a drain began while it waited; nothing is then
    /// counted.
    #[inline]
    pub(crate) fn admit(&self) -> bool {
        if self.refused() {
            return false;
        }
        match &self.shared.backlog {
            None => true,
            Some(backlog) => self.wait_in(backlog),
        }
    }

    /// [`Workqueue::admit`]'s room on a workqueue with a bound.
    fn wait_in(&self, backlog: &Backlog) -> bool {
        if self.called_from_own_item() {
            // Waiting here could wait for this very worker (every worker may be an item
            // queueing onto its own full workqueue): admitted over the bound instead.
            backlog.force();
            return true;
        }
        if backlog.try_enter() {
            return true;
        }
        backlog.enter();
        if self.refused() {
            backlog.leave();
            return false;
        }
        true
    }

    /// Gives back room taken by [`Workqueue::admit`] for an item that was not queued.
    pub(crate) fn give_back_room(&self) {
        if let Some(backlog) = &self.shared.backlog {
            backlog.leave();
        }
    }

    /// Queues a one-shot closure as [`Workqueue::queue`] does, but never waits: when the
    /// workqueue cannot take it now, it says why and gives the closure back unrun
    /// ([`TryQueueError::into_inner`]), to retry, run elsewhere or drop. Like `queue`,
    /// it never runs the closure itself: a worker runs it, or the workqueue's rescuer while
    /// the OS refuses workers (see [`crate::threads`]).
    ///
    /// ```
    /// use podq::{QueueError, Workqueue};
    ///
    /// let wq = Workqueue::builder("bounded").max_backlog(1024).build()?;
    /// match wq.try_queue(|| println!("ran")) {
    ///     Ok(()) => {}
    ///     Err(e) if e.reason() == QueueError::Full => {
    ///         println!("1024 items wait already: running it here");
    ///         (e.into_inner())();
    ///     }
    ///     Err(other) => println!("refused: {other}"),
    /// }
    /// wq.flush();
    /// # Ok::<(), podq::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A [`TryQueueError`] holding the closure, whose [`reason`](TryQueueError::reason) is:
    ///
    /// * [`QueueError::Full`]: `max_backlog` items wait already (also from one of this
    ///   workqueue's own items: only the plain call goes over the bound);
    /// * [`QueueError::Draining`]: a [`Workqueue::drain`] runs and the caller is not one of
    ///   this workqueue's own items;
    /// * [`QueueError::ParentProcess`]: in a child process of `fork()`, for a workqueue its
    ///   parent built.
    pub fn try_queue<F>(&self, f: F) -> Result<(), TryQueueError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        if let Err(reason) = self.try_room() {
            return Err(TryQueueError::new(f, reason));
        }
        let here = Here::now();
        self.submit(Job::once(f), self.pick_here(here), here.index());
        Ok(())
    }

    /// Queues `work` as [`Workqueue::queue_work`] does, but never waits: when it does not
    /// queue it, it says why.
    ///
    /// # Errors
    ///
    /// * [`QueueError::AlreadyPending`]: the item is pending already (it runs once for both
    ///   requests); said rather than `Full` when both hold;
    /// * [`QueueError::Cancelling`]: a [`Work::cancel_sync`] of it is in progress;
    /// * [`QueueError::Full`], [`QueueError::Draining`]: as [`Workqueue::try_queue`];
    /// * [`QueueError::ParentProcess`]: as [`Workqueue::try_queue`], and for an item that was
    ///   pending or running in the parent when it forked.
    pub fn try_queue_work(&self, work: &Work) -> Result<(), QueueError> {
        let item = &work.inner;
        if let Err(refused) = self.try_room() {
            let s = item.state.load();
            return Err(match refused {
                QueueError::Full if s & PENDING != 0 => QueueError::AlreadyPending,
                QueueError::Full if s & CANCELING != 0 => QueueError::Cancelling,
                other => other,
            });
        }
        match item.state.try_claim() {
            Claim::Refused => {
                self.give_back_room();
                Err(if work_item::stranded(item) {
                    QueueError::ParentProcess
                } else if item.state.load() & CANCELING != 0 {
                    QueueError::Cancelling
                } else {
                    QueueError::AlreadyPending
                })
            }
            Claim::Claimed { running } if work_item::stranded_claim(item, running) => {
                self.give_back_room();
                Err(QueueError::ParentProcess)
            }
            Claim::Claimed { .. } => {
                let here = Here::now();
                self.submit_claimed(item, self.pick_here(here), here.index());
                Ok(())
            }
        }
    }

    /// B1 for a call that never waits: takes room in the backlog if there is some.
    pub(super) fn try_room(&self) -> Result<(), QueueError> {
        if self.foreign() {
            return Err(QueueError::ParentProcess);
        }
        if self.refused() {
            return Err(QueueError::Draining);
        }
        match &self.shared.backlog {
            Some(backlog) if !backlog.try_enter() => Err(QueueError::Full),
            _ => Ok(()),
        }
    }
}
