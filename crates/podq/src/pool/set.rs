//! [`PoolSet`]: the pools of every pod for one set of attributes, as a [`Registry`] hands
//! them out; what its user (a workqueue) pushes to, cancels from and reads stats of.
//!
//! [`Registry`]: super::Registry

use std::fmt;

use super::pull::PullGroup;
use super::{Pool, Runnable};
use crate::policy::pull::Level;
use crate::scope::{Pod, Pods};
use crate::stats::PoolStats;
use crate::sync::Arc;

/// The pools of every pod for one set of attributes: pool `i` serves pod `i`.
pub(crate) struct PoolSet<T: Runnable> {
    /// The pods, over the whole topology (`pools[i]` serves `pods.pods()[i]`).
    pub(super) pods: Pods,
    /// One pool per pod; index = pod id. A pod with none of the workqueue's CPUs has a pool
    /// that serves no CPU and is never pushed to.
    pub(super) pools: Vec<Arc<Pool<T>>>,
    /// The pull group of these pools; `None` when they do not pull.
    pub(super) pull: Option<Arc<PullGroup<T>>>,
}

impl<T: Runnable> PoolSet<T> {
    /// The set of `pools`, one per pod of `pods`, in order, pulling from each other through
    /// `pull` when given.
    pub(super) fn new(
        pods: Pods,
        pools: Vec<Arc<Pool<T>>>,
        pull: Option<Arc<PullGroup<T>>>,
    ) -> Self {
        debug_assert_eq!(pods.pods().len(), pools.len());
        Self { pods, pools, pull }
    }

    /// The pods, over the whole topology.
    pub(crate) fn pods(&self) -> &Pods {
        &self.pods
    }

    /// How many pods (and pools) there are.
    pub(crate) fn len(&self) -> usize {
        self.pools.len()
    }

    /// The pod that pool `index` serves: its CPUs within the workqueue's CPUs (empty for a
    /// pod with none of them).
    ///
    /// # Panics
    ///
    /// When `index` is not below [`PoolSet::len`].
    pub(crate) fn pod(&self, index: usize) -> &Pod {
        self.pools[index].pod()
    }

    /// How many pools serve at least one of the workqueue's CPUs.
    pub(crate) fn serving(&self) -> usize {
        self.serving_pools().count()
    }

    /// Queues `task` to the pool of pod `index`, in the lane of `at` (the pusher's CPU, read
    /// once per queue call: see [`Pool::push`]); when work then waits with every worker busy,
    /// the pool offers it to its siblings (O1).
    #[inline(always)]
    pub(crate) fn push(&self, index: usize, task: T, at: usize) {
        if let Some(reach) = self.pools[index].push(task, at, self.pull.is_some()) {
            self.offer(index, reach);
        }
    }

    /// Queues `task` to the pool of pod `index` from the task that just finished on the calling
    /// thread (see [`Pool::push_after_run`]).
    pub(crate) fn push_after_run(&self, index: usize, task: T) {
        if let Some(reach) = self.pools[index].push_after_run(task, self.pull.is_some()) {
            self.offer(index, reach);
        }
    }

    /// Pool `index` offers its waiting work to its siblings up to level `reach`, if the pools
    /// pull.
    pub(super) fn offer(&self, index: usize, reach: Level) {
        if let Some(group) = &self.pull {
            group.offer(index, reach);
        }
    }

    /// The load of the pool of pod `index` at `now` (see [`Pool::load`]).
    ///
    /// # Panics
    ///
    /// When `index` is not below [`PoolSet::len`].
    pub(crate) fn load(&self, index: usize, now: std::time::Duration) -> super::Load {
        self.pools[index].load(now)
    }

    /// Takes out the oldest waiting task for which `matches` is true, searching the pool of pod
    /// `first` first (where the task was last queued, a hint), then every other pool in pod
    /// order.
    pub(crate) fn remove_if(&self, first: usize, mut matches: impl FnMut(&T) -> bool) -> Option<T> {
        let others = (0..self.pools.len()).filter(|&p| p != first);
        std::iter::once(first)
            .chain(others)
            .find_map(|pod| self.pools.get(pod)?.remove_if(&mut matches))
    }

    /// Takes out every waiting task for which `matches` is true, from every pool, with the
    /// pod of the pool each came from.
    pub(crate) fn take_all_if(&self, mut matches: impl FnMut(&T) -> bool) -> Vec<(usize, T)> {
        self.pools
            .iter()
            .enumerate()
            .flat_map(|(pod, pool)| {
                pool.take_all_if(&mut matches)
                    .into_iter()
                    .map(move |task| (pod, task))
            })
            .collect()
    }

    /// The stats of the pools that serve at least one of the workqueue's CPUs, in pod order.
    pub(crate) fn stats(&self) -> Vec<PoolStats> {
        self.pools
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.pod().cpus.is_empty())
            .map(|(i, p)| PoolStats {
                pull: self.pull.as_ref().map(|g| g.stats(i)),
                ..p.stats()
            })
            .collect()
    }

    /// The pools that serve at least one of the workqueue's CPUs.
    fn serving_pools(&self) -> impl Iterator<Item = &Arc<Pool<T>>> {
        self.pools.iter().filter(|p| !p.pod().cpus.is_empty())
    }
}

impl<T: Runnable> fmt::Debug for PoolSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolSet")
            .field("scope", &self.pods.scope())
            .field("pools", &self.pools)
            .finish()
    }
}
