//! The model behind `podq topo`: the machine summary and the pods of each scope, ready to print
//! as text or to serialize as JSON.
//!
//! JSON shape (`cpus` and `scopes` exactly as in the reference answers of the shared
//! topologies):
//!
//! ```json
//! {"source": "...", "cpus": [0, 1], "shard_size": 8, "default_scope": "cache_shard",
//!  "fallbacks": ["..."], "machine": {...},
//!  "scopes": {"cpu": [[0], [1]], "smt": ..., "cache": ..., "cache_shard": ..., "numa": ...,
//!             "system": ...},
//!  "pods": {"cpu": [{"id": 0, "cpus": [0], "cpu_list": "0", "node": 0}, ...], ...},
//!  "cpu_to_pod": {"cpu": {"0": 0, "1": 1}, ...}}
//! ```
//!
//! Scopes appear in the kernel's order (cpu, smt, cache, cache_shard, numa, system).

use podq::{AffinityScope, CpuSet, Pods, Topology};
use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};

use crate::error::CliError;

/// Everything `podq topo` shows.
#[derive(Debug)]
pub(crate) struct Report {
    /// Where the topology came from, in words.
    pub(crate) source: String,
    /// The usable CPUs.
    pub(crate) cpus: CpuSet,
    /// Cores per cache shard.
    pub(crate) shard_size: usize,
    /// What was guessed, in words.
    pub(crate) fallbacks: Vec<String>,
    /// The machine's cores, caches, nodes, packages and clusters.
    pub(crate) machine: Machine,
    /// The pods of each scope shown, in the kernel's order.
    pub(crate) scopes: Vec<ScopeReport>,
}

/// The machine summary.
#[derive(Debug, Serialize)]
pub(crate) struct Machine {
    /// The number of usable CPUs.
    pub(crate) cpu_count: usize,
    /// The usable CPUs as a CPU list.
    pub(crate) cpu_list: String,
    /// The number of cores.
    pub(crate) cores: usize,
    /// The most CPUs any core has.
    pub(crate) smt_width: usize,
    /// The cache domains, in order of their lowest CPU.
    pub(crate) cache_domains: Vec<CacheGroup>,
    /// The nodes with usable CPUs, ascending id.
    pub(crate) nodes: Vec<Group>,
    /// The packages with usable CPUs, ascending id.
    pub(crate) packages: Vec<Group>,
    /// The clusters, in order of their lowest CPU; empty without cluster information.
    pub(crate) clusters: Vec<CpuGroup>,
}

/// A set of CPUs, as ids and as a CPU list.
#[derive(Debug, Serialize)]
pub(crate) struct CpuGroup {
    /// The CPUs, ascending.
    pub(crate) cpus: Vec<usize>,
    /// The same CPUs as a CPU list (`0-7,88-95`).
    pub(crate) cpu_list: String,
}

impl CpuGroup {
    /// The group of `cpus`.
    fn new(cpus: &CpuSet) -> Self {
        CpuGroup {
            cpus: cpus.iter().collect(),
            cpu_list: cpus.to_string(),
        }
    }
}

/// A numbered set of CPUs: a node or a package.
#[derive(Debug, Serialize)]
pub(crate) struct Group {
    /// The node or package id (a package id may be -1 on odd machines).
    pub(crate) id: i64,
    /// Its CPUs.
    #[serde(flatten)]
    pub(crate) cpus: CpuGroup,
}

/// A cache domain.
#[derive(Debug, Serialize)]
pub(crate) struct CacheGroup {
    /// The cache level; `None` when the package stands in for it.
    pub(crate) level: Option<u8>,
    /// The number of cores in it.
    pub(crate) cores: usize,
    /// Its CPUs.
    #[serde(flatten)]
    pub(crate) cpus: CpuGroup,
}

/// The pods of one scope.
#[derive(Debug)]
pub(crate) struct ScopeReport {
    /// The scope.
    pub(crate) scope: AffinityScope,
    /// The pods, ids 0.. in order of their lowest CPU.
    pub(crate) pods: Vec<PodReport>,
}

impl ScopeReport {
    /// Whether this is the default scope.
    pub(crate) fn is_default(&self) -> bool {
        self.scope == AffinityScope::default()
    }

    /// `(cpu, pod id)` for every usable CPU, ascending CPU.
    pub(crate) fn cpu_to_pod(&self) -> Vec<(usize, usize)> {
        let mut map: Vec<(usize, usize)> = self
            .pods
            .iter()
            .flat_map(|pod| pod.cpus.cpus.iter().map(move |&cpu| (cpu, pod.id)))
            .collect();
        map.sort_unstable();
        map
    }
}

/// One pod.
#[derive(Debug, Serialize)]
pub(crate) struct PodReport {
    /// The pod id.
    pub(crate) id: usize,
    /// Its CPUs.
    #[serde(flatten)]
    pub(crate) cpus: CpuGroup,
    /// The node of its lowest CPU.
    pub(crate) node: usize,
}

