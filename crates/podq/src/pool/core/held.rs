//! Held items, the core's side (H1-H8 of `pool/README.md`): each worker's **held slot**, where
//! a worker keeps the one task that its running task queued to this pool and runs it as soon
//! as that task ends, or the tasks it took from the head ahead, and the ways another worker,
//! the stall watchdog, cancel and a re-formation take a held task instead. The decisions are
//! `policy::held`'s.
//!
//! A slot's tasks sit in a [`HeldCell`] (`queue/held_slot.rs`): a state word and a row of
//! cells, no lock. Its word also counts its worker's puts, so that two looks some time apart
//! tell whether the same tasks were held throughout (`policy::held::taken_over`).

use crate::policy::held as policy;
use crate::sync::atomic::{after_seqcst_rmw, AtomicBool, AtomicU64, Ordering};
use crate::sync::CachePadded;

use super::queue::held_slot::{self, HeldCell};
use super::queue::Head;
use super::{Core, WorkerSlot};

// A slot holds every task a worker takes ahead.
const _: () = assert!(policy::AHEAD_MAX <= held_slot::MOST);

/// The word the watchdog keeps of an empty slot in `HeldSlot::looked`.
const NOTHING: u64 = u64::MAX;

/// One worker's held slot, on lines of its own.
#[derive(Debug)]
pub(crate) struct HeldSlot<T> {
    /// The held task. Its owner puts and takes; anyone else only takes.
    cell: HeldCell<T>,
    /// A: whether a worker owns the slot (H1, H7). Only that worker puts.
    owned: AtomicBool,
    /// A: the puts the watchdog saw held at its last look ([`NOTHING`]: none) (H6); only the
    /// watchdog writes it. Relaxed.
    looked: AtomicU64,
    /// A: held tasks their holder ran (H3); only the owner writes it. Relaxed: a statistic.
    ran: AtomicU64,
    /// A: tasks the owner ran to the end while it ran held ones (`WorkerSlot::ran`, moved here
    /// so that the pool's `executed` does not wait for the owner's next look at the head).
    /// Only the owner writes it. Relaxed: a statistic.
    executed: AtomicU64,
    /// A: held tasks another worker or the watchdog took (H5, H6). Relaxed: a statistic.
    taken: AtomicU64,
    /// A: whether the held task, if still there, was taken from the head ahead (H8) rather
    /// than queued by the owner's running task. Only the owner writes it; a sibling's steal
    /// reads it as a hint (O4), and the word decides what it takes. `Relaxed`.
    ahead: AtomicBool,
    /// A: tasks held ahead that their holder ran (H8). Only the owner writes it. Relaxed: a
    /// statistic.
    ahead_ran: AtomicU64,
    /// A: whether the owner's running task has queued more than one task to this pool, so that
    /// each of its tasks is pushed (H2); cleared when the owner comes back for its next task
    /// (H3) or gives the slot back (H7). Only the owner reads and writes it. Relaxed.
    fanned: AtomicBool,
}

impl<T> HeldSlot<T> {
    fn new() -> Self {
        Self {
            cell: HeldCell::new(),
            owned: AtomicBool::new(false),
            looked: AtomicU64::new(NOTHING),
            ran: AtomicU64::new(0),
            executed: AtomicU64::new(0),
            taken: AtomicU64::new(0),
            ahead: AtomicBool::new(false),
            ahead_ran: AtomicU64::new(0),
            fanned: AtomicBool::new(false),
        }
    }

    /// Bumps a counter that only one thread writes, without a locked instruction.
    #[inline]
    fn add(counter: &AtomicU64, n: u64) {
        counter.store(counter.load(Ordering::Relaxed) + n, Ordering::Relaxed);
    }

    /// Takes the held task if it is still the `puts`-th, counting it as taken from its holder.
    fn take_over(&self, puts: u64) -> Option<T> {
        let task = self.cell.take_seen(puts)?;
        self.taken.fetch_add(1, Ordering::Relaxed);
        Some(task)
    }
}

