//! A worker's held slot (H2-H8 of `pool/README.md`): the task that the worker's running task
//! queued, or the tasks it took from the head ahead (at most `policy::held::AHEAD_MAX`), for
//! the worker to run next, oldest first, which others may take.
//!
//! The slot is a state word and a row of bare cells beside it, as the spinners' mailbox is a
//! word and a cell: a lock would cost the owner two locked instructions to put and two to
//! take, on every task of a chain. The word is `puts << 8 | front << 5 | tasks << 2 | state`:
//!
//! * `state`: `EMPTY`, `FULL`, or `BUSY` while someone other than the owner looks inside;
//! * `tasks`: how many tasks the slot holds, in its cells `front .. front + tasks`;
//! * `puts`: the owner's puts, so that two looks some time apart tell the same tasks from new
//!   ones.
//!
//! Only the owner puts, into an empty slot only, from cell 0, with one swap; `front` only moves
//! on until the slot is empty again, so the tasks never run past the last cell. The owner takes
//! its oldest task with one compare-and-swap that moves `front` past it (and the word to
//! `EMPTY` with the last): the cell it leaves is its own from then on, since nobody else
//! reaches a cell outside `front .. front + tasks`, and only the owner puts. Anyone else moves
//! the word from `FULL` to `BUSY`, takes the oldest task or the one it looks for (moving the
//! cells behind it up), and stores the word back, `FULL` with the tasks left and the same
//! `puts`, or `EMPTY`.
//! With `chain.rs`, `lane_lock.rs` and `mailbox.rs` beside it, this is one of the four files of
//! the pool that may use `unsafe`; loom's cell checks its accesses.
#![allow(unsafe_code)]

use crate::sync::atomic::{AtomicU64, Ordering};
use crate::sync::cell::UnsafeCell;
use crate::sync::thread;

/// Nothing held: only the owner reaches the cells.
const EMPTY: u64 = 0;
/// Tasks held: the owner takes the oldest, and whoever moves the word to `BUSY` reaches them.
const FULL: u64 = 1;
/// Someone other than the owner is taking or looking at the tasks.
const BUSY: u64 = 2;
/// The bits of the word that say which of the above it is.
const STATE: u64 = 3;
/// Where the count of tasks held starts in the word.
const TASKS_AT: u32 = 2;
/// Where the oldest task's cell starts in the word.
const FRONT_AT: u32 = 5;
/// Where the count of puts starts in the word.
const PUTS_AT: u32 = 8;
/// The mask of `front` and of `tasks`, each 3 bits of the word, once shifted down.
const FIELD: u64 = 7;
/// Tasks a slot holds at most, and its cells: the count's field holds 7.
pub(crate) const MOST: usize = FIELD as usize;
/// The bits of the word that count the puts.
const PUTS: u64 = !((1 << PUTS_AT) - 1);
/// One task more in the word's count.
const ONE_TASK: u64 = 1 << TASKS_AT;
/// One cell further in the word's `front`.
const ONE_CELL: u64 = 1 << FRONT_AT;

/// A word's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Word {
    /// The owner's puts.
    puts: u64,
    /// The cell of the oldest task.
    front: usize,
    /// Tasks held.
    tasks: usize,
    /// [`EMPTY`], [`FULL`] or [`BUSY`].
    state: u64,
}

impl Word {
    /// The fields of `word`.
    #[inline]
    fn of(word: u64) -> Word {
        Word {
            puts: word >> PUTS_AT,
            // Each at most `FIELD`.
            front: (word >> FRONT_AT & FIELD) as usize,
            tasks: (word >> TASKS_AT & FIELD) as usize,
            state: word & STATE,
        }
    }

    /// The word of these fields.
    #[inline]
    fn bits(self) -> u64 {
        self.puts << PUTS_AT
            | (self.front as u64 & FIELD) << FRONT_AT
            | (self.tasks as u64 & FIELD) << TASKS_AT
            | self.state
    }

    /// These fields with `tasks` tasks from cell `front` on: `FULL`, or `EMPTY` (from cell 0)
    /// with none.
    #[inline]
    fn holding(self, front: usize, tasks: usize) -> Word {
        debug_assert!(front + tasks <= MOST, "the tasks run past the last cell");
        if tasks == 0 {
            Word {
                front: 0,
                tasks: 0,
                state: EMPTY,
                ..self
            }
        } else {
            Word {
                front,
                tasks,
                state: FULL,
                ..self
            }
        }
    }
}

