//! The user's API.

pub(super) mod backlog;
pub(super) mod builder;
pub(super) mod delayed;
pub(super) mod flush;
#[cfg(test)]
mod flush_tests;
pub(super) mod group;
pub(super) mod join;
pub(super) mod oneshot;
pub(super) mod reshape;
pub(super) mod work;