/// The held slots of a pool: one per worker up to the pool's eager size (workers past it, which
/// the watchdog adds for blocked ones, hold nothing), and whether the watchdog watches them.
#[derive(Debug)]
pub(crate) struct Held<T> {
    /// I: the slots.
    slots: Box<[CachePadded<HeldSlot<T>>]>,
    /// A: whether the watchdog watches the slots (H2, H6): set by the put or the look that
    /// registers the one watch, cleared by a look before it reads the slots.
    watched: CachePadded<AtomicBool>,
}

impl<T> Held<T> {
    /// `slots` empty slots, nobody watching.
    pub(super) fn new(slots: usize) -> Self {
        Self {
            slots: (0..slots)
                .map(|_| CachePadded::new(HeldSlot::new()))
                .collect(),
            watched: CachePadded::new(AtomicBool::new(false)),
        }
    }
}

/// A worker's side of holding: its slot and its count of held tasks run in a row.
#[derive(Debug, Default)]
pub(crate) struct Holder {
    /// The slot this worker owns, if it got one (H1).
    index: Option<usize>,
    /// Held tasks run in a row since the worker last took one from the queue (H3).
    in_a_row: u32,
    /// What each slot's word said when this worker began to spin (H4).
    seen: Vec<Option<u64>>,
    /// Whether the worker's thread must have the watchdog watch the held slots, after a put
    /// ahead into an empty slot (H8, as H2).
    watch: bool,
}

impl Holder {
    /// Whether the worker's thread must have the watchdog watch the held slots now (H8); the
    /// request is taken.
    pub(super) fn take_watch(&mut self) -> bool {
        std::mem::take(&mut self.watch)
    }
}

/// What [`Core::hold_first`] did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Hold<T> {
    /// The slot took the task; `watch`: the caller must have the watchdog watch the held slots
    /// (H2).
    Held {
        /// Whether the caller registers the watch.
        watch: bool,
    },
    /// The task, for the caller to push as any other (P1-P7).
    Push(T),
    /// The running task's first task, taken back out of the slot at its second queue call, and
    /// the second: the caller pushes both, in this order (H2).
    PushBoth(T, T),
}

/// What the watchdog's look at the held slots found (H6).
#[derive(Debug)]
pub(crate) struct HeldLook<T> {
    /// Tasks held since the last look, now taken: the caller pushes each as any other.
    pub(crate) taken: Vec<T>,
    /// Whether this watch goes on: tasks are still held, and no put registered another.
    pub(crate) keep: bool,
}

/// The held slots' counts, for the pool's statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct HeldCounts {
    /// Tasks held now.
    pub(crate) held: usize,
    /// Held tasks their holder ran.
    pub(crate) ran: u64,
    /// Tasks run to the end by holders, counted in the slots (see `HeldSlot::executed`).
    pub(crate) executed: u64,
    /// Held tasks another worker or the watchdog took.
    pub(crate) taken: u64,
    /// Tasks held ahead (H8) that their holder ran.
    pub(crate) ahead_ran: u64,
}

impl<T> Core<T> {
    /// (H1) A worker that starts claims a free held slot, if one is left.
    pub(crate) fn claim_held(&self, slot: &mut WorkerSlot) -> Option<usize> {
        let index = self.held.slots.iter().position(|s| {
            s.owned
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        })?;
        slot.holder.index = Some(index);
        Some(index)
    }

    /// (H7) A worker that exits gives its slot back, with the tasks still held, if any (none
    /// when it leaves from [`Core::next`], which runs them first): the caller pushes them, in
    /// this order.
    pub(crate) fn release_held(&self, index: usize) -> Vec<T> {
        let slot = &self.held.slots[index];
        let left = std::iter::from_fn(|| slot.cell.take_own()).collect();
        slot.fanned.store(false, Ordering::Relaxed);
        slot.owned.store(false, Ordering::Release);
        left
    }

    /// [`Core::fanned_out`], then [`Core::hold_first`] unless it said so: what
    /// `Pool::push_held` does, for the tests to call in one step.
    #[cfg(test)]
    pub(crate) fn hold(&self, index: usize, item: T) -> Hold<T> {
        if self.fanned_out(index) {
            return Hold::Push(item);
        }
        self.hold_first(index, item)
    }

