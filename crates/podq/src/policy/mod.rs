//! Pure placement decisions: which pod gets a work item.
//!
//! Nothing here starts threads or talks to the OS, so that the runtime and a simulator make the
//! same choices from the same data. Where a choice rotates (a CPU outside the workqueue's CPUs,
//! a node with several pods), the caller passes the rotation counter in, so a simulation
//! replays exactly.

mod placement;

pub use placement::Placement;
