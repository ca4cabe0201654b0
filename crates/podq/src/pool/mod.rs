//! Worker pools: one queue and a set of worker threads per (attributes, pod), generic over
//! what they run ([`Runnable`]).
//!
//! The pool is the unit of contention, exactly as in the kernel: every user with equal
//! [`PoolAttrs`] queues the work of one pod onto the same [`Pool`], whose workers share one
//! queue, so the scope and the shard size decide how many threads fight over each pool. The
//! queue's tail is split into lanes, one per CPU of the pod: a pusher locks only its CPU's
//! lane; workers take tasks from the head under the head lock and refill it with a whole lane
//! at a time; the pool lock guards the workers' state, and a push takes it only when a worker
//! must be woken or started.
//!
//! * A [`Registry`] hands out the pools of every pod for a set of attributes as a
//!   [`PoolSet`] (`registry.rs`, `set.rs`); its user (the workqueue layer) keeps the registry
//!   in a static of its own, for its own task type.
//! * [`Pool::push`] queues a task and wakes an idle worker or starts one. The concurrent core
//!   (`core/`: the queue, idle coordination, growth, lifecycle) follows the protocol written
//!   down in `pool/README.md`; the decisions it carries out are `crate::policy`'s.
//! * Workers (`worker.rs`) are started on demand: at once up to the pod's CPU count, then by
//!   the stall watchdog (`watchdog.rs`) while busy workers block or queued work makes no
//!   progress, up to [`PoolAttrs::max_workers`]; they are pinned to the pod, named
//!   `podq/{pool}`, spin briefly before parking ([`SPIN_ROUNDS`]), and retire after
//!   [`PoolAttrs::idle_timeout`] idle. When the OS refuses a worker, the pool's waiting tasks
//!   go to a rescuer thread started at the workqueue's build (`rescuer.rs`, M1-M5).
//! * When the last user of a pool lets go, its workers run everything still queued and exit.

mod apart;
mod core;
mod held;
mod lanes;
mod load;
mod options;
mod probe;
mod pull;
mod registry;
mod rescuer;
mod set;
mod watchdog;
mod worker;

use std::fmt;
use std::sync::{OnceLock, Weak};
use std::time::Duration;

use crate::cpuset::CpuSet;
use crate::policy::growth::Limits;
use crate::policy::pull::Level;
use crate::policy::stall::Look;
use crate::scope::{AffinityScope, Pod};
use crate::stats::PoolStats;
use crate::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use crate::sync::{Arc, CachePadded};

pub(crate) use self::core::queue::chain::Spares;
use self::core::{Config, Core, Grow, Push};
use lanes::LaneMap;
use load::{LoadSignal, Sample};
use probe::Probes;
use pull::PullGroup;

pub(crate) use load::Load;
pub use options::WorkerInfo;
pub(crate) use options::{check_nice, Hook, WorkerOptions};
pub(crate) use registry::Registry;
pub(crate) use rescuer::ensure as ensure_rescuer;
pub(crate) use set::PoolSet;
pub(crate) use watchdog::ensure as ensure_watchdog;
pub(crate) use worker::{drop_payload, worker_pod};

/// Workers per pool at most, by default: the kernel's default `max_active` for a workqueue
/// (`WQ_DFL_ACTIVE`, 256), so that a workqueue at its `max_active` never waits for a worker.
pub(crate) const DEFAULT_MAX_WORKERS: usize = 256;

/// How long a worker stays idle before it retires, by default: 300 s, the kernel's
/// `IDLE_WORKER_TIMEOUT`.
pub(crate) const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// Backoff rounds an idle worker spins (W5) before it parks: 13, that is the rounds of
/// doubling spins of `sync::SPIN_ONLY_ROUNDS` (9: the budget and its measurements are there)
/// and then 4 yields, as crossbeam's `Backoff` ends.
///
/// Spinning at all saves the closed loop a futex wake-up per queue call: measured with `podq
/// bench` on 2 CPUs, parking at once gives cache_shard 164k items/s and a queue call p50 of
/// 4.3 us, spinning first 345k items/s and a p50 of 0.28 us.
pub(crate) const SPIN_ROUNDS: u32 = 13;

