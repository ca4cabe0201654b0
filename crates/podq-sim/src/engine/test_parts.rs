//! What the engine's unit tests build an engine on.

use podq::policy::Placement;
use podq::{AffinityScope, Pods, Topology};

use crate::machine::SimMachine;

/// A one-socket machine of `cores` cores, one CPU each, in one cache domain, its pods of
/// `scope` (`shard_size` cores per cache shard) and the placement over them.
pub(super) fn parts(
    cores: usize,
    scope: AffinityScope,
    shard_size: usize,
) -> (SimMachine, Pods, Placement) {
    let desc = format!("sockets=1,nodes=1,caches=1,cores={cores},smt=1");
    let topo = Topology::from_machine(&desc).expect("a valid description");
    let machine = SimMachine::new(topo, "test");
    let pods = Pods::new(machine.topology(), scope, shard_size).expect("pods of the machine");
    let placement = Placement::new(&pods, &machine.topology().cpu_set(), |_| 0)
        .expect("a placement over the pods");
    (machine, pods, placement)
}