    /// (H2) The worker that owns slot `index` holds `item`, the first task that the task it
    /// runs queues, in its empty slot. At the running task's second queue call, the first comes
    /// back out of the slot, if nobody took it meanwhile, and both are for the caller to push,
    /// in their order; so is every later one, until the worker comes back for its next task:
    /// the caller asks [`Core::fanned_out`] first, and calls this only when it says no. A slot
    /// that holds a task ahead (H8) keeps it, and `item` is pushed. After a put (its `SeqCst`
    /// swap), reads whether the watchdog watches, and registers the watch if nobody does (the
    /// pair with H6's look).
    #[inline(always)]
    pub(crate) fn hold_first(&self, index: usize, item: T) -> Hold<T> {
        let slot = &self.held.slots[index];
        // Only this worker puts, so an empty slot stays empty; a full one may empty meanwhile
        // (H5-H7).
        if slot.cell.held().is_none() {
            if slot.ahead.load(Ordering::Relaxed) {
                slot.ahead.store(false, Ordering::Relaxed);
            }
            return Hold::Held {
                watch: self.put_held(index, item),
            };
        }
        if slot.ahead.load(Ordering::Relaxed) {
            return Hold::Push(item);
        }
        slot.fanned.store(true, Ordering::Relaxed);
        match slot.cell.take_own() {
            Some(first) => Hold::PushBoth(first, item),
            None => Hold::Push(item),
        }
    }

    /// (H2) Whether the task running on the worker that owns slot `index` has queued two tasks
    /// already: its next ones are pushed as any other. Asked before [`Core::hold_first`], so
    /// that a fan-out's task does not move through [`Hold`] on its way to the pool.
    #[inline(always)]
    pub(crate) fn fanned_out(&self, index: usize) -> bool {
        self.held.slots[index].fanned.load(Ordering::Relaxed)
    }

    /// (H2, H8) Puts `item` into the empty slot `index`; returns whether the watchdog must
    /// watch.
    #[inline(always)]
    fn put_held(&self, index: usize, item: T) -> bool {
        self.held.slots[index].cell.put(item);
        after_seqcst_rmw();
        self.watch_after_put()
    }

    /// (H2, H8) After a put's `SeqCst` swap: whether the putter must have the watchdog watch
    /// (nobody does yet, and this call took the watch).
    #[inline(always)]
    fn watch_after_put(&self) -> bool {
        let watched = &self.held.watched;
        !watched.load(Ordering::SeqCst) && !watched.swap(true, Ordering::Relaxed)
    }

    /// (H8) A worker that took a task from the head (`left` more wait there) also takes the
    /// next ones into its empty held slot, when `policy::held::holds_ahead` says so, as many as
    /// `policy::held::ahead` says. Under the head lock, so cancel and a re-formation, which
    /// look in the head before the slots, find each task in one of the two. They count in
    /// `started`: they have left the head.
    #[inline]
    pub(super) fn hold_ahead(&self, head: &mut Head<T>, slot: &mut WorkerSlot) {
        let Some(index) = slot.holder.index else {
            return;
        };
        let (left, eager) = (self.in_head(head), self.limits.eager_workers);
        // The head's own state first, then the worker's slot (only this worker puts, so an
        // empty slot stays empty), then `HELP`, which other CPUs write.
        if !policy::may_hold_ahead(left, eager)
            || self.held.slots[index].cell.held().is_some()
            || !policy::holds_ahead(left, self.hint.help(), eager)
        {
            return;
        }
        self.hold_ahead_now(head, slot, index, policy::ahead(left, eager));
    }

    /// [`Core::hold_ahead`] once it decided to: takes the head's next `ahead` tasks into slot
    /// `index`.
    #[inline(never)]
    fn hold_ahead_now(
        &self,
        head: &mut Head<T>,
        slot: &mut WorkerSlot,
        index: usize,
        ahead: usize,
    ) {
        let Some(first) = self.take(head) else {
            return;
        };
        let held = &self.held.slots[index];
        held.ahead.store(true, Ordering::Relaxed);
        let put = held.cell.put_all(first, ahead, || self.take(head));
        head.started += put as u64;
        after_seqcst_rmw();
        slot.holder.watch |= self.watch_after_put();
    }

