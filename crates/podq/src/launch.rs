//! Starting podq's own threads (workers, and the helpers: the stall watchdog, the timer, the
//! limits follower, a reaper) away from a pinned starter, and a pool's workers spread over its
//! pod.
//!
//! A new thread inherits the affinity of the thread that starts it, and podq starts its
//! threads from whichever thread queues: often a dispatching thread pinned to one CPU. Such a
//! thread could first run only on that CPU, which a busy starter gives up only at the end of
//! its time slice: left there, a pool's first worker waits 2.98 ms while the pod's other CPU
//! is idle (`perf sched timehist` of `podq bench --threads 1 --workload flood`), and the
//! watchdog, started the same way, stays pinned to the producer's CPU for the life of the
//! process.
//!
//! So when the starter's own affinity leaves the new thread no CPU but the starter's, [`spawn`]
//! moves the new thread to the one CPU its caller chooses ([`launch_cpu`]: the CPU of the
//! thread's home with the fewest live threads of its kind launched there, another CPU than
//! the starter's among equals), before the thread first runs; the thread then places itself
//! (its own pin, which may include the starter's CPU) only after that move, so that the
//! narrower launch set never outlives the start. Counting the launches keeps one pinned
//! starter from putting every worker of a pool on the same CPU: with launches that only avoid
//! the starter's CPU, both workers of each new pool share one CPU for their first 7-11 ms
//! (`perf sched timehist` of the closed loop with one producer per CPU on 2 CPUs). A starter
//! allowed more CPUs (the watchdog, an unpinned thread) is left to the kernel, which places a
//! new thread among them as it sees fit.

#[cfg(test)]
use std::cell::Cell;
use std::collections::BTreeMap;
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
/// one CPU ([`confined_to`]), `choose` is asked, with that CPU, where the new thread first
/// runs, and the thread is moved there; `body` runs only after the move, is given the CPU
/// chosen (`None` where the starter was not confined or `choose` declined), and places the
/// thread itself. The thread is detached.
///
/// # Errors
///
/// The OS's refusal to start the thread; `choose` is not asked then. A move that fails leaves
/// the thread where it was started: it places itself anyway.
pub(crate) fn spawn(
    builder: thread::Builder,
    choose: impl FnOnce(usize) -> Option<usize>,
    body: impl FnOnce(Option<usize>) + Send + 'static,
) -> io::Result<()> {
    // The CPU chosen, written by the starter before it lets the thread go.
    let gate: Arc<Mutex<Option<usize>>> = Arc::new(Mutex::new(None));
    let mut moving = gate.lock().unwrap_or_else(PoisonError::into_inner);
    let for_thread = Arc::clone(&gate);
    let handle = builder.spawn(move || {
        // Until the starter has moved this thread.
        let launched = *for_thread.lock().unwrap_or_else(PoisonError::into_inner);
        drop(for_thread);
        #[cfg(test)]
        LAUNCHED_ON.with(|cpu| cpu.set(crate::sys::current_cpu()));
        body(launched);
    })?;
    let confined = crate::sys::current_cpu().filter(|&here| {
        crate::sys::allowed_cpus()
            .is_ok_and(|inherited| confined_to(&inherited.into_iter().collect(), here))
    });
    if let Some(here) = confined {
        *moving = choose(here);
        if let Some(cpu) = *moving {
            if cpu != here {
                let _ = crate::sys::pin_thread(&handle, &[cpu]);
            }
        }
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
/// should first run: the CPU of `cpus` with the fewest `live` threads of its kind launched
/// there, and among those another than `here` (the starter may keep its CPU for a whole time
/// slice), then the lowest; `None` when `cpus` is empty.
pub(crate) fn launch_cpu(cpus: &CpuSet, here: usize, live: impl Fn(usize) -> u32) -> Option<usize> {
    cpus.iter().min_by_key(|&cpu| (live(cpu), cpu == here, cpu))
}

/// A pool's count of its live workers by the CPU each was launched on ([`launch_cpu`]'s
/// `live`). A worker is counted from its launch until it exits; only workers whose starter
/// was confined ([`confined_to`]) are launched, and so counted.
#[derive(Debug, Default)]
pub(crate) struct Launched {
    /// Live workers by launch CPU; CPUs with none are absent.
    by_cpu: Mutex<BTreeMap<usize, u32>>,
}

impl Launched {
    /// Chooses where a new worker of a pool whose home is `cpus` first runs, started from CPU
    /// `here`, and counts it there.
    pub(crate) fn choose(&self, cpus: &CpuSet, here: usize) -> Option<usize> {
        let mut by_cpu = self.by_cpu.lock().unwrap_or_else(PoisonError::into_inner);
        let cpu = launch_cpu(cpus, here, |cpu| by_cpu.get(&cpu).copied().unwrap_or(0))?;
        *by_cpu.entry(cpu).or_default() += 1;
        Some(cpu)
    }

    /// Counts a worker launched on `cpu` out when the returned guard drops: hold it for the
    /// worker's life, so that it is counted out however the worker ends.
    pub(crate) fn until_exit(&self, cpu: usize) -> LiveOn<'_> {
        LiveOn {
            launched: self,
            cpu,
        }
    }

    /// A worker launched on `cpu` exits.
    fn exited(&self, cpu: usize) {
        let mut by_cpu = self.by_cpu.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(live) = by_cpu.get_mut(&cpu) {
            *live -= 1;
            if *live == 0 {
                by_cpu.remove(&cpu);
            }
        }
    }

    /// The live workers launched on `cpu`.
    #[cfg(test)]
    pub(crate) fn on(&self, cpu: usize) -> u32 {
        let by_cpu = self.by_cpu.lock().unwrap_or_else(PoisonError::into_inner);
        by_cpu.get(&cpu).copied().unwrap_or(0)
    }
}

/// A live worker's place in its pool's [`Launched`], given back on drop.
#[derive(Debug)]
pub(crate) struct LiveOn<'a> {
    /// The pool's launches.
    launched: &'a Launched,
    /// The CPU the worker was launched on.
    cpu: usize,
}

