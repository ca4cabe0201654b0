//! The workloads whose running items queue items, as `podq bench` runs them
//! (`crates/podq-cli/src/bench/spawned.rs`): `chain` (each link queues the next, and the
//! producer waits for a chain's last link before it queues the next chain), `yield` (items that
//! queue their own continuation) and `spawn-local` (one item queues many, then does its own
//! work). An item's [`Item::left`] is the queue calls it makes when it runs; they go through
//! [`Engine::queue_from_worker`], so the podq profile holds them (`held.rs`) and the kernel
//! profile pushes them to the pool's queue with a wake-up as any queue call.

use super::threads::{Phase, Role};
use super::{Engine, Item, NO_GROUP};
use crate::scenario::{Scenario, Workload};

/// The workloads' own counts.
#[derive(Clone, Debug)]
pub(super) struct Spawned {
    /// Items (chains) each producer still queues itself, by the CPU it is pinned to.
    own: Vec<u64>,
    /// The queue calls of the `spawn-local` item each worker runs, by thread id: the producer
    /// whose item it is, and the calls left.
    rounds: Vec<Option<(u32, u64)>>,
    /// Workers whose `spawn-local` item does its own work after its queue calls, by thread id.
    working: Vec<bool>,
    /// Queue calls an item of a producer makes: a chain's first link, a yielding item, or the
    /// `spawn-local` item.
    first_left: u64,
}

impl Spawned {
    /// The counts at the start of `scenario` with `producers` producers.
    pub(super) fn new(scenario: &Scenario, producers: usize) -> Spawned {
        let (own, first_left) = match scenario.workload {
            Workload::Chain { depth } => (scenario.items, depth.saturating_sub(1)),
            Workload::Yield { yields } => (scenario.items, yields),
            Workload::SpawnLocal => (1, scenario.items),
            _ => (0, 0),
        };
        Spawned {
            own: vec![own; producers],
            rounds: Vec::new(),
            working: Vec::new(),
            first_left,
        }
    }
}

impl Engine<'_> {
    /// Producer `tid`'s program in [`Phase::Start`], [`Phase::Push`] and [`Phase::Queued`]:
    /// queue its items (a chain's first link, a yielding item, the `spawn-local` item), and
    /// in `chain` sleep until each chain's last link has run; `true` when it waits.
    pub(super) fn spawned_producer(&mut self, tid: u32) -> bool {
        let t = &self.threads[tid as usize];
        let (phase, cpu) = (t.phase, t.cpu);
        let Role::Producer { pool, done, .. } = t.role else {
            unreachable!("a producer's program")
        };
        match phase {
            Phase::Start => {
                if self.spawned.own[cpu as usize] == 0 {
                    self.set_phase(tid, Phase::Finished);
                    self.producer_finished();
                    self.block(tid);
                    return true;
                }
                if self.yields(tid) {
                    return true;
                }
                self.set_phase(tid, Phase::Push);
                self.after(tid, self.costs.producer_item_ns);
                true
            }
            Phase::Push => {
                if let Role::Producer { done, .. } = &mut self.threads[tid as usize].role {
                    *done = false;
                }
                self.spawned.own[cpu as usize] -= 1;
                let left = self.spawned.first_left;
                self.start_push_with(tid, pool, tid, false, NO_GROUP, left);
                true
            }
            Phase::Queued => {
                self.queue_call_returned(tid);
                let chain = matches!(self.workload, Workload::Chain { .. });
                if chain && !done {
                    if let Role::Producer { waiting, .. } = &mut self.threads[tid as usize].role {
                        *waiting = true;
                    }
                    self.set_phase(tid, Phase::Wait);
                    self.block(tid);
                    return true;
                }
                self.set_phase(tid, Phase::Start);
                false
            }
            other => unreachable!("{other:?} is no phase of a spawning producer"),
        }
    }

    /// Worker `tid` has run `item`: it queues what the item queues (a chain's next link, a
    /// continuation, the `spawn-local` item's items), or ends a chain; `true` when it waits.
    pub(super) fn spawned_ran(&mut self, tid: u32, item: Item) -> bool {
        if self.workload == Workload::SpawnLocal && item.left > 0 {
            // The item is counted once its own work, after its queue calls, is done.
            self.items_done -= 1;
            self.set_round(tid, Some((item.producer, item.left)));
            return self.spawned_next(tid);
        }
        if self.items_done == self.total_items {
            self.end = Some(self.now);
            return true;
        }
        if item.left > 0 {
            self.queue_from_worker(tid, item.producer, item.left - 1);
            return true;
        }
        if !matches!(self.workload, Workload::Chain { .. }) {
            return false;
        }
        // The chain's last link: its producer queues the next chain.
        let cpu = self.threads[tid as usize].cpu;
        let producer = &mut self.threads[item.producer as usize];
        let mut sleeping = false;
        if let Role::Producer { done, waiting, .. } = &mut producer.role {
            *done = true;
            sleeping = *waiting && !producer.on_cpu;
        }
        if sleeping {
            self.wake(item.producer, cpu, false);
            self.after(tid, self.costs.wake_call_ns);
            return true;
        }
        false
    }

    /// The next queue call of the `spawn-local` item worker `tid` runs, or, after the last,
    /// the item's own work; `false` when it runs no such item.
    pub(super) fn spawned_next(&mut self, tid: u32) -> bool {
        let Some(Some((producer, left))) = self.spawned.rounds.get(tid as usize).copied() else {
            return false;
        };
        if left > 0 {
            self.set_round(tid, Some((producer, left - 1)));
            self.queue_from_worker(tid, producer, 0);
            return true;
        }
        self.set_round(tid, None);
        if self.spawned.working.len() <= tid as usize {
            self.spawned.working.resize(tid as usize + 1, false);
        }
        self.spawned.working[tid as usize] = true;
        self.set_phase(tid, Phase::Take);
        self.after(tid, self.work_ns);
        true
    }

    /// Worker `tid` is back at its queue: a `spawn-local` item whose own work is done counts
    /// as run, then the worker runs its held item (H3); `true` when it waits.
    pub(super) fn back_at_take(&mut self, tid: u32) -> bool {
        if let Some(working) = self.spawned.working.get_mut(tid as usize) {
            if std::mem::take(working) {
                self.items_done += 1;
                if self.items_done == self.total_items {
                    self.end = Some(self.now);
                    return true;
                }
            }
        }
        self.run_held(tid)
    }

    /// Whether `item`'s work comes after its queue calls (the `spawn-local` item), not
    /// before them.
    pub(super) fn works_last(&self, item: Item) -> bool {
        self.workload == Workload::SpawnLocal && item.left > 0
    }

    /// Sets the queue calls left to worker `tid`'s `spawn-local` item.
    fn set_round(&mut self, tid: u32, round: Option<(u32, u64)>) {
        if self.spawned.rounds.len() <= tid as usize {
            self.spawned.rounds.resize(tid as usize + 1, None);
        }
        self.spawned.rounds[tid as usize] = round;
    }
}
