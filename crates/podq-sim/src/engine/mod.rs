//! The discrete-event engine: producers, pools with their locks and queues, workers, and the
//! CPUs they run on, advanced in simulated nanoseconds.
//!
//! Every decision a pool makes is asked of `podq::policy`, with the engine's own counts and
//! times: where a queue call goes ([`Placement`]), whether a push or a worker wakes an idle
//! worker or grows the pool ([`growth`]), the stall watchdog's look ([`stall`]), and with pull
//! which sibling an idle worker searches, whether the gate lets it, and what a kicked sibling
//! does (`podq::policy::pull`, in `pull.rs`), and whether a worker runs the item it holds or
//! another takes it (`podq::policy::held`, in `held.rs`). The engine only says how long each
//! step takes (the [`Costs`]) and in which order steps happen.
//!
//! A thread is a small state machine (`threads::Phase`); an event resumes one thread at one time
//! (or looks at one pool, for the watchdog). A lock is a FIFO of spinning waiters: a holder's
//! critical section takes effect when the lock is granted, and the lock passes to the next
//! waiter when the holder's release event runs. Moving the lock costs its cache lines
//! ([`Costs::lines_per_handover`] for a pool lock, [`Mechanism::queue_lock_lines`] for podq's
//! head and lanes) at the distance between the last holder's CPU and the new one's.

mod active;
mod cpus;
mod fanout;
mod held;
mod locality;
mod locks;
mod pace;
mod pull;
mod push;
mod sets;
mod spawned;
#[cfg(test)]
mod test_parts;
mod threads;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use podq::policy::growth::{self, Grow, Limits, Workers};
use podq::policy::{stall, Placement};
use podq::{AffinityScope, Pods};

use self::cpus::{mask_of, Cpu, Mask};
use self::held::{Held, HELD_EVENT};
use self::locality::LocalityState;
use self::locks::Lock;
use self::pull::PullGroup;
use self::spawned::Spawned;
use self::threads::{Role, Thread};
use crate::cost::Costs;
use crate::machine::SimMachine;
use crate::outcome::{Outcome, Percentiles};
use crate::profile::{Mechanism, Profile};
use crate::rng::Rng;
use crate::scenario::{Scenario, ShardRule, Workload};
use crate::SimError;

/// Marks an event target that is a pool (the watchdog's look) rather than a thread.
const POOL_EVENT: u32 = 1 << 31;

/// One event: resume `target` at `time`; `seq` orders events at the same time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Event {
    /// Simulated nanoseconds.
    time: u64,
    /// Order of scheduling, so equal times replay identically.
    seq: u64,
    /// A thread, or a pool with [`POOL_EVENT`] set.
    target: u32,
    /// The thread's [`Thread::token`] when scheduled: an event whose token is stale (a
    /// spinner's timeout after a push found it) is dropped.
    token: u32,
}

/// A queued work item.
#[derive(Clone, Copy, Debug)]
struct Item {
    /// The producer thread that queued it.
    producer: u32,
    /// When its queue call began.
    queued_at: u64,
    /// The lane lock it was pushed under (podq), whose lines a worker's refill touches.
    lane: u32,
    /// The dense CPU it was queued from, where its own lines are.
    from: u32,
    /// Moved from its lane to the head by a refill (podq's step W3).
    in_head: bool,
    /// A `fanout` sender (it queues messages and itself) rather than an item of work.
    sender: bool,
    /// Its group (`locality`), or [`NO_GROUP`].
    group: u32,
    /// The queue calls it makes when it runs (`chain`, `yield`, `spawn-local`; `spawned.rs`).
    left: u64,
}

/// The group of an item that belongs to none.
const NO_GROUP: u32 = u32::MAX;

impl Pool {
    /// The position of lane lock `lock` in `lanes`, if it is one of them.
    fn lane_of(&self, lock: u32) -> Option<usize> {
        self.lanes.iter().position(|&l| l == lock)
    }

