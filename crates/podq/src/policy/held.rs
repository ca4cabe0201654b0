//! Held items (steps H1-H8 of `src/pool/README.md`): when a worker runs the item that its own
//! running item queued (its **held** item) itself, and when another worker takes it instead.
//!
//! A worker holds the item that its running item queued to the same pool, when it is the only
//! one (a running item that queues several has them all queued as from any thread), and runs it
//! as soon as that item ends, with no hand-over to another CPU and no wake-up. Three decisions
//! bound that:
//!
//! * [`runs_held`]: the worker runs its held item next, unless it has already run
//!   [`MAX_IN_A_ROW`] held items in a row while other tasks wait in the pool's queue; then the
//!   held item goes to the back of the queue and the worker takes the queue's oldest task, so a
//!   chain of items that queue each other never starves the queue (tokio bounds its LIFO slot
//!   the same way).
//! * [`taken_over`]: another worker (one that spun with nothing to do, or the stall watchdog)
//!   takes a held item when two looks some time apart saw the same item held: its holder ran
//!   on, or blocked, all that time, and the item would otherwise wait for it.
//! * [`holds_ahead`] and [`ahead`]: a worker taking a task from its pool's queue also holds
//!   the next ones, its share of those that wait behind it and at most [`AHEAD_MAX`], when
//!   nobody is idle, so that a busy pool's workers take its head lock once per several tasks.
//!
//! A simulator calls them with its own counts and looks.

/// Held items a worker runs in a row before it looks whether other tasks wait in its pool's
/// queue: 3, tokio's bound on its LIFO slot (`MAX_LIFO_POLLS_PER_TICK`). Past it, a held item
/// runs next only when nothing else waits; the count then starts again.
pub const MAX_IN_A_ROW: u32 = 3;

/// Whether a worker that has run `in_a_row` held items in a row must first look at its pool's
/// queue before it runs its held item (H3): true from [`MAX_IN_A_ROW`] on.
#[must_use]
pub fn must_look(in_a_row: u32) -> bool {
    in_a_row >= MAX_IN_A_ROW
}

/// Whether a worker runs its held item next (H3), having run `in_a_row` held items in a row;
/// `others_wait`: whether tasks wait in the pool's queue, as looked at when [`must_look`] says
/// so (ignored otherwise). When this says no, the held item goes to the back of the queue and
/// the worker takes the queue's oldest task.
#[must_use]
pub fn runs_held(in_a_row: u32, others_wait: bool) -> bool {
    !must_look(in_a_row) || !others_wait
}

/// Tasks that must still wait in the head, after the one a worker takes, for the worker to hold
/// any ahead (H8): 2, so that a worker that comes to the head meanwhile still finds a
/// task there, and one taken ahead is never the last one another worker could have had.
pub const AHEAD_LEFT: usize = 2;

/// Whether a worker that takes a task from its pool's head also takes the next ones into its
/// held slot (how many: [`ahead`]), to run them after the first without taking the head lock
/// again (H8): when
/// `left` tasks (at least [`AHEAD_LEFT`]) wait in the head after the one it takes, nobody is
/// idle (`help` clear: every worker is busy, spinning or on its way), so that no idle worker
/// would have taken it sooner, and the pool runs more than one worker at once (`eager`, its
/// eager size): one worker alone takes the head lock uncontended, and holding would only let
/// a take-over (H5, H6) start the task behind later ones. Its slot must be empty, which the
/// caller checks. With a pod's workers all busy, each then takes the head lock once per two
/// tasks or more.
#[must_use]
pub fn holds_ahead(left: usize, help: bool, eager: usize) -> bool {
    !help && may_hold_ahead(left, eager)
}

/// Tasks a worker holds ahead at most (H8): 7, as many as a held slot's word counts. With two
/// workers taking a fan-out's 20,000 tasks from one head, the head lock's line moves between
/// their CPUs at every take, so the time per task falls with the tasks each take moves
/// (`docs/benchmarks.md`, "Items queued by items").
pub const AHEAD_MAX: usize = 7;

