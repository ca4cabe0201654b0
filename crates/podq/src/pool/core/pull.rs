//! Pull, the core's side: a worker of another pool taking this pool's oldest waiting task
//! ([`Core::steal`], the W2-W4 steps taken by a sibling's worker), this pool sending a worker
//! when a sibling offers work ([`Core::kick`], O2), and what a worker of this pool asks of its
//! siblings when its own queue is empty ([`Siblings`], steps O3 and O4).
//!
//! This file owns what happens under one pool's locks; which sibling to ask and when is the
//! pool set's (`pool/pull.rs`, its summary and gates), decided by `policy::pull`.
//!
//! A steal never breaks this pool's protocol: it only removes a task, under the head lock, as
//! one of this pool's workers would, and hands on what it leaves in the head exactly as W4
//! does. Nothing this pool's workers rely on (P4, W10) needs a task to stay, so a worker that
//! misses a stolen task has lost nothing; a task is taken once, under the head lock.

use super::idle::Parker;
use super::{Core, Grow};
use crate::policy::pull::{self as policy, Kick};
use crate::sync::Arc;

/// What a worker whose own queue is empty asks of the sibling pools (the pool layer's pull
/// group; [`NoSiblings`] for a pool that does not pull).
pub(crate) trait Siblings<T> {
    /// (O3) The worker found its own pool's queue empty: the pool no longer offers work.
    fn drained(&mut self);

    /// (O4) Takes the oldest waiting task of a sibling that offers work, if the gate lets the
    /// worker search: `None` when it did not search or found nothing. Called with no lock held.
    fn pull(&mut self) -> Option<T>;
}

/// The siblings of a pool that does not pull: nothing to tell, nothing to take.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct NoSiblings;

impl<T> Siblings<T> for NoSiblings {
    #[inline]
    fn drained(&mut self) {}

    #[inline]
    fn pull(&mut self) -> Option<T> {
        None
    }
}

/// What [`Core::steal`] found.
#[derive(Debug)]
pub(crate) enum Stolen<T> {
    /// The head and every lane were empty.
    Empty,
    /// The oldest waiting task.
    Took {
        /// The task, for the stealing worker to run.
        item: T,
        /// What the stealing worker must do for this pool first (start a worker for it, or
        /// have the watchdog watch it), as W4 decided for the tasks left in the head.
        grow: Grow,
        /// Whether tasks still wait in this pool (in the head, or in a lane as last stored).
        more: bool,
    },
}

impl<T> Core<T> {
    /// A worker of a sibling pool takes this pool's oldest waiting task, as W2-W4 would for one
    /// of this pool's own workers: under the head lock, counted in `started`, and handing on
    /// the tasks left in the head (waking or asking for one of this pool's workers when the
    /// hint says so). A task held ahead (H8) is older than the head's and comes first; it was
    /// counted in `started` when it left the head.
    pub(crate) fn steal(&self) -> Stolen<T> {
        let mut head = self.lock_head();
        if let Some(item) = self.take_held_ahead() {
            let more = self.in_head(&head) > 0 || self.lanes_len() > 0;
            let (item, grow) = self.hand_on_counted(head, item, false);
            return Stolen::Took { item, grow, more };
        }
        let Some(item) = self.take(&mut head) else {
            self.note_head_waits(false);
            return Stolen::Empty;
        };
        let more = self.in_head(&head) > 0 || self.lanes_len() > 0;
        let (item, grow) = self.hand_on(head, item, false);
        Stolen::Took { item, grow, more }
    }

    /// Whether this pool may answer a kick: its hint's `HELP` bit (someone idle, or room to
    /// grow), read without a lock.
    #[inline]
    pub(crate) fn may_help(&self) -> bool {
        self.hint.help()
    }

    /// A sibling offers work: wake this pool's most recently parked worker, or count a new one
    /// (the caller starts it), as [`policy::kick`] decides. Either worker finds its own queue
    /// empty and pulls (O4).
    pub(crate) fn kick(&self) -> Kick {
        let mut synced = self.lock();
        let kick = policy::kick(synced.workers(), self.limits);
        let parker: Option<Arc<Parker>> = match kick {
            Kick::No => None,
            Kick::Wake => synced.wake_one(),
            Kick::Spawn => {
                synced.add_worker();
                None
            }
        };
        if kick != Kick::No {
            self.publish(&synced);
        }
        drop(synced);
        if let Some(parker) = parker {
            parker.notify();
        }
        kick
    }
}
