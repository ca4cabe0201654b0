//! The one interface every system under test is driven through, so that podq and the peers run
//! the identical loops.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

/// Checks of the completion flag before a waiting producer parks: short, because on a machine
/// with as many producers as CPUs a spinning producer takes the CPU the worker needs.
const SPIN_CHECKS: u32 = 32;

/// What a work item holds to queue further items from a worker: the fanout's senders and the
/// rpc's hops queue through it, as `Executor::spawn` would from a producer thread.
///
/// Items hold a handle only while they wait or run, and every workload ends once all of its
/// items have run, so the executor is the last to let its system go.
pub(crate) trait Spawn: Clone + Send + Sync + 'static {
    /// Queues a one-shot closure; `false` when the system refused it.
    fn spawn<F: FnOnce() + Send + 'static>(&self, job: F) -> bool;
}

/// A system that runs closures on its own worker threads.
///
/// Every workload calls only this trait and [`Spawn`], so every system pays for the same
/// harness.
pub(crate) trait Executor: Sync {
    /// What a producer thread owns in the closed loop: a reusable podq `Work`, or for the peers
    /// the job they spawn anew each time.
    type Item: Send;

    /// The handle work items queue through.
    type Handle: Spawn;

    /// A handle for work items to queue further items with.
    fn handle(&self) -> Self::Handle;

    /// Builds the item a producer thread queues again and again in the closed loop.
    fn item(&self, job: ClosedJob) -> Self::Item;

    /// Queues `item` once; `false` when the system refused it.
    fn queue_item(&self, item: &Self::Item) -> bool;

    /// Queues a one-shot closure; `false` when the system refused it.
    fn spawn<F: FnOnce() + Send + 'static>(&self, job: F) -> bool;

    /// Queues a one-shot closure that blocks (sleeps in a system call); `false` when the
    /// system refused it. The systems with a separate way for blocking work use it (tokio's
    /// `spawn_blocking`); the others queue it as any item.
    fn spawn_blocking<F: FnOnce() + Send + 'static>(&self, job: F) -> bool {
        self.spawn(job)
    }

    /// Waits until everything queued so far has finished (part of the measured wall time).
    fn quiesce(&self) {}
}

/// The closed loop's job: burn the configured work, then tell the producer it ran.
#[derive(Clone, Debug)]
pub(crate) struct ClosedJob {
    done: Arc<Completion>,
    work: Duration,
}

impl ClosedJob {
    /// A job that signals `done` after `work` of busy-waiting.
    pub(crate) fn new(done: Arc<Completion>, work: Duration) -> ClosedJob {
        ClosedJob { done, work }
    }

    /// Runs the job.
    pub(crate) fn run(&self) {
        burn(self.work);
        self.done.complete();
    }
}

/// A one-waiter completion: a work item sets it, the producer thread that owns it waits.
#[derive(Debug)]
pub(crate) struct Completion {
    /// Set by the item (`Release`, pairs with the `Acquire` swap in `wait`), cleared by the
    /// waiter when it consumes the completion.
    done: AtomicBool,
    /// The producer thread, unparked after `done` is set.
    waiter: Thread,
}

impl Completion {
    /// A completion the calling thread will wait on.
    pub(crate) fn for_current_thread() -> Completion {
        Completion {
            done: AtomicBool::new(false),
            waiter: thread::current(),
        }
    }

    /// Marks the item as run and wakes the waiter.
    pub(crate) fn complete(&self) {
        self.done.store(true, Ordering::Release);
        // An unpark before the waiter parks leaves a token, so the wake-up is never lost.
        self.waiter.unpark();
    }

    /// Waits for the next completion and consumes it; only the thread that created it may wait.
    pub(crate) fn wait(&self) {
        for _ in 0..SPIN_CHECKS {
            if self.done.swap(false, Ordering::Acquire) {
                return;
            }
            std::hint::spin_loop();
        }
        while !self.done.swap(false, Ordering::Acquire) {
            thread::park();
        }
    }
}

/// Busy-waits for `work`: the CPU work `--work-ns` gives each item.
pub(crate) fn burn(work: Duration) {
    if work.is_zero() {
        return;
    }
    let start = Instant::now();
    while start.elapsed() < work {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completion_from_another_thread_wakes_the_waiter_every_time() {
        let done = Arc::new(Completion::for_current_thread());
        for _ in 0..100 {
            let job = ClosedJob::new(Arc::clone(&done), Duration::from_micros(1));
            let runner = thread::spawn(move || job.run());
            done.wait();
            runner.join().expect("job thread");
        }
        assert!(
            !done.done.load(Ordering::Acquire),
            "each wait consumes its completion"
        );
    }

    #[test]
    fn burn_takes_at_least_the_work() {
        let start = Instant::now();
        burn(Duration::from_micros(200));
        assert!(start.elapsed() >= Duration::from_micros(200));
    }
}
