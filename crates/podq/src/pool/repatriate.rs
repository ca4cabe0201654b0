//! A non-strict worker keeps to its pod's CPUs while it runs a group's items sent to its pod
//! from outside (step W14 of `pool/README.md`): the kernel repatriates the workers of its
//! non-strict pools, and a steered item is one whose data waits in the pod's caches.
//!
//! A non-strict worker starts on its pod's CPUs and is then allowed all of its workqueue's
//! CPUs, so that the OS may move it where a CPU is free. Left at that, the OS soon places it
//! anywhere: sampled every 50 ms during `podq bench --workload locality --scopes cpu` on 2 CPUs,
//! the running workers of the two one-CPU pools were on their own pod's CPU 108 times and on
//! the other 105 times. An item steered to its group's home pod then ran wherever that pod's
//! worker happened to be, and found its data in the other CPU's caches. An item steered from
//! outside the pod is the worst case: the OS wakes a parked worker near the thread that woke
//! it, which is the issuer, outside the pod.
//!
//! So when a group's item starts at its home pod (`workqueue/steering.rs`, S3), and it was
//! queued from a CPU outside that pod, the worker narrows its affinity to the pod's allowed
//! CPUs, which moves it there at once if the OS had put it elsewhere (counted in
//! `workers_repatriated`), and keeps it while it runs such items back to back. It narrows
//! itself on its pod's CPU too: left wide there, it still ran steered items off their group's
//! previous CPU about a third of the time at 40 % busy on 2 CPUs (the sixteenth pass of the
//! history). After the first task that was not steered there from outside, and as soon as its
//! queue runs empty, it is allowed the workqueue's allowed CPUs again: it never spins or parks
//! narrowed. A parked worker then wakes where the OS places it: on the CPU it last ran on, its
//! pod's, when that CPU is free, and elsewhere when it is not, which is the placement the
//! kernel's wake-up hint gives its non-strict workers. It narrows itself at most once per
//! [`REPATRIATE_EVERY`], and only while its affinity is the wide one podq gave it: a worker
//! kept apart from its producer (W13), or narrowed by someone else, stays as it is, and a mask
//! that someone else set meanwhile is never widened.
//!
//! Only those items, and only while they run, because a worker kept on a CPU that another
//! thread keeps busy waits for it. Moved back before every task, the worker of a one-CPU pod
//! whose one producer is pinned to that CPU and waits for each item shared the CPU with it
//! while the other CPU idled: one producer's closed loop with the `cpu` scope fell from
//! 0.65-0.88M to 0.12M items/s (`docs/benchmarks-history.md`, the thirteenth pass). An item
//! queued from inside its pod may have such an issuer on the pod's CPU; an ungrouped item has
//! no data that says where it should run. Kept narrowed while it spun and parked, the worker
//! shared the pod's CPU with the issuers pinned there, and was woken onto it behind them:
//! `tests/steer.rs`'s lightly loaded group, issued from two pinned threads in turn, then
//! started items up to a timer tick late and failed in 3 of 8 runs of the file (the sixteenth
//! pass of the history). A pod's CPU that a thread outside podq keeps busy makes the kept
//! worker's items run slower, which raises the pod's busy fraction past
//! `policy::steer::BUSY_LIMIT`: steering then sends the group's items where ungrouped ones go,
//! and the first of them widens the worker again.

use std::cell::RefCell;
use std::time::Instant;

use super::{Runnable, Shared};
use crate::cpuset::CpuSet;
use crate::sync::atomic::Ordering;
use crate::sync::Arc;

/// The shortest time between two narrowings of one worker to its pod.
///
/// A narrowing is a `sched_setaffinity` call, and a migration when the worker runs outside its
/// pod; a move back and widening, two such calls and a migration, took 35-36 us on the 2-vCPU
/// Zen 5 test VM (a C loop of 2,000 moves between its two CPUs, twice; a migration there sends
/// an interrupt to the other vCPU). Where items steered from outside and other items alternate,
/// one narrowing per millisecond costs that worker at most about 3.5 % of its time.
pub(crate) const REPATRIATE_EVERY: std::time::Duration = std::time::Duration::from_millis(1);

thread_local! {
    /// What the calling worker keeps to keep to its pod; `None` on threads that are not podq
    /// workers, and on workers that never leave their pod.
    static HOMING: RefCell<Option<Repatriate>> = const { RefCell::new(None) };
}

/// The part of a pool that W14 reads, without the pool's task type.
trait PodHome: Send + Sync {
    /// The pod's CPUs (all of them, allowed or not).
    fn pod_cpus(&self) -> &CpuSet;
    /// The pod's allowed CPUs and the workqueue's allowed CPUs now.
    fn home_cpus(&self) -> (CpuSet, CpuSet);
    /// Counts one move back onto the pod's CPUs.
    fn count_move(&self);
}

impl<T: Runnable> PodHome for Shared<T> {
    fn pod_cpus(&self) -> &CpuSet {
        &self.pod.cpus
    }

    fn home_cpus(&self) -> (CpuSet, CpuSet) {
        super::worker::home_cpus(self)
    }

    fn count_move(&self) {
        self.repatriated.fetch_add(1, Ordering::Relaxed);
    }
}

/// What one worker thread keeps to keep to its pod.
struct Repatriate {
    /// The worker's pool.
    pool: Arc<dyn PodHome>,
    /// When it last narrowed itself to its pod.
    last: Option<Instant>,
    /// The pod's CPUs it narrowed itself to, while it keeps to its pod.
    narrowed: Option<CpuSet>,
    /// Whether the task running now was steered to the pod from outside.
    kept: bool,
    /// Whether the worker was woken from parking for the task running now: the OS placed it
    /// then, and a move would cost the task's start.
    woken: bool,
}

