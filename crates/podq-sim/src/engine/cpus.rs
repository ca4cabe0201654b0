//! The CPUs' side of the engine, the operating system's part: which thread runs where,
//! sleeping, waking (and where a woken worker is placed), yielding, time slices; idle CPUs as a
//! bit set, and the search for an idle CPU in a mask.

use std::collections::VecDeque;

use super::threads::Role;
use super::Engine;

/// One CPU: the thread on it and the threads waiting for it.
#[derive(Clone, Debug)]
pub(super) struct Cpu {
    /// The thread running (or spinning, or switching in) on this CPU.
    pub(super) current: Option<u32>,
    /// Runnable threads waiting for this CPU, in order.
    pub(super) runq: VecDeque<u32>,
    /// When `current` began its time slice.
    pub(super) slice_start: u64,
    /// The scheduler's average idle period of this CPU (`rq->avg_idle`), in ns.
    pub(super) avg_idle: f64,
    /// When it last went idle.
    pub(super) idle_since: u64,
    /// Its idle time before `idle_since`, in ns.
    pub(super) idle_ns: u64,
    /// The dense CPU it last picked for a worker it woke in another pod
    /// ([`Mechanism::repatriates`](crate::profile::Mechanism::repatriates)): the kernel's
    /// per-CPU `distribute_cpu_mask_prev`.
    pub(super) distribute_prev: u32,
}

/// Linux's `sysctl_sched_migration_cost` (0.5 ms): a CPU whose average idle period
/// ([`Cpu::avg_idle`]) is shorter does not balance when it goes idle (`newidle_balance`), as
/// moving a thread would cost more than the idle period it fills. The average starts at twice
/// this (`rq->avg_idle` at boot) and is capped there.
pub(super) const MIGRATION_COST_NS: f64 = 500_000.0;

impl Cpu {
    /// A CPU that has been idle for long.
    pub(super) fn new() -> Cpu {
        Cpu {
            current: None,
            runq: VecDeque::new(),
            slice_start: 0,
            avg_idle: 2.0 * MIGRATION_COST_NS,
            idle_since: 0,
            idle_ns: 0,
            distribute_prev: 0,
        }
    }
}

/// A set of dense CPU indices, 64 to a word.
pub(super) type Mask = Vec<u64>;

/// A mask of `len` CPUs with `cpus` set.
pub(super) fn mask_of(len: usize, cpus: impl IntoIterator<Item = usize>) -> Mask {
    let mut mask = vec![0u64; len.div_ceil(64)];
    for cpu in cpus {
        mask[cpu / 64] |= 1 << (cpu % 64);
    }
    mask
}

/// Whether `cpu` is in `mask`.
#[inline]
pub(super) fn contains(mask: &[u64], cpu: usize) -> bool {
    mask[cpu / 64] & (1 << (cpu % 64)) != 0
}

/// Sets or clears `cpu` in `mask`.
#[inline]
pub(super) fn assign(mask: &mut [u64], cpu: usize, on: bool) {
    if on {
        mask[cpu / 64] |= 1 << (cpu % 64);
    } else {
        mask[cpu / 64] &= !(1 << (cpu % 64));
    }
}

/// The first CPU at or after `start` (wrapping around) that is in both `a` and `b`.
pub(super) fn first_common(a: &[u64], b: &[u64], start: usize) -> Option<usize> {
    let words = a.len();
    let (first_word, first_bit) = (start / 64, start % 64);
    for k in 0..=words {
        let w = (first_word + k) % words;
        let mut bits = a[w] & b[w];
        if k == 0 {
            bits &= u64::MAX << first_bit;
        } else if k == words {
            bits &= !(u64::MAX << first_bit);
        }
        if bits != 0 {
            return Some(w * 64 + bits.trailing_zeros() as usize);
        }
    }
    None
}

