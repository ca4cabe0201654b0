//! [`Topology`]: the usable CPUs of a machine and how they share cores, caches and nodes.
//!
//! A topology is plain data. It comes from one of three sources:
//!
//! - [`Topology::discover`]: this machine (`/sys` and the CPUs this process may run on);
//! - [`Topology::from_sysfs`] / [`Topology::from_sysfs_allowed`]: a sysfs tree under any folder
//!   (a snapshot of another machine, or a test fixture), read by the `sysfs` module;
//! - [`Topology::from_machine`]: a synthetic machine from a preset name or a short description
//!   such as `sockets=2,nodes=4,caches=8,cores=64,smt=2`, built by [`synthetic`].
//!
//! Whatever could not be read and had to be guessed is recorded as a [`Fallback`], so that
//! tools can say so.

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;

use crate::cpuset::CpuSet;
use crate::error::Result;

mod presets;
pub mod synthetic;
mod sysfs;

pub use presets::PRESETS;

/// One usable CPU, as its [`Topology`] describes it. Every set here is within the usable CPUs
/// and contains the CPU itself.
///
/// ```
/// let topo = podq::Topology::from_machine("sockets=2,nodes=2,caches=2,cores=4,smt=2").unwrap();
/// let cpu = topo.cpu(5).unwrap();
/// assert_eq!(cpu.id(), 5);
/// assert_eq!(cpu.core_cpus().to_string(), "1,5");
/// assert_eq!(cpu.cache_cpus().to_string(), "0-1,4-5");
/// assert_eq!(cpu.node(), 0);
/// ```
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub struct Cpu {
    /// The Linux CPU id.
    pub(crate) id: usize,
    /// The SMT siblings of this CPU's core.
    pub(crate) core_cpus: CpuSet,
    /// The CPUs sharing its last-level cache (or its package).
    pub(crate) cache_cpus: CpuSet,
    /// The level of that cache; `None` when the package stands in.
    pub(crate) cache_level: Option<u8>,
    /// The NUMA node id.
    pub(crate) node: usize,
    /// `physical_package_id`.
    pub(crate) package: i64,
    /// `cluster_cpus` where sysfs has them.
    pub(crate) cluster_cpus: Option<CpuSet>,
}

impl Cpu {
    /// The Linux CPU id.
    #[must_use]
    #[inline]
    pub fn id(&self) -> usize {
        self.id
    }

    /// The SMT siblings of this CPU's core, itself included (sysfs `core_cpus`, older kernels
    /// `thread_siblings`).
    #[must_use]
    #[inline]
    pub fn core_cpus(&self) -> &CpuSet {
        &self.core_cpus
    }

    /// The CPUs sharing its last-level cache, itself included (its package's CPUs when there is
    /// no cache information).
    #[must_use]
    #[inline]
    pub fn cache_cpus(&self) -> &CpuSet {
        &self.cache_cpus
    }

    /// The level of its last-level cache; `None` when the package stands in for it.
    #[must_use]
    pub fn cache_level(&self) -> Option<u8> {
        self.cache_level
    }

    /// The NUMA node id (0 when there is no node information).
    #[must_use]
    #[inline]
    pub fn node(&self) -> usize {
        self.node
    }

    /// `physical_package_id` (may be -1 on odd machines).
    #[must_use]
    pub fn package(&self) -> i64 {
        self.package
    }

    /// The CPUs of its cluster (sysfs `cluster_cpus`), itself included; `None` where sysfs
    /// has no cluster information.
    #[must_use]
    pub fn cluster_cpus(&self) -> Option<&CpuSet> {
        self.cluster_cpus.as_ref()
    }
}

/// Something a topology source could not read and had to guess, in words (`Display`).
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum Fallback {
    /// These CPUs have no data or unified cache information; their package stands in for
    /// their cache domain.
    PackageForCache {
        /// The CPUs without cache information.
        cpus: CpuSet,
    },
    /// These CPUs have no core (SMT sibling) information; each is taken as its own core.
    CpuForCore {
        /// The CPUs without core information.
        cpus: CpuSet,
    },
    /// These CPUs are in no NUMA node's CPU list; they are taken to be on node 0.
    NodeZero {
        /// The CPUs without a node.
        cpus: CpuSet,
    },
    /// The machine's sysfs could not be used; the topology is a flat machine of the allowed
    /// CPUs (each its own core, one cache domain, one node).
    FlatMachine {
        /// Why sysfs could not be used.
        reason: String,
    },
}

