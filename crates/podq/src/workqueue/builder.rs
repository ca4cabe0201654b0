//! [`WorkqueueBuilder`]: a workqueue's attributes, all checked in one place (`check`) when
//! [`WorkqueueBuilder::build`] is called.

use std::time::Duration;

use crate::cpuset::CpuSet;
use crate::error::{Error, Result};
use crate::fork::PerFork;
use crate::policy::Placement;
use crate::pool::{self, PoolAttrs};
use crate::scope::{AffinityScope, DEFAULT_SHARD_SIZE};
use crate::topology::Topology;

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
    /// How CPUs are grouped into pods.
    scope: AffinityScope,
    /// Cores per `cache_shard` pod.
    shard_size: usize,
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
    /// Whether groups steer their items to their home pods.
    steer: bool,
}

impl WorkqueueBuilder {
    /// Defaults: the default scope (`cache_shard`), 8 cores per shard, not strict, pull and
    /// steering on, no
    /// `max_active`, every usable CPU of this machine, the pool layer's worker cap and idle
    /// timeout.
    pub(crate) fn new(name: String) -> Self {
        WorkqueueBuilder {
            name,
            scope: AffinityScope::default(),
            shard_size: DEFAULT_SHARD_SIZE,
            strict: false,
            max_active: None,
            cpus: None,
            topology: None,
            idle_timeout: pool::DEFAULT_IDLE_TIMEOUT,
            max_workers: pool::DEFAULT_MAX_WORKERS,
            pull: true,
            steer: true,
        }
    }

    /// How CPUs are grouped into pods (default: `cache_shard`).
    pub fn scope(mut self, scope: AffinityScope) -> Self {
        self.scope = scope;
        self
    }

    /// Cores per `cache_shard` pod (default 8, the kernel's); must be at least 1.
    pub fn shard_size(mut self, cores: usize) -> Self {
        self.shard_size = cores;
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

    /// `true` (default): a [`Group`](super::Group)'s items go to the pod where the group's
    /// items last ran while that pod has room (`policy::steer`). `false`: a group's calls
    /// behave exactly like the workqueue's own. Pools are shared whatever this says.
    pub fn steer(mut self, steer: bool) -> Self {
        self.steer = steer;
        self
    }

    /// Checks the attributes, takes the pools of every pod (shared with every workqueue of
    /// equal attributes) and returns the workqueue.
    ///
    /// # Errors
    ///
    /// * [`Error::ZeroShardSize`]: a shard size of 0;
    /// * [`Error::ZeroMaxActive`]: a `max_active` of 0;
    /// * [`Error::ZeroMaxWorkers`]: a `max_workers` of 0;
    /// * [`Error::EmptyCpuSet`]: an empty CPU set;
    /// * [`Error::UnknownCpu`]: a CPU that is not usable on the topology;
    /// * the topology's error when this machine's topology cannot be read.
    pub fn build(mut self) -> Result<Workqueue> {
        let (topology, cpus) = self.check()?;
        let attrs = PoolAttrs {
            scope: self.scope,
            shard_size: self.shard_size,
            strict: self.strict,
            cpus: cpus.clone(),
            max_workers: self.max_workers,
            idle_timeout: self.idle_timeout,
            pull: self.pull && !self.strict,
        };
        let pools = super::pool_registry().pools_for(&topology, &attrs)?;
        let placement = Placement::new(pools.pods(), &cpus, |cpu| {
            topology.cpu(cpu).map_or(0, |c| c.node)
        })?;
        let mut wq = Workqueue::from_parts(
            self.name,
            self.scope,
            cpus,
            pools,
            placement,
            self.max_active,
            self.max_workers,
        );
        wq.steer = self.steer;
        Ok(wq)
    }
}

/// This machine's topology, read once per process (sysfs does not change under a running
/// process in ways podq follows). Once per fork generation (step 21 of `README.md`), so that a
/// child never waits on a first read that a thread of its parent was making at the fork.
fn this_machine() -> Result<Topology> {
    static THIS: PerFork<Topology> = PerFork::new();
    if let Some(t) = THIS.built() {
        return Ok(t.clone());
    }
    let t = Topology::discover()?;
    Ok(THIS.get(|| t.clone()).clone())
}

impl WorkqueueBuilder {
    /// Checks every attribute and takes the topology (this machine's when none was given) and
    /// the workqueue's CPUs (every usable CPU when none were given). The one place where a
    /// workqueue's attributes are checked, each error with one message: the pods, pools and
    /// placement built from them take them as checked.
    fn check(&mut self) -> Result<(Topology, CpuSet)> {
        if self.shard_size == 0 {
            return Err(Error::ZeroShardSize);
        }
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