/// Rounds an idle worker yields the CPU (W5, `sync::yield_until`) before it parks, instead of
/// [`SPIN_ROUNDS`], in a pool made while the process may use only one CPU: there a spinning
/// worker keeps the thread that would queue its next task from running. 4, the yields that
/// end [`SPIN_ROUNDS`]. Under `taskset -c 0`, `podq bench --threads 1 --runs 5 --peers
/// channel --scopes cache_shard`: spinning 0.15M items/s (0.83-0.86x the channel pool),
/// yielding 0.22-0.23M (1.21-1.24x); parking at once also 0.22M, but its flood (`--workload
/// flood`) drops from 4.95-5.22M items/s to 4.5-4.8M; 8 yields do no better than 4.
pub(crate) const ONE_CPU_YIELD_ROUNDS: u32 = 4;

/// How the idle workers of a pool made now wait before they park (W5), from the number of CPUs
/// the process may use (`None`: unknown): [`SPIN_ROUNDS`] spinning, or on one CPU
/// [`ONE_CPU_YIELD_ROUNDS`] yielding (the `bool`).
fn idle_wait(process_cpus: Option<usize>) -> (u32, bool) {
    match process_cpus {
        Some(1) => (ONE_CPU_YIELD_ROUNDS, true),
        _ => (SPIN_ROUNDS, false),
    }
}

/// What a pool runs: one queued execution that never unwinds (the workqueue layer's task).
pub(crate) trait Runnable: Send + 'static {
    /// Runs it, with all its accounting; must not unwind (the worker guards against it anyway).
    fn run(self);
}

/// What makes two users share their pools: equal attributes give the same pools.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub(crate) struct PoolAttrs {
    /// How CPUs are grouped into pods.
    pub(crate) scope: AffinityScope,
    /// Cores per `cache_shard` pod.
    pub(crate) shard_size: usize,
    /// Whether workers stay on their pod's CPUs.
    pub(crate) strict: bool,
    /// The workqueue's CPUs: a pool serves its pod's CPUs within these.
    pub(crate) cpus: CpuSet,
    /// Workers per pool at most (at least 1).
    pub(crate) max_workers: usize,
    /// How long a worker stays idle before it retires.
    pub(crate) idle_timeout: Duration,
    /// Whether the pools' idle workers pull from sibling pools, and siblings from them
    /// (never for strict pools).
    pub(crate) pull: bool,
    /// How the workers are made, and their hooks.
    pub(crate) worker: WorkerOptions,
}

/// What a pool's workers share with its handle.
pub(crate) struct Shared<T> {
    /// The queue, the idle workers and the pool lock.
    core: Core<T>,
    /// I: short name, `cs8-p2`; worker threads are `podq/cs8-p2`.
    name: String,
    /// I: the pod this pool serves; its CPUs are within the workqueue's CPUs.
    pod: Pod,
    /// I: whether workers stay on the pod's CPUs.
    strict: bool,
    /// I: the lane of the tail each CPU pushes to. On lines of its own: every push reads it.
    lanes: CachePadded<LaneMap>,
    /// I: the workqueue's CPUs, where non-strict workers may move.
    cpus: CpuSet,
    /// A: workers that could not be pinned as asked and ran unpinned. Relaxed: a statistic.
    pin_failures: AtomicU64,
    /// A: tasks whose `run` unwound into the worker (a bug in the task; the worker goes on).
    /// Relaxed: a statistic.
    worker_panics: AtomicU64,
    /// A: worker threads the OS refused to start. Relaxed: a statistic.
    spawn_failures: AtomicU64,
    /// Since when workers are refused, and whether the pool is in its rescuer's list (M1-M5).
    refusals: rescuer::Refusals,
    /// A: tasks queued on another pool that this pool's workers pulled. Relaxed: a statistic.
    pulled_in: AtomicU64,
    /// A: tasks queued on this pool that another pool's workers pulled. Relaxed: a statistic.
    pulled_out: AtomicU64,
    /// A: set when the pool's last handle is dropped: its workers no longer pull, and
    /// siblings no longer kick it. Relaxed: shutdown itself is ordered by the pool lock.
    shut: AtomicBool,
    /// The probes of the live workers, by which the watchdog sees blocked ones (D2).
    probes: Probes,
    /// A: busy workers the watchdog found asleep in a task, each task counted once. Relaxed:
    /// a statistic.
    workers_seen_blocked: AtomicU64,
    /// A: workers started because busy ones were found asleep (D2). Relaxed: a statistic.
    workers_started_for_blocked: AtomicU64,
    /// A: the pool's load, sampled by steering decisions that read it (`load.rs`). On lines
    /// of its own: read by the issuers of grouped items, written once per sample.
    load: CachePadded<LoadSignal>,
    /// I (set once, right after the pools are made): the pull group of the pool set this pool
    /// was made for; unset when it does not pull. Weak: the group holds the pools' state.
    group: OnceLock<Weak<PullGroup<T>>>,
    /// I: how the workers are made, and their hooks.
    worker: WorkerOptions,
    /// The live workers by the CPU they were launched on, so that a pinned starter spreads
    /// them over the pod (`launch.rs`).
    launched: crate::launch::Launched,
    /// The watchdog's watch over the held slots (H2, H6), made at its first use.
    held_watch: held::WatchCell<T>,
}

