//! The layout of pods and pools and how it follows the machine. A workqueue's layout is its
//! scope, its CPUs within those the process may use, its pods, the placement of CPUs on pods
//! and the pools that serve them. A layout is re-formed, while other threads queue, when the
//! CPUs the process may use change (`follow.rs`) or when `Workqueue::set_scope`,
//! `set_shard_size` or `set_pull` is called (R1-R5 of `workqueue/README.md`).
//!
//! This group sits above `task/` (a layout's pools run tasks, and its pods are the parts that
//! tasks are counted in) and below `api/`; `task/` reaches the current layout only through
//! `task::shared::CurrentLayout`, which [`Layouts`] implements. Files: this one ([`Layout`],
//! [`Layouts`]: the current layout, every earlier one, re-forming), `form.rs` (forming one
//! layout, and the process's pool registry) and `follow.rs` (the `podq/limits` thread).
//!
//! Layouts are never freed while the workqueue lives: a queue call reads the current one with
//! one load and no write ([`Layouts::current`]), and may still be counting an execution in a
//! layout that was just replaced; the epoch check of `Flush::enter_with` makes it count again
//! in the new one. Re-forming to a shape the workqueue had before takes that earlier layout
//! again, so a workqueue has at most one layout per shape (scope, shard size, allowed CPUs,
//! pull) it was ever given.

pub(crate) mod follow;
mod form;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use crossbeam_utils::CachePadded;

use crate::cpuset::CpuSet;
use crate::error::{Error, Result};
use crate::limits::CpuLimits;
use crate::policy::Placement;
use crate::pool::PoolAttrs;
use crate::scope::AffinityScope;
use crate::sync::Mutex;
use crate::topology::Topology;
use crate::workqueue::item::flush::PodCounters;
use crate::workqueue::task::pod_ref::Counted;
use crate::workqueue::task::shared::{CurrentLayout, PodShared, WqShared};
use crate::workqueue::task::slots::Slots;

use form::form;

/// One shape of a workqueue: what a re-formation changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    /// How CPUs are grouped into pods.
    pub(crate) scope: AffinityScope,
    /// Cores per `cache_shard` pod.
    pub(crate) shard_size: usize,
    /// The CPUs the process may use that the layout was formed on.
    pub(crate) allowed: CpuSet,
    /// Whether its pools pull (never for a strict workqueue): part of the pools' attributes,
    /// so switching it forms other pools.
    pub(crate) pull: bool,
}

/// One layout of a workqueue (all `I:`, set when it is formed).
pub(crate) struct Layout {
    /// The scope, shard size and allowed CPUs it was formed for.
    pub(crate) shape: Shape,
    /// The workqueue's CPUs within the allowed ones.
    pub(crate) cpus: CpuSet,
    /// CPU and node to pod.
    pub(crate) placement: Placement,
    /// Its pool set: index into the workqueue's pool sets (`WqShared::pools`).
    pub(crate) set: usize,
    /// The workqueue's part of each pod (index = pod id).
    pub(crate) pods: Box<[Arc<CachePadded<PodShared>>]>,
}

impl Layout {
    /// The pod of `cpu` (`None`: the OS could not tell) when it is one of the layout's CPUs,
    /// else a pod of its CPUs in turn, advancing `rotation` (only then).
    #[inline]
    pub(crate) fn pod_for(&self, cpu: Option<usize>, rotation: &AtomicUsize) -> usize {
        // Relaxed: any value spreads the work.
        self.placement
            .pod_for(cpu, || rotation.fetch_add(1, Ordering::Relaxed))
    }
}

/// What a re-formation needs, under [`Layouts::reform`]'s lock.
pub(crate) struct Reform {
    /// The workqueue.
    pub(crate) wq: Weak<WqShared>,
    /// The machine, with every CPU a layout may be formed on.
    pub(crate) machine: Topology,
    /// How to read the machine again when a CPU it lacks is allowed (brought online after it
    /// was read); `None`: it is not read again (a topology given to the builder).
    pub(crate) rediscover: Option<fn() -> Result<Topology>>,
    /// The pools' attributes but scope, shard size and CPUs, which each layout sets.
    pub(crate) attrs: PoolAttrs,
    /// The CPUs asked for (`None`: every CPU the process may use).
    pub(crate) requested: Option<CpuSet>,
    /// Where the allowed CPUs come from; `None`: the workqueue does not follow them.
    pub(crate) limits: Option<Arc<dyn CpuLimits>>,
    /// Set by the workqueue's drop: nothing is re-formed any more.
    pub(crate) closed: bool,
}

/// Every layout of one workqueue, the current one, and what re-forms them.
pub(crate) struct Layouts {
    /// Every layout it has had, in the order they were formed.
    all: Slots<Layout>,
    /// A: the index of the current layout in `all`. Release when stored, after the layout is
    /// in `all`; read Acquire (R2).
    current: AtomicUsize,
    /// Serialises re-formations, with what they need.
    reform: Mutex<Reform>,
    /// A: re-formations so far (a new layout made current). Relaxed: a statistic.
    reformations: AtomicU64,
}

