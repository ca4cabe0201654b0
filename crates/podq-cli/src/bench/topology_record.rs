//! The machine's layout in a bench report's JSON (`machine.topology`): enough to rebuild it in
//! the simulator (`podq sim --against FILE`) and to check that the rebuild forms the same
//! pods.

use podq::{AffinityScope, Pods, Topology};
use serde::Serialize;
use std::collections::BTreeMap;

/// The shard size the recorded `cache_shard` pod count is for (the default).
const RECORDED_SHARD_SIZE: usize = 8;

/// The layout of the usable CPUs.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct TopologyRecord {
    /// A description `Topology::from_machine` reads that has the same counts (sockets, nodes,
    /// cache domains, cores, SMT width and CPUs), as in
    /// `sockets=1,nodes=1,caches=1,cores=2,smt=1`.
    pub(crate) description: String,
    /// Hardware threads per core (the widest core's).
    pub(crate) smt: usize,
    /// Packages among the usable CPUs.
    pub(crate) sockets: usize,
    /// Each cache domain's CPUs, as CPU lists.
    pub(crate) cache_domains: Vec<String>,
    /// Each node's usable CPUs, as CPU lists.
    pub(crate) nodes: Vec<String>,
    /// Pods per scope (`cache_shard` at the default shard size, 8).
    pub(crate) pods: BTreeMap<String, usize>,
}

impl TopologyRecord {
    /// The record of `topology`.
    pub(crate) fn of(topology: &Topology) -> TopologyRecord {
        let sockets = topology.package_ids().len().max(1);
        let nodes: Vec<String> = topology
            .node_ids()
            .iter()
            .map(|&n| topology.node_cpus(n).to_string())
            .collect();
        let domains = topology.cache_domains();
        let smt = topology.smt_width().max(1);
        let cpus = topology.cpus().len();
        let cores = topology.core_count();
        let mut description = format!(
            "sockets={sockets},nodes={},caches={},cores={cores},smt={smt}",
            nodes.len().max(1),
            domains.len().max(1)
        );
        if cpus < cores * smt {
            description.push_str(&format!(",cpus={cpus}"));
        }
        TopologyRecord {
            description,
            smt,
            sockets,
            cache_domains: domains.iter().map(|d| d.cpus.to_string()).collect(),
            nodes,
            pods: pod_counts(topology),
        }
    }
}

/// Pods per scope of `topology`, by scope name (`cache_shard` at the default shard size).
pub(crate) fn pod_counts(topology: &Topology) -> BTreeMap<String, usize> {
    AffinityScope::ALL
        .iter()
        .filter_map(|&scope| {
            Pods::new(topology, scope, RECORDED_SHARD_SIZE)
                .ok()
                .map(|pods| (scope.name().to_owned(), pods.pods().len()))
        })
        .collect()
}
