//! podq's held slots (steps H1-H8 of `crates/podq/src/pool/README.md`), for the profiles whose
//! [`Mechanism::holds`](crate::Mechanism::holds) is set. A slot holds a few items, oldest first:
//! either the one item that its holder's running item queued to its own pool (H2), or up to
//! [`held::AHEAD_MAX`] items its holder took from the pool's head ahead (H8). The holder runs
//! them one at a time as it comes back to its queue (H3), with no lock, no hand-over to another
//! CPU and no wake-up. From the running item's second queue call on, its first comes back out
//! of the slot and every one is pushed, in order; a slot holding items ahead keeps them, and the
//! running item's are pushed. Every decision is `podq::policy::held`'s: whether the holder runs
//! an item its running item queued next or sends it to the back of the queue
//! ([`held::runs_held`], the bound of [`held::MAX_IN_A_ROW`] runs in a row while other items
//! wait; an item held ahead always runs next, as an item of the queue), whether a worker taking
//! from its pool's head also takes the head's next items into its empty slot, and how many
//! ([`held::holds_ahead`] and [`held::ahead`], every workload), and whether a worker back from
//! its spin (H5) or the stall watchdog (H6) takes a slot's items over ([`held::taken_over`]: two
//! looks saw items of the same put held). A worker back from its spin takes the slot's oldest
//! item and leaves the others to a later look; the watchdog takes them all and pushes each; a
//! sibling's worker that steals from the pool (O4) takes the oldest item held ahead before the
//! head's.
//!
//! Only the queue calls of `chain`, `yield` and `spawn-local` items (`spawned.rs`) are held;
//! `rpc` and `fanout` hops are pushed. The items held ahead are taken in the take's critical
//! section, each at [`AHEAD_TAKE_SHARE`] of the section's own cost
//! ([`Costs::critical_section_ns`]), and never at a steal from a sibling (as podq, whose steal
//! does not hold ahead). What the model leaves out:
//! a put into the slot (one swap of a line of the holder's own CPU) costs nothing, a held item
//! that the bound sends back goes to the queue at the worker's next take without its lane
//! lock, and the watchdog's push runs on no simulated CPU. A worker claims its slot at its
//! first hold (H1), which is the same as at its start, as simulated workers never exit; cancel
//! and re-formation (H7) are not simulated.
//!
//! [`Costs::critical_section_ns`]: crate::cost::Costs::critical_section_ns

use podq::policy::stall::BLOCK_CHECK_INTERVAL;
use podq::policy::{growth, held};

use super::threads::{Phase, Role};
use super::{Engine, Event, Item, NO_GROUP};
use crate::outcome::HeldCounts;
use std::cmp::Reverse;
use std::collections::VecDeque;

/// Marks an event target that is the watchdog's look at a pool's held slots (H6).
pub(super) const HELD_EVENT: u32 = 1 << 30;

/// What one item taken ahead (H8) adds to the take's critical section, as a share of the
/// section's own cost: podq's instructions per item in `hold_ahead_now` (90) over those of a
/// take in `Core::next` without it (251), counted by `valgrind --tool=callgrind --fair-sched=yes
/// podq bench --workload flood --scopes cache_shard --peers none --threads 2 --runs 1 --items
/// 20000` (0.87 of the items taken ahead). An item's lines are not in it: each pays them where
/// it runs (`run_item`), as every item does.
pub(super) const AHEAD_TAKE_SHARE: f64 = 0.36;

/// One worker's held slot.
#[derive(Clone, Debug, Default)]
struct Slot {
    /// The items it holds, oldest first: the one its holder's running item queued (H2), or
    /// those taken from the head ahead (H8), at most [`held::AHEAD_MAX`].
    items: VecDeque<Item>,
    /// Whether those items were taken from the head ahead (H8) rather than queued by its
    /// holder's running item; clear while it holds none.
    ahead: bool,
    /// Items its holder ever put in it: what a look compares.
    puts: u64,
    /// What the watchdog's last look saw (`Some(puts)` when it held an item).
    looked: Option<u64>,
    /// Held items its holder ran in a row.
    in_a_row: u32,
    /// Held items its holder ran in a row while items waited in the pool's queue: the bound's
    /// effect, for [`HeldCounts::most_in_a_row_while_waiting`].
    while_waiting: u32,
    /// Whether its holder's running item has queued more than one item (H2).
    fanned: bool,
}