impl Layouts {
    /// Layouts with none yet; [`Layouts::install`] puts the first in before any queue call.
    pub(crate) fn new(reform: Reform) -> Layouts {
        Layouts {
            all: Slots::new(),
            current: AtomicUsize::new(0),
            reform: Mutex::new(reform),
            reformations: AtomicU64::new(0),
        }
    }

    /// The current layout. One Acquire load and a table look-up: no write.
    #[inline]
    pub(crate) fn current(&self) -> &Layout {
        // Acquire: pairs with the Release store of `current` (R2), after the layout was
        // put in `all`.
        let index = self.current.load(Ordering::Acquire);
        self.all
            .get(index)
            .expect("a workqueue's first layout is installed before it is used")
    }

    /// Every layout, oldest first.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Layout> {
        self.all.iter()
    }

    /// The counters of every pod of every layout.
    pub(crate) fn counters(&self) -> impl Iterator<Item = &PodCounters> {
        self.all().flat_map(|l| l.pods.iter().map(|p| &p.counters))
    }

    /// Re-formations so far.
    pub(crate) fn reformations(&self) -> u64 {
        self.reformations.load(Ordering::Relaxed)
    }

    /// What a re-formation needs, locked.
    pub(crate) fn reform_state(&self) -> crate::sync::MutexGuard<'_, Reform> {
        self.reform.lock()
    }

    /// Forms the first layout of `wq` on `topology` (the machine within the allowed CPUs)
    /// and makes it current.
    ///
    /// # Errors
    ///
    /// As [`form()`].
    pub(crate) fn install(
        &self,
        wq: &Arc<WqShared>,
        topology: &Topology,
        shape: Shape,
    ) -> Result<()> {
        let reform = self.reform.lock();
        let layout = form(wq, &reform, topology, shape)?;
        let index = self.all.push(layout);
        self.current.store(index, Ordering::Release);
        Ok(())
    }

    /// Re-forms the layout for `shape` when it differs from the current one (R2-R4):
    /// takes an earlier layout of that shape, or forms a new one, and makes it current.
    /// Returns whether the current layout changed.
    ///
    /// # Errors
    ///
    /// As [`form()`]; [`Error::NoUsableCpus`] when none of the machine's CPUs is allowed.
    pub(crate) fn reform(&self, reform: &Reform, shape: Shape) -> Result<bool> {
        if reform.closed || self.current().shape == shape {
            return Ok(false);
        }
        let Some(wq) = reform.wq.upgrade() else {
            return Ok(false);
        };
        let index =
            match self.all.iter().position(|l| l.shape == shape) {
                Some(index) => index,
                None => {
                    let topology = reform.machine.within(&shape.allowed).ok_or_else(|| {
                        Error::NoUsableCpus {
                            source_name: reform.machine.source().to_owned(),
                            reason: format!(
                                "none of its CPUs is in the allowed CPUs {}",
                                shape.allowed
                            ),
                        }
                    })?;
                    let layout = form(&wq, reform, &topology, shape)?;
                    self.all.push(layout)
                }
            };
        let left = self.current();
        // R2: the layout is in `all` before its index is published; then the epoch
        // moves, so that a queue call that counted in the old layout counts again (R3).
        self.current.store(index, Ordering::Release);
        wq.flush.advance_epoch();
        move_waiting(&wq, left, self.current());
        self.reformations.fetch_add(1, Ordering::Relaxed);
        #[cfg(feature = "tracing")]
        tracing::debug!(target: "podq::worker", workqueue = %wq.name, layout = index, "pods re-formed");
        Ok(true)
    }
}

/// R4: the workqueue's executions waiting in the pools of the layout it left (`from`)
/// go to the pools of `to`, each to the pod that serves the first CPU of the pod it waited in
/// (or a pod of the workqueue's CPUs, round-robin). They stay counted where they were.
fn move_waiting(wq: &WqShared, from: &Layout, to: &Layout) {
    let (Some(old), Some(new)) = (wq.pools.get(from.set), wq.pools.get(to.set)) else {
        return;
    };
    let moved = old.take_all_if(|task| task.is_of(wq.id));
    let at = crate::here::cpu_or_thread();
    for (pod, task) in moved {
        let cpu = old.pod(pod).cpus.first();
        new.push(to.pod_for(cpu, &wq.rotation), task, at);
    }
}

impl CurrentLayout for Layouts {
    /// Counts an execution armed for `pod` in the current layout: in `pod` when it is current,
    /// else in the pod of the current layout that serves `pod`'s first CPU (or a pod of the
    /// workqueue's CPUs, round-robin, when none does), so that a delayed item armed before a
    /// re-formation runs on the pods formed after it (R5).
    fn enter_current(&self, pod: &Arc<CachePadded<PodShared>>, at: usize) -> Counted {
        let wq = &pod.wq;
        let cpu = wq
            .pools
            .get(pod.set)
            .and_then(|set| set.pod(pod.index).cpus.first());
        Counted::enter_with(&wq.flush, at, || {
            let layout = self.current();
            if layout.set == pod.set {
                return pod;
            }
            &layout.pods[layout.pod_for(cpu, &wq.rotation)]
        })
    }
}