    /// Takes the oldest waiting item. An item still in its lane makes the taker refill (step
    /// W3): every waiting item of that lane moves to the head at once, and the lane's length
    /// is 0 again; the second value says whether it did, so the lane's lines moved to the taker.
    fn pop(&mut self) -> Option<(Item, bool)> {
        let item = self.queue.pop_front()?;
        if item.in_head {
            self.head_len -= 1;
            return Some((item, false));
        }
        if let Some(lane) = self.lane_of(item.lane) {
            self.lane_waiting[lane] = 0;
        }
        for waiting in self
            .queue
            .iter_mut()
            .filter(|i| i.lane == item.lane && !i.in_head)
        {
            waiting.in_head = true;
            self.head_len += 1;
        }
        Some((item, true))
    }

    /// Takes the oldest item of the head, if any, with no refill (H8).
    fn pop_head(&mut self) -> Option<Item> {
        let at = self.queue.iter().position(|i| i.in_head)?;
        self.head_len -= 1;
        self.queue.remove(at)
    }
}

/// A pool: the workers and the queue serving one pod.
#[derive(Clone, Debug)]
struct Pool {
    /// The lock workers take the queue under (the one pool lock, for the kernel).
    head: u32,
    /// The lock the workers' counts are under (the same as `head` for the kernel).
    synced: u32,
    /// Lane locks by position of the pushing CPU in the pod (podq only).
    lanes: Vec<u32>,
    /// The pod's dense CPUs.
    cpus: Vec<u32>,
    /// The pod's CPUs as a mask.
    pod: Mask,
    /// Where its workers may run.
    allowed: Mask,
    /// Waiting items, FIFO.
    queue: VecDeque<Item>,
    /// Of those, the ones in the head (`Item::in_head`).
    head_len: usize,
    /// Waiting items per lane, by position in `lanes` (podq only): what a push reads as its
    /// lane's length, until a refill moves them to the head.
    lane_waiting: Vec<usize>,
    /// The counts the policy reads.
    workers: Workers,
    /// Growth limits.
    limits: Limits,
    /// Parked workers, most recent last (woken LIFO).
    idle: Vec<u32>,
    /// Items taken from the queue (progress, for the watchdog).
    started: u64,
    /// `started` at the watchdog's previous look.
    last_started: Option<u64>,
    /// Rotation for placing a worker when no CPU is idle.
    rotation: usize,
    /// Workers spinning for work (podq, step W5), in the order they began.
    spinners: Vec<u32>,
    /// The spinner that owns the pool's mailbox (podq, steps P1, W5, W6), if any.
    mailbox: Option<u32>,
    /// Its slot of the counts of active items ([`active`]).
    active: usize,
}

/// What a critical section decided to do once the lock is released.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    /// Wake this parked worker.
    Wake(u32),
    /// Start a new worker.
    Spawn,
}

/// The engine's whole state.
struct Engine<'m> {
    /// The machine.
    machine: &'m SimMachine,
    /// Costs.
    costs: Costs,
    /// Mechanisms.
    mech: Mechanism,
    /// The workload.
    workload: Workload,
    /// Work per item.
    work_ns: f64,
    /// The scheduler's time slice on this machine ([`Costs::slice_for`]).
    slice_ns: f64,
    /// Simulated time now.
    now: u64,
    /// Events scheduled so far (the next event's `seq`).
    seq: u64,
    /// Pending events, earliest first.
    heap: BinaryHeap<Reverse<Event>>,
    /// Jitter.
    rng: Rng,
    /// CPUs by dense index.
    cpus: Vec<Cpu>,
    /// CPUs with nothing on them.
    idle_cpus: Mask,
    /// Producers first, then workers as they start.
    threads: Vec<Thread>,
    /// Every lock.
    locks: Vec<Lock>,
    /// Pools by pod id.
    pools: Vec<Pool>,
    /// Queue-call latencies, in ns.
    latencies: Vec<u32>,
    /// Queue-to-start times (flood), in ns.
    starts: Vec<u32>,
    /// Producers that have not finished.
    producers_left: usize,
    /// Items run.
    items_done: u64,
    /// Items in the run.
    total_items: u64,
    /// When the run ended.
    end: Option<u64>,
    /// Workers started.
    workers_started: u64,
    /// Lock acquisitions.
    acquisitions: u64,
    /// Lock acquisitions that found the lock held.
    contended: u64,
    /// Events processed.
    events: u64,
    /// Pull's state, when the scenario pulls and the scope has two pools or more.
    pull: Option<PullGroup>,
    /// The pool a queue call from each dense CPU goes to (`Placement::pod_for`).
    pod_of: Vec<u32>,
    /// The `locality` workload's groups, caches and steering.
    locality: Option<Box<LocalityState>>,
    /// The held slots (podq's H1-H8).
    held: Held,
    /// The `chain`, `yield` and `spawn-local` workloads' own counts.
    spawned: Spawned,
    /// The counts of active items per node (`kernel`).
    active: Vec<active::ActiveCount>,
    /// Per dense CPU, an SMT sibling of it (dense), if it has one.
    sibling: Vec<Option<u32>>,
}