impl Slot {
    /// What a look sees in it: `Some(puts)` while it holds an item.
    fn seen(&self) -> Option<u64> {
        (!self.items.is_empty()).then_some(self.puts)
    }

    /// Takes its oldest item, the `ahead` flag going with the last.
    fn take_oldest(&mut self) -> Option<Item> {
        let item = self.items.pop_front();
        self.ahead &= !self.items.is_empty();
        item
    }
}

/// The held slots of every pool, and what the workers noted of them.
#[derive(Clone, Debug)]
pub(super) struct Held {
    /// Each pool's slots, in the order their workers claimed them.
    slots: Vec<Vec<Slot>>,
    /// The slot each thread owns, by thread id, if any.
    slot_of: Vec<Option<u32>>,
    /// What each thread saw in its pool's slots when it began to spin (H4), by thread id.
    marks: Vec<Vec<Option<u64>>>,
    /// Whether the watchdog looks at each pool's slots.
    watched: Vec<bool>,
    /// By thread id: the item whose queue call took the running item's first back out of the
    /// slot (H2), `(pool, producer, left)`, pushed once the first is.
    then: Vec<Option<(u32, u32, u64)>>,
    /// The counts so far.
    pub(super) counts: HeldCounts,
}

impl Held {
    /// No slot claimed yet in `pools` pools.
    pub(super) fn new(pools: usize) -> Held {
        Held {
            slots: vec![Vec::new(); pools],
            slot_of: Vec::new(),
            marks: Vec::new(),
            watched: vec![false; pools],
            then: Vec::new(),
            counts: HeldCounts::default(),
        }
    }

    /// The slot thread `tid` owns.
    fn slot_of(&self, tid: u32) -> Option<usize> {
        self.slot_of
            .get(tid as usize)
            .copied()
            .flatten()
            .map(|i| i as usize)
    }
}

