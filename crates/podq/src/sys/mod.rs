//! The only place podq talks to the operating system.
//!
//! Everything above this module is plain data and plain threads; CPU ids cross the boundary as
//! `usize` lists so that this module does not depend on podq's own types.

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub(crate) use linux::*;

mod limits;
pub use limits::SystemLimits;

#[cfg(not(target_os = "linux"))]
mod fallback;
#[cfg(not(target_os = "linux"))]
pub(crate) use fallback::*;

mod unrun;
pub(crate) use unrun::free_unrun;