/// Simulates `scenario` on `machine` with `profile`.
///
/// # Errors
///
/// [`SimError::Threads`] for no producer or more producers than CPUs, [`SimError::Items`] for
/// no item, [`SimError::NoPull`] for pull with a profile that has none, [`SimError::Pods`]
/// when the scope's pods cannot be formed (a shard size of 0), and [`SimError::Stuck`] when
/// the run stops with items outstanding (a bug in the model).
pub fn simulate(
    machine: &SimMachine,
    profile: &Profile,
    scenario: &Scenario,
) -> Result<Outcome, SimError> {
    let cpus = machine.len();
    if scenario.threads == 0 || scenario.threads > cpus {
        return Err(SimError::Threads {
            threads: scenario.threads,
            cpus,
        });
    }
    if scenario.workload.runs_per_producer(scenario.items) == 0 {
        return Err(SimError::Items);
    }
    if scenario.pull && !profile.mechanism.pulls {
        return Err(SimError::NoPull {
            profile: profile.name,
        });
    }
    let topo = machine.topology();
    let pods = match (scenario.scope, scenario.shard_rule) {
        (AffinityScope::CacheShard, ShardRule::Cpus) => {
            Pods::cache_shards_by_cpu(topo, scenario.shard_size)?
        }
        (scope, _) => Pods::new(topo, scope, scenario.shard_size)?,
    };
    let placement = Placement::new(&pods, &topo.cpu_set(), |c| {
        topo.cpu(c).map_or(0, |cpu| cpu.node())
    })?;
    let mut engine = Engine::new(machine, profile, scenario, &pods, &placement);
    engine.run()?;
    Ok(engine.outcome(pods.len()))
}

