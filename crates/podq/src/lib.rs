//! podq: topology-aware work queues.
//!
//! (Crate docs are written in full once the pieces land: the idea, the glossary, one runnable
//! example.)
#![deny(unsafe_code)]

pub mod affinity;
pub mod cpuset;
pub mod error;
pub mod scope;
pub mod topology;

pub mod policy;
mod pool;
mod stats;
mod sync;
mod sys;
mod workqueue;

pub use cpuset::CpuSet;
pub use error::Error;
pub use scope::{AffinityScope, Pod, Pods};
pub use stats::{PoolStats, WorkqueueStats};
pub use topology::Topology;
pub use workqueue::{DelayedWork, Work, Workqueue, WorkqueueBuilder};
