//! [`Placement`]: CPU to pod, the round-robin replacement of CPUs outside a workqueue's CPUs,
//! and node to pod.

use crate::cpuset::CpuSet;
use crate::error::{Error, Result};
use crate::scope::Pods;

/// Marks a CPU that is not one of the workqueue's CPUs in [`Placement`]'s table.
const NO_POD: u32 = u32::MAX;

/// Where a workqueue's items go: the pod of each of its CPUs, in an O(1) table.
///
/// Built from the pods of the workqueue's scope and the workqueue's CPUs. A CPU outside those
/// CPUs (the issuing thread may run anywhere) is replaced by one of the workqueue's CPUs in
/// round-robin order, as the kernel does for unbound workqueues with a narrowed CPU mask.
///
/// ```
/// use podq::policy::Placement;
/// use podq::{AffinityScope, CpuSet, Pods, Topology};
///
/// let topo = Topology::from_machine("sockets=1,nodes=1,caches=2,cores=4,smt=1").unwrap();
/// let pods = Pods::new(&topo, AffinityScope::Cache, 8).unwrap();
/// let cpus: CpuSet = [0, 1, 3].into_iter().collect();
/// let place = Placement::new(&pods, &cpus, |cpu| topo.cpu(cpu).unwrap().node()).unwrap();
/// assert_eq!(place.pod_of(0), Some(0));
/// assert_eq!(place.pod_of(3), Some(1));
/// assert_eq!(place.pod_of(2), None); // not one of the workqueue's CPUs
/// // CPU 2 is replaced round-robin by CPUs 0, 1, 3 in turn.
/// assert_eq!(place.pod_for(Some(2), || 2), 1);
/// ```
#[derive(Clone, Debug)]
pub struct Placement {
    /// `table[cpu]`: the pod of `cpu`, or [`NO_POD`] when `cpu` is not one of `cpus`.
    table: Vec<u32>,
    /// The workqueue's CPUs that have a pod, ascending: the round-robin replacements.
    cpus: Vec<usize>,
    /// `(node, CPUs of that node among cpus)`, ascending by node.
    nodes: Vec<(usize, Vec<usize>)>,
}

impl Placement {
    /// The placement of a workqueue whose CPUs are `cpus`, over `pods`; `node_of` gives each
    /// CPU's NUMA node (for [`Placement::pod_for_node`]).
    ///
    /// # Errors
    ///
    /// [`Error::EmptyCpuSet`] when no CPU of `cpus` is in any pod (so no item could run).
    pub fn new(pods: &Pods, cpus: &CpuSet, node_of: impl Fn(usize) -> usize) -> Result<Placement> {
        let mut table = vec![NO_POD; cpus.last().map_or(0, |c| c + 1)];
        let mut kept = Vec::with_capacity(cpus.len());
        let mut nodes: Vec<(usize, Vec<usize>)> = Vec::new();
        for cpu in cpus.iter() {
            let Some(pod) = pods.pod_of(cpu).and_then(|p| u32::try_from(p).ok()) else {
                continue;
            };
            table[cpu] = pod;
            kept.push(cpu);
            let node = node_of(cpu);
            match nodes.binary_search_by_key(&node, |(n, _)| *n) {
                Ok(i) => nodes[i].1.push(cpu),
                Err(i) => nodes.insert(i, (node, vec![cpu])),
            }
        }
        if kept.is_empty() {
            return Err(Error::empty_workqueue_cpus());
        }
        Ok(Placement {
            table,
            cpus: kept,
            nodes,
        })
    }

    /// The pod of `cpu` when it is one of the workqueue's CPUs.
    #[inline]
    pub fn pod_of(&self, cpu: usize) -> Option<usize> {
        match self.table.get(cpu) {
            Some(&pod) if pod != NO_POD => Some(pod as usize),
            _ => None,
        }
    }

