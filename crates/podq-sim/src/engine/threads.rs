//! The threads' programs: a producer's queue calls and a worker's loop, as state machines the
//! engine steps through, one event at a time.

use super::locks::LockWait;
use super::pull::Search;
use super::push::Job;
use super::{Action, Engine, Item, NO_GROUP};
use crate::scenario::Workload;

/// The yields that close a worker's spin when other threads wait for its CPU: podq's
/// `pool::SPIN_ROUNDS` (13) less `sync::SPIN_ONLY_ROUNDS` (9), the rounds of
/// `sync::spin_until` that call `yield_now` instead of spinning. The spin-only rounds are
/// [`Costs::spin_ns`](crate::Costs::spin_ns).
const SPIN_YIELDS: u32 = 4;

/// What kind of thread, and its own state.
#[derive(Clone, Copy, Debug)]
pub(super) enum Role {
    /// A producer pinned to its CPU.
    Producer {
        /// Its pool (the pod of its CPU).
        pool: u32,
        /// Items still to queue (rpc: hops of its pair, queued by the workers after the first;
        /// fanout: messages of its team, queued by its senders).
        left: u64,
        /// `fanout` senders still to queue.
        senders: u64,
        /// Whether its item has run (queue workload).
        done: bool,
        /// The dense CPU its item last ran on, where the item's lines are (queue workload).
        ran_on: u32,
        /// Whether it sleeps until its item has run.
        waiting: bool,
        /// The action its critical section decided.
        action: Option<Action>,
    },
    /// A worker of one pool.
    Worker {
        /// Its pool.
        pool: u32,
        /// The item it runs.
        item: Option<Item>,
        /// Counted in the pool's `coming` (just woken or started).
        coming: bool,
        /// Has spun since it last took an item (so it parks when it finds none).
        spun: bool,
        /// Has asked its siblings since it last took an item (O4, once per empty queue).
        asked: bool,
        /// The item it took last was pulled from a sibling (it then asks again at once).
        pulled: bool,
        /// Its search of the siblings, while it searches.
        search: Search,
        /// The queue calls made so far in the `fanout` sender round it is in, if any.
        round: Option<u64>,
        /// Yields left in its spin (podq's closing rounds of `sync::spin_until`).
        yields: u32,
        /// The action its critical section decided.
        action: Option<Action>,
    },
}

/// Where a thread is in its program. A phase that takes a lock is both the request (when the
/// thread is resumed in it) and the critical section (when the lock is granted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// Producer: about to start an item, or finish.
    Start,
    /// Queue call (a producer, or an rpc worker): take the push lock (kernel: the pool lock;
    /// podq: the lane of its CPU).
    Push,
    /// Queue call: unlock the push lock.
    PushRelease,
    /// Queue call (podq): take the pool lock to wake or grow.
    Help,
    /// Queue call (podq): unlock the pool lock.
    HelpRelease,
    /// Queue call: it has returned.
    Queued,
    /// Producer (podq's bench): spinning on its item's completion before it sleeps.
    WaitSpin,
    /// Producer: asleep until its item has run.
    Wait,
    /// Producer: all items queued and run.
    Finished,
    /// Worker: take the queue lock to take an item or park.
    Take,
    /// Worker: unlock after taking an item.
    TakeRelease,
    /// Worker: the item has run.
    Ran,
    /// Worker: unlock and park.
    ParkRelease,
    /// Worker (podq): unlock and spin.
    SpinRelease,
    /// Worker (podq): spinning; resumed when a push finds it or the spin is over.
    Spin,
    /// Worker (pull): unlock its queue, found empty, and ask its siblings (O4).
    PullRelease,
    /// Worker (pull): searching the siblings that offer work, level by level.
    Search,
    /// Worker (pull): take a sibling's head lock to take its oldest item.
    Steal,
    /// Worker (pull): unlock the sibling's head lock; run the item, or search on.
    StealRelease,
}

