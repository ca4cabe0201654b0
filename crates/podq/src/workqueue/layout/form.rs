//! Forming one layout of a workqueue: its CPUs, the pools of its pods from the process's
//! registry, its placement and the workqueue's part of each pod (R2 of `workqueue/README.md`).

use std::sync::Arc;

use crossbeam_utils::CachePadded;

use crate::error::Result;
use crate::fork::PerFork;
use crate::policy::Placement;
use crate::pool::{PoolAttrs, Registry};
use crate::topology::Topology;
use crate::workqueue::item::flush::PodCounters;
use crate::workqueue::task::shared::{PodShared, WqShared};
use crate::workqueue::task::Task;

use super::{Layout, Reform, Shape};

/// The process's pools of workqueue tasks: one per (attributes, pod), shared by every
/// workqueue with equal attributes, as in the kernel. One registry per fork generation
/// (`fork.rs`): a child of `fork()` never gets its parent's pools, whose workers it lacks.
static POOLS: PerFork<Registry<Task>> = PerFork::new();

/// This process's pool registry (see [`POOLS`]).
fn pool_registry() -> &'static Registry<Task> {
    POOLS.get(Registry::new)
}

/// Forms a layout of `wq` for `shape` on `topology` (the machine within `shape.allowed`):
/// the workqueue's CPUs within the allowed ones (every allowed CPU when none of those asked
/// for is allowed, as the kernel falls back for an unbound workqueue), the pools of its pods
/// from the process's registry, the placement and the workqueue's part of each pod.
///
/// # Errors
///
/// [`Error::ZeroShardSize`](crate::Error::ZeroShardSize) for a shard size of 0;
/// [`Error::EmptyCpuSet`](crate::Error::EmptyCpuSet) when no CPU is left.
pub(super) fn form(
    wq: &Arc<WqShared>,
    reform: &Reform,
    topology: &Topology,
    shape: Shape,
) -> Result<Layout> {
    let usable = topology.cpu_set();
    let cpus = match &reform.requested {
        Some(asked) => {
            let within = asked.intersection(&usable);
            if within.is_empty() {
                usable
            } else {
                within
            }
        }
        None => usable,
    };
    let attrs = PoolAttrs {
        scope: shape.scope,
        shard_size: shape.shard_size,
        cpus: cpus.clone(),
        pull: shape.pull,
        ..reform.attrs.clone()
    };
    let pools = pool_registry().pools_for(topology, &attrs)?;
    let placement = Placement::new(pools.pods(), &cpus, |cpu| {
        topology.cpu(cpu).map_or(0, |c| c.node)
    })?;
    let set = wq.pools.push(Arc::clone(&pools));
    let pods = (0..pools.len())
        .map(|index| {
            Arc::new(CachePadded::new(PodShared {
                wq: Arc::clone(wq),
                index,
                set,
                counters: PodCounters::new(pools.pod(index).cpus.len()),
            }))
        })
        .collect();
    Ok(Layout {
        shape,
        cpus,
        placement,
        set,
        pods,
    })
}
