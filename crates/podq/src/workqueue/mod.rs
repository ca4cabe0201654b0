//! Workqueues: what users queue work on, with the Linux workqueue's guarantees.
//!
//! A [`Workqueue`] sends each item to the pool of the issuing CPU's pod under its scope. The
//! protocols (queueing, running, cancel, flush, results, backlog, steering, re-forming, fork)
//! are written down as steps in `README.md` beside this file; each step is named where it is
//! taken.
//!
//! The files are grouped by concept, in four layers; each group imports only from the groups
//! below it, and internal imports name the module that defines an item:
//!
//! ```text
//! api/      the user's API: Workqueue and its builder, Work, DelayedWork, Group, JoinHandle,
//!    |      the queue, flush, drain, cancel, spawn, try_ and set_scope calls, statistics
//!    v
//! layout/   the layout of pods and pools and how it follows the machine: the layouts,
//!    |      forming one, the `podq/limits` thread
//!    v
//! task/     what a queued task is and how it is dispatched: Task and its job, a work item's
//!    |      shared part, its count in a pod, dispatch, max_active, backlog, timer, steering
//!    v
//! item/     a work item's state, flush and cancel: the state word, cancel and flush over it,
//!           the flush colours, the group ticket's slot
//! ```
//!
//! Where a lower group needs what a higher one defines, it takes it generic or as a trait:
//! `item/` is generic over what it hands on; `task/` reaches the current layout through
//! `task::shared::CurrentLayout` and a spawned closure's slot through
//! `task::spawned::Spawned`. Each group's `mod.rs` lists its files.

mod api;
mod item;
mod layout;
mod task;

pub use api::backlog::QueueError;
pub use api::builder::WorkqueueBuilder;
pub use api::delayed::DelayedWork;
pub use api::group::Group;
pub use api::join::{JoinError, JoinHandle, Panic};
pub use api::scoped::{Scope, ScopedJoinHandle};
pub use api::try_error::TryQueueError;
pub use api::work::Work;
pub use api::workqueue::Workqueue;

/// For `crate::live`, which holds a workqueue's parts rather than its handle.
pub(crate) use {api::stats::stats_of, layout::Layouts, task::shared::WqShared};
