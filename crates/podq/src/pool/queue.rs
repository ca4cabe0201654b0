//! The parts of the pool's queue, each a FIFO of waiting tasks: the lanes of the tail, which
//! pushers fill under their lane's lock, and the head, which workers take from under the head
//! lock and refill from one lane in one swap. Also the counts of how often a lock was taken and
//! found held.
//!
//! This is plain data: every function takes `&mut self`, so it can only be reached through
//! the lock that guards it (see [`super::idle`]).

use std::collections::VecDeque;

/// The waiting tasks of one pool, oldest first.
#[derive(Debug)]
pub(crate) struct Queue<T> {
    /// L: the tasks, in queueing order.
    items: VecDeque<T>,
}

impl<T> Queue<T> {
    /// An empty queue.
    pub(crate) fn new() -> Self {
        Self {
            items: VecDeque::new(),
        }
    }

    /// Appends `item` at the tail.
    pub(crate) fn push_back(&mut self, item: T) {
        self.items.push_back(item);
    }

    /// Takes the oldest item.
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        self.items.pop_front()
    }

    /// Moves every item of `tail` here, in order, and leaves `tail` empty; the caller holds
    /// both locks (the head's and the lane's). `self` is empty (the head is refilled only when
    /// it runs dry), so this is one swap of two buffers, whatever the number of items: `tail`
    /// keeps the head's old buffer and its capacity for the next pushes.
    pub(crate) fn refill_from(&mut self, tail: &mut Queue<T>) {
        if self.items.is_empty() {
            std::mem::swap(&mut self.items, &mut tail.items);
        } else {
            self.items.append(&mut tail.items);
        }
    }

    /// How many items wait.
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether no item waits.
    pub(crate) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Takes out the oldest item for which `matches` is true, keeping the others in order.
    pub(crate) fn remove_if(&mut self, matches: impl FnMut(&T) -> bool) -> Option<T> {
        let at = self.items.iter().position(matches)?;
        self.items.remove(at)
    }
}

/// How often a pool's lock was taken, and how often it was held by another thread at the time.
///
/// Kept inside the locked state, so counting costs no atomic operation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct LockCounts {
    /// L: acquisitions by pushers and workers.
    pub(crate) acquisitions: u64,
    /// L: acquisitions whose first `try_lock` failed because another thread held the lock.
    pub(crate) contended: u64,
}

impl LockCounts {
    /// Records one acquisition; `contended` when the lock was found held.
    pub(crate) fn record(&mut self, contended: bool) {
        self.acquisitions += 1;
        if contended {
            self.contended += 1;
        }
    }

    /// The counts of two locks together.
    pub(crate) fn plus(self, other: LockCounts) -> LockCounts {
        LockCounts {
            acquisitions: self.acquisitions + other.acquisitions,
            contended: self.contended + other.contended,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_come_out_in_queueing_order() {
        let mut q = Queue::new();
        assert!(q.is_empty());
        for i in 0..5 {
            q.push_back(i);
        }
        assert_eq!(q.len(), 5);
        let out: Vec<i32> = std::iter::from_fn(|| q.pop_front()).collect();
        assert_eq!(out, vec![0, 1, 2, 3, 4]);
        assert!(q.is_empty());
    }

    #[test]
    fn remove_if_takes_the_oldest_match_and_keeps_the_order_of_the_rest() {
        let mut q = Queue::new();
        for i in [1, 2, 3, 4, 2] {
            q.push_back(i);
        }
        assert_eq!(q.remove_if(|&i| i == 2), Some(2));
        assert_eq!(q.remove_if(|&i| i == 9), None);
        let out: Vec<i32> = std::iter::from_fn(|| q.pop_front()).collect();
        assert_eq!(out, vec![1, 3, 4, 2]);
    }

    #[test]
    fn a_refill_moves_the_whole_tail_in_order_behind_what_waits() {
        let (mut head, mut tail) = (Queue::new(), Queue::new());
        for i in 0..3 {
            tail.push_back(i);
        }
        head.refill_from(&mut tail);
        assert!(tail.is_empty());
        tail.push_back(3);
        head.push_back(9);
        assert_eq!(head.pop_front(), Some(0));
        // Not the pool's use (it refills an empty head), but the order still holds.
        head.refill_from(&mut tail);
        let out: Vec<i32> = std::iter::from_fn(|| head.pop_front()).collect();
        assert_eq!(out, vec![1, 2, 9, 3]);
    }

    #[test]
    fn lock_counts_of_two_locks_add_up() {
        let a = LockCounts {
            acquisitions: 5,
            contended: 1,
        };
        let b = LockCounts {
            acquisitions: 2,
            contended: 2,
        };
        assert_eq!(
            a.plus(b),
            LockCounts {
                acquisitions: 7,
                contended: 3
            }
        );
    }

    #[test]
    fn lock_counts_count_contention_separately() {
        let mut c = LockCounts::default();
        c.record(false);
        c.record(true);
        c.record(false);
        assert_eq!(
            c,
            LockCounts {
                acquisitions: 3,
                contended: 1
            }
        );
    }
}