impl Drop for LiveOn<'_> {
    fn drop(&mut self) {
        self.launched.exited(self.cpu);
    }
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
/// they were at its start, not on the starter's pin, with a stack of `stack` bytes (`None`:
/// the standard library's).
///
/// # Errors
///
/// The OS's refusal to start the thread (out of threads or memory, or a stack it cannot give).
pub(crate) fn spawn_helper(
    name: &str,
    stack: Option<usize>,
    body: impl FnOnce() + Send + 'static,
) -> io::Result<()> {
    let cpus = process_cpus().unwrap_or_default();
    let ids: Vec<usize> = cpus.iter().collect();
    let mut builder = thread::Builder::new().name(name.to_owned());
    if let Some(bytes) = stack {
        builder = builder.stack_size(bytes);
    }
    spawn(
        builder,
        |here| launch_cpu(&cpus, here, |_| 0),
        move |_| {
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
    /// `inherited`, to run on `cpus`, with no thread of its kind launched yet.
    fn launch(cpus: &CpuSet, inherited: &CpuSet, here: usize) -> Option<usize> {
        confined_to(inherited, here)
            .then(|| launch_cpu(cpus, here, |_| 0))
            .flatten()
    }

    #[test]
    fn a_thread_of_a_pinned_starter_starts_away_from_its_cpu_where_it_may() {
        let pinned = |cpu| set([cpu]);
        assert_eq!(launch(&set([0, 1]), &pinned(0), 0), Some(1));
        assert_eq!(launch(&set([2, 3, 4]), &pinned(2), 2), Some(3));
        assert_eq!(launch(&set([2, 3, 4]), &pinned(3), 3), Some(2));
        // The starter is elsewhere: the lowest of them.
        assert_eq!(launch(&set([3, 5]), &pinned(0), 0), Some(3));
        // The starter's CPU is the only one: the thread waits for it.
        assert_eq!(launch(&set([3]), &pinned(3), 3), Some(3));
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
    fn a_pinned_starter_spreads_a_pools_workers_over_its_pod() {
        let launched = Launched::default();
        let pod = set([0, 1, 2]);
        // One starter on CPU 0 starts four workers: the other CPUs first, then its own.
        let chosen: Vec<_> = (0..4).map(|_| launched.choose(&pod, 0)).collect();
        assert_eq!(chosen, [Some(1), Some(2), Some(0), Some(1)]);
        assert_eq!((launched.on(0), launched.on(1), launched.on(2)), (1, 2, 1));
        // The worker launched on CPU 2 exits: the next goes there, whoever starts it.
        drop(launched.until_exit(2));
        assert_eq!(launched.choose(&pod, 1), Some(2));
        // A CPU outside the pod (the pod was re-formed) counts for nothing.
        drop(launched.until_exit(7));
        assert_eq!(launched.choose(&set([5, 6]), 5), Some(6));
        assert_eq!(launched.choose(&set([5, 6]), 5), Some(5));
        assert_eq!(launched.choose(&set([]), 5), None);
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
            spawn_helper("podq/test", None, move || {
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
