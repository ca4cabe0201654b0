//! The stall watchdog's decisions (steps D2-D4 of `src/pool/README.md`): how many workers a
//! watched pool, whose workers are all busy at its eager size, gets for busy workers that block.
//!
//! Two looks, as the kernel has two ways to notice a worker that blocks:
//!
//! * **Blocked workers** ([`replacements`]), the userspace analogue of the kernel's "worker
//!   went to sleep" hook for per-CPU pools: the pool reads whether each busy worker's thread
//!   sleeps, and starts as many workers as keep one runnable worker per CPU of the pod while
//!   tasks wait. A worker that is merely preempted (runnable) does not count, so a machine busy
//!   with other work gets no extra threads. The watchdog looks every [`BLOCK_CHECK_INTERVAL`],
//!   and [`BLOCK_RECHECK_INTERVAL`] after a look that started workers.
//! * **No progress** ([`check`]), the kernel's mayday timer for unbound pools, for systems
//!   where a thread's state cannot be read and for workers that wait without sleeping: a pool
//!   whose queue makes no progress for a whole [`STALL_CHECK_INTERVAL`] while tasks wait gets
//!   one more worker.
//!
//! A simulator calls both at simulated times.

use std::time::Duration;

use super::growth::{need_more_workers, Limits, Workers};

/// How often the watchdog looks for blocked busy workers in a watched pool: 1 ms, so that
/// work queued behind workers that block starts within about a millisecond. A look reads one
/// small procfs file per busy worker of each watched pool (a few microseconds each), so while
/// pools are watched the watchdog costs well under 1 % of a CPU.
pub const BLOCK_CHECK_INTERVAL: Duration = Duration::from_millis(1);

/// How soon the watchdog looks again after a look that started workers for blocked ones:
/// 50 us. Tasks that block one after another (16 of them queued before a short one) take the
/// new workers, which block in turn; looking again soon gives the tasks behind them a worker
/// each within about a millisecond instead of one pod's worth per [`BLOCK_CHECK_INTERVAL`].
pub const BLOCK_RECHECK_INTERVAL: Duration = Duration::from_micros(50);

/// Workers to start in a watched pool whose `blocked` of `busy` workers (running a task) are
/// found asleep (step D2): enough that the busy workers still running, the spinning, idle and
/// coming ones number as many as the pod's CPUs (`limits.eager_workers`) or the blocked
/// workers, whichever is more; no more than the `waiting` tasks that those cannot take, and
/// never past `limits.max_workers`.
///
/// Replacing every blocked worker, not only up to one runnable worker per CPU, makes the
/// growth behind a burst of blocking tasks double per look (2, 4, 8, ... new workers, each
/// batch blocking in turn) instead of adding a pod's CPU count per look: behind 32 tasks that
/// sleep, on 2 CPUs, a short task queued 3 ms later waited for 16 looks' worth of workers
/// (`cargo run --release -p podq --example blocked_items tail`, `docs/benchmarks.md` has the
/// figures). Workers that are only preempted are not blocked, so a CPU-bound flood still gets
/// one runnable worker per CPU.
#[must_use]
pub fn replacements(
    workers: Workers,
    waiting: usize,
    spinners: usize,
    busy: usize,
    blocked: usize,
    limits: Limits,
) -> usize {
    if blocked == 0 {
        return 0;
    }
    let able = busy.saturating_sub(blocked) + spinners + workers.idle + workers.coming;
    let waiting = waiting.saturating_sub(spinners + workers.idle + workers.coming);
    limits
        .eager_workers
        .max(blocked)
        .saturating_sub(able)
        .min(waiting)
        .min(limits.max_workers.saturating_sub(workers.live))
}

/// How often a watched pool's progress is looked at: 10 ms, the kernel's first mayday timeout
/// (`MAYDAY_INITIAL_TIMEOUT`). A task that blocks delays the tasks queued behind it (with every
/// worker busy) by one to two intervals before a worker is added. A shorter interval misfires
/// when the CPUs are oversubscribed: busy workers that are merely preempted for a millisecond
/// or more look stalled, and the extra worker only adds to the oversubscription (seen with 1 ms
/// in the flood workload on 2 CPUs).
pub const STALL_CHECK_INTERVAL: Duration = Duration::from_millis(10);

