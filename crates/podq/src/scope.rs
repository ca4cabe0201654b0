//! Affinity scopes and the pods they make of a [`Topology`].
//!
//! A scope says which CPUs share a pod. Every scope but `cache_shard` is one predicate, "does
//! CPU `b` share this with CPU `a`?", turned into pods by [`pods_from_predicate`], as the
//! kernel's `init_pod_type` does. `cache_shard` splits each `cache` pod into shards of about
//! [`DEFAULT_SHARD_SIZE`] cores without ever separating SMT siblings.
//!
//! ```
//! use podq::{AffinityScope, Pods, Topology};
//! let epyc = Topology::from_machine("epyc-9d64").unwrap();
//! let pods = Pods::new(&epyc, AffinityScope::CacheShard, 8).unwrap();
//! assert_eq!(pods.len(), 11);
//! assert_eq!(pods.pods()[0].cpus().to_string(), "0-7,88-95");
//! assert_eq!(pods.pod_of(90), Some(0));
//! ```

use std::fmt;
use std::str::FromStr;

use crate::cpuset::CpuSet;
use crate::error::{Error, Result};
use crate::topology::{pods_from_predicate, Topology};

/// The kernel's default cache shard size: 8 cores (`wq_cache_shard_size`).
pub const DEFAULT_SHARD_SIZE: usize = 8;

/// The environment variable that sets the scope of every workqueue built without one: a scope
/// name, read as [`AffinityScope`]'s `FromStr` reads it (`cache_shard`, `default`, ...).
pub const SCOPE_VAR: &str = "PODQ_SCOPE";

/// The environment variable that sets the shard size of every workqueue built without one: a
/// whole number of cores, at least 1.
pub const SHARD_SIZE_VAR: &str = "PODQ_SHARD_SIZE";

/// The environment variable that sets whether every workqueue built without
/// [`WorkqueueBuilder::pull`](crate::WorkqueueBuilder::pull) pulls: `on` or `off`.
pub const PULL_VAR: &str = "PODQ_PULL";

/// The environment variable that sets whether every workqueue built without
/// [`WorkqueueBuilder::steer`](crate::WorkqueueBuilder::steer) steers its groups: `on` or
/// `off`.
pub const STEER_VAR: &str = "PODQ_STEER";

/// The line an operator sets in a service's environment to give every workqueue built without
/// an explicit scope or shard size these ([`SCOPE_VAR`], [`SHARD_SIZE_VAR`]).
///
/// ```
/// use podq::scope::env_line;
/// use podq::AffinityScope;
/// assert_eq!(
///     env_line(AffinityScope::CacheShard, 8),
///     "PODQ_SCOPE=cache_shard PODQ_SHARD_SIZE=8"
/// );
/// ```
pub fn env_line(scope: AffinityScope, shard_size: usize) -> String {
    format!("{SCOPE_VAR}={scope} {SHARD_SIZE_VAR}={shard_size}")
}

/// The scope of [`SCOPE_VAR`] in the environment; `None` when it is not set.
///
/// # Errors
///
/// [`Error::BadEnvironment`] naming the variable, for a value that is not a scope.
pub(crate) fn scope_from_env() -> Result<Option<AffinityScope>> {
    env_value(SCOPE_VAR)?
        .map(|value| parse_scope_var(&value))
        .transpose()
}

/// The shard size of [`SHARD_SIZE_VAR`] in the environment; `None` when it is not set.
///
/// # Errors
///
/// [`Error::BadEnvironment`] naming the variable, for a value that is not a whole number of
/// at least 1.
pub(crate) fn shard_size_from_env() -> Result<Option<usize>> {
    env_value(SHARD_SIZE_VAR)?
        .map(|value| parse_shard_size_var(&value))
        .transpose()
}

/// The switch of `var` ([`PULL_VAR`], [`STEER_VAR`]) in the environment; `None` when it is
/// not set.
///
/// # Errors
///
/// [`Error::BadEnvironment`] naming the variable, for a value other than `on` or `off`.
pub(crate) fn switch_from_env(var: &str) -> Result<Option<bool>> {
    env_value(var)?
        .map(|value| match value.trim() {
            "on" => Ok(true),
            "off" => Ok(false),
            _ => Err(Error::BadEnvironment {
                variable: var.to_owned(),
                value,
                reason: "expected on or off".to_owned(),
            }),
        })
        .transpose()
}

