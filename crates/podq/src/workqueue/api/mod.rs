//! The user's API: the handles users hold and every call they make, one file per concept.
//! The top group of the workqueue: it imports from `layout/`, `task/` and `item/`, and
//! nothing imports from it but the re-exports of `workqueue/mod.rs`.
//!
//! * `workqueue.rs`: [`Workqueue`](crate::Workqueue), built from checked attributes, what it
//!   says of itself, its drop;
//! * `builder.rs`: [`WorkqueueBuilder`](crate::WorkqueueBuilder), every attribute checked in
//!   one place;
//! * `queue.rs`: the queue calls (Q1-Q5 of `workqueue/README.md`);
//! * `async_queue.rs`: `queue_async` and `spawn_async`, waiting for room as futures (B4,
//!   B5);
//! * `backlog.rs`: room in the backlog, the `try_` calls and
//!   [`QueueError`](crate::QueueError) (B1-B3); `try_error.rs`:
//!   [`TryQueueError`](crate::TryQueueError), the closure given back;
//! * `work.rs`: [`Work`](crate::Work), its flush and cancel (C1-C5); `self_work.rs`:
//!   [`Work::with_self`](crate::Work::with_self), an item that re-queues itself;
//! * `delayed.rs`: [`DelayedWork`](crate::DelayedWork), `queue_delayed`, `mod_delayed`;
//! * `flush.rs`: a workqueue's flush and drain, with a deadline or without (F1-F3);
//! * `join.rs` and `oneshot.rs`: `spawn`, [`JoinHandle`](crate::JoinHandle) and the slot
//!   between them (J1-J4);
//! * `shutdown.rs`: [`Workqueue::shutdown_timeout`](crate::Workqueue::shutdown_timeout), a
//!   drop bounded in time (E7);
//! * `scoped.rs`: [`Workqueue::scoped`](crate::Workqueue::scoped), items that borrow;
//! * `group.rs`: [`Group`](crate::Group), steered queueing (G1, G2), and `owner_gate.rs`,
//!   the gate between the group's calls and the workqueue's drop (G6, G7);
//! * `reshape.rs`: `set_scope`, `set_shard_size`, `set_pull` (R1-R5) and `set_steer`;
//! * `stats.rs`: statistics;
//! * `helpers.rs`: the helper threads a build starts, and the reaper.

pub(crate) mod async_queue;
pub(crate) mod backlog;
pub(crate) mod builder;
pub(crate) mod delayed;
pub(crate) mod flush;
#[cfg(test)]
mod flush_tests;
pub(crate) mod group;
mod helpers;
pub(crate) mod join;
pub(crate) mod oneshot;
pub(crate) mod owner_gate;
mod queue;
pub(crate) mod reshape;
pub(crate) mod scoped;
mod self_work;
mod shutdown;
pub(crate) mod stats;
pub(crate) mod try_error;
pub(crate) mod work;
pub(crate) mod workqueue;
