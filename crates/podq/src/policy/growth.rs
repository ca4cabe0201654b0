//! When a pool's workers are woken, started, watched or retired: the decisions behind steps
//! P4-P6, W4 and W12 of `src/pool/README.md`, as pure functions of counts, limits and times.
//!
//! The pool keeps the counts under its lock ([`Workers`]), asks these functions, and acts on
//! the answer (wakes a parked worker, starts a thread, has the stall watchdog watch, ends a
//! thread). A simulator asks them with counts and times of its own.
//!
//! The sequence, for tasks that wait with every worker busy: a parked worker is woken first
//! ([`wakes`]); with none parked, the pool grows ([`grow`]): at once up to its eager size,
//! one worker at a time, then only when the stall watchdog finds busy workers blocked or the
//! queue making no progress (`super::stall`). A worker parked for the idle timeout retires unless
//! it is the last ([`idle`]).

use std::time::Duration;

/// A pool's workers, as the pool counts them under its lock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Workers {
    /// Live workers: running, spinning, parked, or started and not yet running.
    pub live: usize,
    /// Parked workers that nobody has woken yet.
    pub idle: usize,
    /// Workers started or woken that have not yet come back to the queue. While one is
    /// coming, no further worker is started: like the kernel's single manager, creation is a
    /// chain, one worker at a time.
    pub coming: usize,
    /// Whether the stall watchdog watches the pool.
    pub watched: bool,
}

/// How far a pool grows: fixed when the pool is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The most workers at once (at least 1).
    pub max_workers: usize,
    /// Workers started as soon as tasks wait with every worker busy (at least 1, at most
    /// `max_workers`). More busy threads than CPUs only help when tasks block, and cost
    /// throughput when they merely compute, so past this size the stall watchdog decides.
    pub eager_workers: usize,
}

impl Limits {
    /// The limits for `max_workers` and `eager_workers`, each raised to 1 if 0, and the eager
    /// size lowered to `max_workers` if above it.
    pub fn new(max_workers: usize, eager_workers: usize) -> Limits {
        let max_workers = max_workers.max(1);
        Limits {
            max_workers,
            eager_workers: eager_workers.clamp(1, max_workers),
        }
    }
}

/// Whether a push, or a worker that leaves tasks behind in the head, must take the pool lock
/// (steps P4, W4): an idle worker could be woken, or the pool could grow or be watched. The
/// pool keeps the answer in its hint's `HELP` word, so that a push reads one word instead of
/// taking the lock.
///
/// When `false`, nobody is idle and at least one worker is running, spinning or coming (the
/// pool is at its size, or a worker is on its way); each of them looks at every lane before it
/// stops, so a push may leave its task without taking any other lock.
#[inline]
pub fn wants_help(workers: Workers, limits: Limits) -> bool {
    workers.idle > 0
        || (workers.coming == 0
            && workers.live < limits.max_workers
            && (workers.live < limits.eager_workers || !workers.watched))
}

/// Whether a push that leaves `waiting` tasks in its lane may leave them to the spinning
/// workers (step P4): at most one task per spinner on another CPU (`spinners_elsewhere`). A
/// spinner counted on the pusher's own CPU has been preempted by the pusher and cannot take a
/// task before the pusher blocks.
#[inline]
pub fn spinners_take(waiting: usize, spinners_elsewhere: usize) -> bool {
    spinners_elsewhere >= waiting
}

/// Whether a push or a worker that must help (see [`wants_help`]) wakes a parked worker
/// (steps P5, W4): whenever one is parked, before the pool grows. The pool wakes the most
/// recently parked one (LIFO, like the kernel's `idle_list`), so that the others stay idle long
/// enough to retire.
#[inline]
pub fn wakes(workers: Workers) -> bool {
    workers.idle > 0
}

/// The kernel's `need_more_worker`: `waiting` tasks wait, more than the `spinners` can take,
/// nobody is idle or on the way, and the pool is below `max_workers`.
#[inline]
pub fn need_more_workers(
    workers: Workers,
    waiting: usize,
    spinners: usize,
    max_workers: usize,
) -> bool {
    waiting > spinners && workers.idle == 0 && workers.coming == 0 && workers.live < max_workers
}

/// What to do for tasks that wait with every worker busy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grow {
    /// Nothing: the pool may not grow, a worker is on its way, or the watchdog watches already.
    No,
    /// Start one worker now.
    Spawn,
    /// Have the stall watchdog watch the pool (step D1): it adds a worker if nothing is taken
    /// from the queue for a while (the busy workers may be blocked).
    Watch,
}

/// How the pool grows when `waiting` tasks wait and nobody is idle (steps P6, W4): start a
/// worker while below the eager size, else have the watchdog watch (once), else nothing.
#[inline]
pub fn grow(workers: Workers, waiting: usize, spinners: usize, limits: Limits) -> Grow {
    if !need_more_workers(workers, waiting, spinners, limits.max_workers) {
        return Grow::No;
    }
    if workers.live < limits.eager_workers {
        return Grow::Spawn;
    }
    if workers.watched {
        Grow::No
    } else {
        Grow::Watch
    }
}