impl Engine<'_> {
    /// The running item on worker `tid` queues an item of producer `pair` that makes `left`
    /// queue calls when it runs: to the pool of the CPU it runs on, held when that is its own
    /// pool, it owns a slot, and it is the running item's first (H2); at the second, the first
    /// comes back out of the slot and is pushed, then the second; every later one is pushed.
    /// The queue call returns in [`Phase::Queued`].
    pub(super) fn queue_from_worker(&mut self, tid: u32, pair: u32, left: u64) {
        let t = &self.threads[tid as usize];
        let cpu = t.cpu;
        let pool = self.pod_of[cpu as usize];
        let Role::Worker { pool: own, .. } = t.role else {
            unreachable!("only a worker's running item queues from a worker")
        };
        let index = if self.mech.holds && own == pool {
            self.claim_slot(tid, pool as usize)
        } else {
            None
        };
        let Some(index) = index else {
            self.start_push_with(tid, pool, pair, false, NO_GROUP, left);
            return;
        };
        let slot = &mut self.held.slots[pool as usize][index];
        if slot.fanned || slot.ahead {
            // (H2, H8) A fan-out's later item, or a slot holding an item ahead: pushed.
            self.start_push_with(tid, pool, pair, false, NO_GROUP, left);
            return;
        }
        // Not fanned and nothing held ahead: at most the running item's first.
        debug_assert!(slot.items.len() <= 1);
        if let Some(first) = slot.items.pop_front() {
            // (H2) The running item's second: its first comes back out and is pushed, then
            // this one (`push_then`).
            slot.fanned = true;
            if self.held.then.len() <= tid as usize {
                self.held.then.resize(tid as usize + 1, None);
            }
            self.held.then[tid as usize] = Some((pool, pair, left));
            self.start_push_with(tid, pool, first.producer, false, NO_GROUP, first.left);
            return;
        }
        let item = Item {
            producer: pair,
            queued_at: self.now,
            lane: self.push_lock(tid, pool),
            from: cpu,
            in_head: false,
            sender: false,
            group: NO_GROUP,
            left,
        };
        let slot = &mut self.held.slots[pool as usize][index];
        slot.items.push_back(item);
        slot.puts += 1;
        if !self.held.watched[pool as usize] {
            self.held.watched[pool as usize] = true;
            self.watch_held(pool as usize);
        }
        let t = &mut self.threads[tid as usize];
        t.job.t0 = self.now;
        t.phase = Phase::Queued;
        self.after(tid, 0.0);
    }

    /// (H1) The slot worker `tid` of `pool` owns, claimed now if it owns none and the pool has
    /// fewer slots than its eager size.
    fn claim_slot(&mut self, tid: u32, pool: usize) -> Option<usize> {
        if let Some(index) = self.held.slot_of(tid) {
            return Some(index);
        }
        let slots = &mut self.held.slots[pool];
        if slots.len() >= self.pools[pool].limits.eager_workers {
            return None;
        }
        slots.push(Slot::default());
        let index = slots.len() - 1;
        if self.held.slot_of.len() <= tid as usize {
            self.held.slot_of.resize(tid as usize + 1, None);
        }
        self.held.slot_of[tid as usize] = Some(index as u32);
        Some(index)
    }

    /// (H8) Worker `tid` of `pool`, having taken an item from its head under the head lock,
    /// also takes the head's next items into its empty slot when [`held::holds_ahead`] says so
    /// (enough items left in the head behind it, nobody idle), as many as [`held::ahead`] says.
    /// Counted in `started`, watched as a put of H2's. Returns the time it adds inside the
    /// lock: [`AHEAD_TAKE_SHARE`] of a take's per item.
    pub(super) fn hold_ahead(&mut self, tid: u32, pool: u32) -> f64 {
        if !self.mech.holds || !self.mech.holds_ahead {
            return 0.0;
        }
        let p = &self.pools[pool as usize];
        let (left, eager) = (p.head_len, p.limits.eager_workers);
        let help = growth::wants_help(p.workers, p.limits);
        if !held::holds_ahead(left, help, eager) {
            return 0.0;
        }
        let Some(index) = self.claim_slot(tid, pool as usize) else {
            return 0.0;
        };
        let p = &mut self.pools[pool as usize];
        let slot = &mut self.held.slots[pool as usize][index];
        if !slot.items.is_empty() {
            return 0.0;
        }
        let ahead = held::ahead(left, eager);
        while slot.items.len() < ahead {
            let Some(item) = p.pop_head() else {
                break;
            };
            slot.items.push_back(item);
        }
        let taken = slot.items.len();
        if taken == 0 {
            return 0.0;
        }
        p.started += taken as u64;
        slot.ahead = true;
        slot.puts += 1;
        if !self.held.watched[pool as usize] {
            self.held.watched[pool as usize] = true;
            self.watch_held(pool as usize);
        }
        self.costs.critical_section_ns * AHEAD_TAKE_SHARE * taken as f64
    }

    /// (H2) After worker `tid` pushed its running item's first, taken back out of its slot,
    /// the push of the second; `true` when one was due.
    pub(super) fn push_then(&mut self, tid: u32) -> bool {
        let Some((pool, pair, left)) = self.held.then.get_mut(tid as usize).and_then(Option::take)
        else {
            return false;
        };
        self.start_push_with(tid, pool, pair, false, NO_GROUP, left);
        true
    }

    /// (H3) Worker `tid`, back at its queue, runs its oldest held item: one taken ahead always,
    /// one its running item queued unless it has run [`held::MAX_IN_A_ROW`] in a row while
    /// items wait: then that item goes to the back of the queue and the worker takes from the
    /// queue as ever. `true` when it runs one.
    pub(super) fn run_held(&mut self, tid: u32) -> bool {
        let Some(index) = self.held.slot_of(tid) else {
            return false;
        };
        let Role::Worker { pool, .. } = self.threads[tid as usize].role else {
            return false;
        };
        let waiting = !self.pools[pool as usize].queue.is_empty();
        let slot = &mut self.held.slots[pool as usize][index];
        // (H2) The item that may have queued several has ended.
        slot.fanned = false;
        let ahead = slot.ahead;
        let Some(mut item) = slot.take_oldest() else {
            slot.in_a_row = 0;
            return false;
        };
        if ahead {
            // (H8) An item of the queue, counted in `started` when taken: not run by its
            // queuer, not in a row of held ones. The others stay held, for its next return.
            slot.in_a_row = 0;
            slot.while_waiting = 0;
            self.held.counts.ran_ahead += 1;
            self.record_start(Some(item));
            self.run_item(tid, item);
            return true;
        }
        let in_a_row = slot.in_a_row;
        let look = held::must_look(in_a_row);
        if held::runs_held(in_a_row, look && waiting) {
            slot.in_a_row = if look { 0 } else { in_a_row + 1 };
            slot.while_waiting = if waiting { slot.while_waiting + 1 } else { 0 };
            let c = &mut self.held.counts;
            c.ran_by_queuer += 1;
            c.most_in_a_row_while_waiting = c.most_in_a_row_while_waiting.max(slot.while_waiting);
            self.pools[pool as usize].started += 1;
            self.run_item(tid, item);
            return true;
        }
        slot.in_a_row = 0;
        slot.while_waiting = 0;
        self.held.counts.bounded += 1;
        // To the back of its CPU's lane, as any push of the worker.
        item.lane = self.push_lock(tid, pool);
        item.in_head = false;
        let p = &mut self.pools[pool as usize];
        p.queue.push_back(item);
        if let Some(at) = p.lane_of(item.lane) {
            p.lane_waiting[at] += 1;
        }
        false
    }

    /// Worker `tid` has taken an item from its queue: its held runs in a row while items
    /// waited end.
    pub(super) fn took_from_queue(&mut self, tid: u32) {
        if let Some(index) = self.held.slot_of(tid) {
            if let Role::Worker { pool, .. } = self.threads[tid as usize].role {
                self.held.slots[pool as usize][index].while_waiting = 0;
            }
        }
    }

    /// Worker `tid` runs `item`, taken with no lock: its lines come from where it was queued.
    fn run_item(&mut self, tid: u32, item: Item) {
        let cpu = self.threads[tid as usize].cpu;
        let pool = match &mut self.threads[tid as usize].role {
            Role::Worker {
                pool,
                item: slot,
                spun,
                asked,
                pulled,
                ..
            } => {
                *slot = Some(item);
                (*spun, *asked, *pulled) = (false, false, false);
                *pool
            }
            Role::Producer { .. } => unreachable!("only workers run items"),
        };
        self.set_phase(tid, Phase::Ran);
        let work = self.run_of(Some(item), pool, cpu);
        let lines = self.item_lines(item.from, cpu);
        let own = self.cpu_work(cpu, self.costs.worker_item_ns + work);
        self.after(tid, lines + own);
    }

    /// (H4) Worker `tid` of `pool`, about to spin, notes what every slot of its pool holds;
    /// nothing when none holds an item.
    pub(super) fn mark_held(&mut self, tid: u32, pool: usize) {
        if !self.mech.holds {
            return;
        }
        if self.held.marks.len() <= tid as usize {
            self.held.marks.resize(tid as usize + 1, Vec::new());
        }
        let slots = &self.held.slots[pool];
        let mark = &mut self.held.marks[tid as usize];
        mark.clear();
        if slots.iter().any(|s| !s.items.is_empty()) {
            mark.extend(slots.iter().map(Slot::seen));
        }
    }

    /// (H5) Worker `tid` of `pool`, back from its spin with its queue empty, takes the oldest
    /// item of another worker's slot that held items of the same put throughout the spin; the
    /// others stay, for a later look.
    pub(super) fn take_over_held(&mut self, tid: u32, pool: usize) -> Option<Item> {
        let mark = std::mem::take(self.held.marks.get_mut(tid as usize)?);
        if mark.is_empty() {
            return None;
        }
        let own = self.held.slot_of(tid);
        let slots = &mut self.held.slots[pool];
        let index = (0..slots.len()).find(|&i| {
            own != Some(i) && held::taken_over(mark.get(i).copied().flatten(), slots[i].seen())
        })?;
        self.held.counts.taken_from_queuer += 1;
        slots[index].in_a_row = 0;
        slots[index].take_oldest()
    }

    /// (H8, O4) A sibling's worker stealing from `pool` under its head lock takes the oldest
    /// item that a worker of `pool` holds ahead first, if any: it left the head before every
    /// item still there, and its holder is busy. Counted as taken from its holder, and already
    /// in `started`.
    pub(super) fn take_held_ahead(&mut self, pool: usize) -> Option<Item> {
        let slot = self.held.slots[pool].iter_mut().find(|s| s.ahead)?;
        let item = slot.take_oldest();
        self.held.counts.taken_from_queuer += 1;
        item
    }

    /// Schedules the watchdog's next look at `pool`'s slots, [`BLOCK_CHECK_INTERVAL`] from now.
    fn watch_held(&mut self, pool: usize) {
        self.seq += 1;
        self.heap.push(Reverse(Event {
            time: self.now + BLOCK_CHECK_INTERVAL.as_nanos() as u64,
            seq: self.seq,
            target: HELD_EVENT | pool as u32,
            token: 0,
        }));
    }

    /// (H6) The watchdog's look at `pool`'s slots: every item of a slot that held items of the
    /// same put at its last look is pushed, oldest first, from the watchdog's thread (which
    /// wakes or starts a worker as any push); it looks again while items are held, unless a put
    /// has it look already.
    pub(super) fn held_look(&mut self, pool: usize) {
        self.held.watched[pool] = false;
        let mut taken = Vec::new();
        let mut still = false;
        for slot in &mut self.held.slots[pool] {
            let now = slot.seen();
            let then = std::mem::replace(&mut slot.looked, now);
            if held::taken_over(then, now) {
                // Held at this look (`now`), so not empty.
                slot.looked = None;
                slot.ahead = false;
                taken.extend(slot.items.drain(..));
                continue;
            }
            still |= now.is_some();
        }
        for item in taken {
            self.held.counts.taken_from_queuer += 1;
            self.held.counts.taken_by_watchdog += 1;
            let p = &mut self.pools[pool];
            p.queue.push_back(Item {
                in_head: false,
                ..item
            });
            if let Some(at) = p.lane_of(item.lane) {
                p.lane_waiting[at] += 1;
            }
            self.notify_spinner(pool, item.from);
            let action = self.decide(pool);
            self.perform(action, pool, item.from, false);
        }
        if still && !self.held.watched[pool] {
            self.held.watched[pool] = true;
            self.watch_held(pool);
        }
    }
}

