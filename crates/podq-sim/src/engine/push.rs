//! A queue call, by a producer or (for `rpc`) by a worker queueing the next hop: the push lock
//! (kernel: the pool lock; podq: the pusher's lane), and for podq the pool lock when
//! `policy::growth::wants_help` says so, or an offer to the siblings when every worker is busy
//! (steps P2-P7, O1).

use podq::policy::growth;

use super::threads::{Phase, Role};
use super::{Engine, Item, NO_GROUP};

/// The queue call a thread is making.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Job {
    /// The pool it queues to.
    pub(super) pool: u32,
    /// The producer whose item (or pair's hop) it queues.
    pub(super) pair: u32,
    /// When the call began.
    pub(super) t0: u64,
    /// Its push had the watchdog watch the pool (an offer, step O1, even with one item).
    pub(super) watch: bool,
    /// It queues a `fanout` sender, which is no item of the producer's count.
    pub(super) sender: bool,
    /// The group of the item it queues (`locality`), or `NO_GROUP`.
    pub(super) group: u32,
    /// The queue calls the item it queues makes when it runs (`Item::left`).
    pub(super) left: u64,
}

impl Engine<'_> {
    /// Starts `tid`'s queue call of an item of `pair` (a producer, one item fewer left to
    /// queue, unless it is a `sender`) to `pool`: it asks for the push lock.
    pub(super) fn start_push(&mut self, tid: u32, pool: u32, pair: u32, sender: bool) {
        self.start_push_of(tid, pool, pair, sender, NO_GROUP);
    }

    /// [`Engine::start_push`] of an item of `group`.
    pub(super) fn start_push_of(
        &mut self,
        tid: u32,
        pool: u32,
        pair: u32,
        sender: bool,
        group: u32,
    ) {
        if let (false, Role::Producer { left, .. }) =
            (sender, &mut self.threads[pair as usize].role)
        {
            *left -= 1;
        }
        self.start_push_with(tid, pool, pair, sender, group, 0);
    }

    /// [`Engine::start_push_of`] of an item that makes `left` queue calls when it runs, with
    /// no producer's count of items left to queue changed.
    pub(super) fn start_push_with(
        &mut self,
        tid: u32,
        pool: u32,
        pair: u32,
        sender: bool,
        group: u32,
        left: u64,
    ) {
        self.threads[tid as usize].job = Job {
            pool,
            pair,
            t0: self.now,
            watch: false,
            sender,
            group,
            left,
        };
        if self.hand_over(tid, pool) {
            return;
        }
        self.threads[tid as usize].phase = Phase::Push;
        let lock = self.push_lock(tid, pool);
        self.acquire(tid, lock);
    }

    /// (P1) A spinner on another CPU owns `pool`'s mailbox and nothing waits in the pusher's
    /// lane: `tid` hands it the item with one compare-and-swap on the mailbox's line (from the
    /// owner's CPU) and two stores, and its call returns; the owner puts the item at the back
    /// of the head (W6, W7). `false` (nothing done) otherwise.
    fn hand_over(&mut self, tid: u32, pool: u32) -> bool {
        let p = &self.pools[pool as usize];
        let Some(owner) = p.mailbox.filter(|_| self.mech.push_lanes) else {
            return false;
        };
        let (cpu, owner_cpu) = (
            self.threads[tid as usize].cpu,
            self.threads[owner as usize].cpu,
        );
        // The lanes of the pusher's CPU and of the one the owner spins on.
        let (lane, owners) = (self.push_lock(tid, pool), self.push_lock(owner, pool));
        let empty = p.lane_of(lane).is_none_or(|at| p.lane_waiting[at] == 0);
        if owners == lane || !empty {
            return false;
        }
        let job = self.threads[tid as usize].job;
        let p = &mut self.pools[pool as usize];
        p.queue.push_back(Item {
            producer: job.pair,
            queued_at: job.t0,
            lane,
            from: cpu,
            in_head: true,
            sender: job.sender,
            group: job.group,
            left: job.left,
        });
        p.head_len += 1;
        self.stop_spinner(pool as usize, owner, cpu);
        let line = self.line(owner_cpu, cpu);
        self.threads[tid as usize].phase = Phase::Queued;
        let cs = self.cpu_work(cpu, self.costs.critical_section_ns);
        self.after(tid, line + cs);
        true
    }

    /// The steps of `tid`'s queue call after its critical sections: unlock, then (podq) the
    /// pool lock or an offer, then the wake-up; `true` when it waits (for time or a lock),
    /// `false` when the call has returned ([`Phase::Queued`]).
    pub(super) fn push_step(&mut self, tid: u32) -> bool {
        let t = &self.threads[tid as usize];
        let (phase, cpu, job, action) = (t.phase, t.cpu, t.job, t.action());
        let pinned = matches!(t.role, Role::Producer { .. });
        let pool = job.pool as usize;
        let extra = match phase {
            Phase::PushRelease => {
                let lock = self.push_lock(tid, job.pool);
                self.release(tid, lock);
                if self.mech.push_lanes {
                    let p = &self.pools[pool];
                    let spinners = p.spinners.len();
                    let left_to_spinners =
                        spinners > 0 && growth::spinners_take(p.queue.len(), spinners);
                    if !left_to_spinners && growth::wants_help(p.workers, p.limits) {
                        self.threads[tid as usize].phase = Phase::Help;
                        let lock = self.pools[pool].synced;
                        self.acquire(tid, lock);
                        return true;
                    }
                    if left_to_spinners {
                        0.0
                    } else {
                        // Every worker busy (P4's `Busy`): the pool may offer (O1), by the
                        // length of the pusher's lane.
                        let waiting = self.lane_waiting(tid, pool);
                        self.offer(pool, waiting, cpu)
                    }
                } else {
                    self.clear_action(tid);
                    self.perform(action, pool, cpu, pinned)
                }
            }
            Phase::HelpRelease => {
                let lock = self.pools[pool].synced;
                self.release(tid, lock);
                self.clear_action(tid);
                let mut extra = self.perform(action, pool, cpu, pinned);
                if job.watch {
                    let waiting = self.lane_waiting(tid, pool);
                    extra += self.offer(pool, waiting, cpu);
                }
                extra
            }
            other => unreachable!("{other:?} is no step of a queue call"),
        };
        self.threads[tid as usize].phase = Phase::Queued;
        if extra > 0.0 {
            self.after(tid, extra);
            return true;
        }
        false
    }

    /// The push's critical section: the item goes to the back of the queue, a spinner sees it,
    /// and (kernel) the pool decides under the same lock. Returns the time inside the lock.
    pub(super) fn enter_push(&mut self, tid: u32) -> f64 {
        let job = self.threads[tid as usize].job;
        let lane = self.push_lock(tid, job.pool);
        let from = self.threads[tid as usize].cpu;
        let p = &mut self.pools[job.pool as usize];
        p.queue.push_back(Item {
            producer: job.pair,
            queued_at: job.t0,
            lane,
            from,
            in_head: false,
            sender: job.sender,
            group: job.group,
            left: job.left,
        });
        if let Some(at) = p.lane_of(lane) {
            p.lane_waiting[at] += 1;
        }
        let cpu = self.threads[tid as usize].cpu;
        self.notify_spinner(job.pool as usize, cpu);
        self.threads[tid as usize].phase = Phase::PushRelease;
        let cs = self.cpu_work(cpu, self.costs.critical_section_ns);
        if self.mech.push_lanes {
            return cs;
        }
        let action = self.decide(job.pool as usize);
        self.set_action(tid, action);
        cs + self.active_change(job.pool as usize, cpu) + self.wake_inside(action, cpu)
    }

    /// The pool lock's critical section of a podq push (P5, P6): wake or grow as the policy
    /// decides, noting whether it had the watchdog watch the pool.
    pub(super) fn enter_help(&mut self, tid: u32) -> f64 {
        let pool = self.threads[tid as usize].job.pool as usize;
        let was_watched = self.pools[pool].workers.watched;
        let action = self.decide(pool);
        self.threads[tid as usize].job.watch = !was_watched && self.pools[pool].workers.watched;
        self.set_action(tid, action);
        self.threads[tid as usize].phase = Phase::HelpRelease;
        let cpu = self.threads[tid as usize].cpu;
        self.cpu_work(cpu, self.costs.critical_section_ns) + self.wake_inside(action, cpu)
    }

    /// The items waiting in the lane thread `tid` pushes to in `pool` (podq).
    fn lane_waiting(&self, tid: u32, pool: usize) -> usize {
        let lane = self.push_lock(tid, pool as u32);
        let p = &self.pools[pool];
        p.lane_of(lane).map_or(0, |at| p.lane_waiting[at])
    }

    /// The lock thread `tid` pushes to `pool` under: its CPU's lane lock (podq), or the
    /// pool's one lock (kernel).
    pub(super) fn push_lock(&self, tid: u32, pool: u32) -> u32 {
        let p = &self.pools[pool as usize];
        if !self.mech.push_lanes {
            return p.head;
        }
        let cpu = self.threads[tid as usize].cpu;
        let lane = p
            .cpus
            .iter()
            .position(|&c| c == cpu)
            .unwrap_or(cpu as usize);
        p.lanes[lane % p.lanes.len()]
    }
}
