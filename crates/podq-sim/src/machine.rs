//! [`SimMachine`]: a [`Topology`] in the form the engine reads it, with its cache-line
//! latencies.

use podq::Topology;

use crate::cost::{Caches, Distance, Platform};

/// A machine to simulate: its topology, densely numbered, and the latencies of moving a cache
/// line between its CPUs.
#[derive(Clone, Debug)]
pub struct SimMachine {
    /// The topology (Linux CPU ids).
    topology: Topology,
    /// A short name for reports: the preset or description, `this`, or a folder.
    name: String,
    /// Line latencies by distance.
    lines: Platform,
    /// Where `lines` come from, in words.
    lines_source: &'static str,
    /// The caches' sizes and latencies (the `locality` workload).
    caches: Caches,
    /// Where `caches` come from, in words.
    caches_source: &'static str,
    /// `ids[i]`: the Linux id of dense CPU `i`.
    ids: Vec<usize>,
    /// `(core, cache domain, node)` of each dense CPU; a core is named by its lowest CPU.
    place: Vec<(u32, u32, u32)>,
}

impl SimMachine {
    /// `topology` named `name`, with the latencies [`Platform::for_machine`] gives for
    /// `name`.
    pub fn new(topology: Topology, name: &str) -> SimMachine {
        let (lines, source) = Platform::for_machine(name);
        SimMachine::with_lines(topology, name, lines, source)
    }

    /// `topology` named `name`, with the given latencies (and the caches
    /// [`Caches::for_machine`] gives for `name`).
    pub fn with_lines(
        topology: Topology,
        name: &str,
        lines: Platform,
        lines_source: &'static str,
    ) -> SimMachine {
        let ids: Vec<usize> = topology.cpus().iter().map(|c| c.id()).collect();
        let place = topology
            .cpus()
            .iter()
            .map(|c| {
                let core = c.core_cpus().first().unwrap_or(c.id());
                let cache = topology.cache_domain_of(c.id()).unwrap_or(0);
                let small = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
                (small(core), small(cache), small(c.node()))
            })
            .collect();
        let (caches, caches_source) = Caches::for_machine(name);
        SimMachine {
            topology,
            name: name.to_owned(),
            lines,
            lines_source,
            caches,
            caches_source,
            ids,
            place,
        }
    }

    /// This machine with `caches`, from `source` (in words).
    pub fn with_caches(mut self, caches: Caches, source: &'static str) -> SimMachine {
        self.caches = caches;
        self.caches_source = source;
        self
    }

    /// This machine at `clock_ghz` ([`Platform::clock_ghz`]): a part's own clock
    /// ([`Platform::part_clock_ghz`]) or the one its CPU model states; `None`: unknown.
    pub fn at_clock(mut self, clock_ghz: Option<f64>) -> SimMachine {
        self.lines.clock_ghz = clock_ghz;
        self
    }

    /// This machine with `platform` instead of its own (its source stays).
    pub fn with_platform(mut self, platform: Platform) -> SimMachine {
        self.lines = platform;
        self
    }

    /// The caches' sizes and latencies.
    pub fn caches(&self) -> &Caches {
        &self.caches
    }

    /// Where the caches' figures come from.
    pub fn caches_source(&self) -> &'static str {
        self.caches_source
    }

    /// The topology.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The machine's name in reports.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The hardware costs: cache-line latencies, idle exit.
    pub fn platform(&self) -> &Platform {
        &self.lines
    }

    /// How much longer a thread's own work takes while its SMT sibling runs
    /// ([`Platform::smt_slowdown`]): 1 on a machine without SMT.
    pub fn smt_slowdown(&self) -> f64 {
        if self.topology().smt_width() > 1 {
            self.lines.smt_slowdown
        } else {
            1.0
        }
    }

    /// Where the cache-line latencies come from.
    pub fn platform_source(&self) -> &'static str {
        self.lines_source
    }

    /// The number of CPUs.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the machine has no CPU (never, for a machine built from a topology).
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The Linux id of dense CPU `i`.
    #[inline]
    pub(crate) fn id(&self, i: usize) -> usize {
        self.ids[i]
    }

    /// The dense index of Linux CPU `id`.
    pub(crate) fn dense(&self, id: usize) -> Option<usize> {
        self.ids.binary_search(&id).ok()
    }

    /// How far apart dense CPUs `a` and `b` are.
    #[inline]
    pub(crate) fn distance(&self, a: usize, b: usize) -> Distance {
        if a == b {
            return Distance::SameCpu;
        }
        let (pa, pb) = (self.place[a], self.place[b]);
        if pa.0 == pb.0 {
            Distance::SameCore
        } else if pa.1 == pb.1 {
            Distance::SameCache
        } else if pa.2 == pb.2 {
            Distance::SameNode
        } else {
            Distance::OtherNode
        }
    }

    /// The core of dense CPU `i`, named by its lowest Linux CPU id.
    #[inline]
    pub(crate) fn core_of(&self, i: usize) -> u32 {
        self.place[i].0
    }

    /// The cache domain of dense CPU `i`.
    #[inline]
    pub(crate) fn cache_of(&self, i: usize) -> u32 {
        self.place[i].1
    }

    /// The node of dense CPU `i`.
    #[inline]
    pub(crate) fn node_of(&self, i: usize) -> u32 {
        self.place[i].2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_follow_the_topology() {
        let topo = Topology::from_machine("sockets=2,nodes=2,caches=4,cores=8,smt=2").unwrap();
        let m = SimMachine::new(topo, "test");
        assert_eq!(m.distance(0, 0), Distance::SameCpu);
        assert_eq!(m.distance(0, 8), Distance::SameCore);
        assert_eq!(m.distance(0, 1), Distance::SameCache);
        assert_eq!(m.distance(0, 2), Distance::SameNode);
        assert_eq!(m.distance(0, 4), Distance::OtherNode);
        assert!(m.platform_source().starts_with("median of the table"));
    }
}
