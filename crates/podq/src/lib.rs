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

mod sys;

pub use cpuset::CpuSet;
pub use error::Error;
pub use scope::{AffinityScope, Pod, Pods};
pub use topology::Topology;
