//! Synthetic machines from a short description, numbered the way Linux numbers real ones.
//!
//! A description is comma-separated `key=count` pairs giving totals for the whole machine:
//! `sockets=2,nodes=4,caches=8,cores=64,smt=2` is two packages, four NUMA nodes, eight cache
//! domains, 64 cores and two threads per core (128 CPUs). `cores` is required; the other keys
//! default to 1. Each of `sockets`, `nodes`, `caches`, `cores` must divide the next, so that
//! every package holds whole nodes, every node whole cache domains, every domain whole cores.
//!
//! CPUs are numbered as Linux does on x86: first the first thread of every core in order, then
//! their siblings, so CPU `n` and CPU `n + cores` share a core. Core `k` lies in cache domain
//! `k / (cores / caches)`, and likewise for nodes and packages.
//!
//! `cpus=N` (optional) keeps only CPUs `0..N` of the `cores x smt`, as on a machine with CPUs
//! offline: `cores=26,smt=2,cpus=51` is the published Xeon Platinum 8321HC run, 26 cores with
//! SMT and the last CPU (the sibling of core 25) absent.

use crate::cpuset::CpuSet;
use crate::error::{Error, Result};

use super::{presets, Cpu, Topology, PRESETS};

/// The most CPUs a synthetic machine may have: 4096, twice the largest machines sold today,
/// so a typo such as `cores=64000` is refused rather than building a huge topology.
pub const MAX_CPUS: usize = 4096;

/// The cache level synthetic machines report for their cache domains (an L3).
const SYNTHETIC_CACHE_LEVEL: u8 = 3;

/// The keys a description may use, in the order they nest.
const KEYS: [&str; 6] = ["sockets", "nodes", "caches", "cores", "smt", "cpus"];

/// A parsed machine description: totals for the whole machine.
///
/// ```
/// use podq::topology::synthetic::MachineShape;
/// let shape = MachineShape::parse("sockets=2,nodes=4,caches=8,cores=64,smt=2").unwrap();
/// assert_eq!((shape.sockets(), shape.nodes(), shape.caches()), (2, 4, 8));
/// assert_eq!((shape.cores(), shape.smt(), shape.cpus()), (64, 2, 128));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub struct MachineShape {
    /// Packages.
    pub(crate) sockets: usize,
    /// NUMA nodes.
    pub(crate) nodes: usize,
    /// Cache domains.
    pub(crate) caches: usize,
    /// Cores.
    pub(crate) cores: usize,
    /// Threads (CPUs) per core.
    pub(crate) smt: usize,
    /// The CPUs kept, `0..present` (`cores x smt` unless `cpus=` says fewer).
    pub(crate) present: usize,
}

impl MachineShape {
    /// Parses and checks a description such as `sockets=2,nodes=4,caches=8,cores=64,smt=2`.
    ///
    /// # Errors
    ///
    /// [`Error::BadMachineDescription`] saying what was expected: an unknown or repeated key,
    /// a count that is not a whole number of at least 1, a missing `cores`, counts that do not
    /// divide each other, or more than [`MAX_CPUS`] CPUs.
    pub fn parse(desc: &str) -> Result<MachineShape> {
        let bad = |reason: String| Error::BadMachineDescription {
            description: desc.to_owned(),
            reason,
        };
        let mut counts: [Option<usize>; 6] = [None; 6];
        for pair in desc.trim().split(',') {
            let pair = pair.trim();
            let Some((key, value)) = pair.split_once('=') else {
                return Err(bad(format!(
                    "'{pair}' is not key=count; expected pairs such as cores=64 with keys {}",
                    KEYS.join(", ")
                )));
            };
            let (key, value) = (key.trim(), value.trim());
            let Some(slot) = KEYS.iter().position(|&k| k == key) else {
                return Err(bad(format!(
                    "unknown key '{key}'; expected {}",
                    KEYS.join(", ")
                )));
            };
            if counts[slot].is_some() {
                return Err(bad(format!("'{key}' is given twice")));
            }
            let count: usize = value.parse().ok().filter(|&n| n >= 1).ok_or_else(|| {
                bad(format!(
                    "{key}={value}: expected a whole number of at least 1"
                ))
            })?;
            if count > MAX_CPUS {
                return Err(bad(format!(
                    "{key}={count} is too large: a synthetic machine has at most {MAX_CPUS} CPUs"
                )));
            }
            counts[slot] = Some(count);
        }
        let [sockets, nodes, caches, cores, smt, present] = counts;
        let Some(cores) = cores else {
            return Err(bad("'cores' is required, for instance cores=64".into()));
        };
        let shape = MachineShape {
            sockets: sockets.unwrap_or(1),
            nodes: nodes.unwrap_or(1),
            caches: caches.unwrap_or(1),
            cores,
            smt: smt.unwrap_or(1),
            present: 0,
        };
        for (outer, inner, o, i) in [
            ("sockets", "nodes", shape.sockets, shape.nodes),
            ("nodes", "caches", shape.nodes, shape.caches),
            ("caches", "cores", shape.caches, shape.cores),
        ] {
            if i % o != 0 {
                return Err(bad(format!(
                    "{outer}={o} does not divide {inner}={i}; each count must divide the next so that every {} holds whole {inner}",
                    outer.trim_end_matches('s')
                )));
            }
        }
        let cpus = shape.cores * shape.smt;
        if cpus > MAX_CPUS {
            return Err(bad(format!(
                "cores={} x smt={} is {cpus} CPUs; a synthetic machine has at most {MAX_CPUS}",
                shape.cores, shape.smt
            )));
        }
        let present = present.unwrap_or(cpus);
        if present > cpus {
            return Err(bad(format!(
                "cpus={present} is more than cores={} x smt={} = {cpus}; give at most {cpus}",
                shape.cores, shape.smt
            )));
        }
        Ok(MachineShape { present, ..shape })
    }