/// One simulated thread.
#[derive(Clone, Debug)]
pub(super) struct Thread {
    /// Producer or worker.
    pub(super) role: Role,
    /// Its program counter.
    pub(super) phase: Phase,
    /// The dense CPU it runs on, waits for, or last ran on.
    pub(super) cpu: u32,
    /// Whether it is the current thread of `cpu`.
    pub(super) on_cpu: bool,
    /// Bumped to drop the events scheduled for it so far (a spinner's timeout).
    pub(super) token: u32,
    /// Woken before it went to sleep: it does not sleep (podq's `notified`, step W11; the
    /// kernel's `try_to_wake_up` of a thread still running likewise leaves it runnable).
    pub(super) notified: bool,
    /// The queue call it makes, while it makes one.
    pub(super) job: Job,
    /// What it does while it waits for a futex lock (`locks.rs`).
    pub(super) lock_wait: Option<LockWait>,
    /// Time it owes before its next step: the wake-up its unlock of a contended futex lock
    /// made (`futex_wake`).
    pub(super) owed_ns: f64,
}

impl Thread {
    /// The action its critical section decided.
    pub(super) fn action(&self) -> Option<Action> {
        match self.role {
            Role::Producer { action, .. } | Role::Worker { action, .. } => action,
        }
    }

    /// A producer on dense CPU `cpu` queueing `items` items to pool `pool` (for `fanout`,
    /// `senders` senders that queue them).
    pub(super) fn producer(cpu: usize, pool: usize, items: u64, senders: u64) -> Thread {
        Thread {
            role: Role::Producer {
                pool: pool as u32,
                left: items,
                senders,
                done: false,
                ran_on: cpu as u32,
                waiting: false,
                action: None,
            },
            phase: Phase::Start,
            cpu: cpu as u32,
            on_cpu: false,
            token: 0,
            notified: false,
            job: Job::default(),
            lock_wait: None,
            owed_ns: 0.0,
        }
    }

    /// A parked worker of `pool` that last ran on dense CPU `cpu`.
    pub(super) fn worker(pool: u32, cpu: u32) -> Thread {
        Thread {
            role: Role::Worker {
                pool,
                item: None,
                coming: false,
                spun: false,
                asked: false,
                pulled: false,
                search: Search::default(),
                round: None,
                yields: 0,
                action: None,
            },
            phase: Phase::Take,
            cpu,
            on_cpu: false,
            token: 0,
            notified: false,
            job: Job::default(),
            lock_wait: None,
            owed_ns: 0.0,
        }
    }
}

