//! [`WorkqueueBuilder`]: a workqueue's attributes, all checked in one place (`check`) when
//! [`WorkqueueBuilder::build`] is called.

use std::sync::Arc;
use std::time::Duration;

use crate::cpuset::CpuSet;
use crate::error::{Error, Result};
use crate::fork::PerFork;
use crate::limits::CpuLimits;
use crate::pool::{self, Hook, PoolAttrs, WorkerInfo, WorkerOptions};
use crate::scope::{AffinityScope, DEFAULT_SHARD_SIZE};
use crate::topology::Topology;

use crate::workqueue::api::workqueue::Workqueue;
use crate::workqueue::layout::follow;
use crate::workqueue::layout::{Reform, Shape};

/// The attributes of a workqueue; [`Workqueue::builder`] makes one.
///
/// ```
/// use podq::{AffinityScope, Workqueue};
///
/// let wq = Workqueue::builder("io")
///     .scope(AffinityScope::CacheShard)
///     .shard_size(8)
///     .strict(false)
///     .max_active(256)
///     .build()?;
/// assert_eq!(wq.name(), "io");
/// # Ok::<(), podq::Error>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct WorkqueueBuilder {
    /// The name, shown in statistics.
    name: String,
    /// How CPUs are grouped into pods; `None`: `PODQ_SCOPE`, else the default scope.
    scope: Option<AffinityScope>,
    /// Cores per `cache_shard` pod; `None`: `PODQ_SHARD_SIZE`, else the default size.
    shard_size: Option<usize>,
    /// Whether workers stay on their pod's CPUs.
    strict: bool,
    /// Items running at once at most; `None`: no limit beyond the pools' workers.
    max_active: Option<usize>,
    /// The workqueue's CPUs; `None`: every usable CPU.
    cpus: Option<CpuSet>,
    /// The machine; `None`: this machine, discovered once per process.
    topology: Option<Topology>,
    /// How long an idle worker waits before it retires.
    idle_timeout: Duration,
    /// Workers per pool at most.
    max_workers: usize,
    /// Whether idle workers pull waiting items from sibling pools (never for strict ones);
    /// `None`: `PODQ_PULL`, else on.
    pull: Option<bool>,
    /// Whether groups steer their items to their home pods; `None`: `PODQ_STEER`, else on.
    steer: Option<bool>,
    /// Executions waiting at most before queue calls wait; `None`: no bound.
    max_backlog: Option<usize>,
    /// How the pools' workers are made, and their hooks.
    worker: WorkerOptions,
    /// Where the CPUs the process may use come from; `None`: this machine's, for a workqueue
    /// on this machine, and none followed on a topology given to the builder.
    limits: Option<Arc<dyn CpuLimits>>,
}

impl WorkqueueBuilder {
    /// Defaults: the scope, shard size, pull and steering of the environment (`PODQ_SCOPE`,
    /// `PODQ_SHARD_SIZE`, `PODQ_PULL`, `PODQ_STEER`), else the default scope (`cache_shard`),
    /// 8 cores per shard, pull and steering on; not strict, no `max_active`, every usable CPU of this machine, the pool layer's worker cap and idle
    /// timeout.
    pub(crate) fn new(name: String) -> Self {
        WorkqueueBuilder {
            name,
            scope: None,
            shard_size: None,
            strict: false,
            max_active: None,
            cpus: None,
            topology: None,
            idle_timeout: pool::DEFAULT_IDLE_TIMEOUT,
            max_workers: pool::DEFAULT_MAX_WORKERS,
            pull: None,
            steer: None,
            max_backlog: None,
            worker: WorkerOptions::default(),
            limits: None,
        }
    }

    /// How CPUs are grouped into pods (default: the environment's
    /// [`PODQ_SCOPE`](crate::scope::SCOPE_VAR), else `cache_shard`).
    pub fn scope(mut self, scope: AffinityScope) -> Self {
        self.scope = Some(scope);
        self
    }

