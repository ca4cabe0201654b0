//! [`Registry`]: the pools of one task type, one [`Pool`] per (attributes, pod), shared by
//! every user that asks for equal attributes on the same pods, and kept only while one uses
//! it.

use std::collections::HashMap;
use std::fmt;
use std::sync::Weak;

use super::pull::PullGroup;
use super::{pool_name, Pool, PoolAttrs, PoolSet, Runnable, Spares};
use crate::cpuset::CpuSet;
use crate::error::Result;
use crate::scope::Pods;
use crate::sync::{Arc, Mutex};
use crate::topology::Topology;

/// What identifies a pool: the attributes and the pod (its id and CPUs before they are
/// narrowed to the workqueue's CPUs, so pods of different topologies never meet).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub(crate) struct PoolKey {
    attrs: PoolAttrs,
    pod: usize,
    pod_cpus: CpuSet,
}

/// Every live pool running tasks of type `T`, by key. The user of the pools keeps one in a
/// static (the workqueue layer does, for its tasks), so that equal attributes anywhere in the
/// process give the same pools.
///
/// Beside them, per NUMA node, the queue segments that the node's pools are done with
/// ([`Spares`], at most `chain::KEPT_SEGMENTS` a node): a backlog that grows after another
/// drained, in the same pool or in a pool made since (a workqueue built for a job), takes
/// memory already in use rather than fresh pages, and never memory of another node.
///
/// Entries are weak: a pool lives as long as some [`PoolSet`] holds it, and its drop removes
/// its entry. Lock order: the registry's lock is never held while a pool is dropped (a pool's
/// drop takes it), nor while a pool lock is held.
pub(crate) struct Registry<T: Runnable> {
    /// The pools, by key.
    pools: Mutex<HashMap<PoolKey, Weak<Pool<T>>>>,
    /// The kept segments of each node's pools (`None`: pods of no known node); only grows,
    /// by one entry a node. Taken after `pools`, never the other way.
    spares: Mutex<HashMap<Option<usize>, Arc<Spares<T>>>>,
}

/// A pool's entry in its registry, which the pool's drop removes.
pub(super) struct Entry<T: Runnable + 'static> {
    /// The registry that holds the entry.
    registry: &'static Registry<T>,
    /// The entry's key.
    key: PoolKey,
}

impl<T: Runnable> Registry<T> {
    /// An empty registry.
    pub(crate) fn new() -> Self {
        Self {
            pools: Mutex::new(HashMap::new()),
            spares: Mutex::new(HashMap::new()),
        }
    }

    /// The pools of every pod of `topology` under `attrs`: created on first use, shared while
    /// any user holds them, and shut down (after running everything queued) once the last
    /// holder lets go.
    ///
    /// `attrs` are checked already (see `workqueue/api/builder.rs`): `max_workers` at least 1,
    /// `cpus` not empty and usable on `topology`.
    ///
    /// # Errors
    ///
    /// [`crate::error::Error::ZeroShardSize`] for a shard size of 0 (from [`Pods::new`]).
    pub(crate) fn pools_for(
        &'static self,
        topology: &Topology,
        attrs: &PoolAttrs,
    ) -> Result<Arc<PoolSet<T>>> {
        debug_assert!(attrs.max_workers > 0, "unchecked attributes: {attrs:?}");
        debug_assert!(
            !attrs.cpus.is_empty() && attrs.cpus.is_subset(&topology.cpu_set()),
            "unchecked attributes: {attrs:?}"
        );
        let pods = Pods::new(topology, attrs.scope, attrs.shard_size)?;
        let mut registry = self.pools.lock();
        let pools: Vec<_> = pods
            .pods()
            .iter()
            .map(|pod| {
                let key = PoolKey {
                    attrs: attrs.clone(),
                    pod: pod.id,
                    pod_cpus: pod.cpus.clone(),
                };
                if let Some(pool) = registry.get(&key).and_then(Weak::upgrade) {
                    return pool;
                }
                let served = pod.with_cpus(pod.cpus.intersection(&attrs.cpus));
                let spares = Arc::clone(self.spares.lock().entry(pod.node).or_default());
                let mut pool = Pool::new(
                    pool_name(attrs.scope, attrs.shard_size, pod.id),
                    served,
                    attrs,
                    spares,
                );
                pool.entry = Some(Entry {
                    registry: self,
                    key: key.clone(),
                });
                let pool = Arc::new(pool);
                registry.insert(key, Arc::downgrade(&pool));
                pool
            })
            .collect();
        drop(registry);
        let pull = if attrs.pull {
            pull_group(&pods, &pools)
        } else {
            None
        };
        Ok(Arc::new(PoolSet::new(pods, pools, pull)))
    }
}

/// The pull group of `pools`: the one their workers already use when the pools were all made
/// together for an equal set before, else a new one, which the pools' workers use unless they
/// have one already (pools shared with a set of another topology keep their first group).
/// `None` when fewer than two pools serve a CPU.
fn pull_group<T: Runnable>(pods: &Pods, pools: &[Arc<Pool<T>>]) -> Option<Arc<PullGroup<T>>> {
    let shared: Vec<_> = pools.iter().map(|p| Arc::clone(&p.shared)).collect();
    let existing = shared
        .first()
        .and_then(|s| s.group.get())
        .and_then(std::sync::Weak::upgrade)
        .filter(|g| g.has_pools(&shared));
    if existing.is_some() {
        return existing;
    }
    let group = Arc::new(PullGroup::new(pods, &shared)?);
    for s in &shared {
        // A pool already in another group keeps it: its workers hold that one.
        let _ = s.group.set(Arc::downgrade(&group));
    }
    Some(group)
}

impl<T: Runnable> fmt::Debug for Registry<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("pools", &self.pools.lock().len())
            .finish()
    }
}

impl<T: Runnable> Entry<T> {
    /// Removes the entry of a pool being dropped, unless a new pool took the key meanwhile.
    pub(super) fn forget(self) {
        let mut pools = self.registry.pools.lock();
        if pools.get(&self.key).is_some_and(|w| w.strong_count() == 0) {
            pools.remove(&self.key);
        }
    }
}