    /// The number of packages (`sockets`).
    #[must_use]
    pub fn sockets(&self) -> usize {
        self.sockets
    }

    /// The number of NUMA nodes (`nodes`).
    #[must_use]
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// The number of cache domains, that is of last-level caches (`caches`).
    #[must_use]
    pub fn caches(&self) -> usize {
        self.caches
    }

    /// The number of cores (`cores`).
    #[must_use]
    pub fn cores(&self) -> usize {
        self.cores
    }

    /// The number of threads (CPUs) per core (`smt`).
    #[must_use]
    pub fn smt(&self) -> usize {
        self.smt
    }

    /// The number of CPUs: cores times threads per core, or fewer when `cpus=` says so.
    #[must_use]
    pub fn cpus(&self) -> usize {
        self.present
    }

    /// Builds the machine, with `source` as its [`Topology::source`].
    pub fn build(&self, source: String) -> Topology {
        let MachineShape {
            sockets,
            nodes,
            caches,
            cores,
            smt,
            present,
        } = *self;
        let keep = |set: CpuSet| -> CpuSet { set.iter().filter(|&c| c < present).collect() };
        let core_of = |cpu: usize| cpu % cores;
        let core_cpus = |core: usize| -> CpuSet { (0..smt).map(|t| core + t * cores).collect() };
        let cores_per_cache = cores / caches;
        let cache_cpus = |cache: usize| -> CpuSet {
            (cache * cores_per_cache..(cache + 1) * cores_per_cache)
                .flat_map(|core| (0..smt).map(move |t| core + t * cores))
                .collect()
        };
        let cpus = (0..self.cpus())
            .map(|id| {
                let core = core_of(id);
                let cache = core / cores_per_cache;
                Cpu {
                    id,
                    core_cpus: keep(core_cpus(core)),
                    cache_cpus: keep(cache_cpus(cache)),
                    cache_level: Some(SYNTHETIC_CACHE_LEVEL),
                    node: core / (cores / nodes),
                    package: i64::try_from(core / (cores / sockets)).unwrap_or(i64::MAX),
                    cluster_cpus: None,
                }
            })
            .collect();
        Topology::from_parts(cpus, Vec::new(), source)
    }
}