    /// Cores per `cache_shard` pod (default: the environment's
    /// [`PODQ_SHARD_SIZE`](crate::scope::SHARD_SIZE_VAR), else 8, the kernel's); must be at
    /// least 1.
    pub fn shard_size(mut self, cores: usize) -> Self {
        self.shard_size = Some(cores);
        self
    }

    /// `true`: workers stay on their pod's CPUs. `false` (default): they start there and the
    /// OS may move them within the workqueue's CPUs.
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// At most `items` of this workqueue's items run at once; the rest wait in FIFO order.
    /// Must be at least 1.
    ///
    /// A limit the pools' workers can never reach (at least pools × `max_workers`) costs
    /// nothing; a lower one adds one workqueue-wide counter to each queue call and completion.
    pub fn max_active(mut self, items: usize) -> Self {
        self.max_active = Some(items);
        self
    }

    /// The CPUs the workqueue's items may run on (default: every usable CPU). Work issued on
    /// another CPU goes to these CPUs' pods in turn.
    pub fn cpus(mut self, cpus: CpuSet) -> Self {
        self.cpus = Some(cpus);
        self
    }

    /// The machine to form pods on (default: this machine). A synthetic topology may name CPUs
    /// this machine lacks; workers then run where the OS puts them.
    pub fn topology(mut self, topology: Topology) -> Self {
        self.topology = Some(topology);
        self
    }

    /// How long a worker stays idle before it retires (default: 300 s, the kernel's).
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Workers per pool at most (default: 256); must be at least 1.
    pub fn max_workers(mut self, workers: usize) -> Self {
        self.max_workers = workers;
        self
    }

    /// `true` (default: the environment's [`PODQ_PULL`](crate::scope::PULL_VAR), else on): an
    /// idle worker, before it parks, pulls the oldest waiting item of a sibling pool, nearest
    /// first, in three levels: the other pods of its cache domain (`cache_domain`), then those
    /// of its NUMA node (`node`), then those of the machine (`machine`). A pool with every
    /// worker busy offers its waiting items to its siblings once 2 wait (to every level), or
    /// once 1 waits that was queued from a CPU outside its pod (to its cache domain only); an
    /// adaptive gate per level stops the
    /// search when it rarely finds work (see `src/pool/README.md`, "Pull"; each level's counts
    /// are in [`PullStats`](crate::PullStats)). `false`: items run only on workers of the pool
    /// they were queued to. A strict workqueue never pulls, whatever this says: its items stay
    /// on their pod's CPUs. Workqueues whose pull setting differs do not share pools;
    /// [`Workqueue::set_pull`] switches it at run time.
    pub fn pull(mut self, pull: bool) -> Self {
        self.pull = Some(pull);
        self
    }

    /// `true` (default: the environment's [`PODQ_STEER`](crate::scope::STEER_VAR), else on): a
    /// [`Group`](crate::Group)'s items go to the pod where the group's items last ran while
    /// that pod has room (the rules: [`Group`](crate::Group)). `false`: a group's calls behave
    /// exactly like the workqueue's own. Pools are shared whatever this says;
    /// [`Workqueue::set_steer`] switches it at run time.
    pub fn steer(mut self, steer: bool) -> Self {
        self.steer = Some(steer);
        self
    }