impl fmt::Display for Fallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fallback::PackageForCache { cpus } => write!(
                f,
                "CPUs {cpus} have no cache information, so their package stands in for the cache domain"
            ),
            Fallback::CpuForCore { cpus } => write!(
                f,
                "CPUs {cpus} have no core information, so each is taken as its own core"
            ),
            Fallback::NodeZero { cpus } => write!(
                f,
                "CPUs {cpus} are in no NUMA node's CPU list, so they are taken to be on node 0"
            ),
            Fallback::FlatMachine { reason } => write!(
                f,
                "the machine's topology could not be read ({reason}), so every allowed CPU is taken as its own core in one cache domain and one node"
            ),
        }
    }
}

/// A cache domain: the CPUs sharing one last-level cache (or one package standing in for it).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct CacheDomain {
    /// Its usable CPUs.
    pub cpus: CpuSet,
    /// The number of cores among them.
    pub cores: usize,
    /// The cache level; `None` when the package stands in.
    pub level: Option<u8>,
}

/// The usable CPUs of a machine and how they share cores, caches and nodes.
///
/// Pure data: build it once, then form [`Pods`](crate::scope::Pods) of any scope from it.
#[derive(Clone, Debug)]
pub struct Topology {
    /// The usable CPUs, ascending id.
    cpus: Vec<Cpu>,
    /// `index[id]` is the position of CPU `id` in `cpus`, or [`NO_CPU`].
    index: Vec<u32>,
    /// What was guessed.
    fallbacks: Vec<Fallback>,
    /// Where the topology came from, for people.
    source: String,
    /// `cache_domain[i]`: the cache domain of `cpus[i]`, its index in
    /// [`Topology::cache_domains`]. Domains are numbered in order of their lowest CPU.
    cache_domain: Vec<u32>,
}

/// Marks a CPU id that is not usable in [`Topology::index`].
const NO_CPU: u32 = u32::MAX;

impl Topology {
    /// Builds a topology from CPUs that already satisfy [`Cpu`]'s rules (ascending, every set
    /// within these CPUs and containing its own CPU). Used by the sources in this module.
    pub(crate) fn from_parts(cpus: Vec<Cpu>, fallbacks: Vec<Fallback>, source: String) -> Self {
        debug_assert!(cpus.windows(2).all(|w| w[0].id < w[1].id));
        let len = cpus.last().map_or(0, |c| c.id + 1);
        let mut index = vec![NO_CPU; len];
        for (i, cpu) in cpus.iter().enumerate() {
            index[cpu.id] = u32::try_from(i).expect("fewer than 2^32 CPUs");
        }
        let mut topology = Topology {
            cpus,
            index,
            fallbacks,
            source,
            cache_domain: Vec::new(),
        };
        let mut cache_domain = vec![0; topology.cpus.len()];
        let domains = pods_from_predicate(&topology.cpu_set(), |a, b| topology.shares_cache(a, b));
        for (domain, cpus) in domains.iter().enumerate() {
            let tag = u32::try_from(domain).expect("fewer than 2^32 cache domains");
            for cpu in cpus.iter() {
                cache_domain[topology.index[cpu] as usize] = tag;
            }
        }
        topology.cache_domain = cache_domain;
        topology
    }

    /// This machine: sysfs at `/` and the CPUs this process may run on (`sched_getaffinity`).
    ///
    /// Where `/sys` cannot be used (systems other than Linux, some sandboxes), the topology is a
    /// flat machine of the allowed CPUs, and [`fallbacks`](Self::fallbacks) says so.
    ///
    /// # Errors
    ///
    /// [`Error::NoUsableCpus`](crate::Error::NoUsableCpus) when the OS reports no CPU this
    /// process may run on.
    pub fn discover() -> Result<Topology> {
        sysfs::discover()
    }

    /// Reads the sysfs tree under `root` (a folder holding `sys/devices/system/cpu`), with
    /// every online CPU that has a topology usable.
    ///
    /// # Errors
    ///
    /// [`Error::Sysfs`](crate::Error::Sysfs) when `root` or `sys/devices/system/cpu` is
    /// missing, or a file cannot be read or parsed;
    /// [`Error::NoUsableCpus`](crate::Error::NoUsableCpus) when no CPU is usable.
    pub fn from_sysfs(root: &Path) -> Result<Topology> {
        sysfs::read(root, None)
    }

