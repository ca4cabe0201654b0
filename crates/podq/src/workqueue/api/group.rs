//! [`Group`]: related work items of one workqueue, steered to the pod where their data is hot.
//!
//! Its part of cache-aware placement is the user's handle and the carrying out of a decision at
//! queue time: a group's queue call makes its execution's ticket (G1 of
//! `workqueue/README.md`) and, as the execution is counted, asks `policy::steer` for the pod
//! from the group's published home, its runnable count and the home pool's load, which
//! `pool/load.rs` samples (G2). The decisions are `policy::steer`'s; what a start records and
//! publishes is `task/steering.rs`'s; a work item's ticket slot is `item/group_slot.rs`.

use std::fmt;
use std::sync::{Arc, OnceLock};

use crate::here::Here;
use crate::policy::steer;
use crate::pool;

use crate::workqueue::api::owner_gate::OwnerGate;
use crate::workqueue::api::work::Work;
use crate::workqueue::api::workqueue::Workqueue;
use crate::workqueue::layout::Layout;
use crate::workqueue::task::steering::{GroupState, Ticket};
use crate::workqueue::task::Job;

/// A handle for related work on one workqueue (one connection, one key range, one tenant),
/// made by [`Workqueue::group`]: its items go to the pod where the group's items last ran, so
/// that the data they share is still in that pod's caches, unless that pod is loaded.
///
/// The rules (the times are those of the scheduler's cache-aware load balancing RFC of 2025):
///
/// * the group's *home* is the pod where its items last ran: a vote weighted by recency,
///   whose weight halves every **10 ms** (the half-life), forgotten after **50 ms** without
///   items (the expiry), and moving from one pod to another at most once per **100 ms** (the
///   hold);
/// * an item goes to the home pod's pool, unless the home pod's workers were busy more than
///   **half** the time over the last 8 ms or it already has as many of the group's items
///   queued or running as it has CPUs: then it goes where [`Workqueue::queue`] would send it,
///   and idle pods may still pull it;
/// * [`Workqueue::set_steer`] turns steering off and on at run time.
///
/// Steering chooses the pod, not the CPU: on a non-strict workqueue the OS picks which CPU runs
/// the pod's worker, and only a strict one
/// ([`WorkqueueBuilder::strict`](crate::WorkqueueBuilder::strict)) keeps the items on the
/// pod's CPUs (what each costs: `docs/design.md`, "Steering", "Aim at a pod").
///
/// Grouped items keep every guarantee of the workqueue: [`Group::queue`] and
/// [`Group::queue_work`] return what [`Workqueue::queue`] and [`Workqueue::queue_work`] return
/// in the same cases (drain, fork, already pending, being cancelled), and `flush`, `drain`,
/// `cancel_sync`, `max_active` and ordering treat them as any other item. On a workqueue built
/// with [`WorkqueueBuilder::steer(false)`](crate::WorkqueueBuilder::steer) a group's calls are
/// the plain ones.
///
/// A group is `Clone + Send + Sync + 'static`: it can live in a connection's state and move
/// to any thread. Clones share the group; a clone is one reference count. It does not keep
/// the workqueue up: once the workqueue is dropped (which waits for the group calls in
/// progress, G7 of `workqueue/README.md`), [`Group::queue`] and [`Group::queue_work`]
/// return `false` and queue nothing, and [`Group::home`] is `None`. A group call writes only
/// its CPU's counter of the workqueue's group gate (G6), nothing workqueue-wide or
/// process-wide.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// use podq::{AffinityScope, Workqueue};
///
/// let wq = Workqueue::builder("conns").scope(AffinityScope::Cpu).build()?;
/// let conn = wq.group();
/// let served = Arc::new(AtomicUsize::new(0));
/// for _ in 0..10 {
///     let served = Arc::clone(&served);
///     conn.queue(move || {
///         served.fetch_add(1, Ordering::Relaxed);
///     });
///     wq.flush();
/// }
/// assert_eq!(served.load(Ordering::Relaxed), 10);
/// // The pod where its items last ran (none once 50 ms passed without items).
/// println!("home: {:?}", conn.home());
/// let stats = wq.stats();
/// assert_eq!(stats.grouped_at_home + stats.grouped_elsewhere, 10);
/// # Ok::<(), podq::Error>(())
/// ```
#[derive(Clone)]
pub struct Group {
    /// The workqueue's gate, holding a copy of its handle until its drop (G6, G7).
    gate: Arc<OwnerGate<Workqueue>>,
    /// The group's preference and runnable count.
    state: Arc<GroupState>,
}

impl Workqueue {
    /// A new group of related work on this workqueue, with no home until one of its items
    /// runs (see [`Group`]).
    pub fn group(&self) -> Group {
        let gate = self.owned.get_or_init(|| {
            let copy = Workqueue {
                shared: Arc::clone(&self.shared),
                layouts: Arc::clone(&self.layouts),
                owned: OnceLock::new(),
                inert: true,
            };
            let stripes = std::thread::available_parallelism().map_or(1, usize::from);
            Arc::new(OwnerGate::new(copy, stripes))
        });
        Group {
            gate: Arc::clone(gate),
            state: Arc::new(GroupState::new(Arc::clone(&self.shared.steer))),
        }
    }
}