impl<'m> Engine<'m> {
    /// The engine at time 0: one parked worker per pool, every producer about to start.
    fn new(
        machine: &'m SimMachine,
        profile: &Profile,
        scenario: &Scenario,
        pods: &Pods,
        placement: &Placement,
    ) -> Engine<'m> {
        let n = machine.len();
        let producers = scenario.producers();
        let total_items = scenario.workload.runs_per_producer(scenario.items) * producers as u64;
        let mut engine = Engine {
            machine,
            costs: profile
                .costs
                .at_work_factor(machine.platform().work_factor(profile.clock_ghz)),
            mech: profile.mechanism,
            workload: scenario.workload,
            work_ns: scenario.work_ns as f64,
            slice_ns: profile.costs.slice_for(n),
            now: 0,
            seq: 0,
            heap: BinaryHeap::new(),
            rng: Rng::new(scenario.seed),
            cpus: vec![Cpu::new(); n],
            idle_cpus: mask_of(n, 0..n),
            threads: Vec::new(),
            locks: Vec::new(),
            pools: Vec::new(),
            latencies: Vec::with_capacity(usize::try_from(total_items).unwrap_or(0)),
            starts: Vec::new(),
            producers_left: producers,
            items_done: 0,
            total_items,
            end: None,
            workers_started: 0,
            acquisitions: 0,
            contended: 0,
            events: 0,
            pull: if scenario.pull {
                PullGroup::new(pods)
            } else {
                None
            },
            pod_of: (0..n)
                .map(|c| placement.pod_for(Some(machine.id(c)), || 0) as u32)
                .collect(),
            locality: None,
            held: Held::new(pods.len()),
            spawned: Spawned::new(scenario, producers),
            sibling: (0..n)
                .map(|c| {
                    (0..n)
                        .find(|&o| o != c && machine.core_of(o) == machine.core_of(c))
                        .map(|o| o as u32)
                })
                .collect(),
            active: active::counts(
                (0..n)
                    .map(|c| machine.node_of(c) as usize + 1)
                    .max()
                    .unwrap_or(1),
            ),
        };
        if scenario.workload == Workload::Locality {
            let pod_cpus: Vec<usize> = pods.pods().iter().map(|p| p.cpus().len()).collect();
            engine.locality = Some(Box::new(LocalityState::new(
                machine, scenario, &pod_cpus, producers,
            )));
        }
        if scenario.workload.is_open() {
            engine.starts.reserve(engine.latencies.capacity());
        }
        for pod in pods.pods() {
            engine.add_pool(pod.cpus().iter());
        }
        let per_producer = scenario.items * scenario.workload.items_per_item();
        let senders = match scenario.workload {
            Workload::Fanout => crate::scenario::FANOUT_SENDERS,
            _ => 0,
        };
        for cpu in 0..producers {
            let pool = engine.pod_of[cpu] as usize;
            let tid = engine.new_thread(Thread::producer(cpu, pool, per_producer, senders));
            engine.run_on(tid, cpu, 0.0);
        }
        engine
    }

    /// Adds the pool of a pod of Linux CPUs `ids`, with one parked worker.
    fn add_pool(&mut self, ids: impl Iterator<Item = usize>) {
        let n = self.machine.len();
        let cpus: Vec<u32> = ids
            .filter_map(|id| self.machine.dense(id))
            .map(|c| c as u32)
            .collect();
        let pod = mask_of(n, cpus.iter().map(|&c| c as usize));
        let allowed = if self.mech.strict {
            pod.clone()
        } else {
            let domains: Vec<u32> = cpus
                .iter()
                .map(|&c| self.machine.cache_of(c as usize))
                .collect();
            mask_of(
                n,
                (0..n).filter(|&c| domains.contains(&self.machine.cache_of(c))),
            )
        };
        let first = cpus[0];
        let pool_lines = self.costs.lines_per_handover;
        let queue_lines = self.mech.queue_lock_lines.map_or(pool_lines, f64::from);
        let futex = self.mech.futex_locks;
        let head = self.new_lock(first, queue_lines, futex);
        let synced = if self.mech.push_lanes {
            self.new_lock(first, pool_lines, futex)
        } else {
            head
        };
        let lanes = if self.mech.push_lanes {
            // podq's lanes: one per CPU of the pod, at most 16, then CPUs share them.
            let count = cpus.len().min(16);
            (0..count)
                .map(|i| self.new_lock(cpus[i], queue_lines, false))
                .collect()
        } else {
            Vec::new()
        };
        let lanes_count = lanes.len();
        let eager = self.mech.eager_workers.unwrap_or(cpus.len());
        let id = self.pools.len() as u32;
        let active = self.active_slot(&cpus);
        self.pools.push(Pool {
            head,
            synced,
            lanes,
            cpus,
            pod,
            allowed,
            queue: VecDeque::new(),
            head_len: 0,
            lane_waiting: vec![0; lanes_count],
            workers: Workers {
                live: 1,
                idle: 1,
                ..Workers::default()
            },
            limits: Limits::new(self.mech.max_workers, eager),
            idle: Vec::new(),
            started: 0,
            last_started: None,
            rotation: 0,
            spinners: Vec::new(),
            mailbox: None,
            active,
        });
        let worker = self.new_thread(Thread::worker(id, first));
        self.pools[id as usize].idle.push(worker);
        self.workers_started += 1;
    }

    /// A new lock whose `lines` cache lines sit on dense CPU `cpu`.
    fn new_lock(&mut self, cpu: u32, lines: f64, futex: bool) -> u32 {
        self.locks.push(Lock::new(cpu, lines, futex));
        (self.locks.len() - 1) as u32
    }

    /// Adds `thread`, returning its id.
    fn new_thread(&mut self, thread: Thread) -> u32 {
        self.threads.push(thread);
        (self.threads.len() - 1) as u32
    }

    /// Runs events until the run ends.
    fn run(&mut self) -> Result<(), SimError> {
        while let Some(Reverse(event)) = self.heap.pop() {
            self.now = event.time;
            self.events += 1;
            if event.target & HELD_EVENT != 0 {
                self.held_look((event.target & !HELD_EVENT) as usize);
            } else if event.target & POOL_EVENT != 0 {
                self.watchdog_look((event.target & !POOL_EVENT) as usize);
            } else if self.threads[event.target as usize].token != event.token {
                continue;
            } else if self.threads[event.target as usize].on_cpu {
                self.step(event.target);
            } else {
                // A worker that has just been started becomes runnable.
                let near = self.threads[event.target as usize].cpu;
                self.wake(event.target, near, false);
            }
            if self.end.is_some() {
                return Ok(());
            }
        }
        Err(SimError::Stuck {
            done: self.items_done,
            total: self.total_items,
        })
    }

    /// The outcome, once the run has ended.
    fn outcome(&mut self, pools: usize) -> Outcome {
        let end = self.end.unwrap_or(self.now).max(1);
        let queue_to_start = if self.workload.is_open() {
            Some(Percentiles::of(&mut self.starts))
        } else {
            None
        };
        Outcome {
            items_per_sec: self.total_items as f64 * 1e9 / end as f64,
            queue: Percentiles::of(&mut self.latencies),
            queue_to_start,
            pools,
            workers: self.workers_started,
            lock_acquisitions: self.acquisitions,
            lock_contended: self.contended,
            simulated_ns: end,
            events: self.events,
            pull: self.pull.as_ref().map(|g| g.counts).unwrap_or_default(),
            locality: {
                let busy = self.busy_fraction(end);
                self.locality.as_deref_mut().map(|l| l.counts(busy))
            },
            held: self.held.counts,
        }
    }

    /// `ns` of a thread's own instructions on dense CPU `cpu`: longer while an SMT sibling of
    /// that CPU runs a thread, as the two share the core
    /// ([`Platform::smt_slowdown`](crate::Platform::smt_slowdown)). Cache-line moves, waits and
    /// idle exits are not the core's work and never pass through here.
    #[inline]
    fn cpu_work(&self, cpu: u32, ns: f64) -> f64 {
        match self.sibling[cpu as usize] {
            Some(s) if self.cpus[s as usize].current.is_some() => {
                ns * self.machine.platform().smt_slowdown
            }
            _ => ns,
        }
    }

    /// Schedules `target` `delay_ns` from now, moved by the jitter.
    #[inline]
    fn after(&mut self, target: u32, delay_ns: f64) {
        let owed = std::mem::take(&mut self.threads[target as usize].owed_ns);
        let jittered = (delay_ns + owed) * (1.0 + self.costs.jitter * self.rng.symmetric());
        let time = self.now + jittered.max(0.0).round() as u64;
        self.seq += 1;
        let token = self.threads[target as usize].token;
        self.heap.push(Reverse(Event {
            time,
            seq: self.seq,
            target,
            token,
        }));
    }

    /// Schedules `target` at simulated time `time` (not before now), without jitter: a
    /// sleeping producer's timer.
    fn at_time(&mut self, target: u32, time: u64) {
        self.seq += 1;
        let token = self.threads[target as usize].token;
        self.heap.push(Reverse(Event {
            time: time.max(self.now),
            seq: self.seq,
            target,
            token,
        }));
    }

    /// What the pool of `pool` does for waiting items, as the policy decides (steps P4-P6,
    /// W4), applied to the pool's counts; the action is carried out after the unlock.
    fn decide(&mut self, pool: usize) -> Option<Action> {
        let p = &mut self.pools[pool];
        let w = p.workers;
        // Spinners off their CPU (yielded) cannot take an item before the pusher blocks.
        let threads = &self.threads;
        let spinners = p
            .spinners
            .iter()
            .filter(|&&s| threads[s as usize].on_cpu)
            .count();
        if !growth::wants_help(w, p.limits)
            || (spinners > 0 && growth::spinners_take(p.queue.len(), spinners))
        {
            return None;
        }
        if growth::wakes(w) {
            if self.mech.kick_until_running && w.coming > 0 {
                // The woken worker on its way is woken again: nothing happens.
                return None;
            }
            return Some(Action::Wake(self.take_idle(pool)));
        }
        match growth::grow(w, p.queue.len(), spinners, p.limits) {
            Grow::Spawn => {
                p.workers.live += 1;
                p.workers.coming += 1;
                Some(Action::Spawn)
            }
            Grow::Watch => {
                p.workers.watched = true;
                p.last_started = None;
                self.watch(pool);
                None
            }
            Grow::No => None,
        }
    }

    /// Takes the most recently parked worker of `pool` off its idle stack, counted as coming;
    /// it asks its siblings once more if it finds its queue empty (a kick woke it for that).
    fn take_idle(&mut self, pool: usize) -> u32 {
        let p = &mut self.pools[pool];
        let worker = p.idle.pop().expect("the idle count matches the idle stack");
        p.workers.idle -= 1;
        p.workers.coming += 1;
        if let Role::Worker { coming, asked, .. } = &mut self.threads[worker as usize].role {
            (*coming, *asked) = (true, false);
        }
        worker
    }

    /// Schedules the watchdog's next look at `pool`.
    fn watch(&mut self, pool: usize) {
        let interval = stall::STALL_CHECK_INTERVAL.as_nanos() as f64;
        self.seq += 1;
        self.heap.push(Reverse(Event {
            time: self.now + interval as u64,
            seq: self.seq,
            target: POOL_EVENT | pool as u32,
            token: 0,
        }));
    }

    /// The stall watchdog's look at `pool` (steps D3-D4).
    fn watchdog_look(&mut self, pool: usize) {
        let p = &mut self.pools[pool];
        let look = stall::check(
            p.queue.len(),
            p.started,
            p.last_started,
            p.workers,
            0,
            p.limits.max_workers,
        );
        p.last_started = Some(p.started);
        match look {
            stall::Look::Stop => p.workers.watched = false,
            stall::Look::Watch => self.watch(pool),
            stall::Look::Spawn => {
                p.workers.live += 1;
                p.workers.coming += 1;
                let near = p.cpus[0];
                self.spawn(pool, near);
                self.watch(pool);
            }
        }
    }

    /// Carries out `action` decided for `pool` by a thread on dense CPU `cpu`; returns what
    /// it costs the thread outside the lock.
    fn perform(&mut self, action: Option<Action>, pool: usize, cpu: u32, pinned: bool) -> f64 {
        match action {
            Some(Action::Wake(worker)) => {
                self.wake(worker, cpu, pinned);
                if self.mech.wake_under_lock {
                    0.0
                } else {
                    self.cpu_work(cpu, self.costs.wake_call_ns)
                }
            }
            Some(Action::Spawn) => {
                self.spawn(pool, cpu);
                0.0
            }
            None => 0.0,
        }
    }

    /// Starts a worker for `pool` near dense CPU `cpu`; it becomes runnable after
    /// [`Costs::spawn_ns`].
    fn spawn(&mut self, pool: usize, cpu: u32) {
        let p = &self.pools[pool];
        let home = if cpus::contains(&p.pod, cpu as usize) {
            cpu
        } else {
            p.cpus[0]
        };
        let mut thread = Thread::worker(pool as u32, home);
        if let Role::Worker { coming, .. } = &mut thread.role {
            *coming = true;
        }
        let tid = self.new_thread(thread);
        self.workers_started += 1;
        self.after(tid, self.costs.spawn_ns);
    }
}