/// The value of `var`, `None` when it is not set.
fn env_value(var: &str) -> Result<Option<String>> {
    match std::env::var(var) {
        Ok(value) => Ok(Some(value)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(value)) => Err(Error::BadEnvironment {
            variable: var.to_owned(),
            value: value.to_string_lossy().into_owned(),
            reason: "not UTF-8".to_owned(),
        }),
    }
}

/// [`SCOPE_VAR`]'s value as a scope.
fn parse_scope_var(value: &str) -> Result<AffinityScope> {
    value
        .trim()
        .parse()
        .map_err(|e: Error| Error::BadEnvironment {
            variable: SCOPE_VAR.to_owned(),
            value: value.to_owned(),
            reason: e.to_string(),
        })
}

/// [`SHARD_SIZE_VAR`]'s value as a shard size.
fn parse_shard_size_var(value: &str) -> Result<usize> {
    match value.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(Error::BadEnvironment {
            variable: SHARD_SIZE_VAR.to_owned(),
            value: value.to_owned(),
            reason: "expected a whole number of cores, at least 1".to_owned(),
        }),
    }
}

/// How CPUs are grouped into pods.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum AffinityScope {
    /// One pod per CPU.
    Cpu,
    /// One pod per core (SMT siblings).
    Smt,
    /// One pod per cache domain (last-level cache).
    Cache,
    /// Each cache domain split into shards of about the shard size in cores, never splitting a
    /// core. The default, as in the kernel.
    #[default]
    CacheShard,
    /// One pod per NUMA node.
    Numa,
    /// One pod of all usable CPUs.
    System,
}

impl AffinityScope {
    /// Every scope, in the kernel's order.
    pub const ALL: [AffinityScope; 6] = [
        AffinityScope::Cpu,
        AffinityScope::Smt,
        AffinityScope::Cache,
        AffinityScope::CacheShard,
        AffinityScope::Numa,
        AffinityScope::System,
    ];

    /// The scope's name, as the kernel spells it (`cache_shard`).
    pub fn name(self) -> &'static str {
        match self {
            AffinityScope::Cpu => "cpu",
            AffinityScope::Smt => "smt",
            AffinityScope::Cache => "cache",
            AffinityScope::CacheShard => "cache_shard",
            AffinityScope::Numa => "numa",
            AffinityScope::System => "system",
        }
    }
}

/// Parses a scope name exactly and case-sensitively; `default` is
/// [`CacheShard`](AffinityScope::CacheShard) and one trailing newline is stripped (as when the
/// name comes from a sysfs write).
///
/// Whole-string matching matters: a match by prefix would take `cache` for `cache_shard`.
impl FromStr for AffinityScope {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let name = s.strip_suffix('\n').unwrap_or(s);
        if name == "default" {
            return Ok(AffinityScope::default());
        }
        AffinityScope::ALL
            .into_iter()
            .find(|scope| scope.name() == name)
            .ok_or_else(|| Error::UnknownScope { name: s.to_owned() })
    }
}

impl fmt::Display for AffinityScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One group of CPUs under a scope: its id, its CPUs, and the node and cache domain it lies in.
///
/// ```
/// use podq::{AffinityScope, Pods, Topology};
/// let topo = Topology::from_machine("sockets=2,nodes=2,caches=4,cores=16,smt=2").unwrap();
/// let cache = Pods::new(&topo, AffinityScope::Cache, 8).unwrap();
/// let pod = &cache.pods()[1];
/// assert_eq!(pod.id(), 1);
/// assert_eq!(pod.cpus().to_string(), "4-7,20-23");
/// assert_eq!(pod.node(), Some(0));
/// assert_eq!(pod.cache_domain(), Some(1));
/// // The one `system` pod spans both nodes and all four cache domains.
/// let system = Pods::new(&topo, AffinityScope::System, 8).unwrap();
/// assert_eq!(system.pods()[0].node(), None);
/// assert_eq!(system.pods()[0].cache_domain(), None);
/// ```
#[derive(Clone, PartialEq, Eq, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct Pod {
    /// Its position in [`Pods::pods`].
    pub(crate) id: usize,
    /// Its CPUs.
    pub(crate) cpus: CpuSet,
    /// The node of all its CPUs; `None` when they span several.
    pub(crate) node: Option<usize>,
    /// The cache domain of all its CPUs; `None` when they span several.
    pub(crate) cache_domain: Option<usize>,
}