    /// As [`from_sysfs`](Self::from_sysfs), keeping only the CPUs in `allowed`.
    ///
    /// # Errors
    ///
    /// As [`from_sysfs`](Self::from_sysfs); `NoUsableCpus` also when no online CPU is allowed.
    pub fn from_sysfs_allowed(root: &Path, allowed: &CpuSet) -> Result<Topology> {
        sysfs::read(root, Some(allowed))
    }

    /// A synthetic machine: a preset name (see [`PRESETS`]) or a description such as
    /// `sockets=2,nodes=4,caches=8,cores=64,smt=2` (see [`synthetic`]).
    ///
    /// ```
    /// let grace = podq::Topology::from_machine("grace").unwrap();
    /// assert_eq!(grace.cpus().len(), 72);
    /// assert_eq!(grace.cache_domains().len(), 1);
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::UnknownPreset`](crate::Error::UnknownPreset) for a name that is not a preset;
    /// [`Error::BadMachineDescription`](crate::Error::BadMachineDescription) for a description
    /// that cannot be built.
    pub fn from_machine(desc: &str) -> Result<Topology> {
        synthetic::from_machine(desc)
    }

    /// This machine's online CPUs that have a topology, whatever this process may run on
    /// now: the machine a workqueue re-forms its pods on when the CPUs it may use change
    /// (`workqueue/layout/mod.rs`). A flat machine of the allowed CPUs where sysfs cannot be used.
    pub(crate) fn discover_online() -> Result<Topology> {
        sysfs::discover_online()
    }

    /// The same machine with only the CPUs of `cpus` usable: every CPU's sets narrowed to
    /// them. `None` when none of its CPUs is in `cpus`.
    pub(crate) fn within(&self, cpus: &CpuSet) -> Option<Topology> {
        let kept: Vec<Cpu> = self
            .cpus
            .iter()
            .filter(|c| cpus.contains(c.id))
            .map(|c| Cpu {
                id: c.id,
                core_cpus: c.core_cpus.intersection(cpus),
                cache_cpus: c.cache_cpus.intersection(cpus),
                cache_level: c.cache_level,
                node: c.node,
                package: c.package,
                cluster_cpus: c.cluster_cpus.as_ref().map(|s| s.intersection(cpus)),
            })
            .collect();
        if kept.is_empty() {
            return None;
        }
        Some(Topology::from_parts(
            kept,
            self.fallbacks.clone(),
            self.source.clone(),
        ))
    }

    /// The usable CPUs, ascending id.
    pub fn cpus(&self) -> &[Cpu] {
        &self.cpus
    }

    /// The usable CPU `id`, or `None` when it is not usable.
    #[inline]
    pub fn cpu(&self, id: usize) -> Option<&Cpu> {
        match self.index.get(id) {
            Some(&i) if i != NO_CPU => Some(&self.cpus[i as usize]),
            _ => None,
        }
    }

    /// All usable CPUs.
    pub fn cpu_set(&self) -> CpuSet {
        self.cpus.iter().map(|c| c.id).collect()
    }

    /// The nodes that have usable CPUs, ascending.
    pub fn node_ids(&self) -> Vec<usize> {
        let nodes: BTreeSet<usize> = self.cpus.iter().map(|c| c.node).collect();
        nodes.into_iter().collect()
    }

    /// The usable CPUs of `node` (empty for a node without usable CPUs).
    pub fn node_cpus(&self, node: usize) -> CpuSet {
        self.cpus
            .iter()
            .filter(|c| c.node == node)
            .map(|c| c.id)
            .collect()
    }

    /// What was guessed while building this topology, in words.
    pub fn fallbacks(&self) -> &[Fallback] {
        &self.fallbacks
    }

    /// Where this topology came from: "this machine", a folder, a preset or a description.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The cores (SMT sibling groups), in order of their lowest CPU.
    pub fn cores(&self) -> Vec<CpuSet> {
        pods_from_predicate(&self.cpu_set(), |a, b| self.shares_core(a, b))
    }

    /// The number of cores.
    pub fn core_count(&self) -> usize {
        self.cores().len()
    }

    /// The most CPUs any core has (1 without SMT, 2 for two-way SMT).
    pub fn smt_width(&self) -> usize {
        self.cpus
            .iter()
            .map(|c| c.core_cpus.len())
            .max()
            .unwrap_or(0)
    }

    /// The cache domains, in order of their lowest CPU.
    pub fn cache_domains(&self) -> Vec<CacheDomain> {
        let count = self
            .cache_domain
            .iter()
            .max()
            .map_or(0, |&d| d as usize + 1);
        let mut domains = vec![CpuSet::new(); count];
        for (cpu, &domain) in self.cpus.iter().zip(&self.cache_domain) {
            domains[domain as usize].insert(cpu.id);
        }
        domains
            .into_iter()
            .map(|cpus| {
                let cores = pods_from_predicate(&cpus, |a, b| self.shares_core(a, b)).len();
                let level = cpus
                    .first()
                    .and_then(|c| self.cpu(c))
                    .and_then(|c| c.cache_level);
                CacheDomain { cpus, cores, level }
            })
            .collect()
    }

    /// The cache domain of the usable CPU `cpu`: its index in
    /// [`cache_domains`](Self::cache_domains); `None` when `cpu` is not usable.
    ///
    /// ```
    /// let topo = podq::Topology::from_machine("caches=2,cores=4").unwrap();
    /// assert_eq!(topo.cache_domain_of(1), Some(0));
    /// assert_eq!(topo.cache_domain_of(3), Some(1));
    /// assert_eq!(topo.cache_domain_of(4), None);
    /// ```
    #[must_use]
    #[inline]
    pub fn cache_domain_of(&self, cpu: usize) -> Option<usize> {
        match self.index.get(cpu) {
            Some(&i) if i != NO_CPU => Some(self.cache_domain[i as usize] as usize),
            _ => None,
        }
    }

