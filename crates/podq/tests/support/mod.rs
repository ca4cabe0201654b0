//! Helpers shared by the pool integration tests: the crate's own test helpers, compiled in.

#[path = "../../src/test_support.rs"]
mod shared;

// Each test crate that includes this module uses only some of the helpers.
#[allow(unused_imports)]
pub(crate) use shared::{eventually, PATIENCE};
