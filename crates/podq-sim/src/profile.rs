//! [`Profile`]: the costs and mechanisms of one runtime: the Linux workqueue (`kernel`) or
//! podq (`podq`).

use std::borrow::Cow;

use crate::cost::{Costs, Param};

/// How a runtime's pools work, where the two profiles differ in more than costs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mechanism {
    /// The queue call wakes the worker while it holds the pool lock (the kernel's
    /// `kick_pool` runs under `pool->lock`); otherwise after unlocking (podq's step P7).
    pub wake_under_lock: bool,
    /// A push takes only its CPU's lane lock, and the pool lock only when
    /// [`podq::policy::growth::wants_help`] says so (podq's steps P2-P5); otherwise every
    /// push takes the one pool lock (the kernel).
    pub push_lanes: bool,
    /// A worker runs only on its pod's CPUs; otherwise the scheduler may place it on any idle
    /// CPU of the pod's cache domains (the kernel's default, `affinity_strict=0`).
    pub strict: bool,
    /// A worker woken by a producer whose CPU the worker last ran on waits for that CPU rather
    /// than taking an idle one: the scheduler's rule for wake-ups by a per-CPU kernel thread
    /// (`select_idle_sibling`), which test_workqueue's producers are.
    pub stack_on_waker: bool,
    /// A pool that wakes a parked worker whose last CPU is outside the pool's pod first moves
    /// the CPU the scheduler starts its search from to one of the pod's, the next after the
    /// waking CPU's previous pick (`kick_pool` sets `p->wake_cpu` with
    /// `cpumask_any_and_distribute` for a pool of non-strict affinity, Linux 6.6 on).
    pub repatriates: bool,
    /// A woken worker stays first on its pool's idle list until it runs (the kernel's
    /// `worker_leave_idle` in `worker_thread`), so a queue call or a take before then that would
    /// wake a worker (`kick_pool` wakes `first_idle_worker`) wakes it again, which does nothing:
    /// a pool has at most one woken worker on its way. Without it each wake-up takes another
    /// parked worker (podq's `Workers::coming`).
    pub kick_until_running: bool,
    /// The most workers per pool.
    pub max_workers: usize,
    /// Workers started at once while tasks wait with every worker busy; `None`: the pod's
    /// CPU count (podq), capped at `max_workers`.
    pub eager_workers: Option<usize>,
    /// Whether the runtime has pull (idle workers taking waiting items of sibling pools,
    /// podq's `src/pool/README.md`, "Pull"); the Linux workqueue has none.
    pub pulls: bool,
    /// The `spin_loop` pauses a producer of the closed loop spends on its item's completion
    /// before it sleeps, each [`WORKER_SPINS`]th of [`Costs::spin_ns`](crate::Costs::spin_ns);
    /// 0: it sleeps at once (the kernel's `wait_for_completion`).
    pub waiter_spins: u32,
    /// The cache lines a hand-over of podq's head or lane lock moves: the lock word with the
    /// queue it guards, in one `CachePadded` block (`pool/core/mod.rs`), which the
    /// adjacent-line prefetcher fetches as one; `None`: the pool lock's
    /// [`Costs::lines_per_handover`](crate::Costs::lines_per_handover) (the kernel's one lock).
    pub queue_lock_lines: Option<u32>,
    /// Each worker up to the eager size holds the item that its running item queues to its own
    /// pool, when it queues one, and runs it next, and, taking from a busy pool's head, the
    /// head's next items too, as `podq::policy::held` decides (podq's held slots, steps H1-H8;
    /// `engine/held.rs`); otherwise such an item is pushed as any other, and a take takes one.
    pub holds: bool,
    /// A worker taking from a busy pool's head takes the head's next items into its held slot
    /// too (podq's step H8), when [`Mechanism::holds`] is on; off: one item per take, as in
    /// podq before H8 (a `podq bench --json` row without `ahead` was measured so).
    pub holds_ahead: bool,
    /// The head and pool locks are futex mutexes (Rust's `std::sync::Mutex` on Linux): a
    /// thread that finds one held spins [`MUTEX_SPINS`] pauses while nobody sleeps on it, then
    /// marks it contended and sleeps (`futex_wait`); an unlock of a contended lock wakes one
    /// sleeper (`futex_wake`, paid by the unlocker), which tries again when it runs, and marks
    /// the lock contended when it takes it. Otherwise a lock is a queue of spinning waiters
    /// (the kernel's spinlocks).
    pub futex_locks: bool,
}

