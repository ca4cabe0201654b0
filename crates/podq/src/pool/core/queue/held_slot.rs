//! A worker's held slot (H2-H7 of `pool/README.md`): the one task that the worker's running
//! task queued, for the worker to run next, which others may take.
//!
//! The slot is a state word and a bare cell beside it, as the spinners' mailbox is: a lock
//! would cost the owner two locked instructions to put and two to take, on every task of a
//! chain. The word is `puts << 2 | state`: `EMPTY`, `FULL`, or `BUSY` while someone other than
//! the owner looks inside; `puts` counts the owner's puts, so that two looks some time apart
//! tell the same task from a new one. Only the owner puts, into an empty slot only, with one
//! swap, and it takes with one compare-and-swap. Anyone else takes only a `FULL` slot, through
//! `BUSY`. With `chain.rs`, `lane_lock.rs` and `mailbox.rs` beside it, this is one of
//! the four files of the pool that may use `unsafe`; loom's cell checks its accesses.
#![allow(unsafe_code)]

use crate::sync::atomic::{AtomicU64, Ordering};
use crate::sync::cell::UnsafeCell;
use crate::sync::thread;

/// Nothing held: only the owner reaches the cell.
const EMPTY: u64 = 0;
/// A task held: whoever moves the word from it reaches the cell.
const FULL: u64 = 1;
/// Someone other than the owner is taking or looking at the task.
const BUSY: u64 = 2;
/// The bits of the word that say which of the above it is.
const STATE: u64 = 3;

/// The word of `puts` puts in `state`.
#[inline]
fn word(puts: u64, state: u64) -> u64 {
    puts << 2 | state
}

/// One worker's held task.
#[derive(Debug)]
pub(crate) struct HeldCell<T> {
    /// A: `puts << 2` and [`EMPTY`], [`FULL`] or [`BUSY`]. The owner moves it from `EMPTY` to
    /// `FULL` (with a task written) and from `FULL` to `EMPTY`; anyone else from `FULL` to
    /// `BUSY` and back to `FULL` or `EMPTY`.
    word: AtomicU64,
    /// The held task; the word makes every access exclusive (see the `Sync` impl).
    cell: UnsafeCell<Option<T>>,
}

// SAFETY: the cell is the only field that is not `Sync`, and the word hands it on so that one
// party at a time reaches it: while `EMPTY`, only the owner (nobody else acts on an empty
// slot); while `FULL`, whoever moves the word away from it with a compare-and-swap (Acquire,
// reading the `FULL` store, Release, that ended the previous access); while `BUSY`, the one
// that stored it, until it stores `FULL` or `EMPTY` (Release), which the owner reads (Acquire)
// before it touches the cell again. Tasks move between threads, hence `T: Send`.
unsafe impl<T: Send> Sync for HeldCell<T> {}

impl<T> HeldCell<T> {
    /// An empty slot.
    pub(crate) fn new() -> Self {
        Self {
            word: AtomicU64::new(EMPTY),
            cell: UnsafeCell::new(None),
        }
    }

    /// What the slot holds now: `Some(puts)` while it holds a task (a `BUSY` slot counts as
    /// holding one), `None` when empty. A hint: read without any claim.
    #[inline]
    pub(crate) fn held(&self) -> Option<u64> {
        let word = self.word.load(Ordering::Relaxed);
        (word & STATE != EMPTY).then_some(word >> 2)
    }

    /// [`HeldCell::held`], read `SeqCst`: the watchdog's look, after its own `SeqCst` write
    /// (H6), the other half of the pair with [`HeldCell::put`].
    pub(crate) fn held_seqcst(&self) -> Option<u64> {
        let word = self.word.load(Ordering::SeqCst);
        (word & STATE != EMPTY).then_some(word >> 2)
    }

    /// The word, read by the owner before it reaches the cell: waits out a `BUSY` look.
    fn settled(&self) -> u64 {
        loop {
            // Acquire: the `FULL` or `EMPTY` that ended another's access (Release).
            let word = self.word.load(Ordering::Acquire);
            if word & STATE != BUSY {
                return word;
            }
            thread::yield_now();
        }
    }

    /// (H2) The owner puts `task` into its empty slot (only the owner fills a slot, so one it
    /// saw empty stays empty). The new word is stored with a `SeqCst` swap: the put's half of
    /// the pair with the watchdog's look (H6), which reads the slot after its own `SeqCst`
    /// write.
    #[inline(always)]
    pub(crate) fn put(&self, task: T) {
        // Acquire: the `EMPTY` that ended another's take (Release).
        let word = self.word.load(Ordering::Acquire);
        debug_assert_eq!(word & STATE, EMPTY, "a put into a slot that holds a task");
        // SAFETY: the slot is `EMPTY`: only the owner, this caller, reaches the cell, and
        // nobody else does until the swap below makes it `FULL`.
        self.cell.with_mut(|cell| unsafe { *cell = Some(task) });
        self.word
            .swap(self::word((word >> 2) + 1, FULL), Ordering::SeqCst);
    }

    /// (H3, H7) The owner takes its held task, if any.
    pub(crate) fn take_own(&self) -> Option<T> {
        let mut word = self.settled();
        loop {
            if word & STATE != FULL {
                return None;
            }
            match self.word.compare_exchange(
                word,
                self::word(word >> 2, EMPTY),
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                // SAFETY: the slot is now `EMPTY`, which only the owner (this caller) reaches.
                Ok(_) => return self.cell.with_mut(|cell| unsafe { (*cell).take() }),
                Err(now) => {
                    word = if now & STATE == BUSY {
                        self.settled()
                    } else {
                        now
                    }
                }
            }
        }
    }

    /// (H5, H6) Anyone takes the held task if the slot still holds the one it saw
    /// (`puts`).
    pub(crate) fn take_seen(&self, puts: u64) -> Option<T> {
        self.take_where(Some(puts), |_| true)
    }

    /// (H7) Anyone takes the held task if `matches` is true for it (cancel, a re-formation).
    pub(crate) fn take_if(&self, matches: impl FnOnce(&T) -> bool) -> Option<T> {
        self.take_where(None, matches)
    }

    /// Takes the held task when the slot holds one, put as the `puts`-th if that is given, for
    /// which `matches` is true.
    fn take_where(&self, puts: Option<u64>, matches: impl FnOnce(&T) -> bool) -> Option<T> {
        let word = self.word.load(Ordering::Relaxed);
        if word & STATE != FULL || puts.is_some_and(|puts| puts != word >> 2) {
            return None;
        }
        // Acquire: the store that made it `FULL` (Release, or the put's SeqCst swap).
        self.word
            .compare_exchange(
                word,
                self::word(word >> 2, BUSY),
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .ok()?;
        // SAFETY: this caller moved the slot from `FULL` to `BUSY`; nobody else reaches the
        // cell until it stores `FULL` or `EMPTY` below.
        let taken = self.cell.with_mut(|cell| unsafe {
            if (*cell).as_ref().is_some_and(matches) {
                (*cell).take()
            } else {
                None
            }
        });
        let state = if taken.is_some() { EMPTY } else { FULL };
        // Release: the owner reads it (Acquire) before it reaches the cell again.
        self.word
            .store(self::word(word >> 2, state), Ordering::Release);
        taken
    }
}
