//! The budget: how much of the time left each step gets.

use std::time::{Duration, Instant};

/// Time kept back from the steps for what follows the last one (writing the reports, the page).
const RESERVE: Duration = Duration::from_millis(200);

/// The report's clock: when it started and how long it may take.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    started: Instant,
    budget: Duration,
}

impl Clock {
    /// A clock started now, for `budget`.
    pub(crate) fn start(budget: Duration) -> Clock {
        Clock {
            started: Instant::now(),
            budget,
        }
    }

    /// Time since the start.
    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Time left of the budget (zero once it is spent).
    pub(crate) fn left(&self) -> Duration {
        self.budget.saturating_sub(self.elapsed())
    }

    /// The budget.
    pub(crate) fn budget(&self) -> Duration {
        self.budget
    }

    /// The share of a step of `weight` when the steps still to run, this one included, weigh
    /// `remaining` in all: the time left, less the reserve, in proportion.
    pub(crate) fn share(&self, weight: usize, remaining: usize) -> Duration {
        share_of(self.left().saturating_sub(RESERVE), weight, remaining)
    }
}

/// `left` in proportion `weight / remaining`.
fn share_of(left: Duration, weight: usize, remaining: usize) -> Duration {
    if remaining == 0 {
        return Duration::ZERO;
    }
    left.mul_f64(weight.min(remaining) as f64 / remaining as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_proportional_to_weight_and_the_last_takes_all() {
        let left = Duration::from_secs(100);
        assert_eq!(share_of(left, 1, 4), Duration::from_secs(25));
        assert_eq!(share_of(left, 3, 3), left);
        assert_eq!(share_of(left, 1, 0), Duration::ZERO);
    }
}
