//! Backpressure: `max_backlog` bounds the executions of a workqueue that wait (queued and not
//! started); [`Workqueue::try_queue`] and [`Workqueue::try_queue_work`] say why an item was not
//! taken ([`QueueError`]); a plain queue call waits for room (B1-B3 of `README.md` in this
//! folder).
//!
//! Only a workqueue built with a bound has a [`Backlog`]: without one, a queue call reads one
//! immutable `None` and nothing else, so no counter is written per item.

use crate::sync::atomic::{AtomicU64, Ordering};
use crate::sync::{Condvar, Mutex};

use crate::workqueue::item::state::{Claim, CANCELING, PENDING};
use crate::workqueue::task::Job;
use crate::workqueue::api::work::{self, Work};
use crate::workqueue::Workqueue;
use crate::here::Here;

/// The largest `max_backlog`: the waiting count's bits of the word, less one.
pub(crate) const MAX_BACKLOG: u64 = (1 << WAITING_BITS) - 1;

/// Bits of the word that count waiting executions; the bits above count sleeping queuers.
const WAITING_BITS: u32 = 40;

/// One waiting execution, in the low bits of the word.
const WAITING_ONE: u64 = 1;

/// One sleeping queuer, in the high bits of the word.
const SLEEPER_ONE: u64 = 1 << WAITING_BITS;

/// Executions waiting, from the word.
fn waiting_of(s: u64) -> u64 {
    s & MAX_BACKLOG
}

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

/// The count of waiting executions of one workqueue with a `max_backlog`, and where queue calls
/// wait for room.
#[derive(Debug)]
pub(crate) struct Backlog {
    /// I: the most executions that may wait before queue calls wait (1 to [`MAX_BACKLOG`]).
    limit: u64,
    /// A: `sleepers << WAITING_BITS | waiting`. One word, so that a leaving execution sees a
    /// sleeper that came before it, and a sleeper sees a leave that came before it, each in
    /// the value its own read-modify-write returns (B3).
    word: AtomicU64,
    /// The sleepers' lock: a sleeper holds it from its registration to its sleep; a leaver
    /// notifies under it.
    lock: Mutex<()>,
    /// Where queue calls sleep until there is room.
    room: Condvar,
}

impl Backlog {
    /// A backlog of at most `limit` waiting executions (at least 1; more than [`MAX_BACKLOG`]
    /// is treated as that).
    pub(crate) fn new(limit: usize) -> Self {
        Backlog {
            limit: (limit as u64).clamp(1, MAX_BACKLOG),
            word: AtomicU64::new(0),
            lock: Mutex::new(()),
            room: Condvar::new(),
        }
    }

    /// Executions waiting now.
    pub(crate) fn waiting(&self) -> u64 {
        waiting_of(self.word.load(Ordering::Relaxed))
    }

    /// B1: counts one more waiting execution if there is room; `false` when the backlog
    /// is full.
    pub(crate) fn try_enter(&self) -> bool {
        // Relaxed: the count orders nothing but itself; the execution's stores are published
        // by its push, as without a bound.
        let mut s = self.word.load(Ordering::Relaxed);
        loop {
            if waiting_of(s) >= self.limit {
                return false;
            }
            match self.word.compare_exchange_weak(
                s,
                s + WAITING_ONE,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => s = now,
            }
        }
    }

    /// B1: counts one more waiting execution, over the limit if need be (the timer's,
    /// and those of the workqueue's own items, never wait).
    pub(crate) fn force(&self) {
        self.word.fetch_add(WAITING_ONE, Ordering::Relaxed);
    }

    /// B3: counts one more waiting execution, sleeping until there is room.
    pub(crate) fn enter(&self) {
        if self.try_enter() {
            return;
        }
        let mut guard = self.lock.lock();
        self.word.fetch_add(SLEEPER_ONE, Ordering::Relaxed);
        while !self.try_enter() {
            guard = self.room.wait(guard);
        }
        self.word.fetch_sub(SLEEPER_ONE, Ordering::Relaxed);
    }

    /// B2: an execution waits no more (it starts, or is taken back unrun); wakes one
    /// sleeping queuer if the word shows one.
    pub(crate) fn leave(&self) {
        let prev = self.word.fetch_sub(WAITING_ONE, Ordering::Relaxed);
        debug_assert!(waiting_of(prev) > 0, "leave without an entry");
        if prev >= SLEEPER_ONE {
            // One execution left, so there is room for one: one sleeper. A sleeper that finds
            // the room taken by a queue call that did not sleep sleeps again; that call's
            // execution leaves later and wakes the next.
            let _guard = self.lock.lock();
            self.room.notify_one();
        }
    }
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
    /// workqueue cannot take it now, it says why and drops the closure unrun.
    ///
    /// ```
    /// use podq::{QueueError, Workqueue};
    ///
    /// let wq = Workqueue::builder("bounded").max_backlog(1024).build()?;
    /// match wq.try_queue(|| println!("ran")) {
    ///     Ok(()) => {}
    ///     Err(QueueError::Full) => println!("shed: 1024 items wait already"),
    ///     Err(other) => println!("refused: {other}"),
    /// }
    /// wq.flush();
    /// # Ok::<(), podq::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// * [`QueueError::Full`]: `max_backlog` items wait already (also from one of this
    ///   workqueue's own items: only the plain call goes over the bound);
    /// * [`QueueError::Draining`]: a [`Workqueue::drain`] runs and the caller is not one of
    ///   this workqueue's own items;
    /// * [`QueueError::ParentProcess`]: in a child process of `fork()`, for a workqueue its
    ///   parent built.
    pub fn try_queue(&self, f: impl FnOnce() + Send + 'static) -> Result<(), QueueError> {
        self.try_room()?;
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
                Err(if work::stranded(item) {
                    QueueError::ParentProcess
                } else if item.state.load() & CANCELING != 0 {
                    QueueError::Cancelling
                } else {
                    QueueError::AlreadyPending
                })
            }
            Claim::Claimed { running } if work::stranded_claim(item, running) => {
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
    fn try_room(&self) -> Result<(), QueueError> {
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