/// Called by a worker of `shared` as it starts: a worker that may leave its pod (a non-strict
/// workqueue whose CPUs are more than the pod's) keeps what W14 needs.
pub(super) fn enter<T: Runnable>(shared: &Arc<Shared<T>>) {
    if shared.strict || shared.pod.cpus == shared.cpus {
        return;
    }
    let pool: Arc<dyn PodHome> = shared.clone();
    HOMING.with(|h| {
        *h.borrow_mut() = Some(Repatriate {
            pool,
            last: None,
            narrowed: None,
            kept: false,
            woken: false,
        });
    });
}

/// Called by a worker as it ends.
pub(super) fn leave() {
    HOMING.with(|h| h.borrow_mut().take());
}

/// (W14) The task running on the calling thread is a group's item at its home pod, the pod of
/// this worker, queued from CPU `from` (`None`: not known). When it came from outside the pod,
/// the worker keeps to its pod's CPUs (see the module). Anywhere else (not a worker, a strict
/// one, one whose pod is all of its workqueue's CPUs) nothing happens.
pub(crate) fn steered_here(from: Option<usize>) {
    with(|r| r.steered_here(from));
}

/// (W14) The calling worker was woken from parking for the task it starts next.
pub(super) fn woken() {
    with(|r| r.woken = true);
}

/// (W14) After each task: a worker that keeps to its pod and ran a task that was not steered
/// there from outside is allowed its workqueue's CPUs again.
pub(super) fn after_task() {
    with(Repatriate::after_task);
}

/// (W14) The calling worker found its queue empty (it spins, pulls or parks next): a worker
/// that keeps to its pod is allowed its workqueue's CPUs again, so that it never waits
/// narrowed, and a wake-up may place it on any free CPU (see the module).
pub(super) fn idle() {
    with(Repatriate::widen);
}

/// Runs `f` on the calling worker's state, if it has one.
fn with(f: impl FnOnce(&mut Repatriate)) {
    HOMING.with(|h| {
        let Ok(mut homing) = h.try_borrow_mut() else {
            return;
        };
        if let Some(homing) = homing.as_mut() {
            f(homing);
        }
    });
}

impl Repatriate {
    /// [`steered_here`] on this worker.
    fn steered_here(&mut self, from: Option<usize>) {
        match from {
            Some(cpu) if !self.pool.pod_cpus().contains(cpu) => {}
            _ => return,
        }
        self.kept = true;
        // Just woken: the OS chose the CPU as it woke the worker (its last one when that was
        // free), and a move now would cost this item's start as much as a cold walk saves.
        if self.narrowed.is_some() || self.woken {
            return;
        }
        let now = Instant::now();
        if self
            .last
            .is_some_and(|last| now.duration_since(last) < REPATRIATE_EVERY)
        {
            return;
        }
        self.last = Some(now);
        let outside =
            crate::sys::current_cpu().is_some_and(|cpu| !self.pool.pod_cpus().contains(cpu));
        let (pod, wide) = self.pool.home_cpus();
        if narrow(&pod, &wide) {
            if outside {
                self.pool.count_move();
            }
            self.narrowed = Some(pod);
        }
    }

    /// [`after_task`] on this worker.
    fn after_task(&mut self) {
        self.woken = false;
        if std::mem::take(&mut self.kept) {
            return;
        }
        self.widen();
    }

    /// Allows the worker its workqueue's CPUs again, if it keeps to its pod now.
    fn widen(&mut self) {
        if let Some(pod) = self.narrowed.take() {
            // Only the mask it set itself: someone else's narrower one stays. The workqueue's
            // CPUs allowed now: the process's may have changed since it narrowed itself.
            let (_, wide) = self.pool.home_cpus();
            if !wide.is_empty() && crate::affinity::allowed_cpus().ok().as_ref() == Some(&pod) {
                let _ = crate::affinity::pin_current_thread(&wide);
            }
        }
    }
}

/// Narrows the calling thread to `pod` (moving it there when it runs elsewhere), when its
/// affinity is `wide` now (podq never changes a mask that someone else narrowed) and `pod` is
/// a non-empty part of it. Returns whether it did.
fn narrow(pod: &CpuSet, wide: &CpuSet) -> bool {
    if pod.is_empty() || pod == wide {
        return false;
    }
    if crate::affinity::allowed_cpus().ok().as_ref() != Some(wide) {
        return false;
    }
    crate::affinity::pin_current_thread(pod).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::tests::{affinity, on_own_thread_with_two_cpus};

    #[test]
    fn a_narrowing_keeps_the_thread_on_its_pod() {
        on_own_thread_with_two_cpus(|| {
            let wide = affinity();
            let pod: CpuSet = wide.iter().take(1).collect();
            assert!(narrow(&pod, &wide));
            assert_eq!(affinity(), pod);
            let cpu = crate::sys::current_cpu().expect("the CPU");
            assert!(pod.contains(cpu), "on CPU {cpu}");
        });
    }

    #[test]
    fn a_mask_someone_else_narrowed_is_left_alone() {
        on_own_thread_with_two_cpus(|| {
            let wide = affinity();
            let ids: Vec<usize> = wide.iter().collect();
            let (pod, narrowed): (CpuSet, CpuSet) = (
                [ids[0]].into_iter().collect(),
                [ids[1]].into_iter().collect(),
            );
            crate::affinity::pin_current_thread(&narrowed).expect("pin");
            assert!(!narrow(&pod, &wide));
            assert_eq!(affinity(), narrowed);
        });
    }

    #[test]
    fn off_a_worker_a_steered_item_moves_nothing() {
        on_own_thread_with_two_cpus(|| {
            let before = affinity();
            steered_here(Some(usize::MAX));
            steered_here(None);
            assert_eq!(affinity(), before);
        });
    }
}
