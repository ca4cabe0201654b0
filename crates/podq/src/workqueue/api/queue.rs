//! Queueing: the queue calls of [`Workqueue`], from the calling thread's pod, a CPU's or a
//! node's, for one-shot closures and for work items (Q1-Q5 of `workqueue/README.md`).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::here::{self, Here};
use crate::workqueue::api::work::Work;
use crate::workqueue::api::workqueue::Workqueue;
use crate::workqueue::item::state::Claim;
use crate::workqueue::layout::Layout;
use crate::workqueue::task::dispatch;
use crate::workqueue::task::work_item::{self, WorkInner};
use crate::workqueue::task::Job;

impl Workqueue {
    /// Queues a one-shot closure to the pool of the calling thread's pod.
    ///
    /// The closure runs on one of that pool's worker threads, or, while the OS refuses the
    /// pool a worker (its thread limit or memory is exhausted), on the rescuer thread that the
    /// workqueue's build started (see [`crate::threads`]). It never runs on the calling thread,
    /// so `queue` may be called while holding a lock that the closure takes.
    ///
    /// A closure that captures up to six words (48 bytes, aligned to at most a word) is kept
    /// inside the queued task, so queueing it allocates nothing; a bigger one is boxed.
    ///
    /// Returns `false` only while [`Workqueue::drain`] runs and the caller is not one of this
    /// workqueue's own items, or in a child process of `fork()` when the workqueue was built
    /// by its parent (see the crate's "Fork" section): the closure is then dropped without
    /// running.
    ///
    /// On a workqueue with a [`max_backlog`](crate::WorkqueueBuilder::max_backlog) that is full, it
    /// first waits for room (never from one of this workqueue's own items); the calls that
    /// never wait are [`Workqueue::try_queue`] and [`Workqueue::try_queue_work`].
    pub fn queue(&self, f: impl FnOnce() + Send + 'static) -> bool {
        self.queue_job(Job::once(f))
    }

    /// [`Workqueue::queue`] of a task's job (a closure, or a spawned closure).
    #[inline]
    pub(super) fn queue_job(&self, job: Job) -> bool {
        if !self.admit() {
            return false;
        }
        let here = Here::now();
        self.submit(job, self.pick_here(here), here.index());
        true
    }