impl Pod {
    /// Its position in [`Pods::pods`]; pods are numbered in order of their lowest CPU.
    #[must_use]
    #[inline]
    pub fn id(&self) -> usize {
        self.id
    }

    /// Its CPUs (never empty in [`Pods::pods`]).
    #[must_use]
    #[inline]
    pub fn cpus(&self) -> &CpuSet {
        &self.cpus
    }

    /// The NUMA node all its CPUs are on ([`Cpu::node`](crate::topology::Cpu::node)); `None`
    /// when they are on several nodes (the `system` pod of a two-node machine).
    #[must_use]
    #[inline]
    pub fn node(&self) -> Option<usize> {
        self.node
    }

    /// The cache domain all its CPUs share, as its index in
    /// [`Topology::cache_domains`] ([`Topology::cache_domain_of`]); `None` when they span
    /// several (a `numa` or `system` pod over several last-level caches).
    #[must_use]
    #[inline]
    pub fn cache_domain(&self) -> Option<usize> {
        self.cache_domain
    }

    /// The same pod (id, node, cache domain) with `cpus` for its CPUs: the part of a pod that a
    /// pool serves when a workqueue's CPUs narrow it.
    pub(crate) fn with_cpus(&self, cpus: CpuSet) -> Pod {
        Pod {
            cpus,
            ..self.clone()
        }
    }
}

/// The pods of one scope on one topology: every usable CPU is in exactly one pod.
#[derive(Clone, Debug)]
pub struct Pods {
    /// The scope they were formed under.
    scope: AffinityScope,
    /// The shard size they were formed with (cores per `cache_shard` pod).
    shard_size: usize,
    /// The pods, numbered in order of their lowest CPU.
    pods: Vec<Pod>,
    /// `pod_of[cpu]` is the pod of CPU `cpu`, or [`NO_POD`] for a CPU that is not usable.
    pod_of: Vec<u32>,
}

/// Marks a CPU without a pod in [`Pods::pod_of`].
const NO_POD: u32 = u32::MAX;

impl Pods {
    /// Forms the pods of `scope` over `topo`'s usable CPUs; `shard_size` is the number of cores
    /// per `cache_shard` pod (checked for every scope, so a bad setting never hides).
    ///
    /// # Errors
    ///
    /// [`Error::ZeroShardSize`] when `shard_size` is 0.
    pub fn new(topo: &Topology, scope: AffinityScope, shard_size: usize) -> Result<Pods> {
        if shard_size == 0 {
            return Err(Error::ZeroShardSize);
        }
        let cpus = topo.cpu_set();
        let sets = match scope {
            AffinityScope::Cpu => pods_from_predicate(&cpus, |a, b| a == b),
            AffinityScope::Smt => pods_from_predicate(&cpus, |a, b| topo.shares_core(a, b)),
            AffinityScope::Cache => pods_from_predicate(&cpus, |a, b| topo.shares_cache(a, b)),
            AffinityScope::CacheShard => cache_shards(
                topo,
                &cpus,
                shard_size,
                |a, b| topo.shares_core(a, b),
                shard_count,
            ),
            AffinityScope::Numa => pods_from_predicate(&cpus, |a, b| topo.shares_node(a, b)),
            AffinityScope::System => pods_from_predicate(&cpus, |_, _| true),
        };
        Ok(Pods::from_sets(topo, scope, shard_size, sets))
    }