#[cfg(test)]
mod tests {
    use podq::policy::Placement;
    use podq::{AffinityScope, Pods};

    use super::super::test_parts::parts;
    use super::super::threads::Thread;
    use super::*;
    use crate::machine::SimMachine;
    use crate::profile::Profile;
    use crate::scenario::{Scenario, Workload};

    /// (H4, H5) A worker back from its spin takes over an item that another worker's slot held
    /// throughout the spin, and nothing that was put again meanwhile, held only later, or held
    /// in its own slot.
    #[test]
    fn a_worker_back_from_its_spin_takes_only_an_item_held_throughout_it() {
        let (machine, pods, placement) = parts(4, AffinityScope::System, 8);
        let scenario = Scenario {
            workload: Workload::SpawnLocal,
            ..Scenario::kernel_test(AffinityScope::System, 1)
        };
        let profile = Profile::podq();
        let mut e = Engine::new(&machine, &profile, &scenario, &pods, &placement);
        let holder = e.new_thread(Thread::worker(0, 1));
        let spinner = e.new_thread(Thread::worker(0, 2));

        // Nothing held as the spin begins: nothing to take, even once an item is held.
        e.mark_held(spinner, 0);
        e.queue_from_worker(holder, 0, 0);
        assert!(e.take_over_held(spinner, 0).is_none());

        // Held throughout: taken, and counted.
        e.mark_held(spinner, 0);
        let taken = e
            .take_over_held(spinner, 0)
            .expect("held throughout the spin");
        assert_eq!(taken.from, 1);
        assert_eq!(e.held.counts.taken_from_queuer, 1);
        assert_eq!(e.held.slots[0][0].seen(), None);

        // Put again during the spin (its holder came back): left to its holder.
        e.queue_from_worker(holder, 0, 0);
        e.mark_held(spinner, 0);
        e.held.slots[0][0].items.clear();
        e.queue_from_worker(holder, 0, 0);
        assert!(e.take_over_held(spinner, 0).is_none());

        // Its own slot is never taken over by itself.
        e.mark_held(holder, 0);
        assert!(e.take_over_held(holder, 0).is_none());
        assert_eq!(e.held.counts.taken_from_queuer, 1);
    }

