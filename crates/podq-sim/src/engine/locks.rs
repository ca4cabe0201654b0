//! Locks: a queued spinlock per pool (and per podq lane), whose hand-over moves cache lines
//! from the last holder's CPU.

use std::collections::VecDeque;

use super::Engine;

/// A pool lock (or a podq lane lock): held or not, and its spinning waiters in order.
#[derive(Clone, Debug)]
pub(super) struct Lock {
    /// Whether someone holds it.
    pub(super) held: bool,
    /// Threads spinning for it, first come first served (a queued spinlock).
    pub(super) waiters: VecDeque<u32>,
    /// The dense CPU of its last holder: where its cache lines are.
    pub(super) last_cpu: u32,
    /// The cache lines that move with it to its next holder.
    pub(super) lines: f64,
}

impl Engine<'_> {
    /// Requests `lock` for `tid`: granted at once when free, else `tid` spins in line.
    pub(super) fn acquire(&mut self, tid: u32, lock: u32) {
        let l = &mut self.locks[lock as usize];
        if l.held {
            l.waiters.push_back(tid);
            self.contended += 1;
        } else {
            l.held = true;
            self.grant(tid, lock, false);
        }
    }

    /// Gives `lock` to `tid`: its lines move to `tid`'s CPU, its critical section takes
    /// effect, and its release is scheduled.
    pub(super) fn grant(&mut self, tid: u32, lock: u32, contended: bool) {
        let cpu = self.threads[tid as usize].cpu as usize;
        let from = self.locks[lock as usize].last_cpu as usize;
        let line = self.machine.platform().at(self.machine.distance(from, cpu));
        let mut handover = line * self.locks[lock as usize].lines;
        if contended {
            handover *= self.costs.contended_factor;
        }
        let inside = self.enter(tid);
        self.after(tid, handover + inside);
    }

    /// Releases `lock` held by `tid`: the next waiter, if any, gets it.
    pub(super) fn release(&mut self, tid: u32, lock: u32) {
        let cpu = self.threads[tid as usize].cpu;
        let l = &mut self.locks[lock as usize];
        l.last_cpu = cpu;
        match l.waiters.pop_front() {
            Some(next) => self.grant(next, lock, true),
            None => l.held = false,
        }
    }
}