    /// The `cache_shard` pods as the kernel formed them before the core-boundary rule: each
    /// cache domain split into shards of at most `shard_size` CPUs (`ceil(cpus / shard_size)`
    /// shards, as even as the count allows), every CPU counted as a core of its own, so SMT
    /// siblings may land in different shards. This is the series' first posting (`[PATCH RFC
    /// 2/5] workqueue: add WQ_AFFN_CACHE_SHARD affinity scope`: "groups of at most
    /// wq_cache_shard_size CPUs"), with which the published Xeon Platinum 8321HC table ran;
    /// the simulator forms them to reproduce it.
    ///
    /// ```
    /// use podq::{Pods, Topology};
    /// let topo = Topology::from_machine("cores=26,smt=2,cpus=51").unwrap();
    /// let pods = Pods::cache_shards_by_cpu(&topo, 8).unwrap();
    /// let sizes: Vec<usize> = pods.pods().iter().map(|p| p.cpus().len()).collect();
    /// assert_eq!(sizes, vec![8, 8, 7, 7, 7, 7, 7]);
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::ZeroShardSize`] when `shard_size` is 0.
    pub fn cache_shards_by_cpu(topo: &Topology, shard_size: usize) -> Result<Pods> {
        if shard_size == 0 {
            return Err(Error::ZeroShardSize);
        }
        let sets = cache_shards(
            topo,
            &topo.cpu_set(),
            shard_size,
            |a, b| a == b,
            |cpus, size| cpus.div_ceil(size).max(1),
        );
        Ok(Pods::from_sets(
            topo,
            AffinityScope::CacheShard,
            shard_size,
            sets,
        ))
    }

    /// Numbers `sets` in order of their lowest CPU and records each pod's node and cache
    /// domain.
    fn from_sets(
        topo: &Topology,
        scope: AffinityScope,
        shard_size: usize,
        mut sets: Vec<CpuSet>,
    ) -> Pods {
        let cpus = topo.cpu_set();
        sets.sort_by_key(CpuSet::first);
        let mut pod_of = vec![NO_POD; cpus.last().map_or(0, |c| c + 1)];
        let pods = sets
            .into_iter()
            .enumerate()
            .map(|(id, cpus)| {
                let tag = u32::try_from(id).expect("fewer than 2^32 pods");
                for cpu in cpus.iter() {
                    pod_of[cpu] = tag;
                }
                let node = common(cpus.iter().map(|c| topo.cpu(c).map(|c| c.node)));
                let cache_domain = common(cpus.iter().map(|c| topo.cache_domain_of(c)));
                Pod {
                    id,
                    cpus,
                    node,
                    cache_domain,
                }
            })
            .collect();
        Pods {
            scope,
            shard_size,
            pods,
            pod_of,
        }
    }

    /// The scope these pods were formed under.
    pub fn scope(&self) -> AffinityScope {
        self.scope
    }

    /// The shard size these pods were formed with.
    pub fn shard_size(&self) -> usize {
        self.shard_size
    }

    /// The pods, ids 0.., in order of each pod's lowest CPU.
    pub fn pods(&self) -> &[Pod] {
        &self.pods
    }

    /// The number of pods.
    pub fn len(&self) -> usize {
        self.pods.len()
    }

    /// Whether there is no pod (never true for pods of a [`Topology`], which has at least one
    /// usable CPU).
    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }

    /// The pod of `cpu`, or `None` when `cpu` is not a usable CPU. O(1).
    #[inline]
    pub fn pod_of(&self, cpu: usize) -> Option<usize> {
        match self.pod_of.get(cpu) {
            Some(&p) if p != NO_POD => Some(p as usize),
            _ => None,
        }
    }
}

/// The value every item of `values` has, or `None` when they differ, one is `None` or there
/// is none.
fn common(mut values: impl Iterator<Item = Option<usize>>) -> Option<usize> {
    let first = values.next()??;
    values.all(|v| v == Some(first)).then_some(first)
}

/// The number of shards for a cache domain of `cores` cores: `max(1, round_half_up(cores /
/// shard_size))`.
pub fn shard_count(cores: usize, shard_size: usize) -> usize {
    ((cores + shard_size / 2) / shard_size).max(1)
}

/// The `cache_shard` pods: each `cache` pod split into shards of whole cores, where
/// `same_core(a, b)` says whether CPUs `a` and `b` count as one core and `count(cores,
/// shard_size)` how many shards a domain of `cores` cores makes (at least 1).
///
/// In each cache domain: the cores are the groups of `same_core` inside it, each led by its
/// lowest CPU;
/// `shards = count(cores, shard_size)`, `base = cores / shards`, and the first
/// `cores % shards` shards take `base + 1` cores. Walking the domain's CPUs in ascending order,
/// each leader joins the current shard (moving on when it is full) and each sibling joins its
/// leader's shard.
fn cache_shards(
    topo: &Topology,
    cpus: &CpuSet,
    shard_size: usize,
    same_core: impl Fn(usize, usize) -> bool,
    count: fn(usize, usize) -> usize,
) -> Vec<CpuSet> {
    let mut all = Vec::new();
    for domain in pods_from_predicate(cpus, |a, b| topo.shares_cache(a, b)) {
        let cores = pods_from_predicate(&domain, &same_core);
        let shards = count(cores.len(), shard_size);
        let base = cores.len() / shards;
        let bigger = cores.len() % shards;
        let capacity = |shard: usize| if shard < bigger { base + 1 } else { base };

        // The shard of each core's leader, indexed by CPU id; siblings look it up.
        let mut shard_of = vec![usize::MAX; domain.last().map_or(0, |c| c + 1)];
        let mut leader_of = vec![usize::MAX; shard_of.len()];
        for core in &cores {
            let leader = core.first().expect("cores are never empty");
            for cpu in core.iter() {
                leader_of[cpu] = leader;
            }
        }
        let mut out: Vec<CpuSet> = vec![CpuSet::new(); shards];
        let (mut current, mut filled) = (0, 0);
        for cpu in domain.iter() {
            let leader = leader_of[cpu];
            if leader == cpu {
                if filled == capacity(current) {
                    current += 1;
                    filled = 0;
                }
                filled += 1;
                shard_of[cpu] = current;
            }
            // A sibling comes after its leader, whose shard is already set.
            out[shard_of[leader]].insert(cpu);
        }
        all.extend(out);
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_values_parse_with_the_scope_parser_and_name_their_variable() {
        assert_eq!(parse_scope_var("cache").unwrap(), AffinityScope::Cache);
        assert_eq!(
            parse_scope_var("default\n").unwrap(),
            AffinityScope::CacheShard
        );
        let err = parse_scope_var("cache-shard").unwrap_err().to_string();
        assert!(
            err.contains("PODQ_SCOPE") && err.contains("cache_shard"),
            "{err}"
        );
        assert_eq!(parse_shard_size_var("16").unwrap(), 16);
        for bad in ["0", "-1", "eight", ""] {
            let err = parse_shard_size_var(bad).unwrap_err().to_string();
            assert!(err.contains("PODQ_SHARD_SIZE"), "{err}");
        }
    }

    #[test]
    fn parses_scope_names_exactly() {
        for scope in AffinityScope::ALL {
            assert_eq!(scope.name().parse::<AffinityScope>().unwrap(), scope);
            assert_eq!(scope.to_string(), scope.name());
        }
        assert_eq!(
            "cache_shard\n".parse::<AffinityScope>().unwrap(),
            AffinityScope::CacheShard
        );
        assert_eq!(
            "cache\n".parse::<AffinityScope>().unwrap(),
            AffinityScope::Cache
        );
        assert_eq!(
            "default".parse::<AffinityScope>().unwrap(),
            AffinityScope::CacheShard
        );
        for bad in [
            "Cache",
            "cache ",
            " cache",
            "cache\n\n",
            "cach",
            "cache_",
            "cache_shards",
            "",
            "CPU",
            "\n",
            "default\n\n",
        ] {
            let err = bad.parse::<AffinityScope>().unwrap_err();
            assert!(matches!(err, Error::UnknownScope { .. }), "{bad:?}");
            assert!(err.to_string().contains("cache_shard"), "{err}");
        }
    }

    #[test]
    fn shard_count_rounds_half_up() {
        assert_eq!(shard_count(0, 8), 1);
        assert_eq!(shard_count(1, 8), 1);
        assert_eq!(shard_count(11, 8), 1);
        assert_eq!(shard_count(12, 8), 2);
        assert_eq!(shard_count(36, 8), 5);
        assert_eq!(shard_count(72, 8), 9);
        assert_eq!(shard_count(100, 8), 13);
        assert_eq!(shard_count(3, 1), 3);
        assert_eq!(shard_count(3, 2), 2);
    }

    #[test]
    fn zero_shard_size_is_an_error() {
        let t = Topology::from_machine("cores=4").unwrap();
        assert!(matches!(
            Pods::new(&t, AffinityScope::Cpu, 0),
            Err(Error::ZeroShardSize)
        ));
    }
}
