//! The stall watchdog's decision (steps D2-D3 of `src/pool/README.md`): whether a watched pool,
//! whose workers are all busy at its eager size, gets one more worker.
//!
//! That is the job of the kernel's mayday timer and manager for unbound pools, whose workers
//! may block: a pool whose queue makes no progress for a whole interval while tasks wait is
//! taken to have its workers blocked, and one more worker is started. The watchdog thread looks
//! every [`STALL_CHECK_INTERVAL`]; a simulator calls [`check`] at simulated times.

use std::time::Duration;

use super::growth::{need_more_workers, Workers};

/// How often a watched pool is looked at: 10 ms, the kernel's first mayday timeout
/// (`MAYDAY_INITIAL_TIMEOUT`). A task that blocks delays the tasks queued behind it (with every
/// worker busy) by one to two intervals before a worker is added. A shorter interval misfires
/// when the CPUs are oversubscribed: busy workers that are merely preempted for a millisecond
/// or more look stalled, and the extra worker only adds to the oversubscription (seen with 1 ms
/// in the flood workload on 2 CPUs).
pub const STALL_CHECK_INTERVAL: Duration = Duration::from_millis(10);

/// What the watchdog does after one look at a watched pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Look {
    /// Nothing waits: stop watching (step D3); the next push past the eager size watches
    /// again (D1).
    Stop,
    /// Tasks wait and none was taken since the last look, and nobody idle, spinning or coming
    /// could take one: start one more worker (the busy ones may be blocked), and keep watching.
    Spawn,
    /// Keep watching: progress was made, or someone can take the tasks, or the pool is at
    /// `max_workers`, or this is the first look since the pool was watched.
    Watch,
}

/// One look at a watched pool (step D2): `waiting` tasks wait, `started` tasks were ever taken
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
}
