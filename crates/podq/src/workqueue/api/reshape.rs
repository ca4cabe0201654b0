//! Re-forming a workqueue's pods at run time from its handle: [`Workqueue::set_scope`],
//! [`Workqueue::set_shard_size`] and [`Workqueue::set_pull`] (R2-R5 of
//! `workqueue/README.md`); [`Workqueue::set_steer`], which needs no re-formation; and the
//! check of
//! a CPU asked for by `queue_on` against the CPUs the process may use now.

use crate::error::{Error, Result};
use crate::scope::AffinityScope;

use crate::workqueue::api::workqueue::Workqueue;
use crate::workqueue::layout::Shape;

impl Workqueue {
    /// Sets the scope of its pods while other threads queue, as the kernel's
    /// `affinity_scope` attribute does: the pods are re-formed (R2-R5 of
    /// `src/workqueue/README.md`), new items go to the new pods' pools and so do items waiting
    /// in the earlier pools, nothing is lost, and ordering and `max_active` hold across the
    /// change. Setting the scope it has changes nothing. [`Workqueue::scope`] and [`Workqueue::stats`] show the change.
    ///
    /// ```
    /// use podq::{AffinityScope, Workqueue};
    ///
    /// let wq = Workqueue::builder("tunable").build()?;
    /// wq.queue(|| {});
    /// wq.set_scope(AffinityScope::Cpu)?;
    /// assert_eq!(wq.scope(), AffinityScope::Cpu);
    /// wq.queue(|| {});
    /// wq.flush();
    /// assert_eq!(wq.stats().completed, 2);
    /// # Ok::<(), podq::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::ParentProcess`] in a child process of `fork()` when the workqueue was built by
    /// its parent; the pool registry's error when the new pods' pools cannot be formed.
    pub fn set_scope(&self, scope: AffinityScope) -> Result<()> {
        self.reshape(|shape| shape.scope = scope)
    }

    /// Sets the cores per `cache_shard` pod while other threads queue (at least 1), with the
    /// guarantees of [`Workqueue::set_scope`]. Under another scope it is kept for when the
    /// scope becomes `cache_shard`.
    ///
    /// # Errors
    ///
    /// [`Error::ZeroShardSize`] for 0; otherwise as [`Workqueue::set_scope`].
    pub fn set_shard_size(&self, cores: usize) -> Result<()> {
        if cores == 0 {
            return Err(Error::ZeroShardSize);
        }
        self.reshape(|shape| shape.shard_size = cores)
    }

    /// The cores per `cache_shard` pod.
    pub fn shard_size(&self) -> usize {
        self.layouts.current().shape.shard_size
    }

    /// Turns pull on or off while other threads queue, as the kernel's `SHARED_RUNQ`
    /// scheduler feature can be switched at run time: pull is one of the pools' attributes
    /// (see [`WorkqueueBuilder::pull`](crate::WorkqueueBuilder::pull)), so the pods are
    /// re-formed on pools that pull or do not (R2-R5 of `src/workqueue/README.md`), with the
    /// guarantees of [`Workqueue::set_scope`]: nothing is lost, and ordering and `max_active`
    /// hold. A strict workqueue never pulls: `true` changes nothing there. Setting what it has
    /// changes nothing.
    ///
    /// ```
    /// use podq::Workqueue;
    ///
    /// let wq = Workqueue::builder("pulls").build()?;
    /// wq.queue(|| {});
    /// wq.set_pull(false)?;
    /// assert!(!wq.pulls());
    /// wq.queue(|| {});
    /// wq.flush();
    /// assert_eq!(wq.stats().completed, 2);
    /// assert!(wq.stats().pools.iter().all(|p| p.pull.is_none()));
    /// # Ok::<(), podq::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Workqueue::set_scope`].
    pub fn set_pull(&self, pull: bool) -> Result<()> {
        let strict = self.layouts.reform_state().attrs.strict;
        self.reshape(|shape| shape.pull = pull && !strict)
    }

    /// Whether its pools' idle workers pull from sibling pools now.
    pub fn pulls(&self) -> bool {
        self.layouts.current().shape.pull
    }