/// A runtime's costs and mechanisms.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    /// `kernel` or `podq`.
    pub name: &'static str,
    /// The cost parameters.
    pub costs: Costs,
    /// The mechanisms.
    pub mechanism: Mechanism,
    /// For each fitted cost, the least and greatest value its fit allows: for the costs fitted
    /// on the published tables, every value their fits gave (on both tables and on each
    /// alone); for those fitted on a `podq bench` run (`podq sim --calibrate`), every value
    /// the fit tried that matches the run as closely as the run's own repeats agree. A range
    /// spans at least that much of it ([`uncertainty::spread`](crate::uncertainty::spread)).
    pub fit_spread: Cow<'static, [(Param, f64, f64)]>,
    /// The clock, in GHz, of the core the costs' software figures are at: a machine of
    /// another clock runs them that much faster or slower
    /// ([`Platform::work_factor`](crate::Platform::work_factor)); `None`: the clock of
    /// whatever machine is simulated.
    pub clock_ghz: Option<f64>,
}

/// The `spin_loop` pauses of a `podq bench` producer's wait on its item's completion before it
/// parks (`SPIN_CHECKS` in `crates/podq-cli/src/bench/executor.rs`).
pub const BENCH_WAITER_SPINS: u32 = 32;

/// The `spin_loop` pauses of a podq worker's spin-only rounds (`sync::SPIN_ONLY_ROUNDS`, 9
/// doubling rounds: 2^9 - 1), which [`Costs::spin_ns`](crate::Costs::spin_ns) lasts.
pub const WORKER_SPINS: u32 = 511;

/// The `spin_loop` pauses of a thread that finds a `std::sync::Mutex` held before it sleeps on
/// it (`spin` in the standard library's `sys/sync/mutex/futex.rs`), each [`WORKER_SPINS`]th
/// of [`Costs::spin_ns`](crate::Costs::spin_ns); it stops at once when the lock is marked
/// contended (someone sleeps on it).
pub const MUTEX_SPINS: u32 = 100;

/// The profile names `--profile` takes.
pub const PROFILES: [&str; 2] = ["kernel", "podq"];

impl Profile {
    /// The profile called `name`, with its default costs.
    pub fn by_name(name: &str) -> Option<Profile> {
        match name {
            "kernel" => Some(Profile::kernel()),
            "podq" => Some(Profile::podq()),
            _ => None,
        }
    }

    /// The Linux workqueue, calibrated on the two published `test_workqueue` tables only
    /// ([`crate::published`]); `podq sim --published` prints the error per cell. Its costs are
    /// at Grace's clock.
    pub fn kernel() -> Profile {
        Profile {
            name: "kernel",
            costs: crate::calibrated::KERNEL,
            fit_spread: Cow::Borrowed(&crate::calibrated::FIT_SPREAD),
            clock_ghz: crate::Platform::part_clock_ghz("grace"),
            mechanism: Mechanism {
                wake_under_lock: true,
                push_lanes: false,
                strict: false,
                stack_on_waker: true,
                repatriates: true,
                kick_until_running: true,
                // WORKER_ID_LEN aside, the kernel bounds an unbound pool's workers only by
                // memory; 512 (WQ_MAX_ACTIVE) is more than any workload here needs.
                max_workers: 512,
                eager_workers: Some(512),
                pulls: false,
                waiter_spins: 0,
                queue_lock_lines: None,
                holds: false,
                holds_ahead: false,
                futex_locks: false,
            },
        }
    }

    /// podq, with costs to be fitted by `--calibrate` on a `podq bench --json` run; without
    /// one, the kernel's fitted costs stand in, with workers whose spin-only rounds last 20 us
    /// before their closing yields (podq's `sync::SPIN_ONLY_ROUNDS`, [`WORKER_SPINS`] pauses:
    /// twice the duration its doc gives, as a pause takes more cycles on many servers) and an
    /// item's own data on one cache line.
    pub fn podq() -> Profile {
        Profile {
            name: "podq",
            costs: Costs {
                spin_ns: 20_000.0,
                // The item's line (a boxed closure's pointer and state).
                item_lines: 1.0,
                ..crate::calibrated::KERNEL
            },
            fit_spread: Cow::Borrowed(&crate::calibrated::FIT_SPREAD),
            clock_ghz: crate::Platform::part_clock_ghz("grace"),
            mechanism: Mechanism {
                wake_under_lock: false,
                push_lanes: true,
                strict: false,
                stack_on_waker: false,
                repatriates: false,
                kick_until_running: false,
                // podq's pool::DEFAULT_MAX_WORKERS.
                max_workers: 256,
                eager_workers: None,
                pulls: true,
                waiter_spins: BENCH_WAITER_SPINS,
                queue_lock_lines: Some(1),
                holds: true,
                holds_ahead: true,
                futex_locks: true,
            },
        }
    }
}
