//! Idle coordination: how pushers and workers that run out of work meet. The hint says
//! whether a push must take the pool lock and how many workers spin; a worker that finds the
//! queue empty spins (W5-W7), then parks on the idle stack (W9-W12).
//!
//! "No lost wake-up" rests on a Dekker pair of `SeqCst` fences, both in this file, one after
//! the other: [`Core::help_after_push`] (P3) and [`Core::last_look_empty`] (W10), with
//! [`Core::end_spin`] (W7) as the spinners' last look. A push stores its lane's length, fences,
//! and reads the hint; a worker about to stop looking for work writes the hint, fences, and
//! reads every lane's length. Of two `SeqCst` fences one comes first in the single order of
//! `SeqCst` operations, so either the push sees the worker's hint and wakes a worker under the
//! pool lock, or the worker sees the push's task.

use std::time::{Duration, Instant};

use super::queue::lane_lock::Fenced;
use super::queue::{Head, Lane};
use super::{Core, Synced};
use crate::policy::growth::{self as policy, Idle};
use crate::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
use crate::sync::{Arc, CachePadded, Condvar, MutexGuard};

/// The pool's hint: whether a push must take the pool lock (`HELP`,
/// [`policy::wants_help`]) and how many workers spin, in two words on lines of their own.
///
/// Every push reads `HELP` after its fence (P3); it changes only when workers park, wake,
/// come, go or are watched, so in a busy pool its line stays in the pushers' caches. The
/// spinner count changes every time a worker runs out of work; a push reads it only when its
/// answer matters (P4), so that spinning workers do not take the `HELP` line from pushers.
#[derive(Debug)]
pub(crate) struct AtomicHint {
    /// A: [`policy::wants_help`], written only under the pool lock, whenever it changes (and
    /// always before a worker's last look, W10). Read without a lock by pushes after a
    /// `SeqCst` fence (P3), and under the head lock by a worker that leaves tasks behind in the
    /// head (W4).
    help: CachePadded<AtomicBool>,
    /// A: workers that found the queue empty and spin (W5) before they park; they add and
    /// remove themselves without a lock (W5, W7). Read by pushes after their fence (P4).
    spinners: CachePadded<AtomicUsize>,
}

impl AtomicHint {
    /// A hint with `HELP` set to `help` and no spinner.
    pub(super) fn new(help: bool) -> Self {
        Self {
            help: CachePadded::new(AtomicBool::new(help)),
            spinners: CachePadded::new(AtomicUsize::new(0)),
        }
    }

    /// Whether a push, or a worker leaving tasks in the head, must take the pool lock.
    /// `Relaxed`: the fences (P3, W10) and the locks order what matters.
    #[inline]
    pub(super) fn help(&self) -> bool {
        self.help.load(Ordering::Relaxed)
    }

    /// Workers spinning now (W5). `Relaxed`: the fences (P3, W7) order what matters.
    #[inline]
    pub(super) fn spinners(&self) -> usize {
        self.spinners.load(Ordering::Relaxed)
    }

    /// Writes `HELP` (only ever under the pool lock).
    fn set_help(&self, help: bool) {
        self.help.store(help, Ordering::Relaxed);
    }