/// How many tasks a worker holds ahead (H8) once [`holds_ahead`] said yes, with `left` tasks
/// waiting in the head after the one it takes, in a pool of `eager` eager workers: its share of
/// them (`left / eager`), at least one and at most [`AHEAD_MAX`]. Each other worker that comes
/// to the head meanwhile then still finds at least as many as this one took.
#[must_use]
pub fn ahead(left: usize, eager: usize) -> usize {
    (left / eager.max(1)).clamp(1, AHEAD_MAX)
}

/// The part of [`holds_ahead`] that the head's own state decides: the pool's eager size and the
/// tasks left in the head. A worker asks it first, and reads `HELP`, a line that other CPUs
/// write, only when it says yes.
#[must_use]
pub fn may_hold_ahead(left: usize, eager: usize) -> bool {
    eager > 1 && left >= AHEAD_LEFT
}

/// Whether a worker other than the holder takes a held item now (H5, H6): `then` is what an
/// earlier look saw in the holder's slot, `now` what this look sees, each `Some(puts)` when it
/// held an item (`puts`: items its holder had ever put there) or `None` when it was empty. The
/// same item was held throughout exactly when both looks saw one with the same count: only the
/// holder puts, and every put counts.
#[must_use]
pub fn taken_over(then: Option<u64>, now: Option<u64>) -> bool {
    matches!((then, now), (Some(then), Some(now)) if then == now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_runs_its_held_items_in_a_row_up_to_the_bound_then_only_with_nothing_waiting() {
        for in_a_row in 0..MAX_IN_A_ROW {
            assert!(!must_look(in_a_row));
            assert!(runs_held(in_a_row, true));
        }
        assert!(must_look(MAX_IN_A_ROW));
        assert!(!runs_held(MAX_IN_A_ROW, true));
        assert!(runs_held(MAX_IN_A_ROW, false));
        assert!(!runs_held(MAX_IN_A_ROW + 5, true));
    }

    #[test]
    fn a_worker_holds_ahead_only_with_tasks_left_for_others_and_nobody_idle() {
        assert!(holds_ahead(AHEAD_LEFT, false, 2));
        assert!(holds_ahead(100, false, 8));
        assert!(!holds_ahead(AHEAD_LEFT - 1, false, 8));
        assert!(!holds_ahead(0, false, 8));
        // Someone idle: W4 wakes it for the tasks left instead.
        assert!(!holds_ahead(100, true, 8));
        // One worker: nobody to contend with for the head lock.
        assert!(!holds_ahead(100, false, 1));
    }

    #[test]
    fn a_worker_holds_its_share_of_the_head_ahead_at_least_one_and_at_most_the_bound() {
        assert_eq!(ahead(AHEAD_LEFT, 2), 1);
        assert_eq!(ahead(3, 2), 1);
        assert_eq!(ahead(4, 2), 2);
        assert_eq!(ahead(20_000, 2), AHEAD_MAX);
        assert_eq!(ahead(10, 8), 1);
        assert_eq!(ahead(80, 8), AHEAD_MAX);
        for left in AHEAD_LEFT..64 {
            for eager in 2..17 {
                let n = ahead(left, eager);
                assert!((1..=AHEAD_MAX).contains(&n));
                // What is left behind is at least what each other worker would take.
                assert!(left - n >= n.min(left / eager), "left {left} eager {eager}");
            }
        }
    }

    #[test]
    fn the_heads_own_state_says_no_whenever_holding_ahead_would_be_no_whatever_help_says() {
        for left in 0..5 {
            for eager in 1..4 {
                assert_eq!(may_hold_ahead(left, eager), holds_ahead(left, false, eager));
                assert!(may_hold_ahead(left, eager) || !holds_ahead(left, true, eager));
            }
        }
    }

    #[test]
    fn another_worker_takes_an_item_only_when_both_looks_saw_the_same_one_held() {
        assert!(taken_over(Some(7), Some(7)));
        // Put again between the looks: the holder came back meanwhile.
        assert!(!taken_over(Some(7), Some(8)));
        // Empty at either look.
        assert!(!taken_over(None, Some(7)));
        assert!(!taken_over(Some(7), None));
        assert!(!taken_over(None, None));
    }
}