    /// The packages (`physical_package_id`) that have usable CPUs, ascending.
    pub fn package_ids(&self) -> Vec<i64> {
        let packages: BTreeSet<i64> = self.cpus.iter().map(|c| c.package).collect();
        packages.into_iter().collect()
    }

    /// The clusters (`cluster_cpus`), in order of their lowest CPU; empty when sysfs has no
    /// cluster information.
    pub fn clusters(&self) -> Vec<CpuSet> {
        let with: CpuSet = self
            .cpus
            .iter()
            .filter(|c| c.cluster_cpus.is_some())
            .map(|c| c.id)
            .collect();
        pods_from_predicate(&with, |a, b| {
            self.cpu(a)
                .and_then(|c| c.cluster_cpus.as_ref())
                .is_some_and(|s| s.contains(b))
        })
    }

    /// Whether `b` is an SMT sibling of `a` (in `a`'s core).
    #[inline]
    pub fn shares_core(&self, a: usize, b: usize) -> bool {
        self.cpu(a).is_some_and(|c| c.core_cpus.contains(b))
    }

    /// Whether `b` is in `a`'s cache domain.
    #[inline]
    pub fn shares_cache(&self, a: usize, b: usize) -> bool {
        self.cpu(a).is_some_and(|c| c.cache_cpus.contains(b))
    }

    /// Whether `a` and `b` are usable CPUs on the same node.
    #[inline]
    pub fn shares_node(&self, a: usize, b: usize) -> bool {
        match (self.cpu(a), self.cpu(b)) {
            (Some(x), Some(y)) => x.node == y.node,
            _ => false,
        }
    }
}

/// Groups `cpus` by a predicate, like the kernel's `init_pod_type`: each CPU, in ascending
/// order, joins the first existing group whose lowest CPU shares with it (`share(lowest, cpu)`),
/// or else opens a new group. Groups come out in order of their lowest CPU.
///
/// This one function makes the cores, cache domains and clusters of a [`Topology`] and the pods
/// of every scope but `cache_shard` ([`Pods`](crate::scope::Pods)).
///
/// ```
/// use podq::{topology::pods_from_predicate, CpuSet};
/// let cpus: CpuSet = (0..6).collect();
/// let pods = pods_from_predicate(&cpus, |a, b| a / 4 == b / 4);
/// assert_eq!(pods, vec![(0..4).collect::<CpuSet>(), (4..6).collect()]);
/// ```
pub fn pods_from_predicate(cpus: &CpuSet, share: impl Fn(usize, usize) -> bool) -> Vec<CpuSet> {
    // (lowest CPU, members) per group; the lowest CPU is the first one to join.
    let mut pods: Vec<(usize, CpuSet)> = Vec::new();
    for cpu in cpus.iter() {
        match pods.iter_mut().find(|(lowest, _)| share(*lowest, cpu)) {
            Some((_, members)) => {
                members.insert(cpu);
            }
            None => pods.push((cpu, std::iter::once(cpu).collect())),
        }
    }
    pods.into_iter().map(|(_, members)| members).collect()
}