    /// Adds a worker of pool 0 on CPU 1 to `e`, with nobody idle and `n` items put in the
    /// head, the first of them taken; returns the worker's id.
    fn busy_with_head(e: &mut Engine, n: u32) -> u32 {
        let holder = e.new_thread(Thread::worker(0, 1));
        e.pools[0].workers.idle = 0;
        e.pools[0].workers.coming = 1;
        fill_head(e, n);
        e.pools[0].pop();
        holder
    }

    /// `n` items in pool 0's head, item `k` of producer `k`, and nothing else waiting.
    fn fill_head(e: &mut Engine, n: u32) {
        let p = &mut e.pools[0];
        p.queue.clear();
        p.queue.extend((0..n).map(|k| Item {
            producer: k,
            queued_at: 0,
            lane: 0,
            from: 0,
            in_head: true,
            sender: false,
            group: NO_GROUP,
            left: 0,
        }));
        p.head_len = n as usize;
    }

    /// The producers of the items of pool 0's slot `slot`, oldest first.
    fn held_from(e: &Engine, slot: usize) -> Vec<u32> {
        e.held.slots[0][slot]
            .items
            .iter()
            .map(|i| i.producer)
            .collect()
    }

    /// What an engine of the podq profile running `flood` on one pool of four CPUs is built
    /// on (the engine borrows it).
    fn podq_flood() -> (SimMachine, Pods, Placement, Profile, Scenario) {
        let (machine, pods, placement) = parts(4, AffinityScope::System, 8);
        let scenario = Scenario {
            workload: Workload::Flood,
            ..Scenario::kernel_test(AffinityScope::System, 1)
        };
        (machine, pods, placement, Profile::podq(), scenario)
    }

