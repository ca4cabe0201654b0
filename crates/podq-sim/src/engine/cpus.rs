//! The CPUs' side of the engine, the operating system's part: which thread runs where,
//! sleeping, waking (and where a woken worker is placed), yielding, time slices; idle CPUs as a
//! bit set, and the search for an idle CPU in a mask.

use std::collections::VecDeque;

use super::threads::Role;
use super::Engine;

/// One CPU: the thread on it and the threads waiting for it.
#[derive(Clone, Debug, Default)]
pub(super) struct Cpu {
    /// The thread running (or spinning, or switching in) on this CPU.
    pub(super) current: Option<u32>,
    /// Runnable threads waiting for this CPU, in order.
    pub(super) runq: VecDeque<u32>,
    /// When `current` began its time slice.
    pub(super) slice_start: u64,
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
        let spinner = p.spinners.remove(0);
        let t = &mut self.threads[spinner as usize];
        t.token = t.token.wrapping_add(1);
        if !t.on_cpu {
            // It yielded its CPU and looks again when it is back.
            return;
        }
        let at = t.cpu as usize;
        let line = self
            .machine
            .platform()
            .at(self.machine.distance(cpu as usize, at));
        self.after(spinner, line);
    }

    /// Puts `tid` on dense CPU `cpu` now, running after `delay_ns` (a switch or an idle exit).
    pub(super) fn run_on(&mut self, tid: u32, cpu: usize, delay_ns: f64) {
        self.cpus[cpu].current = Some(tid);
        self.cpus[cpu].slice_start = self.now;
        assign(&mut self.idle_cpus, cpu, false);
        let t = &mut self.threads[tid as usize];
        t.cpu = cpu as u32;
        t.on_cpu = true;
        self.after(tid, delay_ns);
    }

    /// `tid` leaves its CPU (it sleeps, or has finished); the CPU switches to the next
    /// runnable thread or goes idle.
    pub(super) fn block(&mut self, tid: u32) {
        let t = &mut self.threads[tid as usize];
        t.on_cpu = false;
        let cpu = t.cpu as usize;
        self.cpus[cpu].current = None;
        match self.cpus[cpu].runq.pop_front() {
            Some(next) => self.run_on(next, cpu, self.costs.switch_ns),
            None => assign(&mut self.idle_cpus, cpu, true),
        }
    }

    /// Whether `tid` gives its CPU up at this step: its slice is over and others wait.
    pub(super) fn yields(&mut self, tid: u32) -> bool {
        let cpu = self.threads[tid as usize].cpu as usize;
        let c = &self.cpus[cpu];
        if c.runq.is_empty() || ((self.now - c.slice_start) as f64) < self.costs.slice_ns {
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
        self.run_on(next, cpu, self.costs.switch_ns);
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
            let delay = self.costs.wake_idle_ns + self.machine.platform().idle_exit_ns;
            self.run_on(tid, cpu, delay);
        } else {
            self.threads[tid as usize].cpu = cpu as u32;
            self.cpus[cpu].runq.push_back(tid);
        }
    }

    /// Where a woken worker runs: the scheduler's `select_idle_sibling`, simplified. Its last
    /// CPU if idle; the waker's CPU if the waker is a per-CPU thread on the worker's last CPU
    /// (and the profile stacks); an idle CPU of the pod, then of the allowed CPUs, searched
    /// from the waker's; else its last CPU (or the pod's next by rotation), to wait there.
    pub(super) fn place_worker(
        &mut self,
        tid: u32,
        pool: usize,
        waker: u32,
        pinned: bool,
    ) -> usize {
        let prev = self.threads[tid as usize].cpu as usize;
        let p = &mut self.pools[pool];
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
    use super::*;

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