    /// At most `items` of this workqueue's executions wait (queued and not started: in a
    /// pool's queue, in the `max_active` FIFO, or queued again behind their own running
    /// item); must be at least 1. Default: no bound.
    ///
    /// When `items` wait already:
    ///
    /// * [`Workqueue::try_queue`] and [`Workqueue::try_queue_work`] return
    ///   [`QueueError::Full`](crate::QueueError::Full) at once;
    /// * every other queue call ([`Workqueue::queue`], [`Workqueue::spawn`],
    ///   [`Workqueue::queue_work`], `queue_on`, `queue_node`, `queue_work_on`) waits until an
    ///   execution starts and makes room. `queue_work` waits for room before it looks at the
    ///   item, so a call for a pending item also waits, then returns `false`;
    /// * a queue call made from one of this workqueue's own running items never waits: it is
    ///   taken over the bound. Waiting there could wait forever (every worker may be such an
    ///   item, and only a worker makes room), so an item may always queue onto its own
    ///   workqueue;
    /// * delayed items whose delay ends (and `queue_delayed` with a zero delay) are queued
    ///   over the bound too: the timer never waits. They count, so queue calls wait longer.
    ///
    /// A blocking queue call from an item of another workqueue can still wait on a cycle
    /// (workqueue A's items queue onto a full B whose items queue onto a full A), as any
    /// bounded queue can: use the `try_` calls there.
    ///
    /// The bound costs each execution one workqueue-wide counter written when it is queued
    /// and when it starts; without it, a queue call writes no such counter.
    pub fn max_backlog(mut self, items: usize) -> Self {
        self.max_backlog = Some(items);
        self
    }

    /// Each worker thread's stack size, in bytes (default: the standard library's, 2 MiB
    /// unless `RUST_MIN_STACK` says otherwise; the OS rounds it up to its minimum and page
    /// size). Workqueues whose worker options differ do not share pools.
    pub fn worker_stack_size(mut self, bytes: usize) -> Self {
        self.worker.stack_size = Some(bytes);
        self
    }

    /// The nice value (-20 to 19) each worker thread sets on itself when it starts (default:
    /// the nice value of the thread that starts it). On Linux a nice value belongs to a thread
    /// (`setpriority` on its thread id), so this changes the workers alone. Raising it (a
    /// lower priority) is always allowed; going below the process's own needs
    /// `CAP_SYS_NICE` or room in `RLIMIT_NICE`.
    ///
    /// [`build`](WorkqueueBuilder::build) tries it on a thread made for the purpose and
    /// returns [`Error::WorkerNice`] when the OS refuses it, or on systems other than Linux.
    /// Workqueues whose worker options differ do not share pools.
    pub fn worker_nice(mut self, nice: i32) -> Self {
        self.worker.nice = Some(nice);
        self
    }

    /// Runs `hook` on each worker thread of this workqueue's pools as it starts, before it
    /// runs any item, with the worker's pool name, pod and CPUs (a worker of a pool created
    /// later, or started to replace a retired one, runs it too).
    ///
    /// Pools are shared by equal attributes, and a hook is equal only to itself: a workqueue
    /// with a hook gets pools of its own (clones of this builder share them). A panic in the
    /// hook is contained and counted in the pool's `worker_panics`; the worker goes on.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// use podq::Workqueue;
    ///
    /// let started = Arc::new(AtomicUsize::new(0));
    /// let seen = Arc::clone(&started);
    /// let wq = Workqueue::builder("hooked")
    ///     .on_worker_start(move |w| {
    ///         seen.fetch_add(1, Ordering::Relaxed);
    ///         println!("worker of {} on pod {} (CPUs {})", w.pool, w.pod, w.cpus);
    ///     })
    ///     .build()?;
    /// wq.queue(|| {});
    /// wq.flush();
    /// assert!(started.load(Ordering::Relaxed) >= 1);
    /// # Ok::<(), podq::Error>(())
    /// ```
    pub fn on_worker_start(mut self, hook: impl Fn(&WorkerInfo) + Send + Sync + 'static) -> Self {
        self.worker.on_start = Some(Hook(std::sync::Arc::new(hook)));
        self
    }

    /// Has every thread started for this workqueue (its pools' workers, and the helpers its
    /// build starts) pass `starts` before the OS is asked (default: the OS alone). Tests
    /// refuse thread starts with it, as the OS does at its thread limit; see
    /// [`crate::threads`]. Workqueues given different gates do not share pools.
    pub fn thread_starts(
        mut self,
        starts: std::sync::Arc<dyn crate::threads::ThreadStarts>,
    ) -> Self {
        self.worker.starts = Some(crate::threads::Gate(starts));
        self
    }