    /// (H8) A worker that took from the head takes the next items ahead only with enough left
    /// behind it and nobody idle, as many as `held::ahead` says, at another take's cost each; a
    /// put of H2 goes past them to the queue, and its holder runs them one at a time, oldest
    /// first, as items of the queue.
    #[test]
    fn a_busy_worker_holds_its_share_of_the_head_ahead_and_runs_them_as_items_of_the_queue() {
        let (machine, pods, placement, profile, scenario) = podq_flood();
        let mut e = Engine::new(&machine, &profile, &scenario, &pods, &placement);
        let holder = e.new_thread(Thread::worker(0, 1));
        // The pool's one worker is parked: someone idle, so nothing is taken ahead.
        fill_head(&mut e, 4);
        assert_eq!(e.hold_ahead(holder, 0), 0.0);
        assert_eq!(e.pools[0].head_len, 4);
        // Nobody idle, a worker on its way.
        e.pools[0].workers.idle = 0;
        e.pools[0].workers.coming = 1;
        // One item left behind the taken one: fewer than AHEAD_LEFT.
        fill_head(&mut e, held::AHEAD_LEFT as u32);
        e.pools[0].pop();
        assert_eq!(e.hold_ahead(holder, 0), 0.0);
        // Enough left: the worker's share of them is held ahead, each at its share of a take.
        let (head, eager) = (40, e.pools[0].limits.eager_workers);
        fill_head(&mut e, head);
        e.pools[0].pop();
        let left = head as usize - 1;
        let ahead = held::ahead(left, eager);
        assert!(ahead > 1, "{left} left, {eager} eager");
        let started = e.pools[0].started;
        let cost = e.hold_ahead(holder, 0);
        assert_eq!(
            cost,
            e.costs.critical_section_ns * AHEAD_TAKE_SHARE * ahead as f64
        );
        assert_eq!(e.pools[0].head_len, left - ahead);
        assert_eq!(e.pools[0].started, started + ahead as u64);
        assert!(e.held.slots[0][0].ahead);
        assert_eq!(held_from(&e, 0), (1..=ahead as u32).collect::<Vec<_>>());
        assert_eq!(e.held.slots[0][0].puts, 1);
        // Held already: no more.
        assert_eq!(e.hold_ahead(holder, 0), 0.0);
        // A put of the running item goes past them to the queue.
        e.queue_from_worker(holder, 0, 0);
        assert_eq!(e.held.slots[0][0].puts, 1);
        assert_eq!(held_from(&e, 0).len(), ahead);
        // Its holder runs them one at a time, oldest first, as items of the queue.
        for k in 1..=ahead as u32 {
            assert_eq!(held_from(&e, 0)[0], k);
            assert!(e.run_held(holder));
            assert_eq!(e.held.counts.ran_ahead, u64::from(k));
        }
        assert_eq!(e.held.counts.ran_by_queuer, 0);
        assert!(!e.held.slots[0][0].ahead);
        assert!(e.held.slots[0][0].items.is_empty());
        assert!(!e.run_held(holder));
        // Counted in `started` once, when taken ahead.
        assert_eq!(e.pools[0].started, started + ahead as u64);
    }