impl<T> Shared<T> {
    /// Whether the pool's last handle is gone.
    fn is_shut(&self) -> bool {
        self.shut.load(Ordering::Relaxed)
    }
}

/// One pod's queue and workers, shared by every user with equal attributes.
///
/// Dropping the last handle shuts the pool down: its workers run everything still queued, then
/// exit; the drop waits for that unless it runs on one of this pool's own workers.
pub(crate) struct Pool<T: Runnable> {
    /// What the workers hold too.
    shared: Arc<Shared<T>>,
    /// I: the registry entry to forget on drop, for pools from a [`Registry`].
    entry: Option<registry::Entry<T>>,
}

impl<T: Runnable> Pool<T> {
    /// A pool with no worker yet, serving `pod` (its CPUs already within `attrs.cpus`), whose
    /// lanes keep the segments they are done with in `spares` (see [`Registry`]).
    pub(crate) fn new(name: String, pod: Pod, attrs: &PoolAttrs, spares: Arc<Spares<T>>) -> Self {
        let (lanes, lane_count) = LaneMap::new(&pod.cpus);
        let load = CachePadded::new(LoadSignal::new(pod.cpus.len()));
        // Asked once per pool: a change of the CPUs allowed that changes a workqueue's pods
        // makes new pools, which ask again; a pool that outlives such a change keeps its
        // answer (its idle workers wait a little longer, or a little less, than they should).
        let (spin_rounds, yield_only) =
            idle_wait(crate::launch::process_cpus().map(|cpus| cpus.len()));
        Self {
            shared: Arc::new(Shared {
                core: Core::with_spares(
                    Config {
                        // As many busy workers as the pod has CPUs keep it busy; more only help
                        // items that block, and the stall watchdog adds those.
                        limits: Limits::new(attrs.max_workers, pod.cpus.len()),
                        idle_timeout: attrs.idle_timeout,
                        spin_rounds,
                        yield_only,
                        lanes: lane_count,
                    },
                    spares,
                ),
                name,
                pod,
                strict: attrs.strict,
                lanes: CachePadded::new(lanes),
                cpus: attrs.cpus.clone(),
                pin_failures: AtomicU64::new(0),
                worker_panics: AtomicU64::new(0),
                spawn_failures: AtomicU64::new(0),
                refusals: rescuer::Refusals::default(),
                pulled_in: AtomicU64::new(0),
                pulled_out: AtomicU64::new(0),
                shut: AtomicBool::new(false),
                probes: Probes::default(),
                workers_seen_blocked: AtomicU64::new(0),
                workers_started_for_blocked: AtomicU64::new(0),
                load,
                group: OnceLock::new(),
                worker: attrs.worker.clone(),
                launched: crate::launch::Launched::default(),
                held_watch: held::WatchCell::new(),
            }),
            entry: None,
        }
    }