    /// The pod for an item issued on `cpu` (`None`: the OS could not tell): its own pod when
    /// it is one of the workqueue's CPUs, otherwise the pod of the workqueue's CPU number
    /// `rotation() % len`. `rotation` is asked only for a replacement, so that the common case
    /// touches no shared counter (the caller's rotation is typically an atomic it advances).
    #[inline]
    pub fn pod_for(&self, cpu: Option<usize>, rotation: impl FnOnce() -> usize) -> usize {
        if let Some(pod) = cpu.and_then(|c| self.pod_of(c)) {
            return pod;
        }
        let cpu = self.cpus[rotation() % self.cpus.len()];
        self.table[cpu] as usize
    }

    /// The pod for an item queued on `node`: the pod of the node's CPU number
    /// `rotation % len` among the workqueue's CPUs, so that items spread over the node's pods.
    /// `None` when the node has none of the workqueue's CPUs.
    pub fn pod_for_node(&self, node: usize, rotation: usize) -> Option<usize> {
        let i = self.nodes.binary_search_by_key(&node, |(n, _)| *n).ok()?;
        let cpus = &self.nodes[i].1;
        Some(self.table[cpus[rotation % cpus.len()]] as usize)
    }

    /// The workqueue's CPUs that have a pod, ascending.
    pub fn cpus(&self) -> &[usize] {
        &self.cpus
    }

    /// The nodes that have at least one of the workqueue's CPUs, ascending.
    pub fn nodes(&self) -> impl Iterator<Item = usize> + '_ {
        self.nodes.iter().map(|(n, _)| *n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scope::AffinityScope;
    use crate::topology::Topology;

    fn machine() -> Topology {
        Topology::from_machine("sockets=2,nodes=2,caches=2,cores=8,smt=1").unwrap()
    }

    #[test]
    fn every_workqueue_cpu_maps_to_the_pod_that_holds_it() {
        let topo = machine();
        for scope in AffinityScope::ALL {
            let pods = Pods::new(&topo, scope, 2).unwrap();
            let place = Placement::new(&pods, &topo.cpu_set(), |_| 0).unwrap();
            for cpu in topo.cpu_set().iter() {
                let pod = place.pod_of(cpu).unwrap();
                assert!(pods.pods()[pod].cpus().contains(cpu), "{scope}: CPU {cpu}");
            }
        }
    }

    #[test]
    fn outside_cpus_rotate_over_the_workqueue_cpus() {
        let topo = machine();
        let pods = Pods::new(&topo, AffinityScope::Cpu, 8).unwrap();
        let cpus: CpuSet = [1, 5].into_iter().collect();
        let place = Placement::new(&pods, &cpus, |_| 0).unwrap();
        let chosen: Vec<usize> = (0..4).map(|r| place.pod_for(Some(0), || r)).collect();
        assert_eq!(chosen, vec![1, 5, 1, 5]);
        assert_eq!(place.pod_for(None, || 1), 5);
        assert_eq!(place.pod_for(Some(5), || 0), 5);
        // One of the workqueue's own CPUs never advances the rotation.
        assert_eq!(
            place.pod_for(Some(1), || unreachable!("rotation asked for an own CPU")),
            1
        );
    }

    #[test]
    fn nodes_map_to_their_own_pods() {
        let topo = machine();
        let pods = Pods::new(&topo, AffinityScope::Cpu, 8).unwrap();
        let place =
            Placement::new(&pods, &topo.cpu_set(), |c| topo.cpu(c).unwrap().node()).unwrap();
        for node in topo.node_ids() {
            for r in 0..8 {
                let pod = place.pod_for_node(node, r).unwrap();
                let cpu = pods.pods()[pod].cpus().first().unwrap();
                assert_eq!(topo.cpu(cpu).unwrap().node(), node);
            }
        }
        assert_eq!(place.pod_for_node(99, 0), None);
    }

    #[test]
    fn no_usable_cpu_is_an_error() {
        let topo = machine();
        let pods = Pods::new(&topo, AffinityScope::Cpu, 8).unwrap();
        let cpus: CpuSet = [1000].into_iter().collect();
        assert!(matches!(
            Placement::new(&pods, &cpus, |_| 0),
            Err(Error::EmptyCpuSet { .. })
        ));
    }
}