    /// (H5, H6, O4) Items held ahead are taken over one at a time, oldest first, by workers
    /// back from their spin and by a sibling's steal, the others staying held with the same
    /// put; the watchdog takes all of a slot it saw with the same put at both looks.
    #[test]
    fn items_held_ahead_are_taken_over_oldest_first_and_all_at_once_by_the_watchdog() {
        let (machine, pods, placement, profile, scenario) = podq_flood();
        let mut e = Engine::new(&machine, &profile, &scenario, &pods, &placement);
        let holder = busy_with_head(&mut e, 40);
        let spinner = e.new_thread(Thread::worker(0, 2));
        e.hold_ahead(holder, 0);
        let ahead = held_from(&e, 0).len();
        assert!(ahead >= 3, "{ahead} held ahead");
        let puts = e.held.slots[0][0].seen();

        // (H5) Held throughout the spin: the oldest is taken, the others stay, same put.
        e.mark_held(spinner, 0);
        assert_eq!(e.take_over_held(spinner, 0).map(|i| i.producer), Some(1));
        assert_eq!(held_from(&e, 0).len(), ahead - 1);
        assert_eq!(e.held.slots[0][0].seen(), puts);
        assert!(e.held.slots[0][0].ahead);
        // A later spin takes the next.
        e.mark_held(spinner, 0);
        assert_eq!(e.take_over_held(spinner, 0).map(|i| i.producer), Some(2));

        // (O4) A sibling's steal takes the oldest item held ahead.
        assert_eq!(e.take_held_ahead(0).map(|i| i.producer), Some(3));
        assert_eq!(e.held.counts.taken_from_queuer, 3);

        // (H6) The watchdog's first look only notes the put; its second takes every item left.
        let queued = e.pools[0].queue.len();
        let left = held_from(&e, 0);
        e.held_look(0);
        assert_eq!(held_from(&e, 0), left);
        e.held_look(0);
        assert!(e.held.slots[0][0].items.is_empty());
        assert!(!e.held.slots[0][0].ahead);
        let back: Vec<u32> = e.pools[0]
            .queue
            .iter()
            .skip(queued)
            .map(|i| i.producer)
            .collect();
        assert_eq!(back, left);
        let total = 3 + left.len() as u64;
        assert_eq!(e.held.counts.taken_from_queuer, total);
        assert_eq!(e.held.counts.taken_by_watchdog, left.len() as u64);
        assert_eq!(e.held.counts.ran_ahead, 0);
        // Nothing held ahead is left for a steal.
        assert!(e.take_held_ahead(0).is_none());
    }
}
