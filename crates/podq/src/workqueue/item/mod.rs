//! A work item's state, flush and cancel.

pub(super) mod flush;
pub(super) mod group_slot;
pub(super) mod state;
