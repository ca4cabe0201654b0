//! podq's error type: one enum, each variant names the bad input and what was expected.

use std::path::PathBuf;

/// Everything that can go wrong in podq, as a value a caller can match on.
///
/// Every message names the offending input and the valid choices, so that the CLI can print it
/// as one line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A scope name that is not one of the six scopes (or `default`).
    #[error("unknown scope '{name}': expected one of cpu, smt, cache, cache_shard, numa, system, default")]
    UnknownScope {
        /// The name as given.
        name: String,
    },
    /// A cache shard size of 0 cores.
    #[error("shard size must be at least 1 core, got 0")]
    ZeroShardSize,
    /// A machine preset name that podq does not know.
    #[error("unknown machine '{name}': expected a preset ({presets}) or a description such as 'sockets=2,nodes=2,caches=4,cores=32,smt=2'")]
    UnknownPreset {
        /// The name as given.
        name: String,
        /// The valid presets, comma-separated.
        presets: String,
    },
    /// A synthetic machine description that cannot be built.
    #[error("bad machine description '{description}': {reason}")]
    BadMachineDescription {
        /// The description as given.
        description: String,
        /// What is wrong with it, and what was expected.
        reason: String,
    },
    /// A sysfs tree (or one of its files) that cannot be read or makes no sense.
    #[error("{}: {reason}", path.display())]
    Sysfs {
        /// The folder or file at fault.
        path: PathBuf,
        /// What is wrong with it, and what was expected.
        reason: String,
    },
    /// A topology source that leaves no usable CPU.
    #[error("no usable CPU in {source_name}: {reason}")]
    NoUsableCpus {
        /// The machine or folder that was read.
        source_name: String,
        /// Why none is usable.
        reason: String,
    },
    /// A CPU id that is not a usable CPU of the machine.
    #[error("CPU {cpu} is not usable: the usable CPUs are {usable}")]
    UnknownCpu {
        /// The CPU as given.
        cpu: usize,
        /// The usable CPUs, as a CPU list.
        usable: String,
    },
    /// A CPU of the workqueue that the process may not use now (its affinity, its cgroup's
    /// cpuset or the online CPUs changed; see [`crate::limits`]).
    #[error("CPU {cpu} is not allowed to this process now: the workqueue's CPUs it may use are {allowed}")]
    CpuNotAllowed {
        /// The CPU as given.
        cpu: usize,
        /// The workqueue's CPUs that the process may use now, as a CPU list.
        allowed: String,
    },
    /// An environment variable of podq's (`PODQ_SCOPE`, `PODQ_SHARD_SIZE`, `PODQ_PULL`,
    /// `PODQ_STEER`) whose value cannot be used.
    #[error("environment variable {variable}='{value}': {reason}")]
    BadEnvironment {
        /// The variable.
        variable: String,
        /// Its value.
        value: String,
        /// What is wrong with it, and what was expected.
        reason: String,
    },
    /// A NUMA node that has no usable CPU.
    #[error("node {node} has no usable CPU: the nodes with usable CPUs are {nodes}")]
    UnknownNode {
        /// The node as given.
        node: usize,
        /// The nodes that do have usable CPUs.
        nodes: String,
    },
    /// A CPU set that is empty where at least one CPU is needed.
    #[error("empty CPU set for {what}: give at least one usable CPU")]
    EmptyCpuSet {
        /// What the set was for.
        what: String,
    },
    /// A pool allowed no worker at all.
    #[error("max_workers must be at least 1 worker per pool, got 0")]
    ZeroMaxWorkers,
    /// A `max_active` of 0: a workqueue must be able to run at least one item at once.
    #[error("max_active must be at least 1 item, got 0")]
    ZeroMaxActive,
    /// A `max_backlog` of 0: a workqueue must let at least one item wait.
    #[error("max_backlog must be at least 1 item, got 0")]
    ZeroMaxBacklog,
    /// A `worker_nice` that worker threads may not set here.
    #[error("worker_nice {nice} cannot be set on worker threads: {reason} (nice values run from -20 to 19; below the process's own needs CAP_SYS_NICE or RLIMIT_NICE, and only Linux has per-thread nice values)")]
    WorkerNice {
        /// The nice value asked for.
        nice: i32,
        /// What the OS said.
        reason: String,
    },
    /// A thread that the workqueue needs (a helper of `crate::threads`) that the OS, or the
    /// workqueue's [`ThreadStarts`](crate::threads::ThreadStarts), refused to start.
    #[error("cannot start thread {thread}, which the workqueue needs: {reason} (the process's thread limit, RLIMIT_NPROC or a container's pids limit, or its memory is exhausted)")]
    ThreadRefused {
        /// The thread's name.
        thread: String,
        /// What the OS said.
        reason: String,
    },
    /// A `worker_stack_size` that no thread can be given: the workqueue's rescuer, started
    /// with it at the build, was refused.
    #[error("worker_stack_size {bytes} bytes cannot be given to a thread: {reason} (the default is the standard library's, 2 MiB)")]
    WorkerStackSize {
        /// The stack size asked for.
        bytes: usize,
        /// What the OS said.
        reason: String,
    },
    /// The workqueue was built by the parent of this process, before a `fork()`: its workers
    /// are the parent's, so it runs nothing here. The child builds its own workqueues.
    #[error("workqueue '{workqueue}' belongs to the parent process: after fork() the child must build its own workqueues")]
    ParentProcess {
        /// The workqueue's name.
        workqueue: String,
    },
}

impl Error {
    /// [`Error::EmptyCpuSet`] for a workqueue's CPUs: the one wording of that error, given by
    /// [`WorkqueueBuilder::build`](crate::WorkqueueBuilder::build) and
    /// `policy::Placement::new`.
    pub(crate) fn empty_workqueue_cpus() -> Error {
        Error::EmptyCpuSet {
            what: "the workqueue".into(),
        }
    }
}

/// podq's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