impl Group {
    /// Queues a one-shot closure to the group's home pod, or, when the group has no home or the
    /// home is loaded, where [`Workqueue::queue`] sends it.
    ///
    /// Returns `false` in the cases where [`Workqueue::queue`] does (a drain from outside the
    /// workqueue's items; a workqueue of a parent process), and once the workqueue is dropped:
    /// the closure is then dropped without running. On a full workqueue (`max_backlog`) it
    /// waits for room as [`Workqueue::queue`] does.
    pub fn queue(&self, f: impl FnOnce() + Send + 'static) -> bool {
        let here = Here::now();
        self.gate
            .with(here.index(), |wq| self.queue_in(wq, here, f))
            .unwrap_or(false)
    }

    /// [`Group::queue`] on its workqueue, inside the gate.
    fn queue_in(&self, wq: &Workqueue, here: Here, f: impl FnOnce() + Send + 'static) -> bool {
        if !wq.admit() {
            return false;
        }
        if !steers(wq) {
            wq.submit(Job::once(f), wq.pick_here(here), here.index());
            return true;
        }
        let runnable = self.state.runnable();
        let ticket = Ticket::new(&self.state);
        let job = Job::once(move || {
            ticket.started();
            f();
            // `ticket` goes with the closure (G5), also when `f` panics.
        });
        wq.submit(
            job,
            |layout| self.place(wq, layout, here, runnable),
            here.index(),
        );
        true
    }

    /// Queues `work` to the group's home pod, or, when the group has no home or the home is
    /// loaded, where [`Workqueue::queue_work`] sends it.
    ///
    /// Returns `true` when this call queued it, and `false` in every case where
    /// [`Workqueue::queue_work`] does: already pending (that execution runs once for both
    /// requests, wherever it was queued), being cancelled, refused during a drain or in a child
    /// process of `fork()`, and once the workqueue is dropped.
    pub fn queue_work(&self, work: &Work) -> bool {
        let here = Here::now();
        self.gate
            .with(here.index(), |wq| self.queue_work_in(wq, here, work))
            .unwrap_or(false)
    }

    /// [`Group::queue_work`] on its workqueue, inside the gate.
    fn queue_work_in(&self, wq: &Workqueue, here: Here, work: &Work) -> bool {
        if !steers(wq) {
            return wq.queue_work_to(work, wq.pick_here(here), here.index());
        }
        let runnable = self.state.runnable();
        wq.queue_work_with(
            work,
            |layout| self.place(wq, layout, here, runnable),
            here.index(),
            |item| item.group.put(Ticket::new(&self.state)),
        )
    }

    /// The pod (its id under the workqueue's scope) the group's items are steered to now:
    /// where they last ran. `None` before any of them ran, 50 ms (the expiry, see [`Group`])
    /// after its last item, on a workqueue that does not steer, and once the workqueue is
    /// dropped. An item may still go elsewhere while the home is loaded (see [`Group`]).
    pub fn home(&self) -> Option<usize> {
        let steering = self
            .gate
            .with(crate::here::cpu_or_thread(), steers)
            .unwrap_or(false);
        if !steering {
            return None;
        }
        self.state.snapshot().home_at(pool::clock())
    }

    /// (G2) The pod in `layout` for an item issued at `here` while the group had `runnable`
    /// items queued or running: `policy::steer`'s decision from the group's published home,
    /// its runnable items and the home pool's load (read without a lock), else the pod of
    /// `here`'s CPU, where an ungrouped item goes.
    fn place(&self, wq: &Workqueue, layout: &Layout, here: Here, runnable: usize) -> usize {
        let wq = &wq.shared;
        let plain = layout.pod_for(here.cpu(), &wq.rotation);
        let Some(pools) = wq.pools.get(layout.set) else {
            return plain;
        };
        let now = pool::clock();
        let group = self.state.snapshot();
        // A home learnt in an earlier layout (the pods were re-formed since) counts only
        // while it is a pod of this layout that serves some of the workqueue's CPUs.
        let serves = |h: usize| {
            h < pools.len()
                && pools
                    .pod(h)
                    .cpus
                    .iter()
                    .any(|cpu| layout.cpus.contains(cpu))
        };
        let group = steer::Snapshot {
            home: group.home.filter(|&h| h == plain || serves(h)),
            ..group
        };
        steer::steer(group, now, plain, runnable, |pod| pools.load(pod, now).pod).pod(plain)
    }
}

/// Whether the workqueue steers its groups' items.
fn steers(wq: &Workqueue) -> bool {
    wq.shared.steer.enabled()
}

impl fmt::Debug for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self
            .gate
            .with(crate::here::cpu_or_thread(), |wq| wq.name().to_owned());
        f.debug_struct("Group")
            .field("workqueue", &name)
            .field("home", &self.home())
            .field("runnable", &self.state.runnable())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::policy::steer;

    /// [`Group`](super::Group)'s docs state these values; a retune changes both.
    #[test]
    fn the_times_and_limit_stated_in_the_docs_are_the_policys() {
        assert_eq!(steer::HALF_LIFE, Duration::from_millis(10));
        assert_eq!(steer::EXPIRY, Duration::from_millis(50));
        assert_eq!(steer::HOME_HOLD, Duration::from_millis(100));
        assert_eq!(steer::LOAD_WINDOW, Duration::from_millis(8));
        assert_eq!(steer::BUSY_LIMIT.raw() * 2, steer::Busy::FULL.raw());
    }
}