/// What a parked worker that nobody woke does about retiring (step W12).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Idle {
    /// Wait this much longer: the idle timeout has not passed yet.
    Wait(Duration),
    /// Retire: idle for the timeout, and another worker remains.
    Retire,
    /// Stay parked without a timeout: the last worker stays while the pool is in use.
    Stay,
}

/// Whether a worker parked for `idle_for` (and not woken) retires, in a pool of `live` workers
/// whose idle timeout is `idle_timeout` (step W12). The caller measures `idle_for` with its own
/// clock: the pool with the time its waits took, a simulator with simulated time.
#[inline]
pub fn idle(idle_for: Duration, idle_timeout: Duration, live: usize) -> Idle {
    match idle_timeout.checked_sub(idle_for) {
        Some(left) if !left.is_zero() => Idle::Wait(left),
        _ if live > 1 => Idle::Retire,
        _ => Idle::Stay,
    }
}

/// A pool with `live` workers, none idle, coming or watched (for the policy's tests).
#[cfg(test)]
pub(super) fn busy(live: usize) -> Workers {
    Workers {
        live,
        ..Workers::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_at_least_one_and_eager_at_most_max() {
        assert_eq!(Limits::new(0, 0), Limits::new(1, 1));
        let limits = Limits::new(4, 9);
        assert_eq!((limits.max_workers, limits.eager_workers), (4, 4));
    }

    #[test]
    fn help_is_wanted_while_someone_is_idle_or_the_pool_may_grow() {
        let limits = Limits::new(4, 2);
        let idle = Workers {
            idle: 1,
            coming: 1,
            ..busy(4)
        };
        assert!(wants_help(idle, limits));
        assert!(wants_help(busy(1), limits), "below the eager size");
        assert!(wants_help(busy(2), limits), "may be watched");
        let watched = Workers {
            watched: true,
            ..busy(2)
        };
        assert!(!wants_help(watched, limits), "watched already");
        let coming = Workers {
            coming: 1,
            ..busy(1)
        };
        assert!(!wants_help(coming, limits), "a worker is on its way");
        assert!(!wants_help(busy(4), limits), "at max_workers");
    }

    #[test]
    fn spinners_on_other_cpus_take_one_task_each() {
        assert!(spinners_take(1, 1));
        assert!(spinners_take(0, 0));
        assert!(!spinners_take(2, 1));
        assert!(!spinners_take(1, 0));
    }

    #[test]
    fn a_parked_worker_is_woken_before_the_pool_grows() {
        assert!(wakes(Workers { idle: 1, ..busy(3) }));
        assert!(!wakes(busy(3)));
    }

    #[test]
    fn the_pool_grows_one_worker_at_a_time_up_to_the_eager_size_then_is_watched() {
        let limits = Limits::new(4, 2);
        assert_eq!(grow(busy(0), 1, 0, limits), Grow::Spawn);
        assert_eq!(grow(busy(1), 1, 0, limits), Grow::Spawn);
        assert_eq!(grow(busy(2), 1, 0, limits), Grow::Watch);
        let watched = Workers {
            watched: true,
            ..busy(2)
        };
        assert_eq!(grow(watched, 1, 0, limits), Grow::No);
        let coming = Workers {
            coming: 1,
            ..busy(1)
        };
        assert_eq!(grow(coming, 5, 0, limits), Grow::No, "one at a time");
        assert_eq!(grow(busy(1), 2, 2, limits), Grow::No, "spinners take them");
        assert_eq!(grow(busy(4), 9, 0, limits), Grow::No, "at max_workers");
        assert_eq!(grow(busy(1), 0, 0, limits), Grow::No, "nothing waits");
    }

    #[test]
    fn more_workers_are_needed_only_for_tasks_nobody_can_take() {
        assert!(need_more_workers(busy(1), 2, 1, 4));
        assert!(!need_more_workers(busy(1), 1, 1, 4));
        let idle = Workers { idle: 1, ..busy(1) };
        assert!(!need_more_workers(idle, 5, 0, 4));
        assert!(!need_more_workers(busy(4), 5, 0, 4));
    }

    #[test]
    fn an_idle_worker_waits_out_the_timeout_then_retires_unless_it_is_the_last() {
        let timeout = Duration::from_secs(300);
        assert_eq!(
            idle(Duration::ZERO, timeout, 1),
            Idle::Wait(timeout),
            "the last worker waits too: the pool may grow meanwhile"
        );
        assert_eq!(
            idle(Duration::from_secs(100), timeout, 2),
            Idle::Wait(Duration::from_secs(200))
        );
        assert_eq!(idle(timeout, timeout, 2), Idle::Retire);
        assert_eq!(idle(Duration::from_secs(301), timeout, 3), Idle::Retire);
        assert_eq!(idle(timeout, timeout, 1), Idle::Stay);
        assert_eq!(idle(Duration::ZERO, Duration::ZERO, 2), Idle::Retire);
    }
}