/// What the watchdog does after one look at a watched pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Look {
    /// Nothing waits: stop watching (step D4); the next push past the eager size watches
    /// again (D1).
    Stop,
    /// Tasks wait and none was taken since the last look, and nobody idle, spinning or coming
    /// could take one: start one more worker (the busy ones may be blocked), and keep watching.
    Spawn,
    /// Keep watching: progress was made, or someone can take the tasks, or the pool is at
    /// `max_workers`, or this is the first look since the pool was watched.
    Watch,
}

/// One look at a watched pool (step D3): `waiting` tasks wait, `started` tasks were ever taken
/// from its queue, `last_started` is `started` at the previous look (`None` on the first look
/// after D1, which only records it), `spinners` workers spin.
#[inline]
pub fn check(
    waiting: usize,
    started: u64,
    last_started: Option<u64>,
    workers: Workers,
    spinners: usize,
    max_workers: usize,
) -> Look {
    if waiting == 0 {
        return Look::Stop;
    }
    let stalled = last_started == Some(started);
    if stalled && need_more_workers(workers, waiting, spinners, max_workers) {
        Look::Spawn
    } else {
        Look::Watch
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::growth::busy;

    #[test]
    fn an_empty_queue_ends_the_watch() {
        assert_eq!(check(0, 5, Some(5), busy(2), 0, 8), Look::Stop);
    }

    #[test]
    fn the_first_look_only_records_progress() {
        assert_eq!(check(3, 5, None, busy(2), 0, 8), Look::Watch);
    }

    #[test]
    fn no_progress_with_tasks_waiting_adds_a_worker() {
        assert_eq!(check(3, 5, Some(5), busy(2), 0, 8), Look::Spawn);
        assert_eq!(check(3, 6, Some(5), busy(2), 0, 8), Look::Watch, "progress");
        assert_eq!(check(3, 5, Some(5), busy(8), 0, 8), Look::Watch, "at max");
        assert_eq!(check(3, 5, Some(5), busy(2), 3, 8), Look::Watch, "spinners");
        let coming = Workers {
            coming: 1,
            ..busy(2)
        };
        assert_eq!(
            check(3, 5, Some(5), coming, 0, 8),
            Look::Watch,
            "one coming"
        );
    }

    #[test]
    fn blocked_workers_are_replaced_each_and_up_to_one_runnable_per_cpu() {
        let limits = Limits::new(256, 2);
        // Both busy workers asleep, one task waits: one more worker runs it.
        assert_eq!(replacements(busy(2), 1, 0, 2, 2, limits), 1);
        // Sixteen wait: two more, one per CPU; the next look replaces those if they block too.
        assert_eq!(replacements(busy(2), 16, 0, 2, 2, limits), 2);
        // One of two asleep: one more.
        assert_eq!(replacements(busy(2), 16, 0, 2, 1, limits), 1);
        // Nobody asleep (a CPU-bound flood, or workers merely preempted): none.
        assert_eq!(replacements(busy(2), 16, 0, 2, 0, limits), 0);
        // Workers already coming or spinning count as runnable.
        let coming = Workers {
            coming: 2,
            ..busy(4)
        };
        assert_eq!(replacements(coming, 16, 0, 2, 2, limits), 0);
        assert_eq!(replacements(busy(2), 16, 1, 2, 2, limits), 1);
        // Never past max_workers.
        assert_eq!(replacements(busy(2), 16, 0, 2, 2, Limits::new(3, 2)), 1);
        assert_eq!(replacements(busy(3), 16, 0, 3, 3, Limits::new(3, 2)), 0);
        // Eight asleep, sixteen wait: each blocked worker is replaced (the growth doubles per
        // look), not only one per CPU.
        assert_eq!(replacements(busy(8), 16, 0, 8, 8, limits), 8);
        assert_eq!(
            replacements(busy(8), 3, 0, 8, 8, limits),
            3,
            "as many as wait"
        );
        // Nothing waits beyond what the others take: none.
        assert_eq!(replacements(busy(2), 0, 0, 2, 2, limits), 0);
    }
}
