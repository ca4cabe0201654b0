//! A work item's state, flush and cancel: the words that the queueing, running, flush and
//! cancel protocols change, and the waits on them (`workqueue/README.md`, Q1, Q2, E1-E6,
//! C1-C5, F1, F2, G4).
//!
//! This is the lowest group of the workqueue: it imports nothing from the others. Its files
//! are generic over what they count or hand on, and use only `crate::sync`, `crate::here` and
//! `std`: `crates/podq-loom` compiles `state.rs`, `flush.rs` and `group_slot.rs` against loom.
//!
//! * `state.rs`: one item's word (pending, running, canceling, waiters, generation) and its
//!   deferred execution;
//! * `cancel.rs`: an item's cancel and flush, over its word; the places a pending execution
//!   waits in are given by the caller;
//! * `flush.rs`: the workqueue's flush colours and drain, counted per pod in stripes;
//! * `group_slot.rs`: where an item keeps its pending execution's group ticket.

pub(crate) mod cancel;
pub(crate) mod flush;
pub(crate) mod group_slot;
pub(crate) mod state;