    /// Queues `task` in the lane of `at` (the caller's CPU, or thread index where the CPU
    /// cannot be read, as `crate::here::Here::index` gives it); wakes an idle worker, or
    /// starts one when every worker is busy and the pool is below `max_workers`. With
    /// `siblings` (the caller's set pulls), returns how far the pool should offer its waiting
    /// work to its siblings, if at all (`policy::pull::offer_reach`): work waits with every
    /// worker busy. Without, it is `None`, and the push reads nothing to decide it.
    #[inline]
    pub(crate) fn push(&self, task: T, at: usize, siblings: bool) -> Option<Level> {
        push_to(&self.shared, task, at, siblings)
    }

    /// Queues `task` from the task that just finished on the calling thread (a work item queued
    /// again while it ran, which its worker hands on when it returns). On a worker of this pool
    /// that worker takes it next, so nobody is woken (P2w): waking an idle worker here only
    /// makes it race the current one for the item, at a futex wake-up per closed-loop item.
    /// Anywhere else it is an ordinary [`Pool::push`] from the calling thread's CPU, and returns
    /// what that returns.
    pub(crate) fn push_after_run(&self, task: T, siblings: bool) -> Option<Level> {
        if worker::is_worker_of(&self.shared) {
            apart::kept(&self.shared);
            self.shared
                .core
                .push_for_self(self.shared.lanes.here(), task);
            None
        } else {
            self.push(task, crate::here::cpu_or_thread(), siblings)
        }
    }

    /// The pool's load at `now` (on [`clock`]), without taking any of its locks: sampled
    /// again when the last sample is older than `policy::steer::SAMPLE_INTERVAL` (`load.rs`).
    pub(crate) fn load(&self, now: Duration) -> Load {
        let shared = &self.shared;
        shared.load.read(now, || {
            let busy_workers = shared.probes.busy()?;
            Some(Sample {
                waiting: shared.core.waiting_hint(),
                busy_workers,
            })
        })
    }

    /// Takes out every waiting task for which `matches` is true (see `Core::take_all_if`).
    pub(crate) fn take_all_if(&self, matches: impl FnMut(&T) -> bool) -> Vec<T> {
        self.shared.core.take_all_if(matches)
    }

    /// Takes out the oldest waiting task for which `matches` is true (for cancel).
    pub(crate) fn remove_if(&self, matches: impl FnMut(&T) -> bool) -> Option<T> {
        self.shared.core.remove_if(matches)
    }

    /// The pod this pool serves (its CPUs within the workqueue's CPUs).
    pub(crate) fn pod(&self) -> &Pod {
        &self.shared.pod
    }

    /// Workers, queue depth, lock contention and counts, now.
    pub(crate) fn stats(&self) -> PoolStats {
        let shared = &self.shared;
        let snap = shared.core.snapshot();
        PoolStats {
            name: shared.name.clone(),
            pod: shared.pod.id,
            cpus: shared.pod.cpus.clone(),
            workers: snap.workers,
            idle_workers: snap.idle_workers,
            blocked_workers: shared.probes.blocked(),
            workers_created: snap.workers_created,
            workers_retired: snap.workers_retired,
            queue_depth: snap.queue_depth,
            lock_acquisitions: snap.lock.acquisitions,
            lock_contended: snap.lock.contended,
            executed: snap.executed,
            ran_by_queuer: snap.held.ran,
            taken_from_queuer: snap.held.taken,
            ran_ahead: snap.held.ahead_ran,
            pin_failures: shared.pin_failures.load(Ordering::Relaxed),
            worker_panics: shared.worker_panics.load(Ordering::Relaxed),
            spawn_failures: shared.spawn_failures.load(Ordering::Relaxed),
            workers_refused_since: shared.refusals.refused_since(),
            rescued: shared.refusals.rescued(),
            pulled_in: shared.pulled_in.load(Ordering::Relaxed),
            pulled_out: shared.pulled_out.load(Ordering::Relaxed),
            workers_seen_blocked: shared.workers_seen_blocked.load(Ordering::Relaxed),
            workers_started_for_blocked: shared.workers_started_for_blocked.load(Ordering::Relaxed),
            pull: None,
        }
    }
}

