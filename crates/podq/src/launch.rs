//! Starting podq's own threads (workers, and the helpers: the stall watchdog, the timer, the
//! limits follower, a reaper) away from a pinned starter.
//!
//! A new thread inherits the affinity of the thread that starts it, and podq starts its
//! threads from whichever thread queues: often a dispatching thread pinned to one CPU. Such a
//! thread could first run only on that CPU, which a busy starter gives up only at the end of
//! its time slice: `perf sched timehist` of `podq bench --threads 1 --workload flood` showed
//! a pool's first worker waiting 2.98 ms there while the pod's other CPU was idle, and the
//! watchdog, started the same way, pinned to the producer's CPU for the life of the process.
//!
//! So when the starter's own affinity leaves the new thread no CPU but the starter's, [`spawn`]
//! moves the new thread off that CPU, onto the other CPUs where it is meant to go
//! ([`launch_cpus`]), before the thread first runs; the thread then places itself (its own
//! pin, which may include the starter's CPU) only after that move, so that the narrower launch
//! set never outlives the start. A starter allowed more CPUs (the watchdog, an unpinned
//! thread) is left to the kernel, which places a new thread among them as it sees fit.

#[cfg(test)]
use std::cell::Cell;
use std::io;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;

use crate::cpuset::CpuSet;

#[cfg(test)]
thread_local! {
    /// The CPU this thread first ran on, for a thread started by [`spawn`].
    static LAUNCHED_ON: Cell<Option<usize>> = const { Cell::new(None) };
}

/// The CPU the calling thread first ran on, when [`spawn`] started it and the CPU could be
/// read.
#[cfg(test)]
pub(crate) fn launched_on() -> Option<usize> {
    LAUNCHED_ON.with(Cell::get)
}

/// Starts `body` on a new thread made by `builder`. Where the calling thread is pinned to its
/// one CPU ([`confined_to`]), the new thread is first moved to `cpus()` without that CPU
/// ([`launch_cpus`]); `cpus` is asked only then. `body` runs only after the move, and places
/// the thread itself. The thread is detached.
///
/// # Errors
///
/// The OS's refusal to start the thread. A move that fails leaves the thread where it was
/// started: it places itself anyway.
pub(crate) fn spawn(
    builder: thread::Builder,
    cpus: impl FnOnce() -> CpuSet,
    body: impl FnOnce() + Send + 'static,
) -> io::Result<()> {
    let gate = Arc::new(Mutex::new(()));
    let moving = gate.lock().unwrap_or_else(PoisonError::into_inner);
    let for_thread = Arc::clone(&gate);
    let handle = builder.spawn(move || {
        // Until the starter has moved this thread.
        drop(for_thread.lock().unwrap_or_else(PoisonError::into_inner));
        #[cfg(test)]
        LAUNCHED_ON.with(|cpu| cpu.set(crate::sys::current_cpu()));
        body();
    })?;
    let away = crate::sys::current_cpu().and_then(|here| {
        let inherited: CpuSet = crate::sys::allowed_cpus().ok()?.into_iter().collect();
        if !confined_to(&inherited, here) {
            return None;
        }
        launch_cpus(&cpus(), here)
    });
    if let Some(away) = away {
        let ids: Vec<usize> = away.iter().collect();
        let _ = crate::sys::pin_thread(&handle, &ids);
    }
    drop(moving);
    Ok(())
}

/// Whether a thread allowed `inherited`, running on CPU `here`, leaves a thread it starts (which
/// inherits `inherited`) no CPU but `here`. When it does not, the kernel may place the new
/// thread elsewhere already.
pub(crate) fn confined_to(inherited: &CpuSet, here: usize) -> bool {
    inherited.iter().all(|cpu| cpu == here)
}

/// Where a thread confined to CPU `here` by its starter ([`confined_to`]), to run on `cpus`,
/// should first run: `cpus` other than `here`; `None` when `cpus` has no other CPU (it has to
/// wait for that one anyway).
pub(crate) fn launch_cpus(cpus: &CpuSet, here: usize) -> Option<CpuSet> {
    let mut away = cpus.clone();
    away.remove(here);
    (!away.is_empty()).then_some(away)
}