    /// The pod of `here`'s CPU in a layout (a CPU outside the workqueue's CPUs replaced
    /// round-robin).
    #[inline]
    pub(super) fn pick_here(&self, here: Here) -> impl Fn(&Layout) -> usize + '_ {
        move |layout| layout.pod_for(here.cpu(), &self.shared.rotation)
    }

    /// Queues a one-shot closure to the pool of `cpu`'s pod.
    ///
    /// Returns `Ok(false)` when refused during a drain, as [`Workqueue::queue`].
    ///
    /// # Errors
    ///
    /// * [`Error::UnknownCpu`] when `cpu` is not one of the workqueue's CPUs;
    /// * [`Error::CpuNotAllowed`] when it is, but the process may not use it now (see
    ///   [`crate::limits`]);
    /// * [`Error::ParentProcess`] in a child process of `fork()` when the workqueue was built
    ///   by its parent.
    pub fn queue_on(&self, cpu: usize, f: impl FnOnce() + Send + 'static) -> Result<bool> {
        self.check_cpu(cpu)?;
        if !self.admit() {
            return self.refusal();
        }
        self.submit(
            Job::once(f),
            |layout| layout.pod_for(Some(cpu), &self.shared.rotation),
            here::cpu_or_thread(),
        );
        Ok(true)
    }

    /// Queues a one-shot closure to a pool of `node`: the pods of the node's CPUs take turns.
    ///
    /// Returns `Ok(false)` when refused during a drain, as [`Workqueue::queue`].
    ///
    /// # Errors
    ///
    /// * [`Error::UnknownNode`] when `node` has none of the workqueue's CPUs;
    /// * [`Error::ParentProcess`] in a child process of `fork()` when the workqueue was built
    ///   by its parent.
    pub fn queue_node(&self, node: usize, f: impl FnOnce() + Send + 'static) -> Result<bool> {
        let rotation = self.shared.rotation.fetch_add(1, Ordering::Relaxed);
        let placement = &self.layouts.current().placement;
        if placement.pod_for_node(node, rotation).is_none() {
            return Err(Error::UnknownNode {
                node,
                nodes: list(placement.nodes()),
            });
        }
        if !self.admit() {
            return self.refusal();
        }
        // The node's pod in the layout current when the execution is counted; should a
        // re-formation have taken the node's CPUs meanwhile, a pod of the workqueue's CPUs.
        self.submit(
            Job::once(f),
            |layout| {
                layout
                    .placement
                    .pod_for_node(node, rotation)
                    .unwrap_or_else(|| layout.pod_for(None, &self.shared.rotation))
            },
            here::cpu_or_thread(),
        );
        Ok(true)
    }

    /// Queues `work` to the pool of the calling thread's pod.
    ///
    /// Returns `true` when this call queued it. `false` when it did not:
    ///
    /// * `work` was already pending (queued and not started, waiting for its delay, or for a
    ///   `max_active` slot): that pending execution runs once for both requests, and it sees
    ///   everything stored before this call;
    /// * a [`Work::cancel_sync`] of it is in progress: nothing is queued;
    /// * a [`Workqueue::drain`] runs and the caller is not one of this workqueue's own items:
    ///   nothing is queued;
    /// * in a child process of `fork()`, the workqueue was built by its parent, or the item was
    ///   pending or running there when the parent forked: nothing is queued (see the crate's
    ///   "Fork" section).
    pub fn queue_work(&self, work: &Work) -> bool {
        let here = Here::now();
        self.queue_work_to(work, self.pick_here(here), here.index())
    }

    /// Queues `work` to the pool of `cpu`'s pod.
    ///
    /// Returns `Ok(true)` when this call queued it, and `Ok(false)` in the cases where
    /// [`Workqueue::queue_work`] returns `false`: already pending (it runs once for both
    /// requests), being cancelled, or refused while a drain runs.
    ///
    /// # Errors
    ///
    /// * [`Error::UnknownCpu`] when `cpu` is not one of the workqueue's CPUs;
    /// * [`Error::CpuNotAllowed`] when it is, but the process may not use it now (see
    ///   [`crate::limits`]);
    /// * [`Error::ParentProcess`] in a child process of `fork()` when the workqueue was built
    ///   by its parent.
    pub fn queue_work_on(&self, cpu: usize, work: &Work) -> Result<bool> {
        self.check_cpu(cpu)?;
        if self.foreign() {
            return self.refusal();
        }
        Ok(self.queue_work_to(
            work,
            |layout| layout.pod_for(Some(cpu), &self.shared.rotation),
            here::cpu_or_thread(),
        ))
    }

    /// Queues `work` to the pod `pick` chooses from `at` (see [`Workqueue::submit`]),
    /// claiming it first.
    #[inline]
    pub(super) fn queue_work_to(
        &self,
        work: &Work,
        pick: impl Fn(&Layout) -> usize,
        at: usize,
    ) -> bool {
        self.queue_work_with(work, pick, at, |_| {})
    }

    /// As [`Workqueue::queue_work_to`], calling `claimed` once the claim is this call's, before
    /// the execution is counted and pushed (a group puts its ticket there, G4).
    pub(super) fn queue_work_with(
        &self,
        work: &Work,
        pick: impl Fn(&Layout) -> usize,
        at: usize,
        claimed: impl FnOnce(&WorkInner),
    ) -> bool {
        // With a `max_backlog`, room first (B1): a claim is never held while waiting.
        if !self.admit() {
            return false;
        }
        let item = &work.inner;
        match item.state.try_claim() {
            Claim::Refused => {
                self.give_back_room();
                false
            }
            Claim::Claimed { running } if work_item::stranded_claim(item, running) => {
                self.give_back_room();
                false
            }
            Claim::Claimed { .. } => {
                claimed(item);
                self.submit_claimed(item, pick, at);
                true
            }
        }
    }

    /// Counts and sends on the execution of an item whose claim this call owns, to the pod
    /// `pick` chooses, from `at`.
    #[inline]
    pub(super) fn submit_claimed(
        &self,
        item: &Arc<WorkInner>,
        pick: impl Fn(&Layout) -> usize,
        at: usize,
    ) {
        // Where it goes is recorded before it is pushed, for cancel to find it: the pick that
        // counts it is the last one made.
        let pick = |layout: &Layout| {
            let pod = pick(layout);
            item.record_home(&self.shared, pod);
            pod
        };
        self.submit(Job::Work(Arc::clone(item)), pick, at);
    }

    /// Counts a new execution in the pod that `pick` chooses in the current layout, and sends
    /// it on (Q2 and R3). `at` is the calling thread's CPU (or thread index), read once
    /// per queue call ([`Here::index`]): the stripe it is counted in and the lane it is
    /// pushed to.
    #[inline]
    pub(super) fn submit(&self, job: Job, mut pick: impl FnMut(&Layout) -> usize, at: usize) {
        let layouts = &self.layouts;
        let pod = || {
            let layout = layouts.current();
            &layout.pods[pick(layout)]
        };
        dispatch::submit(&self.shared, pod, job, at);
    }
}

/// `0, 1, 3` for error messages.
fn list(items: impl Iterator<Item = usize>) -> String {
    items.map(|n| n.to_string()).collect::<Vec<_>>().join(", ")
}