impl Report {
    /// The report for `topology`, with the pods of `scopes` (kept in the kernel's order) for
    /// cache shards of `shard_size` cores.
    ///
    /// # Errors
    ///
    /// What [`Pods::new`] reports (a shard size of 0), as a [`CliError`].
    pub(crate) fn new(
        topology: &Topology,
        scopes: &[AffinityScope],
        shard_size: usize,
    ) -> Result<Report, CliError> {
        let scopes = AffinityScope::ALL
            .into_iter()
            .filter(|scope| scopes.contains(scope))
            .map(|scope| {
                let pods = Pods::new(topology, scope, shard_size)?;
                Ok(ScopeReport {
                    scope,
                    pods: pods
                        .pods()
                        .iter()
                        .map(|pod| PodReport {
                            id: pod.id(),
                            cpus: CpuGroup::new(pod.cpus()),
                            node: lowest_node(topology, pod.cpus()),
                        })
                        .collect(),
                })
            })
            .collect::<Result<Vec<_>, CliError>>()?;
        Ok(Report {
            source: topology.source().to_owned(),
            cpus: topology.cpu_set(),
            shard_size,
            fallbacks: topology
                .fallbacks()
                .iter()
                .map(ToString::to_string)
                .collect(),
            machine: Machine::new(topology),
            scopes,
        })
    }
}

/// The node of the lowest of `cpus` (0 for an empty set, which no pod is): a pod's node as
/// `podq topo` shows it, a number even for a pod that spans nodes.
fn lowest_node(topology: &Topology, cpus: &CpuSet) -> usize {
    cpus.first()
        .and_then(|cpu| topology.cpu(cpu))
        .map_or(0, |cpu| cpu.node())
}

impl Machine {
    /// The summary of `topology`.
    fn new(topology: &Topology) -> Machine {
        let cpus = topology.cpu_set();
        let nodes = topology
            .node_ids()
            .into_iter()
            .map(|node| Group {
                id: i64::try_from(node).unwrap_or(i64::MAX),
                cpus: CpuGroup::new(&topology.node_cpus(node)),
            })
            .collect();
        let packages = topology
            .package_ids()
            .into_iter()
            .map(|package| {
                let cpus: CpuSet = topology
                    .cpus()
                    .iter()
                    .filter(|cpu| cpu.package() == package)
                    .map(|cpu| cpu.id())
                    .collect();
                Group {
                    id: package,
                    cpus: CpuGroup::new(&cpus),
                }
            })
            .collect();
        Machine {
            cpu_count: cpus.len(),
            cpu_list: cpus.to_string(),
            cores: topology.core_count(),
            smt_width: topology.smt_width(),
            cache_domains: topology
                .cache_domains()
                .iter()
                .map(|domain| CacheGroup {
                    level: domain.level,
                    cores: domain.cores,
                    cpus: CpuGroup::new(&domain.cpus),
                })
                .collect(),
            nodes,
            packages,
            clusters: topology.clusters().iter().map(CpuGroup::new).collect(),
        }
    }
}

impl Serialize for Report {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Report", 9)?;
        s.serialize_field("source", &self.source)?;
        s.serialize_field("cpus", &self.cpus.iter().collect::<Vec<_>>())?;
        s.serialize_field("shard_size", &self.shard_size)?;
        s.serialize_field("default_scope", AffinityScope::default().name())?;
        s.serialize_field("fallbacks", &self.fallbacks)?;
        s.serialize_field("machine", &self.machine)?;
        s.serialize_field("scopes", &by_scope(&self.scopes, |r| PodCpus(&r.pods)))?;
        s.serialize_field("pods", &by_scope(&self.scopes, |r| &r.pods))?;
        s.serialize_field("cpu_to_pod", &by_scope(&self.scopes, CpuToPod))?;
        s.end()
    }
}

/// A JSON object keyed by scope name, in the kernel's order, with `F`'s value for each scope.
struct ByScope<'a, F>(&'a [ScopeReport], F);

/// The [`ByScope`] object of `reports`, with `value`'s value for each scope.
fn by_scope<'a, F, T>(reports: &'a [ScopeReport], value: F) -> ByScope<'a, F>
where
    F: Fn(&'a ScopeReport) -> T,
    T: Serialize,
{
    ByScope(reports, value)
}

impl<'a, F, T> Serialize for ByScope<'a, F>
where
    F: Fn(&'a ScopeReport) -> T,
    T: Serialize,
{
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for report in self.0 {
            map.serialize_entry(report.scope.name(), &(self.1)(report))?;
        }
        map.end()
    }
}

/// The pods of a scope as lists of CPU ids (`[[0, 1], [2, 3]]`).
struct PodCpus<'a>(&'a [PodReport]);

impl Serialize for PodCpus<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|pod| &pod.cpus.cpus))
    }
}

/// The CPU-to-pod map of a scope as a JSON object (`{"0": 0, "1": 0}`), ascending CPU.
struct CpuToPod<'a>(&'a ScopeReport);

impl Serialize for CpuToPod<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(
            self.0
                .cpu_to_pod()
                .into_iter()
                .map(|(cpu, pod)| (cpu.to_string(), pod)),
        )
    }
}
