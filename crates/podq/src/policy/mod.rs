//! Pure decisions: which pod gets a work item, when a pool wakes, starts or retires a worker,
//! when and where an idle worker pulls, and where a group's items are steered.
//!
//! Public only so that the simulator (`podq-sim`) drives the same functions as the runtime: it
//! is hidden from the documentation and outside semantic versioning, so any release may change
//! it. What a user relies on (steering's times, pull's levels) is stated in the public docs
//! where it acts: [`Group`](crate::Group),
//! [`WorkqueueBuilder::pull`](crate::WorkqueueBuilder::pull) and
//! [`PullStats`](crate::PullStats).
//!
//! This is podq's decision layer. Nothing here starts a thread, takes a lock or talks to the OS; every input
//! is a plain value (counts, limits, times), so a simulation calls them with its own state:
//!
//! * where a decision depends on time, the caller passes the time (how long a worker has been
//!   idle), measured on its own clock;
//! * where a choice rotates (a CPU outside the workqueue's CPUs, a node with several pods), the
//!   caller passes the rotation counter, so a simulation replays exactly.
//!
//! The modules:
//!
//! * [`Placement`]: CPU and node to pod.
//! * [`growth`]: a pool's workers: when a push or a worker must take the pool lock, when an
//!   idle worker is woken, when the pool starts a worker or asks the stall watchdog to watch,
//!   when an idle worker retires.
//! * [`held`]: when a worker runs the item its own running item queued, and when another
//!   worker takes it instead.
//! * [`stall`]: the stall watchdog's two looks (blocked workers, progress), and how often it
//!   takes them.
//! * [`pull`]: where an idle worker looks for other pools' waiting work (the sibling order),
//!   which pools offer theirs, and when it looks at all (the adaptive gate).
//! * [`steer`]: a group's home pod, how it decays, expires and moves, and when a grouped item
//!   goes there (not to a loaded or crowded pod).
//!
//! The pool carries the decisions out; its protocol, whose steps the functions name, is
//! written down in `src/pool/README.md`.

pub mod growth;
pub mod held;
mod placement;
pub mod pull;
pub mod stall;
pub mod steer;

pub use placement::Placement;