impl Engine<'_> {
    /// Runs `tid`'s program from its phase until it waits for time, a lock or a wake-up.
    pub(super) fn step(&mut self, tid: u32) {
        if let Some(wait) = self.threads[tid as usize].lock_wait {
            self.lock_wait_over(tid, wait);
            return;
        }
        loop {
            let t = &self.threads[tid as usize];
            let (phase, cpu) = (t.phase, t.cpu);
            match (t.role, phase) {
                (Role::Producer { .. }, Phase::Start | Phase::Push | Phase::Queued)
                    if self.workload.is_spawned() =>
                {
                    if self.spawned_producer(tid) {
                        return;
                    }
                }
                (Role::Producer { left, senders, .. }, Phase::Start) => {
                    let fanout = self.workload == Workload::Fanout;
                    if (fanout && senders == 0) || (!fanout && left == 0) {
                        self.set_phase(tid, Phase::Finished);
                        self.producer_finished();
                        self.block(tid);
                        return;
                    }
                    if self.yields(tid) {
                        return;
                    }
                    // A locality producer sleeps until its next item is due, then picks it.
                    let mut issue = 0.0;
                    if self.workload == Workload::Locality && self.locality_issue(tid, &mut issue) {
                        return;
                    }
                    self.set_phase(tid, Phase::Push);
                    // The closed loop queues its item again: its lines come back first.
                    let back = match self.threads[tid as usize].role {
                        Role::Producer { ran_on, .. } if self.workload == Workload::Queue => {
                            self.item_lines(ran_on, cpu)
                        }
                        _ => 0.0,
                    };
                    let own = self.cpu_work(cpu, self.costs.producer_item_ns);
                    self.after(tid, back + issue + own);
                    return;
                }
                (Role::Producer { pool, .. }, Phase::Push) => {
                    if let Some((group, pool)) = self.locality_next(tid) {
                        self.start_push_of(tid, pool, tid, false, group);
                        return;
                    }
                    if let Role::Producer { done, .. } = &mut self.threads[tid as usize].role {
                        *done = false;
                    }
                    let sender = self.workload == Workload::Fanout;
                    self.start_push(tid, pool, tid, sender);
                    return;
                }
                (_, Phase::PushRelease | Phase::HelpRelease) => {
                    if self.push_step(tid) {
                        return;
                    }
                }
                (Role::Producer { done, .. }, Phase::Queued) => {
                    self.queue_call_returned(tid);
                    if self.workload == Workload::Rpc {
                        // The pair's first request is queued; the workers queue the rest.
                        self.set_phase(tid, Phase::Finished);
                        self.producer_finished();
                        self.block(tid);
                        return;
                    }
                    if let Role::Producer {
                        waiting, senders, ..
                    } = &mut self.threads[tid as usize].role
                    {
                        if self.workload == Workload::Fanout {
                            *senders -= 1;
                        }
                        if self.workload == Workload::Queue && !done {
                            *waiting = true;
                            let spin = self.costs.spin_ns * f64::from(self.mech.waiter_spins)
                                / f64::from(crate::profile::WORKER_SPINS);
                            if spin > 0.0 {
                                self.set_phase(tid, Phase::WaitSpin);
                                self.after(tid, spin);
                            } else {
                                self.set_phase(tid, Phase::Wait);
                                self.block(tid);
                            }
                            return;
                        }
                    }
                    self.set_phase(tid, Phase::Start);
                }
                (Role::Producer { done, .. }, Phase::WaitSpin) => {
                    if !done {
                        // The spin is over: it sleeps until the item has run.
                        self.set_phase(tid, Phase::Wait);
                        self.block(tid);
                        return;
                    }
                    if let Role::Producer { waiting, .. } = &mut self.threads[tid as usize].role {
                        *waiting = false;
                    }
                    self.set_phase(tid, Phase::Start);
                }
                (Role::Producer { .. }, Phase::Wait) => {
                    if let Role::Producer { waiting, .. } = &mut self.threads[tid as usize].role {
                        *waiting = false;
                    }
                    self.set_phase(tid, Phase::Start);
                }
                (Role::Worker { pool, .. }, Phase::Take) => {
                    // (H3) Its held item first, with no lock.
                    if self.yields(tid) || self.back_at_take(tid) {
                        return;
                    }
                    let lock = self.pools[pool as usize].head;
                    self.acquire(tid, lock);
                    return;
                }
                (
                    Role::Worker {
                        pool, item, action, ..
                    },
                    Phase::TakeRelease,
                ) => {
                    let lock = self.pools[pool as usize].head;
                    self.release(tid, lock);
                    self.clear_action(tid);
                    let extra = self.perform(action, pool as usize, cpu, false);
                    self.record_start(item);
                    self.set_phase(tid, Phase::Ran);
                    let work = self.run_of(item, pool, cpu);
                    let lines = item.map_or(0.0, |i| self.item_lines(i.from, cpu));
                    let own = self.cpu_work(cpu, self.costs.worker_item_ns + work);
                    self.after(tid, extra + lines + own);
                    return;
                }
                (Role::Worker { item, pool, .. }, Phase::Ran) => {
                    let item = item.expect("a worker runs an item it took");
                    self.set_phase(tid, Phase::Take);
                    if item.sender {
                        if let Role::Worker { round, .. } = &mut self.threads[tid as usize].role {
                            *round = Some(0);
                        }
                        if self.fanout_next(tid) {
                            return;
                        }
                        continue;
                    }
                    self.items_done += 1;
                    match self.workload {
                        Workload::Queue => {
                            let producer = &mut self.threads[item.producer as usize];
                            let mut sleeping = false;
                            if let Role::Producer {
                                done,
                                waiting,
                                ran_on,
                                ..
                            } = &mut producer.role
                            {
                                *done = true;
                                *ran_on = cpu;
                                sleeping = *waiting && !producer.on_cpu;
                            }
                            if producer.on_cpu && producer.phase == Phase::WaitSpin {
                                // The spinning producer sees the completion's line.
                                producer.token = producer.token.wrapping_add(1);
                                let at = producer.cpu as usize;
                                let line = self
                                    .machine
                                    .platform()
                                    .at(self.machine.distance(cpu as usize, at));
                                self.after(item.producer, line);
                            }
                            if sleeping {
                                self.wake(item.producer, cpu, false);
                                self.after(tid, self.cpu_work(cpu, self.costs.wake_call_ns));
                                return;
                            }
                        }
                        Workload::Flood
                        | Workload::Skew
                        | Workload::Fanout
                        | Workload::Locality => {
                            if item.group != NO_GROUP {
                                self.locality_ran(item.group, pool);
                            }
                            if self.items_done == self.total_items {
                                self.end = Some(self.now);
                                return;
                            }
                        }
                        Workload::Chain { .. } | Workload::Yield { .. } | Workload::SpawnLocal => {
                            if self.spawned_ran(tid, item) {
                                return;
                            }
                        }
                        Workload::Rpc => {
                            if self.items_done == self.total_items {
                                self.end = Some(self.now);
                                return;
                            }
                            // The hop queues the other side, from this worker's CPU.
                            let left = match self.threads[item.producer as usize].role {
                                Role::Producer { left, .. } => left,
                                Role::Worker { .. } => 0,
                            };
                            if left > 0 {
                                let pool = self.pod_of[cpu as usize];
                                self.start_push(tid, pool, item.producer, false);
                                return;
                            }
                        }
                    }
                }
                (Role::Worker { .. }, Phase::Queued) => {
                    self.queue_call_returned(tid);
                    self.set_phase(tid, Phase::Take);
                    if self.push_then(tid) || self.fanout_next(tid) || self.spawned_next(tid) {
                        return;
                    }
                }
                (Role::Worker { pool, .. }, Phase::SpinRelease) => {
                    let lock = self.pools[pool as usize].head;
                    self.release(tid, lock);
                    let p = &mut self.pools[pool as usize];
                    p.spinners.push(tid);
                    if self.mech.push_lanes && p.mailbox.is_none() {
                        // (W5) The first spinner owns the mailbox while it spins.
                        p.mailbox = Some(tid);
                    }
                    self.set_phase(tid, Phase::Spin);
                    if let Role::Worker { yields, .. } = &mut self.threads[tid as usize].role {
                        *yields = SPIN_YIELDS;
                    }
                    if let Some(from) = self.pools[pool as usize].queue.back().map(|i| i.from) {
                        // (W5) The spin polls the lanes' lengths: an item pushed since the take
                        // found none (its push found no spinner) ends it one line later.
                        self.stop_spinner(pool as usize, tid, from);
                        return;
                    }
                    // podq's spin-only rounds hold the CPU whoever waits for it.
                    self.after(tid, self.costs.spin_ns);
                    return;
                }
                (Role::Worker { pool, yields, .. }, Phase::Spin) => {
                    let spinning = self.pools[pool as usize].spinners.contains(&tid);
                    if spinning && yields > 0 && !self.cpus[cpu as usize].runq.is_empty() {
                        // The closing rounds yield: others waiting for this CPU run first,
                        // and the spinner looks once more when it is back.
                        if let Role::Worker { yields, .. } = &mut self.threads[tid as usize].role {
                            *yields -= 1;
                        }
                        self.yield_cpu(tid);
                        return;
                    }
                    let p = &mut self.pools[pool as usize];
                    p.spinners.retain(|&s| s != tid);
                    if p.mailbox == Some(tid) {
                        // (W6) It closes the mailbox as its spin ends.
                        p.mailbox = None;
                    }
                    if let Role::Worker { spun, .. } = &mut self.threads[tid as usize].role {
                        *spun = true;
                    }
                    self.set_phase(tid, Phase::Take);
                }
                (Role::Worker { pool, .. }, Phase::ParkRelease) => {
                    let lock = self.pools[pool as usize].head;
                    self.release(tid, lock);
                    self.set_phase(tid, Phase::Take);
                    if std::mem::take(&mut self.threads[tid as usize].notified) {
                        continue;
                    }
                    self.block(tid);
                    return;
                }
                (Role::Worker { pool, .. }, Phase::PullRelease) => {
                    let lock = self.pools[pool as usize].head;
                    self.release(tid, lock);
                    self.idle_entry(tid, pool as usize);
                    return;
                }
                (Role::Worker { pool, .. }, Phase::Search) => {
                    if self.search_on(tid, pool as usize) {
                        return;
                    }
                    self.set_phase(tid, Phase::Take);
                }
                (
                    Role::Worker {
                        pool,
                        item,
                        action,
                        search,
                        ..
                    },
                    Phase::StealRelease,
                ) => {
                    let victim = search.victim as usize;
                    let lock = self.pools[victim].head;
                    self.release(tid, lock);
                    let Some(taken) = item else {
                        // The sibling was empty: on to the next one.
                        self.set_phase(tid, Phase::Search);
                        continue;
                    };
                    self.clear_action(tid);
                    let extra = self.perform(action, victim, cpu, false);
                    let level = self.search_level(tid);
                    self.end_level(pool as usize, level, true);
                    if let Role::Worker {
                        spun,
                        asked,
                        pulled,
                        ..
                    } = &mut self.threads[tid as usize].role
                    {
                        (*spun, *asked, *pulled) = (false, false, true);
                    }
                    self.record_start(item);
                    // The item's lines come from the CPU that queued it.
                    let line = self.item_lines(taken.from, cpu);
                    self.set_phase(tid, Phase::Ran);
                    let work = self.run_of(item, pool, cpu);
                    let own = self.cpu_work(cpu, self.costs.worker_item_ns + work);
                    self.after(tid, extra + line + own);
                    return;
                }
                (role, phase) => unreachable!("{role:?} is never resumed in {phase:?}"),
            }
        }
    }

    /// The critical section of `tid`'s phase, run when its lock is granted; returns the time
    /// it takes inside the lock.
    pub(super) fn enter(&mut self, tid: u32) -> f64 {
        let cpu = self.threads[tid as usize].cpu;
        let cs = self.cpu_work(cpu, self.costs.critical_section_ns);
        let t = &self.threads[tid as usize];
        match (t.role, t.phase) {
            (_, Phase::Push) => self.enter_push(tid),
            (_, Phase::Help) => self.enter_help(tid),
            (
                Role::Worker {
                    pool,
                    coming,
                    spun,
                    item: ran,
                    ..
                },
                Phase::Take,
            ) => {
                // (kernel) The completion of the item it ran, under the same lock.
                let completion = if ran.is_some() && !self.mech.push_lanes {
                    self.active_change(pool as usize, cpu)
                } else {
                    0.0
                };
                let p = &mut self.pools[pool as usize];
                if coming {
                    p.workers.coming -= 1;
                }
                let mut popped = p.pop();
                // (H8) The head's next item too, under the same lock, when the policy says so.
                let ahead = if popped.is_some() {
                    self.hold_ahead(tid, pool)
                } else {
                    0.0
                };
                if popped.is_none() && spun {
                    // (H5) Back from its spin with the queue still empty.
                    popped = self
                        .take_over_held(tid, pool as usize)
                        .map(|item| (item, false));
                }
                let item = popped.map(|(item, _)| item);
                if item.is_some() {
                    self.took_from_queue(tid);
                    self.pools[pool as usize].started += 1;
                }
                let mut action = None;
                let next = if let Some((item, refilled)) = popped {
                    if self.mech.push_lanes && refilled {
                        // A refill moves the lane's lines to the worker.
                        let cpu = self.threads[tid as usize].cpu;
                        self.locks[item.lane as usize].last_cpu = cpu;
                    }
                    if !self.pools[pool as usize].queue.is_empty() {
                        action = self.decide(pool as usize);
                    }
                    Phase::TakeRelease
                } else {
                    // (O3) Empty: the pool offers no more.
                    let cpu = self.threads[tid as usize].cpu;
                    self.withdraw(pool as usize, cpu);
                    if self.asks_siblings(tid, pool as usize) {
                        Phase::PullRelease
                    } else if self.costs.spin_ns > 0.0 && !spun {
                        // (H4) What every slot holds as the spin begins.
                        self.mark_held(tid, pool as usize);
                        Phase::SpinRelease
                    } else {
                        let p = &mut self.pools[pool as usize];
                        p.idle.push(tid);
                        p.workers.idle += 1;
                        Phase::ParkRelease
                    }
                };
                if let Role::Worker {
                    item: slot,
                    coming,
                    spun,
                    asked,
                    pulled,
                    action: decided,
                    ..
                } = &mut self.threads[tid as usize].role
                {
                    if item.is_some() {
                        (*spun, *asked, *pulled) = (false, false, false);
                    }
                    *slot = item;
                    *coming = false;
                    *decided = action;
                }
                self.set_phase(tid, next);
                cs + completion + ahead + self.wake_inside(action, cpu)
            }
            (Role::Worker { .. }, Phase::Steal) => self.steal(tid),
            (role, phase) => unreachable!("{role:?} takes no lock in {phase:?}"),
        }
    }

    /// What moving an item's own lines ([`Costs::item_lines`]) from dense CPU `from` to `to`
    /// costs.
    ///
    /// [`Costs::item_lines`]: crate::Costs::item_lines
    pub(super) fn item_lines(&self, from: u32, to: u32) -> f64 {
        let line = self
            .machine
            .platform()
            .at(self.machine.distance(from as usize, to as usize));
        line * self.costs.item_lines
    }

    /// The work of running `item`: none for a `fanout` sender, which only queues.
    fn work_of(&self, item: Option<Item>) -> f64 {
        match item {
            Some(Item { sender: true, .. }) => 0.0,
            Some(item) if self.works_last(item) => 0.0,
            _ => self.work_ns,
        }
    }

    /// The time running `item` takes a worker of `pool` on dense CPU `cpu`: a grouped item's
    /// walk and work (`locality`), else [`Engine::work_of`].
    pub(super) fn run_of(&mut self, item: Option<Item>, pool: u32, cpu: u32) -> f64 {
        match item {
            Some(Item { group, .. }) if group != NO_GROUP => self.locality_start(group, pool, cpu),
            _ => self.work_of(item),
        }
    }

    /// Records when an item of an open workload started, from just before its queue call
    /// (senders aside: they are no item of the count).
    pub(super) fn record_start(&mut self, item: Option<Item>) {
        if let (true, Some(item @ Item { sender: false, .. })) = (self.workload.is_open(), item) {
            let waited = u32::try_from(self.now - item.queued_at).unwrap_or(u32::MAX);
            self.starts.push(waited);
        }
    }

    /// The cost inside the lock of carrying out `action` there (the kernel wakes under it).
    pub(super) fn wake_inside(&self, action: Option<Action>, cpu: u32) -> f64 {
        match action {
            Some(Action::Wake(_)) if self.mech.wake_under_lock => {
                self.cpu_work(cpu, self.costs.wake_call_ns)
            }
            _ => 0.0,
        }
    }

    /// `tid`'s queue call has returned: its latency is recorded.
    pub(super) fn queue_call_returned(&mut self, tid: u32) {
        let t0 = self.threads[tid as usize].job.t0;
        let latency = u32::try_from(self.now - t0).unwrap_or(u32::MAX);
        self.latencies.push(latency);
    }

    /// A producer has queued and seen run all its items.
    pub(super) fn producer_finished(&mut self) {
        self.producers_left -= 1;
        if self.producers_left == 0 && self.workload == Workload::Queue {
            self.end = Some(self.now);
        }
    }

    /// Sets `tid`'s phase.
    #[inline]
    pub(super) fn set_phase(&mut self, tid: u32, phase: Phase) {
        self.threads[tid as usize].phase = phase;
    }

    /// Records the action `tid`'s critical section decided.
    pub(super) fn set_action(&mut self, tid: u32, decided: Option<Action>) {
        match &mut self.threads[tid as usize].role {
            Role::Producer { action, .. } | Role::Worker { action, .. } => *action = decided,
        }
    }

    /// Forgets `tid`'s decided action once carried out.
    pub(super) fn clear_action(&mut self, tid: u32) {
        self.set_action(tid, None);
    }
}