impl Engine<'_> {
    /// A push to `pool` from dense CPU `cpu`: the first spinner, if any, sees the item after
    /// one cache line comes over, and stops spinning.
    pub(super) fn notify_spinner(&mut self, pool: usize, cpu: u32) {
        let p = &mut self.pools[pool];
        if p.spinners.is_empty() {
            return;
        }
        let spinner = p.spinners[0];
        self.stop_spinner(pool, spinner, cpu);
    }

    /// Spinner `spinner` of `pool` sees an item a thread on dense CPU `cpu` queued or handed
    /// it, one cache line later, and stops spinning; it closes the mailbox if it owns it (W6).
    pub(super) fn stop_spinner(&mut self, pool: usize, spinner: u32, cpu: u32) {
        let p = &mut self.pools[pool];
        p.spinners.retain(|&s| s != spinner);
        if p.mailbox == Some(spinner) {
            p.mailbox = None;
        }
        let t = &mut self.threads[spinner as usize];
        t.token = t.token.wrapping_add(1);
        if !t.on_cpu {
            // It yielded its CPU and looks again when it is back.
            return;
        }
        let at = t.cpu;
        let line = self.line(cpu, at);
        self.after(spinner, line);
    }

    /// Puts `tid` on dense CPU `cpu` now, running after `delay_ns` (a switch or an idle exit).
    pub(super) fn run_on(&mut self, tid: u32, cpu: usize, delay_ns: f64) {
        if contains(&self.idle_cpus, cpu) {
            // The scheduler's `update_avg` of the idle period that ends (an eighth of the
            // difference), capped at twice the migration cost.
            let c = &mut self.cpus[cpu];
            c.idle_ns += self.now - c.idle_since;
            let idle = ((self.now - c.idle_since) as f64).min(2.0 * MIGRATION_COST_NS);
            c.avg_idle += (idle - c.avg_idle) / 8.0;
        }
        self.cpus[cpu].current = Some(tid);
        self.cpus[cpu].slice_start = self.now;
        assign(&mut self.idle_cpus, cpu, false);
        let t = &mut self.threads[tid as usize];
        t.cpu = cpu as u32;
        t.on_cpu = true;
        self.after(tid, delay_ns);
    }

    /// The CPUs' busy fraction from time 0 to `end`: the time a thread ran, spun or switched in
    /// on them over `end` x CPUs, as the bench's CPU time over its wall time.
    pub(super) fn busy_fraction(&self, end: u64) -> f64 {
        let idle: u64 = self
            .cpus
            .iter()
            .enumerate()
            .map(|(at, c)| {
                let open = if contains(&self.idle_cpus, at) {
                    end.saturating_sub(c.idle_since)
                } else {
                    0
                };
                c.idle_ns + open
            })
            .sum();
        let total = (end.max(1) * self.cpus.len().max(1) as u64) as f64;
        (1.0 - idle as f64 / total).clamp(0.0, 1.0)
    }

    /// `tid` leaves its CPU (it sleeps, or has finished); the CPU switches to the next
    /// runnable thread or goes idle.
    pub(super) fn block(&mut self, tid: u32) {
        let t = &mut self.threads[tid as usize];
        t.on_cpu = false;
        let cpu = t.cpu as usize;
        self.cpus[cpu].current = None;
        match self.cpus[cpu].runq.pop_front() {
            Some(next) => self.run_on(next, cpu, self.cpu_work(cpu as u32, self.costs.switch_ns)),
            None => match self.idle_pull(cpu) {
                Some(next) => {
                    self.run_on(next, cpu, self.cpu_work(cpu as u32, self.costs.switch_ns))
                }
                None => {
                    assign(&mut self.idle_cpus, cpu, true);
                    self.cpus[cpu].idle_since = self.now;
                }
            },
        }
    }

    /// The scheduler's balance on going idle (`newidle_balance`): dense CPU `cpu` has nothing
    /// to run, so, unless its idle periods are short ([`MIGRATION_COST_NS`]), it takes the
    /// first thread waiting in another CPU's run queue that may run on it (a worker whose pool
    /// allows it; producers are pinned), searching from the next CPU on. The thread's cache
    /// lines follow it as its own costs do, not modelled here.
    fn idle_pull(&mut self, cpu: usize) -> Option<u32> {
        if self.cpus[cpu].avg_idle < MIGRATION_COST_NS {
            return None;
        }
        let n = self.cpus.len();
        for other in (1..n).map(|k| (cpu + k) % n) {
            let at =
                self.cpus[other]
                    .runq
                    .iter()
                    .position(|&t| match self.threads[t as usize].role {
                        Role::Worker { pool, .. } => {
                            contains(&self.pools[pool as usize].allowed, cpu)
                        }
                        Role::Producer { .. } => false,
                    });
            if let Some(at) = at {
                return self.cpus[other].runq.remove(at);
            }
        }
        None
    }

    /// Whether `tid` gives its CPU up at this step: its slice is over and others wait.
    pub(super) fn yields(&mut self, tid: u32) -> bool {
        let cpu = self.threads[tid as usize].cpu as usize;
        let c = &self.cpus[cpu];
        if c.runq.is_empty() || ((self.now - c.slice_start) as f64) < self.slice_ns {
            return false;
        }
        self.yield_cpu(tid);
        true
    }

    /// `tid` gives its CPU to the first thread waiting for it and waits at the back; events
    /// scheduled for it so far are dropped.
    pub(super) fn yield_cpu(&mut self, tid: u32) {
        let t = &mut self.threads[tid as usize];
        t.on_cpu = false;
        t.token = t.token.wrapping_add(1);
        let cpu = t.cpu as usize;
        self.cpus[cpu].runq.push_back(tid);
        let next = self.cpus[cpu].runq.pop_front().expect("not empty");
        self.run_on(next, cpu, self.cpu_work(cpu as u32, self.costs.switch_ns));
    }

    /// Makes sleeping `tid` runnable, woken from dense CPU `waker`; `pinned` says whether the
    /// waker is a per-CPU thread (a producer).
    pub(super) fn wake(&mut self, tid: u32, waker: u32, pinned: bool) {
        if self.threads[tid as usize].on_cpu {
            self.threads[tid as usize].notified = true;
            return;
        }
        let cpu = match self.threads[tid as usize].role {
            Role::Producer { .. } => self.threads[tid as usize].cpu as usize,
            Role::Worker { pool, .. } => self.place_worker(tid, pool as usize, waker, pinned),
        };
        if self.cpus[cpu].current.is_none() {
            let exit = self
                .machine
                .platform()
                .idle_exit_ns(self.cpus[cpu].avg_idle);
            let delay = self.costs.wake_idle_ns + exit;
            self.run_on(tid, cpu, delay);
        } else {
            // It waits for the CPU: a kernel producer that woke it onto its own CPU runs on
            // until it sleeps, as `queue_work_on` runs `__queue_work` with interrupts off and
            // the first preemption point comes after the call.
            self.threads[tid as usize].cpu = cpu as u32;
            self.cpus[cpu].runq.push_back(tid);
        }
    }

    /// Where a woken worker runs: the scheduler's `select_idle_sibling`, simplified, from its
    /// last CPU or, when that is outside its pod and the profile repatriates, the pod's CPU
    /// that `kick_pool` picks ([`Mechanism::repatriates`](crate::profile::Mechanism::repatriates)).
    /// That CPU if idle; the waker's CPU if the waker is a per-CPU thread on the worker's last CPU
    /// (and the profile stacks); an idle CPU of the pod, then of the allowed CPUs, searched
    /// from the waker's; else its last CPU (or the pod's next by rotation), to wait there.
    pub(super) fn place_worker(
        &mut self,
        tid: u32,
        pool: usize,
        waker: u32,
        pinned: bool,
    ) -> usize {
        let mut prev = self.threads[tid as usize].cpu as usize;
        let p = &mut self.pools[pool];
        if self.mech.repatriates && !self.mech.strict && !contains(&p.pod, prev) {
            // `kick_pool`: the next pod CPU after the waking CPU's previous pick.
            let from = self.cpus[waker as usize].distribute_prev as usize + 1;
            if let Some(cpu) = first_common(&p.pod, &p.pod, from % self.cpus.len()) {
                self.cpus[waker as usize].distribute_prev = cpu as u32;
                prev = cpu;
            }
        }
        let allowed = contains(&p.allowed, prev);
        if allowed && self.cpus[prev].current.is_none() {
            return prev;
        }
        if self.mech.stack_on_waker && pinned && prev == waker as usize {
            return prev;
        }
        if let Some(cpu) = first_common(&p.pod, &self.idle_cpus, waker as usize) {
            return cpu;
        }
        if let Some(cpu) = first_common(&p.allowed, &self.idle_cpus, waker as usize) {
            return cpu;
        }
        if allowed {
            return prev;
        }
        p.rotation += 1;
        p.cpus[p.rotation % p.cpus.len()] as usize
    }
}