/// One worker's held tasks.
#[derive(Debug)]
pub(crate) struct HeldCell<T> {
    /// A: the fields of [`Word`]. The owner moves it from `EMPTY` to `FULL` (with tasks
    /// written) and takes from `FULL`, moving `front` on or the word to `EMPTY`; anyone else
    /// moves it from `FULL` to `BUSY` and back to `FULL` or `EMPTY`.
    word: AtomicU64,
    /// The cells of the tasks, `None` outside the word's range; the word makes every access
    /// exclusive (see the `Sync` impl).
    cells: [UnsafeCell<Option<T>>; MOST],
}

// SAFETY: the cells are the only fields that are not `Sync`, and the word hands each on so
// that one party at a time reaches it. While `EMPTY`, only the owner reaches any (nobody else
// acts on an empty slot). While `FULL`, the cells `front .. front + tasks` are reached only by
// whoever moves the word with a compare-and-swap (Acquire, reading the store, Release, that
// ended the previous access): the owner's move of `front` past one cell makes that cell its
// own, and a move to `BUSY` makes all of them the mover's until it stores `FULL` or `EMPTY`
// (Release), which the owner reads (Acquire) before it reaches them again. A cell outside the
// range is the owner's: it left it, and nobody else reaches it. Tasks move between threads,
// hence `T: Send`.
unsafe impl<T: Send> Sync for HeldCell<T> {}

impl<T> HeldCell<T> {
    /// An empty slot.
    pub(crate) fn new() -> Self {
        Self {
            word: AtomicU64::new(EMPTY),
            cells: std::array::from_fn(|_| UnsafeCell::new(None)),
        }
    }

    /// What the slot holds now: `Some(puts)` while it holds a task (a `BUSY` slot counts as
    /// holding one), `None` when empty. A hint: read without any claim.
    #[inline]
    pub(crate) fn held(&self) -> Option<u64> {
        let word = Word::of(self.word.load(Ordering::Relaxed));
        (word.state != EMPTY).then_some(word.puts)
    }

    /// How many tasks the slot holds now (a `BUSY` slot: as many as when the look began). A
    /// hint: read without any claim.
    pub(crate) fn len(&self) -> usize {
        Word::of(self.word.load(Ordering::Relaxed)).tasks
    }

    /// [`HeldCell::held`], read `SeqCst`: the watchdog's look, after its own `SeqCst` write
    /// (H6), the other half of the pair with [`HeldCell::put`].
    pub(crate) fn held_seqcst(&self) -> Option<u64> {
        let word = Word::of(self.word.load(Ordering::SeqCst));
        (word.state != EMPTY).then_some(word.puts)
    }

    /// The word, read by the owner before it reaches a cell: waits out a `BUSY` look.
    #[inline]
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

    /// Writes `task` into cell `at`, which the caller reaches alone and which holds no task.
    #[inline(always)]
    fn write(&self, at: usize, task: Option<T>) {
        // SAFETY: the caller's contract.
        self.cells[at].with_mut(|cell| unsafe { *cell = task });
    }

    /// Takes the task out of cell `at`, which the caller reaches alone.
    #[inline(always)]
    fn take_cell(&self, at: usize) -> Option<T> {
        // SAFETY: the caller's contract.
        self.cells[at].with_mut(|cell| unsafe { (*cell).take() })
    }

    /// (H2) The owner puts `task` into its empty slot (only the owner fills a slot, so one it
    /// saw empty stays empty). The new word is stored with a `SeqCst` swap: the put's half of
    /// the pair with the watchdog's look (H6), which reads the slot after its own `SeqCst`
    /// write.
    #[inline(always)]
    pub(crate) fn put(&self, task: T) {
        // Acquire: the `EMPTY` that ended another's take (Release).
        let word = Word::of(self.word.load(Ordering::Acquire));
        debug_assert_eq!(word.state, EMPTY, "a put into a slot that holds a task");
        // The slot is `EMPTY`: only the owner, this caller, reaches a cell, and nobody else
        // does until the swap below makes it `FULL`.
        self.write(0, Some(task));
        let full = Word {
            puts: word.puts + 1,
            ..word.holding(0, 1)
        };
        self.word.swap(full.bits(), Ordering::SeqCst);
    }