/// [`Pool::push`] on the pool whose state is `shared`. Inlined into every push: as a call of
/// its own it cost a flood 35 more instructions per item (callgrind), most of them copying the
/// task.
#[inline(always)]
fn push_to<T: Runnable>(
    shared: &Arc<Shared<T>>,
    task: T,
    at: usize,
    siblings: bool,
) -> Option<Level> {
    let own = shared.lanes.lookup(at);
    let from_pod = own.is_some();
    let lane = own.unwrap_or(at);
    let core = &shared.core;
    let reach = || {
        if !siblings {
            return None;
        }
        let waiting = core.to_offer(lane, from_pod)?;
        crate::policy::pull::offer_reach(waiting, from_pod, || shared.probes.all_busy())
    };
    let (grow, reach) = match core.push(lane, task) {
        Push::Spawn => (Grow::Spawn, None),
        Push::Watch => (Grow::Watch, reach()),
        Push::Busy => (Grow::No, reach()),
        Push::Woken | Push::Queued | Push::Handed => (Grow::No, None),
    };
    worker::grow_pool(shared, grow);
    reach
}

impl<T: Runnable> watchdog::Watched for Shared<T> {
    fn check(self: Arc<Self>, progress: bool) -> watchdog::Checked {
        let replaced = probe::replace_blocked(&self) > 0;
        let keep = !progress
            || match self.core.check_stall() {
                Look::Stop => false,
                Look::Spawn => {
                    #[cfg(feature = "tracing")]
                    crate::trace::pool_grows(&self.name, "stall");
                    worker::start(&self);
                    true
                }
                Look::Watch => true,
            };
        watchdog::Checked { keep, replaced }
    }
}

impl<T: Runnable> Drop for Pool<T> {
    fn drop(&mut self) {
        if let Some(entry) = self.entry.take() {
            entry.forget();
        }
        self.shared.shut.store(true, Ordering::Relaxed);
        #[cfg(feature = "tracing")]
        crate::trace::pool_shut_down(&self.shared.name);
        self.shared.core.shutdown();
        // A worker of this pool may drop the pool's last handle (a task dropping the last
        // workqueue): it must not wait for itself. It goes on running the queue, then exits.
        if !worker::is_worker_of(&self.shared) {
            self.shared.core.wait_for_exit();
        }
    }
}

impl<T: Runnable> fmt::Debug for Pool<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("name", &self.shared.name)
            .field("pod", &self.shared.pod)
            .field("strict", &self.shared.strict)
            .finish_non_exhaustive()
    }
}

/// The time on the pools' clock: since a moment fixed once per process (for the load signals
/// and the steering decisions that read them).
pub(crate) fn clock() -> Duration {
    pull::epoch().elapsed()
}

/// The short name of the pool of `pod` under `attrs`: `cs8-p2` (cache_shard of 8 cores, pod
/// 2), `cpu-p5`, `smt-p1`, `cache-p0`, `numa-p1`, `sys-p0`. Worker threads add `podq/`; Linux
/// keeps 15 bytes of a thread name, which this fits for pod ids up to 3 digits.
pub(crate) fn pool_name(scope: AffinityScope, shard_size: usize, pod: usize) -> String {
    match scope {
        AffinityScope::CacheShard => format!("cs{shard_size}-p{pod}"),
        AffinityScope::System => format!("sys-p{pod}"),
        other => format!("{}-p{pod}", other.name()),
    }
}

/// The size of the spinners' mailbox for tasks of type `T` (one cache line is the aim; the
/// workqueue's test of it runs without the `tracing` feature).
#[cfg(all(test, not(feature = "tracing")))]
pub(crate) fn mailbox_size<T>() -> usize {
    std::mem::size_of::<self::core::queue::mailbox::Mailbox<T>>()
}

#[cfg(test)]
mod tests;