#[cfg(test)]
mod tests {
    use podq::AffinityScope;

    use super::super::test_parts::parts;
    use super::super::threads::Thread;
    use super::*;
    use crate::profile::Profile;
    use crate::scenario::Scenario;

    /// A worker woken by a producer of its pod while its last CPU, idle, is in another pod runs
    /// in its own pod when the profile repatriates (from the pod's CPU after the waking CPU's
    /// previous pick, as `kick_pool` picks it), and on its idle last CPU otherwise.
    #[test]
    fn a_worker_last_run_outside_its_pod_is_woken_inside_it_when_repatriated() {
        let (machine, pods, placement) = parts(16, AffinityScope::CacheShard, 4);
        let scenario = Scenario {
            shard_size: 4,
            ..Scenario::kernel_test(AffinityScope::CacheShard, 16)
        };
        for repatriates in [true, false] {
            let mut profile = Profile::kernel();
            profile.mechanism.repatriates = repatriates;
            let mut e = Engine::new(&machine, &profile, &scenario, &pods, &placement);
            // Every CPU runs its producer; those of CPUs 6 and 12 sleep.
            for cpu in [6, 12] {
                let producer = (0..e.threads.len() as u32)
                    .find(|&t| {
                        let t = &e.threads[t as usize];
                        matches!(t.role, Role::Producer { .. }) && t.cpu == cpu
                    })
                    .unwrap();
                e.block(producer);
            }
            // A worker of the pod of CPUs 4-7 last ran on CPU 12; CPU 4's producer wakes it,
            // its previous pick being CPU 4.
            let worker = e.new_thread(Thread::worker(1, 12));
            e.cpus[4].distribute_prev = 4;
            let at = e.place_worker(worker, 1, 4, true);
            if repatriates {
                // From CPU 5 (busy) on: the pod's idle CPU 6.
                assert_eq!(at, 6);
                assert_eq!(e.cpus[4].distribute_prev, 5);
            } else {
                assert_eq!(at, 12);
            }
        }
    }

    #[test]
    fn the_search_wraps_around_from_its_start() {
        let a = mask_of(130, [3, 70, 129]);
        let all = mask_of(130, 0..130);
        assert_eq!(first_common(&a, &all, 0), Some(3));
        assert_eq!(first_common(&a, &all, 4), Some(70));
        assert_eq!(first_common(&a, &all, 71), Some(129));
        assert_eq!(first_common(&a, &all, 130 - 1), Some(129));
        let b = mask_of(130, [3]);
        assert_eq!(first_common(&a, &b, 100), Some(3));
        assert_eq!(first_common(&a, &mask_of(130, []), 0), None);
        let mut m = mask_of(130, []);
        assign(&mut m, 65, true);
        assert!(contains(&m, 65));
        assign(&mut m, 65, false);
        assert!(!contains(&m, 65));
    }
}
