//! podq-sim: a deterministic discrete-event simulator of topology-aware work queues.
//!
//! It answers "what would this scope, shard size or policy do on a machine I do not have?"
//! by running the kernel's `test_workqueue` (the `queue` workload), an open-loop `flood`, a
//! one-producer `skew`, the hackbench-like `fanout`, request/response `rpc`, the grouped
//! `locality` (with podq's steering, `podq::policy::steer`) or `chain`, `yield` and
//! `spawn-local`, whose items queue items (held by podq's workers, `podq::policy::held`), on a
//! modelled machine: CPUs, cores, cache domains and nodes from any [`podq::Topology`],
//! producers, pools with their locks and queues, workers, wake-ups and items.
//!
//! * The decisions are podq's own: the engine asks `podq::policy` where a queue call goes and
//!   when a pool wakes or grows, for pull which sibling an idle worker searches and whether
//!   the gate lets it, and whether a worker runs the item it holds or another takes it over,
//!   with simulated counts, times and seeded coins ([`engine`]).
//! * The costs are named physical parameters ([`Costs`]): cache-line moves by distance
//!   ([`Platform`], from public core-to-core measurements), lock hand-over, wake-up,
//!   context switch, per-item bookkeeping; a part's base clock scales the software ones.
//! * A [`Profile`] gathers costs and mechanisms: `kernel` (the Linux workqueue, calibrated on
//!   the two `test_workqueue` tables published with the kernel's `WQ_AFFN_CACHE_SHARD` patch
//!   series, [`published`]) or `podq` (fitted on a `podq bench` run, [`fit`]).
//! * One seed gives one result: the only randomness is a seeded jitter ([`Rng`]).
//!
//! ```
//! use podq::{AffinityScope, Topology};
//! use podq_sim::{simulate, Profile, Scenario, SimMachine};
//!
//! let machine = SimMachine::new(Topology::from_machine("grace").unwrap(), "grace");
//! let scenario = Scenario { items: 200, ..Scenario::kernel_test(AffinityScope::Cache, 72) };
//! let outcome = simulate(&machine, &Profile::kernel(), &scenario).unwrap();
//! assert!(outcome.items_per_sec > 0.0);
//! assert_eq!(outcome, simulate(&machine, &Profile::kernel(), &scenario).unwrap());
//! ```

mod calibrated;
pub mod cost;
pub mod engine;
pub mod fit;
pub mod kernel_fit;
pub mod machine;
pub mod outcome;
pub mod profile;
pub mod published;
pub mod rng;
pub mod scenario;
pub mod uncertainty;

pub use cost::{Caches, Costs, Distance, Param, Platform};
pub use engine::simulate;
pub use machine::SimMachine;
pub use outcome::{HeldCounts, LocalityCounts, Outcome, Percentiles, PullCounts, WalksFrom};
pub use profile::{Mechanism, Profile, PROFILES};
pub use rng::Rng;
pub use scenario::{
    Locality, Scenario, ShardRule, Workload, CPU_BOUND_WORK_NS, DEFAULT_LOAD, DEFAULT_SET_KB,
    FANOUT_RECEIVERS, FANOUT_SENDERS, GROUPS_PER_POD,
};

/// Why a simulation could not run.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// No producer, or more producers than CPUs.
    #[error("{threads} producer threads: give 1 to {cpus} (one per CPU of the machine)")]
    Threads {
        /// Producers asked for.
        threads: usize,
        /// CPUs of the machine.
        cpus: usize,
    },
    /// No item per producer (or a `chain` of no link).
    #[error("0 items per producer: give at least 1 (and chains of at least 1 link)")]
    Items,
    /// The scope's pods cannot be formed.
    #[error(transparent)]
    Pods(#[from] podq::Error),
    /// Pull asked of a profile whose runtime has none (the kernel's workqueue).
    #[error(
        "the {profile} profile has no pull (the Linux workqueue never moves an item between \
         pools); simulate it without pull, or use the podq profile"
    )]
    NoPull {
        /// The profile's name.
        profile: &'static str,
    },
    /// The run stopped with items outstanding: a bug in the model.
    #[error("the simulation stopped with {done} of {total} items run (a bug in the model)")]
    Stuck {
        /// Items run.
        done: u64,
        /// Items in the run.
        total: u64,
    },
}

/// The crate README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
