//! Locks: a queued spinlock per pool (and per podq lane), whose hand-over moves cache lines
//! from the last holder's CPU; with [`Mechanism::futex_locks`], podq's head and pool locks are
//! futex mutexes instead, whose waiters sleep.
//!
//! [`Mechanism::futex_locks`]: crate::profile::Mechanism::futex_locks

use std::collections::VecDeque;

use super::Engine;
use crate::profile::{MUTEX_SPINS, WORKER_SPINS};

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
    /// A futex mutex (`std::sync::Mutex`): waiters spin briefly, then sleep.
    pub(super) futex: bool,
    /// The futex word says "contended" (2): its unlock wakes a sleeper, and a thread that
    /// finds it held sleeps at once.
    pub(super) marked: bool,
    /// Threads asleep on the futex, in the order they slept (`futex_wake` wakes the first).
    pub(super) sleepers: VecDeque<u32>,
}

/// What a thread waiting for a futex lock is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LockWait {
    /// Spinning for `lock` until its spin ends; `woken`: it was woken from the futex first,
    /// so it marks the lock contended when it takes it.
    Spin {
        /// The lock.
        lock: u32,
        /// Woken from the futex before this spin.
        woken: bool,
    },
    /// Asleep on `lock`'s futex; resumed by an unlock's wake-up, it tries again.
    Sleep(u32),
}

impl Lock {
    /// A free lock whose `lines` cache lines sit on dense CPU `cpu`.
    pub(super) fn new(cpu: u32, lines: f64, futex: bool) -> Lock {
        Lock {
            held: false,
            waiters: VecDeque::new(),
            last_cpu: cpu,
            lines,
            futex,
            marked: false,
            sleepers: VecDeque::new(),
        }
    }
}

impl Engine<'_> {
    /// Requests `lock` for `tid`: granted at once when free, else `tid` spins in line (and,
    /// for a futex lock, sleeps when its spin ends or the lock is marked contended).
    pub(super) fn acquire(&mut self, tid: u32, lock: u32) {
        self.acquisitions += 1;
        let l = &mut self.locks[lock as usize];
        if !l.held {
            l.held = true;
            self.grant(tid, lock, false);
        } else if l.futex {
            self.contended += 1;
            self.spin_or_sleep(tid, lock, false);
        } else {
            l.waiters.push_back(tid);
            self.contended += 1;
        }
    }

    /// Gives `lock` to `tid`: its lines move to `tid`'s CPU, its critical section takes
    /// effect, and its release is scheduled.
    pub(super) fn grant(&mut self, tid: u32, lock: u32, contended: bool) {
        let t = &mut self.threads[tid as usize];
        if t.lock_wait.take().is_some() {
            // Its spin's end is no longer due.
            t.token = t.token.wrapping_add(1);
        }
        let cpu = t.cpu as usize;
        let from = self.locks[lock as usize].last_cpu as usize;
        let line = self.machine.platform().at(self.machine.distance(from, cpu));
        let mut handover = line * self.locks[lock as usize].lines;
        if contended {
            handover *= self.costs.contended_factor;
        }
        let inside = self.enter(tid);
        self.after(tid, handover + inside);
    }

    /// Releases `lock` held by `tid`: the next waiter, if any, gets it. An unlock of a futex
    /// lock marked contended clears the mark and wakes its first sleeper (`futex_wake`), which
    /// `tid` pays ([`Costs::wake_call_ns`](crate::Costs::wake_call_ns)) before its next step.
    pub(super) fn release(&mut self, tid: u32, lock: u32) {
        let cpu = self.threads[tid as usize].cpu;
        let l = &mut self.locks[lock as usize];
        l.last_cpu = cpu;
        let wake = std::mem::take(&mut l.marked);
        match l.waiters.pop_front() {
            Some(next) => {
                if let Some(LockWait::Spin { woken: true, .. }) =
                    self.threads[next as usize].lock_wait
                {
                    self.locks[lock as usize].marked = true;
                }
                self.grant(next, lock, true);
            }
            None => l.held = false,
        }
        if wake {
            if let Some(sleeper) = self.locks[lock as usize].sleepers.pop_front() {
                self.threads[tid as usize].owed_ns += self.cpu_work(cpu, self.costs.wake_call_ns);
                self.wake(sleeper, cpu, false);
            }
        }
    }

    /// `tid` resumed while it waits for a futex lock: its spin ended with the lock still held
    /// (it marks the lock and sleeps, and so does every other spinner, seeing the mark), or an
    /// unlock woke it (it tries again, as `lock_contended` does after `futex_wait`).
    pub(super) fn lock_wait_over(&mut self, tid: u32, wait: LockWait) {
        match wait {
            LockWait::Spin { lock, .. } => {
                let l = &mut self.locks[lock as usize];
                l.waiters.retain(|&w| w != tid);
                let others: Vec<u32> = l.waiters.drain(..).collect();
                self.sleep_on(tid, lock);
                for other in others {
                    self.sleep_on(other, lock);
                }
            }
            LockWait::Sleep(lock) => {
                self.threads[tid as usize].lock_wait = None;
                let l = &mut self.locks[lock as usize];
                if l.held {
                    self.spin_or_sleep(tid, lock, true);
                } else {
                    l.held = true;
                    l.marked = true;
                    self.grant(tid, lock, false);
                }
            }
        }
    }

    /// `tid` found futex lock `lock` held: it sleeps at once when the lock is marked, else it
    /// spins [`MUTEX_SPINS`] pauses in line for it.
    fn spin_or_sleep(&mut self, tid: u32, lock: u32, woken: bool) {
        if self.locks[lock as usize].marked {
            self.sleep_on(tid, lock);
            return;
        }
        self.locks[lock as usize].waiters.push_back(tid);
        self.threads[tid as usize].lock_wait = Some(LockWait::Spin { lock, woken });
        let spin = self.costs.spin_ns * f64::from(MUTEX_SPINS) / f64::from(WORKER_SPINS);
        self.after(tid, spin);
    }

    /// `tid` marks futex lock `lock` contended and sleeps on it (`futex_wait`).
    fn sleep_on(&mut self, tid: u32, lock: u32) {
        let l = &mut self.locks[lock as usize];
        l.marked = true;
        l.sleepers.push_back(tid);
        let t = &mut self.threads[tid as usize];
        t.lock_wait = Some(LockWait::Sleep(lock));
        t.token = t.token.wrapping_add(1);
        if t.on_cpu {
            self.block(tid);
        }
    }
}
