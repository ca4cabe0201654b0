//! podq: topology-aware work queues with the Linux workqueue's guarantees.
//!
//! On a many-core machine, one work queue (one lock) per last-level cache, or per machine,
//! becomes the hottest lock in the process. podq queues each work item to the pool of the
//! issuing CPU's *pod*: a group of CPUs under a *scope*. The default scope, `cache_shard`,
//! splits each cache domain into shards of about 8 cores, as the Linux kernel does, so
//! that each pool's lock is shared by a few CPUs that also share a cache.
//!
//! # Glossary
//!
//! * **CPU**: a logical CPU (hardware thread), by its Linux id.
//! * **core**: the SMT siblings that share one physical core.
//! * **cache domain**: the CPUs sharing a last-level cache.
//! * **node**: a NUMA node.
//! * **scope**: one way of grouping CPUs into pods ([`AffinityScope`]: `cpu`, `smt`, `cache`,
//!   `cache_shard`, `numa`, `system`).
//! * **pod**: one group of CPUs under a scope; every usable CPU is in exactly one ([`Pods`]).
//! * **pool**: the workers and the queue serving one pod; workqueues with equal
//!   attributes share pools ([`PoolStats`]).
//! * **workqueue**: what users queue work on: a name, a scope, strictness, `max_active`,
//!   ordering ([`Workqueue`]).
//! * **work item**: a unit of work; a reusable [`Work`] is pending at most once at a time and
//!   never runs on two workers at once ([`DelayedWork`] runs after a delay).
//! * **strict**: a strict pool's workers only run on its pod's CPUs; others start there and the
//!   OS may move them within the workqueue's CPUs.
//! * **group**: related work items (one connection, one tenant), steered to the pod where the
//!   group's items last ran while that pod has room ([`Group`]).
//!
//! # Example
//!
//! ```
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use std::sync::Arc;
//! use podq::{AffinityScope, Work, Workqueue};
//!
//! let wq = Workqueue::builder("sum")
//!     .scope(AffinityScope::CacheShard)
//!     .max_active(64)
//!     .build()?;
//! let total = Arc::new(AtomicU64::new(0));
//! for n in 1..=100u64 {
//!     let total = Arc::clone(&total);
//!     wq.queue(move || {
//!         total.fetch_add(n, Ordering::Relaxed);
//!     });
//! }
//! wq.flush(); // everything queued before this call has run
//! assert_eq!(total.load(Ordering::Relaxed), 5050);
//!
//! // A reusable item: queueing it while pending returns false; cancel_sync stops it.
//! let tick = Work::new(|| {});
//! wq.queue_work(&tick);
//! tick.cancel_sync();
//! assert!(!tick.is_pending());
//! println!("{:?}", wq.stats());
//! # Ok::<(), podq::Error>(())
//! ```
//!
//! # In a service
//!
//! * Results: [`Workqueue::spawn`] returns a [`JoinHandle`], joined or awaited from any
//!   executor; a panic comes back as [`JoinError::Panicked`], an item dropped unrun as
//!   [`JoinError::Cancelled`] (`Send + Sync`: `?` takes it into any boxed error).
//!   [`Work::flushed`] awaits a reusable item.
//! * Borrowing: [`Workqueue::scoped`] queues items that borrow from the caller's stack, as
//!   [`std::thread::scope`] runs threads.
//! * Handles: a [`Group`] is owned (`Clone + Send + Sync + 'static`) and answers `false` once
//!   its workqueue is gone; [`Work::with_self`] makes an item that re-queues itself and stops
//!   when its handles go.
//! * Backpressure: [`WorkqueueBuilder::max_backlog`] bounds the items that wait;
//!   [`Workqueue::try_queue`] says why it took nothing and gives the closure back
//!   ([`TryQueueError`]); [`Workqueue::queue_async`] and [`Workqueue::spawn_async`] wait for
//!   room as futures, with any executor.
//! * Deadlines: `flush_timeout`, `drain_timeout` and `cancel_sync_timeout` give up in time
//!   and leave everything consistent.
//! * Workers: [`WorkqueueBuilder::worker_stack_size`], [`WorkqueueBuilder::worker_nice`] and
//!   hooks at each worker's start and stop ([`WorkerInfo`]).
//! * Thread limits: a built workqueue runs what is queued to it even when the OS refuses new
//!   threads (a rescuer started at its build runs the items; they never run on the caller),
//!   and a build whose helper threads are refused fails with [`Error::ThreadRefused`]: see
//!   [`threads`].
//!
//! # Features
//!
//! * `serde` (off by default): `Serialize` for [`CpuSet`] (an array of CPU ids), [`AffinityScope`]
//!   (its name), [`Pod`], [`WorkqueueStats`], [`PoolStats`] and [`Dump`]; `Deserialize` for
//!   [`CpuSet`].
//! * `metrics` (off by default): the module `metrics`, which publishes every workqueue's
//!   counters and its pools' state through the `metrics` facade, on each scrape or on a tick,
//!   and never per work item.
//! * `tracing` (off by default): a `tracing` span around each run of a work item (trace level,
//!   target `podq::work`: workqueue, pod, queue-to-start time) and events when a worker
//!   starts or exits and when a pool grows or shuts down (debug level, target
//!   `podq::worker`).
//!
//! What each feature emits, by name, label and unit: `docs/observability.md`.
//!
//! # Operating a running process
//!
//! * [`dump()`]: every live workqueue of the process and its pools (CPUs, workers busy, idle
//!   and blocked, items waiting, lock contention, pulls), printed as tables or serialised; the
//!   example `dump_on_signal` prints it on `SIGUSR1`.
//! * [`Workqueue::set_pull`] and [`Workqueue::set_steer`] switch pull and steering while work
//!   flows, losing nothing; `PODQ_PULL` and `PODQ_STEER` (`on` or `off`) set them for
//!   workqueues built without them ([`scope::PULL_VAR`], [`scope::STEER_VAR`]).
//!
//! # CPUs that change
//!
//! The CPUs a process may use change while it runs (`taskset -p`, a cgroup's cpuset, CPU
//! hotplug). A workqueue re-forms its pods from the CPUs allowed now, within a second, losing
//! nothing; [`Workqueue::set_scope`] and [`Workqueue::set_shard_size`] re-form them on demand,
//! and the environment variables `PODQ_SCOPE` and `PODQ_SHARD_SIZE` give the scope and shard
//! size of workqueues built without one (see [`limits`] and [`scope::env_line`]).
//!
//! # Fork
//!
//! A child process of `fork()` (on Linux) has none of its parent's podq threads. It builds its
//! own workqueues, with any attributes, and they work fully: podq's process-wide state (pools,
//! timer, watchdog) starts afresh in the child, and the child never takes a lock the parent's
//! threads could hold. A workqueue built by the parent refuses work in the child (`queue`
//! returns `false`, `queue_on` returns [`Error::ParentProcess`]), its `flush` and `drain`
//! return `false` at once and its drop returns at once, leaking the parent's pools; a [`Work`]
//! pending or running in the parent at the fork never runs in the child, and its `flush` and
//! `cancel_sync` return at once. A child forked from inside a work item must `exec` or `_exit`
//! before that item returns (the worker thread would go back to its parent's pool). The
//! protocol: steps K1-K4 of `src/workqueue/README.md`.
//!
//! The protocols behind the guarantees (pending, cancel, flush, `max_active`) are written down
//! as steps in `src/workqueue/README.md`; the pools' park/wake protocol in
//! `src/pool/README.md`.
#![deny(unsafe_code)]

pub mod affinity;
pub mod cpuset;
mod dump;
pub mod error;
mod fork;
mod here;
mod launch;
pub mod limits;
mod live;
#[cfg(feature = "metrics")]
pub mod metrics;
pub mod scope;
pub mod topology;

#[doc(hidden)]
pub mod policy;
mod pool;
mod stats;
mod sync;
mod sys;
#[cfg(test)]
mod test_support;
pub mod threads;
#[cfg(feature = "tracing")]
mod trace;
mod workqueue;

pub use cpuset::CpuSet;
pub use dump::{dump, Dump};
pub use error::Error;
pub use pool::WorkerInfo;
pub use scope::{AffinityScope, Pod, Pods};
pub use stats::{PoolStats, PullLevelStats, PullStats, WorkqueueStats};
pub use topology::Topology;
pub use workqueue::{
    DelayedWork, Group, JoinError, JoinHandle, Panic, QueueError, Scope, ScopedJoinHandle,
    TryQueueError, Work, Workqueue, WorkqueueBuilder,
};

/// The README's examples (`README.md` of the repository, the crate's README), compiled and run
/// as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