    /// Runs `hook` on each worker thread of this workqueue's pools as it ends (retired when
    /// idle, or when its pool shuts down), after its last item. It runs after the pool has
    /// counted the worker out, so it may run a moment after the workqueue's drop returns.
    /// As for [`on_worker_start`](WorkqueueBuilder::on_worker_start): pools of its own, and a
    /// panic in it is contained and counted.
    pub fn on_worker_stop(mut self, hook: impl Fn(&WorkerInfo) + Send + Sync + 'static) -> Self {
        self.worker.on_stop = Some(Hook(std::sync::Arc::new(hook)));
        self
    }

    /// Where the workqueue learns which CPUs the process may use now (default: the OS's
    /// answer, [`SystemLimits`](crate::limits::SystemLimits), for a workqueue on this machine;
    /// none on a topology given with [`WorkqueueBuilder::topology`]). Its pods are re-formed
    /// when the answer changes (see [`crate::limits`]).
    pub fn cpu_limits(mut self, limits: Arc<dyn CpuLimits>) -> Self {
        self.limits = Some(limits);
        self
    }

    /// Checks the attributes, takes the pools of every pod (shared with every workqueue of
    /// equal attributes) and returns the workqueue.
    ///
    /// # Errors
    ///
    /// * [`Error::ZeroShardSize`]: a shard size of 0;
    /// * [`Error::BadEnvironment`]: a `PODQ_SCOPE`, `PODQ_SHARD_SIZE`, `PODQ_PULL` or
    ///   `PODQ_STEER` that is not a scope, a shard size, `on` or `off`, when the builder was
    ///   given none;
    /// * [`Error::ZeroMaxActive`]: a `max_active` of 0;
    /// * [`Error::ZeroMaxWorkers`]: a `max_workers` of 0;
    /// * [`Error::ZeroMaxBacklog`]: a `max_backlog` of 0;
    /// * [`Error::WorkerNice`]: a `worker_nice` this process may not set on its threads;
    /// * [`Error::EmptyCpuSet`]: an empty CPU set;
    /// * [`Error::UnknownCpu`]: a CPU that is not usable on the topology;
    /// * [`Error::WorkerStackSize`]: a `worker_stack_size` no thread can be given;
    /// * [`Error::ThreadRefused`]: a helper thread the workqueue needs (its rescuer, the
    ///   timer, the watchdog, the reaper, the limits follower: see [`crate::threads`]) that
    ///   is not running yet and that the OS refused to start;
    /// * the topology's error when this machine's topology cannot be read.
    pub fn build(mut self) -> Result<Workqueue> {
        let requested = self.cpus.clone();
        let this_machine = self.topology.is_none();
        let (scope, shard_size) = self.scope_and_shard_size()?;
        let pull = self.switch(self.pull, crate::scope::PULL_VAR)? && !self.strict;
        let steer = self.switch(self.steer, crate::scope::STEER_VAR)?;
        let (machine, cpus) = self.check()?;
        let follows = this_machine || self.limits.is_some();
        super::helpers::ensure(&self.worker, follows)?;
        let attrs = PoolAttrs {
            scope,
            shard_size,
            strict: self.strict,
            cpus,
            max_workers: self.max_workers,
            idle_timeout: self.idle_timeout,
            pull,
            worker: self.worker.clone(),
        };
        let limits = if this_machine {
            Some(self.limits.unwrap_or_else(follow::system_limits))
        } else {
            self.limits
        };
        // The first layout is formed on the CPUs allowed now (every CPU of the machine when
        // nothing limits them, or the limits cannot be read).
        let allowed = limits
            .as_ref()
            .and_then(|l| l.allowed().ok())
            .map(|a| a.intersection(&machine.cpu_set()))
            .filter(|a| !a.is_empty())
            .unwrap_or_else(|| machine.cpu_set());
        let topology = machine
            .within(&allowed)
            .ok_or_else(Error::empty_workqueue_cpus)?;
        let shape = Shape {
            scope,
            shard_size,
            allowed,
            pull,
        };
        let reform = Reform {
            wq: std::sync::Weak::new(),
            machine,
            rediscover: this_machine.then_some(Topology::discover_online as fn() -> _),
            attrs,
            requested,
            limits,
            closed: false,
        };
        let wq = Workqueue::from_parts(
            self.name,
            &topology,
            shape,
            reform,
            self.max_active,
            self.max_backlog,
        )?;
        wq.shared.steer.set_enabled(steer);
        Ok(wq)
    }
}

