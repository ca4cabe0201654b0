//! [`WorkqueueBuilder`]: a workqueue's attributes, all checked in one place (`check`) when
//! [`WorkqueueBuilder::build`] is called.

use std::sync::Arc;
use std::time::Duration;

use crate::cpuset::CpuSet;
use crate::error::{Error, Result};
use crate::fork::PerFork;
use crate::limits::CpuLimits;
use crate::pool::{self, PoolAttrs};
use crate::scope::{AffinityScope, DEFAULT_SHARD_SIZE};
use crate::topology::Topology;

use super::layout::{Reform, Shape};
use super::Workqueue;

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
    /// Whether idle workers pull waiting items from sibling pools (never for strict ones).
    pull: bool,
    /// Where the CPUs the process may use come from; `None`: this machine's, for a workqueue
    /// on this machine, and none followed on a topology given to the builder.
    limits: Option<Arc<dyn CpuLimits>>,
}

impl WorkqueueBuilder {
    /// Defaults: the scope and shard size of the environment (`PODQ_SCOPE`,
    /// `PODQ_SHARD_SIZE`), else the default scope (`cache_shard`) and 8 cores per shard; not
    /// strict, pull on, no
    /// `max_active`, every usable CPU of this machine, the pool layer's worker cap and idle
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
            pull: true,
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

    /// `true` (default): an idle worker, before it parks, pulls the oldest waiting item of a
    /// sibling pool (the other pods of its cache domain first, then of its node, then of the
    /// machine), behind an adaptive gate that stops the search when it rarely finds work; see
    /// `src/pool/README.md`, "Pull". `false`: items run only on workers of the pool they were
    /// queued to. A strict workqueue never pulls, whatever this says: its items stay on their
    /// pod's CPUs. Workqueues whose pull setting differs do not share pools.
    pub fn pull(mut self, pull: bool) -> Self {
        self.pull = pull;
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
    /// * [`Error::BadEnvironment`]: a `PODQ_SCOPE` or `PODQ_SHARD_SIZE` that is not a scope or
    ///   a shard size, when the builder was given none;
    /// * [`Error::ZeroMaxActive`]: a `max_active` of 0;
    /// * [`Error::ZeroMaxWorkers`]: a `max_workers` of 0;
    /// * [`Error::EmptyCpuSet`]: an empty CPU set;
    /// * [`Error::UnknownCpu`]: a CPU that is not usable on the topology;
    /// * the topology's error when this machine's topology cannot be read.
    pub fn build(mut self) -> Result<Workqueue> {
        let requested = self.cpus.clone();
        let this_machine = self.topology.is_none();
        let (scope, shard_size) = self.scope_and_shard_size()?;
        let (machine, cpus) = self.check()?;
        let attrs = PoolAttrs {
            scope,
            shard_size,
            strict: self.strict,
            cpus,
            max_workers: self.max_workers,
            idle_timeout: self.idle_timeout,
            pull: self.pull && !self.strict,
        };
        let limits = if this_machine {
            Some(self.limits.unwrap_or_else(super::follow::system_limits))
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
        Workqueue::from_parts(self.name, &topology, shape, reform, self.max_active)
    }
}

/// This machine's topology with every online CPU, whatever the process may use now (a
/// workqueue forms its pods on the CPUs it may use, and re-forms them when those change: see
/// `crate::limits`), read once per process. Once per fork generation (step 21 of
/// `README.md`), so that a child never waits on a first read that a thread of its parent was
/// making at the fork.
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

    /// Checks every attribute and takes the topology (this machine's, with every online CPU,
    /// when none was given) and the workqueue's CPUs (every CPU of it when none were given). The one place where a
    /// workqueue's attributes are checked, each error with one message: the pods, pools and
    /// placement built from them take them as checked.
    fn check(&mut self) -> Result<(Topology, CpuSet)> {
        if self.max_active == Some(0) {
            return Err(Error::ZeroMaxActive);
        }
        if self.max_workers == 0 {
            return Err(Error::ZeroMaxWorkers);
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