    /// Counts one more spinner (W5), without a lock.
    fn add_spinner(&self) {
        self.spinners.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one spinner less (W7), without a lock.
    fn remove_spinner(&self) {
        self.spinners.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Where one idle worker sleeps, and the flag that says it was woken on purpose.
#[derive(Debug)]
pub(crate) struct Parker {
    /// Used with the pool lock only; notified after the lock is released.
    condvar: Condvar,
    /// L: set by the thread that takes this parker off the idle stack (a pusher, a worker
    /// handing on work, or shutdown), cleared by the worker before it parks. Read
    /// and written only under the pool lock, so `Relaxed` is enough: the lock orders every
    /// access. It is atomic only to be `Sync`.
    notified: AtomicBool,
}

impl Parker {
    fn new() -> Self {
        Self {
            condvar: Condvar::new(),
            notified: AtomicBool::new(false),
        }
    }

    fn is_notified(&self) -> bool {
        self.notified.load(Ordering::Relaxed)
    }

    /// Marks the parker woken on purpose (or not); under the pool lock.
    pub(super) fn set_notified(&self, notified: bool) {
        self.notified.store(notified, Ordering::Relaxed);
    }

    /// Wakes the worker parked here, outside the pool lock (P7, W4, T2).
    pub(super) fn notify(&self) {
        self.condvar.notify_one();
    }
}

/// What one worker thread keeps between calls to [`Core::next`].
#[derive(Debug)]
pub(crate) struct WorkerSlot {
    /// The worker's own parker; on the idle stack while it sleeps.
    pub(super) parker: Arc<Parker>,
    /// Whether this worker is counted in `Synced::coming` (started or woken, and not yet
    /// arrived at the queue).
    pub(super) coming: bool,
    /// Tasks this worker ran to the end since it last took the head lock, where they are added
    /// to `Head::executed` (W1): counting there costs no write to a line that another worker
    /// also writes.
    pub(super) ran: u64,
    /// Whether the last task this worker took was pulled from a sibling (O4): it then asks
    /// its siblings again before it spins.
    pub(super) pulled: bool,
    /// Times this worker was woken from parking (W11), for the worker thread's placement (W13).
    pub(super) wakes: u64,
    /// The worker's held slot and its count of held tasks run in a row (H1-H5).
    pub(super) holder: super::Holder,
}

impl WorkerSlot {
    /// The slot of a worker that a [`super::Push::Spawn`] or a
    /// `Next::Run { grow: Grow::Spawn, .. }` asked for: it is counted as coming until its first
    /// [`Core::next`].
    pub(crate) fn new() -> Self {
        Self {
            parker: Arc::new(Parker::new()),
            coming: true,
            ran: 0,
            pulled: false,
            wakes: 0,
            holder: super::Holder::default(),
        }
    }

    /// Whether the worker's thread must have the watchdog watch its pool's held slots, after
    /// [`Core::next`] held a task ahead in an empty slot (H8); the request is taken.
    pub(crate) fn take_watch_held(&mut self) -> bool {
        self.holder.take_watch()
    }

    /// Times this worker was woken from parking (W11).
    pub(crate) fn wakes(&self) -> u64 {
        self.wakes
    }

    /// Counts a task this worker ran to the end; the pool's count gets it at the worker's next
    /// [`Core::next`].
    pub(crate) fn ran_one(&mut self) {
        self.ran += 1;
    }
}

/// How a worker's attempt to park ended (W9-W12).
pub(super) enum Parked<'a> {
    /// Woken on purpose: the pool lock is held again.
    Woken(MutexGuard<'a, Synced>),
    /// A task came in while it went on the idle stack (W10): it did not sleep, and looks again.
    Found,
    /// Retired after `idle_timeout` (W12).
    Retired,
}

impl<T> Core<T> {
    /// Sets the hint's `HELP` bit to [`policy::wants_help`], if it changed. Called under the
    /// pool lock after every change to the idle stack, `coming`, `workers` or `watched`.
    pub(super) fn publish(&self, synced: &Synced) {
        let help = policy::wants_help(synced.workers(), self.limits);
        if self.hint.help() != help {
            self.hint.set_help(help);
        }
    }

    /// Workers spinning now (W5), as the hint says.
    pub(super) fn spinners(&self) -> usize {
        self.hint.spinners()
    }

    /// Spinners now less those counted on `lane`: the ones a pusher on that lane's CPU is not
    /// keeping off their CPU (P4). Read after the push's fence (P3).
    pub(super) fn spinners_elsewhere(&self, lane: &Lane<T>) -> usize {
        self.hint
            .spinners()
            .saturating_sub(lane.spinners.load(Ordering::Relaxed))
    }

    /// (P3) The push's half of the pair: called after its lane's length is stored (P2) and the
    /// lane lock's release fenced (`SeqCst`, [`Fenced`]), reads `HELP`; the spinner count,
    /// when P4 reads it, is read after the same fence. A worker that stops looking for work
    /// writes `HELP` or its spinner count, fences, then looks at every lane (W10, W7), so
    /// either it sees this push's item or this push sees what it wrote.
    #[inline]
    pub(super) fn help_after_push(&self, _fenced: Fenced) -> bool {
        self.hint.help()
    }

    /// (W10) A worker's last look before it stops looking for work (parks, exits, or is undone
    /// by `spawn_failed`), called under the pool lock after the change to `synced`: writes the
    /// `HELP` bit even if unchanged (the write must be this worker's own), fences (`SeqCst`),
    /// then reads every lane's length. Of this fence and a push's (P3) one comes first: either
    /// the push sees this worker's hint and acts on it, or this look sees the push's task.
    /// Returns whether every lane looked empty.
    pub(super) fn last_look_empty(&self, synced: &Synced) -> bool {
        self.write_help(synced);
        fence(Ordering::SeqCst);
        self.lanes.iter().all(|lane| lane.len() == 0)
    }

    /// Writes the hint's `HELP` bit from `synced` even if unchanged, so that the write is the
    /// caller's own for a fence that follows it: the last look (W10), and a worker's arrival
    /// (W1), whose first hand-on ([`Core::left_to_arrival`]) pairs with the pushes made while
    /// it was on its way. Called under the pool lock.
    pub(super) fn write_help(&self, synced: &Synced) {
        self.hint
            .set_help(policy::wants_help(synced.workers(), self.limits));
    }

    /// (W4) After a worker's arrival (W1, which wrote `HELP` with [`Core::write_help`]): fences
    /// (`SeqCst`) and says whether any lane holds a task. A push made while the worker was on
    /// its way read `HELP` clear (`coming` was counted) and left its task to it (P4), in
    /// whatever lane it pushed to; the worker's first take claimed one lane's batch only (W3).
    /// Of this fence and such a push's (P3) one comes first: either the push read the arrival's
    /// `HELP` and acted on it, or this look sees its task.
    pub(super) fn left_to_arrival(&self) -> bool {
        fence(Ordering::SeqCst);
        self.lanes.iter().any(|lane| lane.len() > 0)
    }

    /// (W7) Back from spinning: stops counting the worker as a spinner (in the hint and on
    /// `lane`, without the pool lock), then fences (`SeqCst`), so that the head and lanes it
    /// looks at next include every push that saw it counted and left its task to the spinners
    /// (P4). Called under the head lock.
    pub(super) fn end_spin(&self, lane: &Lane<T>) {
        self.hint.remove_spinner();
        lane.spinners.fetch_sub(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
    }

    /// (W5) The head and lanes are empty: counts the worker as a spinner on lane `at` (its
    /// CPU's) and in the hint, without a lock, and tries to own the mailbox (one owner at a
    /// time). Returns the lane, for [`Core::end_spin`], and whether it owns the mailbox and must
    /// close it (W6).
    pub(super) fn start_spin(&self, at: usize) -> (&Lane<T>, bool) {
        let lane = &self.lanes[at];
        lane.spinners.fetch_add(1, Ordering::Relaxed);
        self.hint.add_spinner();
        (lane, self.mailbox.open(at))
    }

    /// (W5) Spins with backoff until a lane looks non-empty, the mailbox it owns (`owner`) is
    /// full, or the rounds are spent.
    pub(super) fn spin(&self, owner: bool) {
        let ready =
            || (owner && self.mailbox.is_full()) || self.lanes.iter().any(|lane| lane.len() > 0);
        if self.yield_only {
            crate::sync::yield_until(self.spin_rounds, ready);
        } else {
            crate::sync::spin_until(self.spin_rounds, ready);
        }
    }

    /// Parks the worker of `slot` on the idle stack until a pusher, a worker handing on work
    /// (W4) or shutdown wakes it, or retires it after `idle_timeout` (W9-W12). Called with both
    /// locks held, the head and the lanes found empty.
    pub(super) fn park<'a>(
        &'a self,
        head: MutexGuard<'a, Head<T>>,
        mut synced: MutexGuard<'a, Synced>,
        slot: &mut WorkerSlot,
    ) -> Parked<'a> {
        // (W9) Go on the idle stack and store the hint that says so, then take the last look
        // (W10): a push whose item this look misses sees the hint and wakes a worker under the
        // pool lock, which this worker holds until it waits. The head lock is held until the
        // parker is there, so a worker that later leaves tasks in the head sees the hint (W4).
        slot.parker.set_notified(false);
        synced.idle.push(Arc::clone(&slot.parker));
        if !self.last_look_empty(&synced) {
            // Nobody could take the parker off the stack: this worker held the pool lock.
            synced.idle.pop();
            self.publish(&synced);
            return Parked::Found;
        }
        drop(head);
        let parked_at = Instant::now();
        // How long it has been parked, by the clock after a wait that was cut short, by the
        // wait's own span after one that timed out (a timed-out wait has waited it out).
        let mut idle_for = Duration::ZERO;
        let mut stay = false;
        loop {
            // (W11) Sleep; the condvar releases the lock and takes it again. `notified` is the
            // condition, so a spurious wake-up or a notify that came early changes nothing.
            if slot.parker.is_notified() {
                slot.coming = true;
                return Parked::Woken(synced);
            }
            if stay {
                synced = slot.parker.condvar.wait(synced);
                continue;
            }
            // (W12) Idle for `idle_timeout` and not woken: retire if another worker remains;
            // the last worker stays, parked without a timeout, while the pool is in use. No
            // last look is needed: while this worker was on the idle stack every push saw the
            // hint and took the pool lock. Either way the pool has had a worker idle that
            // long, so the kept segments (its node's, `Core::spares`) go back to the
            // allocator: another backlog takes new ones.
            let idle = policy::idle(idle_for, self.idle_timeout, synced.workers);
            if !matches!(idle, Idle::Wait(_)) {
                self.spares.free_all();
            }
            match idle {
                Idle::Wait(left) => {
                    let (again, timed_out) = slot.parker.condvar.wait_timeout(synced, left);
                    synced = again;
                    idle_for = if timed_out {
                        idle_for.saturating_add(left)
                    } else {
                        parked_at.elapsed()
                    };
                }
                Idle::Retire => {
                    synced.idle.retain(|p| !Arc::ptr_eq(p, &slot.parker));
                    synced.workers -= 1;
                    synced.workers_retired += 1;
                    self.publish(&synced);
                    return Parked::Retired;
                }
                Idle::Stay => stay = true,
            }
        }
    }
}