    /// (H3) The worker loop's first look, before [`Core::next`]: the worker's held task,
    /// unless the worker has just arrived (W1 comes first then, and `next` looks). Returns
    /// whether it looked, and the task if there was one.
    #[inline(always)]
    pub(crate) fn take_held_first(
        &self,
        slot: &mut WorkerSlot,
        lane_here: impl Fn() -> usize,
    ) -> (bool, Option<T>) {
        if slot.coming {
            return (false, None);
        }
        (true, self.take_held(slot, lane_here))
    }

    /// (H3) The worker, back from a task, takes its held task, unless it has run
    /// `policy::held::MAX_IN_A_ROW` in a row and tasks wait in the queue: then the held task
    /// goes to the back of the lane of the worker's CPU (`lane_here`) as P2w does, and the
    /// worker goes on to W2.
    #[inline]
    pub(super) fn take_held(
        &self,
        slot: &mut WorkerSlot,
        lane_here: impl Fn() -> usize,
    ) -> Option<T> {
        let index = slot.holder.index?;
        // (H2) The task that may have queued several has ended.
        let fanned = &self.held.slots[index].fanned;
        if fanned.load(Ordering::Relaxed) {
            fanned.store(false, Ordering::Relaxed);
        }
        // Only this worker puts, so an empty slot stays empty.
        if self.held.slots[index].cell.held().is_none() {
            slot.holder.in_a_row = 0;
            return None;
        }
        if self.held.slots[index].ahead.load(Ordering::Relaxed) {
            return self.take_ahead(slot, index);
        }
        self.take_held_from(slot, index, lane_here)
    }

    /// [`Core::take_held`] once the worker's slot `index` holds a task.
    #[inline(never)]
    fn take_held_from(
        &self,
        slot: &mut WorkerSlot,
        index: usize,
        lane_here: impl Fn() -> usize,
    ) -> Option<T> {
        let held = &self.held.slots[index];
        let in_a_row = slot.holder.in_a_row;
        let look = policy::must_look(in_a_row);
        let others_wait = look && self.others_wait();
        // The task stays in its `Option` on the way out: unwrapped and wrapped again, it would
        // be copied twice more.
        let item = held.cell.take_own();
        if item.is_some() && policy::runs_held(in_a_row, others_wait) {
            slot.holder.in_a_row = if look { 0 } else { in_a_row + 1 };
            HeldSlot::<T>::add(&held.ran, 1);
            HeldSlot::<T>::add(&held.executed, std::mem::take(&mut slot.ran));
            return item;
        }
        slot.holder.in_a_row = 0;
        if let Some(item) = item {
            self.push_for_self(lane_here(), item);
        }
        None
    }

    /// (H8) The worker takes the oldest task it held ahead, if nobody took it over, and runs it
    /// as a task of the queue: not counted as run by its queuer, and not in a row of held ones.
    /// The `ahead` flag stays as it is until the next put into the empty slot: H2's clears
    /// it, H8's sets it.
    #[inline(never)]
    fn take_ahead(&self, slot: &mut WorkerSlot, index: usize) -> Option<T> {
        let held = &self.held.slots[index];
        slot.holder.in_a_row = 0;
        // Kept in its `Option` on the way out, as in `take_held_from`.
        let item = held.cell.take_own();
        if item.is_some() {
            HeldSlot::<T>::add(&held.ahead_ran, 1);
            HeldSlot::<T>::add(&held.executed, std::mem::take(&mut slot.ran));
        }
        item
    }

    /// (H8, O4) A sibling's worker or the rescuer, taking this pool's oldest waiting task
    /// (`Core::steal`), takes a task held ahead first: it left the head before every task still
    /// there, and its holder is busy. Counted as taken from its holder. The `ahead` flag is a
    /// hint read without the owner: a stale one may let it take a task the owner's running
    /// task queued (H2), which is then run by the sibling as a task taken over (H5) would be.
    pub(super) fn take_held_ahead(&self) -> Option<T> {
        self.held.slots.iter().find_map(|held| {
            if !held.ahead.load(Ordering::Relaxed) {
                return None;
            }
            let task = held.cell.take_if(|_| true)?;
            held.taken.fetch_add(1, Ordering::Relaxed);
            Some(task)
        })
    }