/// The CPUs the process may use now ([`crate::sys::process_allowed_cpus`]), where a helper
/// thread (the watchdog, the timer) runs whatever thread started it; `None` when they cannot
/// be read.
pub(crate) fn process_cpus() -> Option<CpuSet> {
    crate::sys::process_allowed_cpus()
        .ok()
        .map(|cpus| cpus.into_iter().collect())
}

/// Starts helper thread `name` running `body` on the process's CPUs ([`process_cpus`]) as
/// they were at its start, not on the starter's pin.
///
/// # Errors
///
/// The OS's refusal to start the thread.
pub(crate) fn spawn_helper(name: &str, body: impl FnOnce() + Send + 'static) -> io::Result<()> {
    let cpus = process_cpus().unwrap_or_default();
    let ids: Vec<usize> = cpus.iter().collect();
    let builder = thread::Builder::new().name(name.to_owned());
    spawn(
        builder,
        || cpus,
        move || {
            // Where the mask cannot be set (another system, a cpuset that changed meanwhile),
            // the helper runs where it was started.
            if !ids.is_empty() {
                let _ = crate::sys::pin_current_thread(&ids);
            }
            body();
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set<const N: usize>(cpus: [usize; N]) -> CpuSet {
        CpuSet::from_iter(cpus)
    }

    /// Where [`spawn`] first puts a thread started from CPU `here` by a thread allowed
    /// `inherited`, to run on `cpus`.
    fn launch(cpus: &CpuSet, inherited: &CpuSet, here: usize) -> Option<CpuSet> {
        confined_to(inherited, here)
            .then(|| launch_cpus(cpus, here))
            .flatten()
    }

    #[test]
    fn a_thread_of_a_pinned_starter_starts_away_from_its_cpu_where_it_may() {
        let pinned = |cpu| set([cpu]);
        assert_eq!(launch(&set([0, 1]), &pinned(0), 0), Some(set([1])));
        assert_eq!(launch(&set([2, 3, 4]), &pinned(3), 3), Some(set([2, 4])));
        // The starter is elsewhere: all of them.
        assert_eq!(launch(&set([3]), &pinned(0), 0), Some(set([3])));
        // The starter's CPU is the only one: the thread waits for it anyway.
        assert_eq!(launch(&set([3]), &pinned(3), 3), None);
        assert_eq!(launch(&set([]), &pinned(3), 3), None);
    }

    #[test]
    fn a_thread_of_a_starter_allowed_other_cpus_is_left_to_the_kernel() {
        assert_eq!(launch(&set([0, 1]), &set([0, 1]), 0), None);
        // Allowed another CPU outside the new thread's: the kernel may still run it there
        // first, and it places itself.
        assert_eq!(launch(&set([0, 1]), &set([0, 5]), 0), None);
    }

    #[test]
    fn a_helper_started_by_a_pinned_thread_runs_on_the_process_cpus() {
        let Some(cpus) = process_cpus().filter(|cpus| cpus.len() >= 2) else {
            eprintln!("skipped: needs two CPUs allowed to the process");
            return;
        };
        let starter = cpus.first().expect("two CPUs");
        let (tx, rx) = std::sync::mpsc::channel();
        thread::spawn(move || {
            crate::sys::pin_current_thread(&[starter]).expect("pin the starter");
            spawn_helper("podq/test", move || {
                let on: CpuSet = crate::sys::allowed_cpus()
                    .expect("sched_getaffinity")
                    .into_iter()
                    .collect();
                tx.send((launched_on(), on)).expect("test alive");
            })
            .expect("a thread");
        })
        .join()
        .expect("starter");
        let (first, on) = rx
            .recv_timeout(crate::test_support::PATIENCE)
            .expect("the helper ran");
        let first = first.expect("the CPU can be read on Linux");
        assert_ne!(first, starter, "the helper first ran on its starter's CPU");
        assert_eq!(on, cpus, "the helper kept its starter's pin");
    }
}
