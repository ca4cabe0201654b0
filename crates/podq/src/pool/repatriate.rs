//! A non-strict worker that the OS moved out of its pod goes back before its next task (step
//! W14 of `pool/README.md`), as the kernel repatriates the workers of its non-strict pools.
//!
//! A non-strict worker starts on its pod's CPUs and is then allowed all of its workqueue's
//! CPUs, so that the OS may move it where a CPU is free. Left at that, the OS soon places it
//! anywhere: sampled every 50 ms during `podq bench --workload locality --scopes cpu` on 2 CPUs,
//! the running workers of the two one-CPU pools were on their own pod's CPU 108 times and on
//! the other 105 times. An item queued to a pod, or steered to its group's home pod, then ran
//! wherever that pod's worker happened to be, and found its data in the other CPU's caches.
//!
//! So before each task a non-strict worker reads the CPU it runs on. Outside its pod, it pins
//! itself to the pod's allowed CPUs, which moves it there at once, and widens its affinity
//! again to the workqueue's allowed CPUs, so that the OS may still move it. It does so at most
//! once per [`REPATRIATE_EVERY`], and only while its affinity is the wide one podq gave it:
//! a worker kept apart from its producer (W13), or narrowed by someone else, stays where it is.

use std::time::{Duration, Instant};

use super::Shared;
use crate::cpuset::CpuSet;
use crate::sync::atomic::Ordering;

/// The shortest time between two moves back of one worker.
///
/// A move back is two `sched_setaffinity` calls and a migration: 35-36 us on the 2-vCPU Zen 5
/// test VM (a C loop of 2,000 moves between its two CPUs, twice; a migration there sends an
/// interrupt to the other vCPU). Where the OS keeps moving a worker out (its pod's CPUs busy
/// with other threads), one move per millisecond costs that worker at most about 3.5 % of its
/// time there.
pub(crate) const REPATRIATE_EVERY: Duration = Duration::from_millis(1);

/// What one worker thread keeps to move back into its pod.
#[derive(Debug)]
pub(super) struct Repatriate {
    /// Whether the worker may leave its pod at all: a non-strict workqueue whose CPUs are more
    /// than the pod's.
    applies: bool,
    /// When it last moved back.
    last: Option<Instant>,
}

impl Repatriate {
    /// The state of a new worker of `shared`'s pool.
    pub(super) fn new<T>(shared: &Shared<T>) -> Self {
        Self {
            applies: !shared.strict && shared.pod.cpus != shared.cpus,
            last: None,
        }
    }

    /// Before a task: moves the calling worker back into its pod when the OS put it outside
    /// (W14).
    pub(super) fn before_task<T>(&mut self, shared: &Shared<T>) {
        if !self.applies {
            return;
        }
        match crate::sys::current_cpu() {
            Some(cpu) if !shared.pod.cpus.contains(cpu) => {}
            _ => return,
        }
        let now = Instant::now();
        if self
            .last
            .is_some_and(|last| now.duration_since(last) < REPATRIATE_EVERY)
        {
            return;
        }
        self.last = Some(now);
        let (pod, wide) = super::worker::home_cpus(shared);
        if move_back(&pod, &wide) {
            shared.repatriated.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Moves the calling thread onto `pod` and then allows it `wide` again, when its affinity is
/// `wide` now (podq never widens a mask that someone else narrowed) and `pod` is a non-empty
/// part of it. Returns whether it moved.
fn move_back(pod: &CpuSet, wide: &CpuSet) -> bool {
    if pod.is_empty() || pod == wide {
        return false;
    }
    if crate::affinity::allowed_cpus().ok().as_ref() != Some(wide) {
        return false;
    }
    if crate::affinity::pin_current_thread(pod).is_err() {
        return false;
    }
    // A failure leaves it on its pod's CPUs, all of them allowed: as a strict worker.
    let _ = crate::affinity::pin_current_thread(wide);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::tests::{affinity, on_own_thread_with_two_cpus};

    #[test]
    fn a_move_back_ends_with_the_wide_affinity() {
        on_own_thread_with_two_cpus(|| {
            let wide = affinity();
            let pod: CpuSet = wide.iter().take(1).collect();
            assert!(move_back(&pod, &wide));
            assert_eq!(affinity(), wide);
        });
    }

    #[test]
    fn a_narrowed_worker_is_not_moved_back() {
        on_own_thread_with_two_cpus(|| {
            let wide = affinity();
            let ids: Vec<usize> = wide.iter().collect();
            let (pod, narrowed): (CpuSet, CpuSet) = (
                [ids[0]].into_iter().collect(),
                [ids[1]].into_iter().collect(),
            );
            crate::affinity::pin_current_thread(&narrowed).expect("pin");
            assert!(!move_back(&pod, &wide));
            assert_eq!(affinity(), narrowed);
        });
    }
}
