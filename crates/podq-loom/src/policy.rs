//! podq's pure decisions that the pool's core calls (`podq::policy`), compiled here as they
//! are: they use no synchronization, so there is nothing for loom to model in them.

#[path = "../../podq/src/policy/growth.rs"]
pub mod growth;

#[path = "../../podq/src/policy/held.rs"]
pub mod held;

#[path = "../../podq/src/policy/stall.rs"]
pub mod stall;

#[path = "../../podq/src/policy/pull.rs"]
pub mod pull;

#[path = "../../podq/src/policy/steer.rs"]
pub mod steer;