    /// (H8) The owner puts `first` and then what `more` gives, up to `ahead` tasks in all (at
    /// most [`MOST`]), oldest first, into its empty slot, with one swap as [`HeldCell::put`]'s.
    /// Returns how many it put.
    #[inline]
    pub(crate) fn put_all(
        &self,
        first: T,
        ahead: usize,
        mut more: impl FnMut() -> Option<T>,
    ) -> usize {
        // Acquire: the `EMPTY` that ended another's take (Release).
        let word = Word::of(self.word.load(Ordering::Acquire));
        debug_assert_eq!(word.state, EMPTY, "a put into a slot that holds a task");
        // As in `put`: `EMPTY`, so only this caller reaches a cell until the swap.
        self.write(0, Some(first));
        let mut put = 1;
        while put < ahead.min(MOST) {
            let Some(task) = more() else {
                break;
            };
            self.write(put, Some(task));
            put += 1;
        }
        let full = Word {
            puts: word.puts + 1,
            ..word.holding(0, put)
        };
        self.word.swap(full.bits(), Ordering::SeqCst);
        put
    }

    /// (H3, H7, H8) The owner takes its oldest held task, if any, with one compare-and-swap
    /// that moves `front` past it, or the word to `EMPTY` with the last. The tasks left keep
    /// their `puts`: they have been held since that put.
    #[inline]
    pub(crate) fn take_own(&self) -> Option<T> {
        // Acquire: the `FULL` or `EMPTY` that ended another's access (Release).
        let mut word = self.word.load(Ordering::Acquire);
        loop {
            if word & STATE != FULL {
                if word & STATE == BUSY {
                    word = self.settled();
                    continue;
                }
                return None;
            }
            // On the word's bits, as `Word::holding` would: the last task leaves the puts
            // alone (`EMPTY`, from cell 0); else `front` moves on and the count down.
            let left = if word >> TASKS_AT & FIELD == 1 {
                word & PUTS
            } else {
                word + ONE_CELL - ONE_TASK
            };
            match self
                .word
                .compare_exchange(word, left, Ordering::Acquire, Ordering::Relaxed)
            {
                // The cell `front` is now outside the slot's range: the owner's alone.
                Ok(_) => return self.take_cell(Word::of(word).front),
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

    /// (H5, H6) Anyone takes the oldest held task if the slot still holds tasks of the put it
    /// saw (`puts`).
    pub(crate) fn take_seen(&self, puts: u64) -> Option<T> {
        self.take_where(Some(puts), |_| true)
    }

    /// (H7, O4) Anyone takes the oldest held task for which `matches` is true (cancel, a
    /// re-formation, a sibling's steal).
    pub(crate) fn take_if(&self, matches: impl FnMut(&T) -> bool) -> Option<T> {
        self.take_where(None, matches)
    }

    /// Takes the oldest held task for which `matches` is true, when the slot holds tasks put
    /// as the `puts`-th if that is given. A look that finds another inside (`BUSY`) takes
    /// nothing; one whose compare-and-swap loses to the owner's take looks again.
    fn take_where(&self, puts: Option<u64>, mut matches: impl FnMut(&T) -> bool) -> Option<T> {
        let mut now = self.word.load(Ordering::Relaxed);
        let word = loop {
            let word = Word::of(now);
            if word.state != FULL || puts.is_some_and(|puts| puts != word.puts) {
                return None;
            }
            let busy = Word {
                state: BUSY,
                ..word
            };
            // Acquire: the store that made it `FULL` (Release, or the put's SeqCst swap).
            match self
                .word
                .compare_exchange(now, busy.bits(), Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => break word,
                Err(again) => now = again,
            }
        };
        // This caller moved the slot from `FULL` to `BUSY`: nobody else reaches the cells of
        // its range until it stores `FULL` or `EMPTY` below.
        let cell = |k: usize| word.front + k;
        let found = (0..word.tasks).find(|&k| {
            // SAFETY: a cell of the range; only read here.
            self.cells[cell(k)].with(|task| unsafe { (*task).as_ref() }.is_some_and(&mut matches))
        });
        let after = match found {
            None => word.holding(word.front, word.tasks),
            Some(0) => word.holding(word.front + 1, word.tasks - 1),
            Some(_) => word.holding(word.front, word.tasks - 1),
        };
        let taken = found.and_then(|k| {
            let task = self.take_cell(cell(k));
            // Past the oldest, the tasks behind it move up one cell, so that the range stays
            // whole (the oldest's cell is left by moving `front` past it).
            if k > 0 {
                for j in k + 1..word.tasks {
                    let behind = self.take_cell(cell(j));
                    self.write(cell(j - 1), behind);
                }
            }
            task
        });
        // Release: the owner reads it (Acquire) before it reaches the cells again.
        self.word.store(after.bits(), Ordering::Release);
        taken
    }
}