/// This machine's topology with every online CPU, whatever the process may use now (a
/// workqueue forms its pods on the CPUs it may use, and re-forms them when those change: see
/// `crate::limits`), read once per process. Once per fork generation (K2 of
/// `workqueue/README.md`), so that a child never waits on a first read that a thread of its
/// parent was making at the fork.
fn this_machine() -> Result<Topology> {
    static THIS: PerFork<Topology> = PerFork::new();
    if let Some(t) = THIS.built() {
        return Ok(t.clone());
    }
    let t = Topology::discover_online()?;
    Ok(THIS.get(|| t.clone()).clone())
}

impl WorkqueueBuilder {
    /// The scope and shard size: those given, else the environment's, else the defaults.
    ///
    /// # Errors
    ///
    /// [`Error::ZeroShardSize`] for a shard size of 0; [`Error::BadEnvironment`] for an
    /// environment variable that is read and is not a scope or a shard size.
    fn scope_and_shard_size(&self) -> Result<(AffinityScope, usize)> {
        let scope = match self.scope {
            Some(scope) => scope,
            None => crate::scope::scope_from_env()?.unwrap_or_default(),
        };
        let shard_size = match self.shard_size {
            Some(0) => return Err(Error::ZeroShardSize),
            Some(n) => n,
            None => crate::scope::shard_size_from_env()?.unwrap_or(DEFAULT_SHARD_SIZE),
        };
        Ok((scope, shard_size))
    }

    /// A switch: `given`, else the environment's `var`, else on.
    ///
    /// # Errors
    ///
    /// [`Error::BadEnvironment`] for a `var` that is read and is neither `on` nor `off`.
    fn switch(&self, given: Option<bool>, var: &str) -> Result<bool> {
        match given {
            Some(on) => Ok(on),
            None => Ok(crate::scope::switch_from_env(var)?.unwrap_or(true)),
        }
    }

    /// Checks every attribute and takes the topology (this machine's, with every online CPU,
    /// when none was given) and the workqueue's CPUs (every CPU of it when none were given).
    /// The one place where a workqueue's attributes are checked, each error with one message:
    /// the pods, pools and placement built from them take them as checked.
    fn check(&mut self) -> Result<(Topology, CpuSet)> {
        if self.max_active == Some(0) {
            return Err(Error::ZeroMaxActive);
        }
        if self.max_workers == 0 {
            return Err(Error::ZeroMaxWorkers);
        }
        if self.max_backlog == Some(0) {
            return Err(Error::ZeroMaxBacklog);
        }
        if let Some(nice) = self.worker.nice {
            pool::check_nice(nice).map_err(|e| Error::WorkerNice {
                nice,
                reason: e.to_string(),
            })?;
        }
        let topology = match self.topology.take() {
            Some(t) => t,
            None => this_machine()?,
        };
        let usable = topology.cpu_set();
        let cpus = match self.cpus.take() {
            None => usable,
            Some(cpus) => {
                if cpus.is_empty() {
                    return Err(Error::empty_workqueue_cpus());
                }
                if let Some(cpu) = cpus.iter().find(|&c| !usable.contains(c)) {
                    return Err(Error::UnknownCpu {
                        cpu,
                        usable: usable.to_string(),
                    });
                }
                cpus
            }
        };
        Ok((topology, cpus))
    }
}