    /// Turns steering of its [`Group`](crate::Group)s' items on or off while other threads
    /// queue, as the scheduler's cache-aware load balancing (`SCHED_CACHE`) can be switched at
    /// run time. Steering is no pool attribute, so nothing is re-formed: a group's queue call
    /// made after this returns is steered, or queued as [`Workqueue::queue`] queues, by the new
    /// setting; one made at the same time by either. Items already queued stay where they are
    /// and every guarantee holds. Off, [`Group::home`](crate::Group::home) is `None`; on again,
    /// groups start from the homes they had, which expire as usual.
    ///
    /// # Errors
    ///
    /// [`Error::ParentProcess`] in a child process of `fork()` when the workqueue was built by
    /// its parent.
    pub fn set_steer(&self, steer: bool) -> Result<()> {
        if self.foreign() {
            return Err(Error::ParentProcess {
                workqueue: self.shared.name.clone(),
            });
        }
        self.shared.steer.set_enabled(steer);
        Ok(())
    }

    /// Whether its groups' items are steered now.
    pub fn steers(&self) -> bool {
        self.shared.steer.enabled()
    }

    /// Re-forms the layout with `change` made to its shape (R2-R4).
    fn reshape(&self, change: impl FnOnce(&mut Shape)) -> Result<()> {
        if self.foreign() {
            return Err(Error::ParentProcess {
                workqueue: self.shared.name.clone(),
            });
        }
        let reform = self.layouts.reform_state();
        let mut shape = self.layouts.current().shape.clone();
        change(&mut shape);
        self.layouts.reform(&reform, shape).map(drop)
    }

    /// Whether `cpu` is one of the workqueue's CPUs that the process may use now.
    ///
    /// # Errors
    ///
    /// [`Error::CpuNotAllowed`] for a CPU of the machine the workqueue may not use now,
    /// [`Error::UnknownCpu`] for any other.
    pub(crate) fn check_cpu(&self, cpu: usize) -> Result<()> {
        let layout = self.layouts.current();
        if layout.placement.pod_of(cpu).is_some() {
            return Ok(());
        }
        // A parent's workqueue, in a child of `fork()`: its reform lock may be held by a
        // thread the child lacks, so it is not taken.
        if self.foreign() {
            return Err(Error::UnknownCpu {
                cpu,
                usable: layout.cpus.to_string(),
            });
        }
        let reform = self.layouts.reform_state();
        let known = reform.machine.cpu(cpu).is_some()
            && reform
                .requested
                .as_ref()
                .is_none_or(|asked| asked.contains(cpu));
        if known && reform.limits.is_some() {
            return Err(Error::CpuNotAllowed {
                cpu,
                allowed: layout.cpus.to_string(),
            });
        }
        Err(Error::UnknownCpu {
            cpu,
            usable: layout.cpus.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::cpuset::CpuSet;
    use crate::error::Result;
    use crate::scope::AffinityScope;
    use crate::topology::Topology;
    use crate::workqueue::api::workqueue::Workqueue;
    use crate::workqueue::layout::follow::follow_now;

    /// The machine after two CPUs were brought online.
    fn four_cpus() -> Result<Topology> {
        Topology::from_machine("sockets=1,nodes=1,caches=1,cores=4,smt=1")
    }

    #[test]
    fn a_cpu_brought_online_is_used_once_the_machine_is_read_again() {
        let two = Topology::from_machine("sockets=1,nodes=1,caches=1,cores=2,smt=1").unwrap();
        let wq = Workqueue::builder("hot-add")
            .topology(two)
            .scope(AffinityScope::Cpu)
            .idle_timeout(Duration::from_secs(921))
            .build()
            .expect("workqueue");
        let all: CpuSet = (0..4).collect();
        // Not read again: the CPUs the machine lacks are passed over.
        follow_now(&wq.layouts, &all);
        assert_eq!(wq.cpus(), &(0..2).collect::<CpuSet>());
        assert_eq!(wq.stats().reformations, 0);
        wq.layouts.reform_state().rediscover = Some(four_cpus);
        follow_now(&wq.layouts, &all);
        assert_eq!(wq.cpus(), &all);
        assert_eq!((wq.pools(), wq.stats().reformations), (4, 1));
        let (tx, rx) = std::sync::mpsc::channel();
        wq.queue_on(3, move || tx.send(()).unwrap())
            .expect("a new CPU");
        rx.recv_timeout(crate::test_support::PATIENCE)
            .expect("the item ran");
    }
}