    /// Whether tasks wait in the queue: in a lane, or in the head as the last worker to look
    /// there left it (`Core::head_waits`), read without the head lock.
    fn others_wait(&self) -> bool {
        self.lanes_len() > 0 || self.head_waits.load(Ordering::Relaxed)
    }

    /// (H4) A worker about to spin notes what every slot holds; nothing when no slot holds a
    /// task (none can then be held throughout the spin).
    pub(super) fn mark_held(&self, slot: &mut WorkerSlot) {
        let seen = &mut slot.holder.seen;
        seen.clear();
        if self.held.slots.iter().all(|s| s.cell.held().is_none()) {
            return;
        }
        seen.extend(self.held.slots.iter().map(|s| s.cell.held()));
    }

    /// (H5) Back from spinning with nothing to do: takes a task that another worker held
    /// throughout the spin (its holder ran on, or blocked).
    pub(super) fn take_over_held(&self, slot: &mut WorkerSlot) -> Option<T> {
        if slot.holder.seen.is_empty() {
            return None;
        }
        let own = slot.holder.index;
        let seen = std::mem::take(&mut slot.holder.seen);
        let found = self.held.slots.iter().enumerate().find_map(|(i, held)| {
            let then = *seen.get(i)?;
            let now = held.cell.held();
            if own == Some(i) || !policy::taken_over(then, now) {
                return None;
            }
            held.take_over(now?)
        });
        slot.holder.seen = seen;
        found
    }

    /// (H6) The watchdog's look: clears `watched`, then (after the `SeqCst` pair with H2)
    /// reads every slot; takes the tasks held since its last look (the caller pushes them),
    /// and goes on watching while tasks are held, unless a put registered another watch
    /// meanwhile.
    pub(crate) fn look_held(&self) -> HeldLook<T> {
        self.held.watched.swap(false, Ordering::SeqCst);
        after_seqcst_rmw();
        let mut taken = Vec::new();
        let mut still = false;
        for held in self.held.slots.iter() {
            let now = held.cell.held_seqcst();
            let looked = held.looked.swap(now.unwrap_or(NOTHING), Ordering::Relaxed);
            let then = (looked != NOTHING).then_some(looked);
            if let (true, Some(puts)) = (policy::taken_over(then, now), now) {
                let before = taken.len();
                taken.extend(std::iter::from_fn(|| held.take_over(puts)));
                if taken.len() > before {
                    // Whatever the slot holds now was put after this look began.
                    still |= held.cell.held().is_some();
                    continue;
                }
            }
            still |= now.is_some();
        }
        let keep = still && !self.held.watched.swap(true, Ordering::Relaxed);
        HeldLook { taken, keep }
    }

    /// Takes out a held task for which `matches` is true (cancel, after the queue).
    pub(super) fn remove_held_if(&self, mut matches: impl FnMut(&T) -> bool) -> Option<T> {
        self.held
            .slots
            .iter()
            .find_map(|held| held.cell.take_if(&mut matches))
    }

    /// Takes out every held task for which `matches` is true (a re-formation, after the
    /// queue), each slot's oldest first.
    pub(super) fn take_all_held_if(&self, mut matches: impl FnMut(&T) -> bool, out: &mut Vec<T>) {
        for held in self.held.slots.iter() {
            out.extend(std::iter::from_fn(|| held.cell.take_if(&mut matches)));
        }
    }

    /// The held slots' counts now.
    pub(super) fn held_counts(&self) -> HeldCounts {
        self.held
            .slots
            .iter()
            .fold(HeldCounts::default(), |counts, held| HeldCounts {
                held: counts.held + held.cell.len(),
                ran: counts.ran + held.ran.load(Ordering::Relaxed),
                executed: counts.executed + held.executed.load(Ordering::Relaxed),
                taken: counts.taken + held.taken.load(Ordering::Relaxed),
                ahead_ran: counts.ahead_ran + held.ahead_ran.load(Ordering::Relaxed),
            })
    }
}
