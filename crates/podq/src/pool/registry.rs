//! The process-wide registry of pools: one [`Pool`] per (attributes, pod), shared by every
//! workqueue that asks for equal attributes on the same pods, and kept only while one uses it.

use std::collections::HashMap;
use std::fmt;
use std::sync::{LazyLock, Weak};

use super::{pool_name, Pool, PoolAttrs};
use crate::error::{Error, Result};
use crate::sync::{Arc, Mutex};
use crate::{CpuSet, Pods, Topology};

/// What identifies a pool: the attributes and the pod (its id and CPUs before they are
/// narrowed to the workqueue's CPUs, so pods of different topologies never meet).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub(crate) struct PoolKey {
    attrs: PoolAttrs,
    pod: usize,
    pod_cpus: CpuSet,
}

/// Every live pool, by key. Entries are weak: a pool lives as long as some [`PoolSet`] holds
/// it, and its drop removes its entry ([`forget`]).
///
/// Lock order: this lock is never held while a pool is dropped (a pool's drop takes it), nor
/// while a pool lock is held.
static REGISTRY: LazyLock<Mutex<HashMap<PoolKey, Weak<Pool>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The pools of every pod for one set of attributes.
pub(crate) struct PoolSet {
    /// The pods, over the whole topology (`pools[i]` serves `pods.pods()[i]`).
    pub(crate) pods: Pods,
    /// One pool per pod; index = pod id.
    pub(crate) pools: Vec<Arc<Pool>>,
}

impl fmt::Debug for PoolSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolSet")
            .field("scope", &self.pods.scope())
            .field("pools", &self.pools)
            .finish()
    }
}

/// The pools of every pod of `topology` under `attrs`, from the shared registry: created on
/// first use, shared while any workqueue holds them, and shut down (after running everything
/// queued) once the last holder lets go.
///
/// # Errors
///
/// [`Error::EmptyCpuSet`] when `attrs.cpus` is empty, [`Error::UnknownCpu`] when it holds a CPU
/// that `topology` cannot use, [`Error::ZeroShardSize`] for a shard size of 0, and
/// [`Error::ZeroMaxWorkers`] when `attrs.max_workers` is 0.
pub(crate) fn pools_for(topology: &Topology, attrs: &PoolAttrs) -> Result<Arc<PoolSet>> {
    check(topology, attrs)?;
    let pods = Pods::new(topology, attrs.scope, attrs.shard_size)?;
    let mut registry = REGISTRY.lock();
    let pools = pods
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
            let mut pool = Pool::new(
                pool_name(attrs.scope, attrs.shard_size, pod.id),
                served,
                attrs,
            );
            pool.key = Some(key.clone());
            let pool = Arc::new(pool);
            registry.insert(key, Arc::downgrade(&pool));
            pool
        })
        .collect();
    drop(registry);
    Ok(Arc::new(PoolSet { pods, pools }))
}

/// Rejects attributes that cannot make pools, naming the bad input.
fn check(topology: &Topology, attrs: &PoolAttrs) -> Result<()> {
    if attrs.max_workers == 0 {
        return Err(Error::ZeroMaxWorkers);
    }
    if attrs.cpus.is_empty() {
        return Err(Error::EmptyCpuSet {
            what: "the workqueue's CPUs".into(),
        });
    }
    let usable = topology.cpu_set();
    if let Some(cpu) = attrs.cpus.iter().find(|&cpu| !usable.contains(cpu)) {
        return Err(Error::UnknownCpu {
            cpu,
            usable: usable.to_string(),
        });
    }
    Ok(())
}

/// Removes the entry of a pool being dropped, unless a new pool took the key meanwhile.
pub(super) fn forget(key: &PoolKey) {
    let mut registry = REGISTRY.lock();
    if registry.get(key).is_some_and(|w| w.strong_count() == 0) {
        registry.remove(key);
    }
}