/// A preset name or a description; see [`Topology::from_machine`].
pub(crate) fn from_machine(desc: &str) -> Result<Topology> {
    let name = desc.trim();
    if let Some(preset) = presets::description(name) {
        let shape = MachineShape::parse(preset)?;
        return Ok(shape.build(format!("preset {name} ({preset})")));
    }
    if name.contains('=') {
        let shape = MachineShape::parse(name)?;
        return Ok(shape.build(format!("synthetic machine {name}")));
    }
    Err(Error::UnknownPreset {
        name: name.to_owned(),
        presets: PRESETS.join(", "),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_siblings_the_linux_way() {
        let t = Topology::from_machine("sockets=2,nodes=4,caches=8,cores=64,smt=2").unwrap();
        assert_eq!(t.cpus().len(), 128);
        let c0 = t.cpu(0).unwrap();
        assert_eq!(c0.core_cpus.to_string(), "0,64");
        assert_eq!(c0.cache_cpus.to_string(), "0-7,64-71");
        assert_eq!(t.cpu(64).unwrap().core_cpus.to_string(), "0,64");
        assert_eq!(t.cpu(127).unwrap().node, 3);
        assert_eq!(t.cpu(127).unwrap().package, 1);
        assert_eq!(t.cpu(31).unwrap().package, 0);
        assert_eq!(t.node_ids(), vec![0, 1, 2, 3]);
        assert_eq!(t.node_cpus(1).to_string(), "16-31,80-95");
        assert_eq!(t.package_ids(), vec![0, 1]);
        assert_eq!(t.core_count(), 64);
        assert_eq!(t.smt_width(), 2);
        assert_eq!(t.cache_domains().len(), 8);
        assert!(t.fallbacks().is_empty());
    }

    #[test]
    fn cpus_keeps_the_lowest_cpus() {
        let t = Topology::from_machine("cores=26,smt=2,cpus=51").unwrap();
        assert_eq!(t.cpus().len(), 51);
        assert_eq!(t.core_count(), 26);
        assert_eq!(t.cpu(25).unwrap().core_cpus.to_string(), "25");
        assert_eq!(t.cpu(24).unwrap().core_cpus.to_string(), "24,50");
        assert_eq!(t.cache_domains()[0].cpus.len(), 51);
    }

    #[test]
    fn keys_default_to_one() {
        let t = Topology::from_machine("cores=4").unwrap();
        assert_eq!(t.cpu_set().to_string(), "0-3");
        assert_eq!(t.smt_width(), 1);
        assert_eq!(t.cache_domains().len(), 1);
        assert_eq!(t.node_ids(), vec![0]);
    }

    #[test]
    fn presets_have_their_shapes() {
        let epyc = Topology::from_machine("epyc-9d64").unwrap();
        assert_eq!(epyc.cpus().len(), 176);
        assert_eq!(epyc.cpu(5).unwrap().core_cpus.to_string(), "5,93");
        let domains = epyc.cache_domains();
        assert_eq!(domains.len(), 11);
        assert_eq!(domains[0].cpus.to_string(), "0-7,88-95");
        assert!(domains.iter().all(|d| d.cores == 8 && d.level == Some(3)));
        let shape = |name: &str| {
            let t = Topology::from_machine(name).unwrap();
            (t.cpus().len(), t.core_count(), t.cache_domains().len())
        };
        assert_eq!(shape("grace"), (72, 72, 1));
        assert_eq!(shape("ryzen-3900x"), (24, 12, 4));
        assert_eq!(shape("ryzen-7950x"), (32, 16, 2));
        assert_eq!(shape("skylake-18c"), (36, 18, 1));
    }

    #[test]
    fn bad_descriptions_say_what_was_expected() {
        for (desc, needle) in [
            ("sockets=2", "'cores' is required"),
            ("cores=0", "at least 1"),
            ("cores=x", "whole number"),
            ("cores=8,cores=8", "twice"),
            (
                "cores=8,threads=2",
                "expected sockets, nodes, caches, cores, smt, cpus",
            ),
            ("cores=2,smt=2,cpus=5", "at most 4"),
            ("cores=2,cpus=0", "at least 1"),
            ("cores=8,smt", "not key=count"),
            ("caches=3,cores=8", "does not divide"),
            ("sockets=2,nodes=3,cores=6", "does not divide"),
            ("cores=4096,smt=2", "at most 4096"),
            ("cores=99999999999999999999", "whole number"),
        ] {
            let err = Topology::from_machine(desc).unwrap_err();
            assert!(
                matches!(err, Error::BadMachineDescription { .. }),
                "{desc}: {err:?}"
            );
            let msg = err.to_string();
            assert!(msg.contains(needle) && msg.contains(desc), "{desc}: {msg}");
        }
    }

    #[test]
    fn unknown_names_list_the_presets() {
        let err = Topology::from_machine("graceful").unwrap_err();
        assert!(matches!(err, Error::UnknownPreset { .. }));
        let msg = err.to_string();
        for preset in PRESETS {
            assert!(msg.contains(preset), "{msg}");
        }
        assert!(msg.contains("graceful"));
    }
}
