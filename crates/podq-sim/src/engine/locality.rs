//! The `locality` workload and steering: paced producers queueing items of random groups, each
//! group's working set moving between the caches as its items run, and, with steering, every
//! decision asked of `podq::policy::steer` with simulated time and state, supplied the way
//! `workqueue/steering.rs`, `workqueue/group.rs` and `pool/load.rs` supply them in the runtime
//! (steps S1-S5 of "Steering" in `src/workqueue/README.md`):
//!
//! * S1/S2, the queue call: the group's published home and last vote ([`Preference::snapshot`])
//!   and its runnable items (read before this item counts) go to [`steer::steer`], which asks
//!   the home pod's load only when the item is not issued there; the load is the pod's signal,
//!   sampled again when its last sample is older than [`steer::SAMPLE_INTERVAL`] (busy workers
//!   over the pod's CPUs, [`Busy::of`], into the moving mean of [`steer::busy_mean`]);
//! * S3, the start: counted at home when the group's home at that time
//!   ([`Snapshot::home_at`]) is the worker's pod, else elsewhere; a vote
//!   ([`steer::record`]: decay, expiry, hysteresis) when [`steer::votes`] lets it;
//! * S5, the end: the item no longer counts among its group's runnable items.
//!
//! What it costs: reading the group's line (from the CPU that last voted) at every grouped
//! queue call, reading the pod's signal line (from its last sampler) when the load is read, and
//! the group's line again for a vote. Without steering a group's items go where plain items go
//! and nothing of this is paid.

use std::collections::VecDeque;
use std::time::Duration;

use podq::policy::steer::{
    self, Busy, BusyMean, PodLoad, Preference, Recorded, Snapshot, Steer, Unsteered,
};

use super::Engine;
use crate::cost::Caches;
use crate::machine::SimMachine;
use crate::outcome::{LocalityCounts, Percentiles};
use crate::rng::Rng;
use crate::scenario::{Scenario, GROUPS_PER_POD};

/// No core or cache domain: the set is in none.
const NOWHERE: u32 = u32::MAX;

/// One group: its preference and runnable items (steering), and where its working set is.
#[derive(Clone, Copy, Debug)]
struct GroupSim {
    /// The preference, changed only by `steer::record`.
    pref: Preference,
    /// Items queued and not finished.
    runnable: usize,
    /// The core whose private cache holds the set, or [`NOWHERE`].
    core: u32,
    /// The cache domain whose last-level cache holds the set, or [`NOWHERE`].
    domain: u32,
    /// The dense CPU its last item ran on.
    last_cpu: u32,
    /// The dense CPU that last wrote the group's published state (a vote).
    state_cpu: u32,
}

/// One pool's part: its busy workers and its load signal.
#[derive(Clone, Copy, Debug)]
struct PodSim {
    /// The pod's CPUs.
    cpus: usize,
    /// Its workers running an item now (the runtime's probes).
    busy: usize,
    /// When its load was last sampled, in ns.
    sampled: Option<u64>,
    /// The moving mean of its busy fraction.
    mean: BusyMean,
    /// The dense CPU that last wrote its signal.
    signal_cpu: u32,
    /// Items its workers ran.
    ran: u64,
}

/// The `locality` workload's state.
#[derive(Clone, Debug)]
pub(super) struct LocalityState {
    /// Whether groups steer.
    steer: bool,
    /// Groups.
    groups: Vec<GroupSim>,
    /// Per pool.
    pods: Vec<PodSim>,
    /// Per core (by [`LocalityState::core_index`]): the sets its private cache holds, least
    /// recently used first.
    cores: Vec<VecDeque<u32>>,
    /// Per cache domain: the sets its last-level cache holds, least recently used first.
    domains: Vec<VecDeque<u32>>,
    /// The core index of each dense CPU.
    core_index: Vec<u32>,
    /// Sets a private cache holds.
    private_cap: usize,
    /// Sets a last-level cache holds.
    llc_cap: usize,
    /// Lines per set.
    lines: f64,
    /// The machine's caches.
    caches: Caches,
    /// Work per item besides the walk, ns.
    work_ns: f64,
    /// Draws the groups of the items.
    rng: Rng,
    /// Between two items of one producer, ns.
    interval: f64,
    /// When each producer's next item is due, ns (by its CPU: producer `p` is pinned to dense
    /// CPU `p`).
    due: Vec<f64>,
    /// The group and pool each producer's next queue call goes with.
    next: Vec<(u32, u32)>,
    /// The cost one item's pace was taken from, ns.
    item_ns: f64,
    /// Every item's own run time, ns.
    runs: Vec<u32>,
    /// Starts at the group's home pod (S3).
    at_home: u64,
    /// Starts elsewhere, or while the group had no home.
    elsewhere: u64,
    /// Moves of a home.
    home_changes: u64,
    /// Queue calls sent to a home pod other than the issuing CPU's.
    steered: u64,
    /// Queue calls of a group with a home sent where plain items go: the home crowded or
    /// loaded.
    refused: u64,
}

impl LocalityState {
    /// The state of `scenario` on `machine`, whose pools serve `pod_cpus` CPUs each.
    pub(super) fn new(
        machine: &SimMachine,
        scenario: &Scenario,
        pod_cpus: &[usize],
        producers: usize,
    ) -> LocalityState {
        let n = machine.len();
        let caches = *machine.caches();
        let loc = scenario.locality;
        let groups = loc.groups.unwrap_or(GROUPS_PER_POD * pod_cpus.len()).max(1);
        let mut cores_seen: Vec<u32> = Vec::new();
        let core_index = (0..n)
            .map(|c| {
                let core = machine.core_of(c);
                let at = cores_seen
                    .iter()
                    .position(|&k| k == core)
                    .unwrap_or_else(|| {
                        cores_seen.push(core);
                        cores_seen.len() - 1
                    });
                at as u32
            })
            .collect();
        let domains = (0..n).map(|c| machine.cache_of(c) + 1).max().unwrap_or(1) as usize;
        let domain_cpus = (0..n).filter(|&c| machine.cache_of(c) == 0).count().max(1);
        let per_pod = loc.groups.unwrap_or(GROUPS_PER_POD);
        let item_ns = caches.item_ns(loc.set_kb, per_pod, domain_cpus, scenario.work_ns);
        let cpus = n as f64;
        let interval = item_ns * producers as f64 * 100.0 / (cpus * loc.load.clamp(1, 100) as f64);
        LocalityState {
            steer: scenario.steer,
            groups: vec![
                GroupSim {
                    pref: Preference::default(),
                    runnable: 0,
                    core: NOWHERE,
                    domain: NOWHERE,
                    last_cpu: 0,
                    state_cpu: 0,
                };
                groups
            ],
            pods: pod_cpus
                .iter()
                .map(|&cpus| PodSim {
                    cpus,
                    busy: 0,
                    sampled: None,
                    mean: BusyMean::default(),
                    signal_cpu: 0,
                    ran: 0,
                })
                .collect(),
            cores: vec![VecDeque::new(); cores_seen.len()],
            domains: vec![VecDeque::new(); domains],
            core_index,
            private_cap: caches.sets_held(caches.private_kb, loc.set_kb),
            llc_cap: caches.sets_held(caches.llc_kb, loc.set_kb),
            lines: Caches::lines(loc.set_kb) as f64,
            caches,
            work_ns: scenario.work_ns as f64,
            rng: Rng::new(scenario.seed ^ 0x10ca_1157),
            interval,
            // Producers start a fraction of an interval apart, as the bench's do.
            due: (0..producers)
                .map(|p| interval * p as f64 / producers as f64)
                .collect(),
            next: vec![(0, 0); producers],
            item_ns,
            runs: Vec::new(),
            at_home: 0,
            elsewhere: 0,
            home_changes: 0,
            steered: 0,
            refused: 0,
        }
    }

    /// What the run saw.
    pub(super) fn counts(&mut self) -> LocalityCounts {
        LocalityCounts {
            groups: self.groups.len(),
            item_ns: self.item_ns.round() as u64,
            run_time: Percentiles::of(&mut self.runs),
            at_home: self.at_home,
            elsewhere: self.elsewhere,
            home_changes: self.home_changes,
            steered: self.steered,
            refused: self.refused,
            most_on_one_pod: self.pods.iter().map(|p| p.ran).max().unwrap_or(0),
        }
    }
}

/// `ns` of simulated time as the policy's clock.
fn clock(ns: u64) -> Duration {
    Duration::from_nanos(ns)
}

impl Engine<'_> {
    /// A locality producer about to issue an item: `true` when it sleeps until the item is due
    /// (it is woken then, on its CPU); else it picks the item's group and pool, and returns
    /// `false` with what that cost in `cost`.
    pub(super) fn locality_issue(&mut self, tid: u32, cost: &mut f64) -> bool {
        let now = self.now;
        let cpu = self.threads[tid as usize].cpu;
        let plain = self.pod_of[cpu as usize];
        // Producer `p` is pinned to dense CPU `p`.
        let producer = cpu as usize;
        let Some(due) = self.locality.as_ref().map(|loc| loc.due[producer]) else {
            return false;
        };
        if due > now as f64 {
            self.block(tid);
            self.at_time(tid, due.ceil() as u64);
            return true;
        }
        let machine = self.machine;
        let Some(loc) = self.locality.as_deref_mut() else {
            return false;
        };
        loc.due[producer] += loc.interval;
        let group = (loc.rng.next_u64() % loc.groups.len() as u64) as usize;
        let pool = if loc.steer {
            let platform = machine.platform();
            let g = loc.groups[group];
            *cost += platform.at(machine.distance(g.state_cpu as usize, cpu as usize));
            let pods = &mut loc.pods;
            let decision = steer::steer(
                g.pref.snapshot(),
                clock(now),
                plain as usize,
                g.runnable,
                |pod| {
                    let p = &mut pods[pod];
                    *cost += platform.at(machine.distance(p.signal_cpu as usize, cpu as usize));
                    pod_load(p, now, cpu)
                },
            );
            loc.groups[group].runnable += 1;
            match decision {
                Steer::Home(home) if home != plain as usize => loc.steered += 1,
                Steer::Plain(Unsteered::Crowded | Unsteered::Loaded) => loc.refused += 1,
                Steer::Home(_) | Steer::Plain(_) => {}
            }
            decision.pod(plain as usize) as u32
        } else {
            plain
        };
        loc.next[producer] = (group as u32, pool);
        false
    }

    /// The group and pool of producer `tid`'s next queue call.
    pub(super) fn locality_next(&self, tid: u32) -> Option<(u32, u32)> {
        let cpu = self.threads[tid as usize].cpu as usize;
        self.locality.as_ref().map(|loc| loc.next[cpu])
    }

    /// A worker of `pool` on dense CPU `cpu` starts an item of `group`: its set comes from
    /// where it is, the group learns where it ran (steering), and the pool counts one more
    /// busy worker. Returns the item's time on the worker: the walk, its work, and a vote's
    /// line.
    pub(super) fn locality_start(&mut self, group: u32, pool: u32, cpu: u32) -> f64 {
        let now = self.now;
        let machine = self.machine;
        let Some(loc) = self.locality.as_deref_mut() else {
            return 0.0;
        };
        let walk = loc.lines * loc.fetch(machine, group as usize, cpu);
        let run = walk + loc.work_ns;
        loc.runs.push(run.round().min(f64::from(u32::MAX)) as u32);
        let p = &mut loc.pods[pool as usize];
        p.busy += 1;
        p.ran += 1;
        let mut vote = 0.0;
        if loc.steer {
            let g = &mut loc.groups[group as usize];
            let snapshot: Snapshot = g.pref.snapshot();
            if snapshot.home_at(clock(now)) == Some(pool as usize) {
                loc.at_home += 1;
            } else {
                loc.elsewhere += 1;
            }
            if snapshot.home.is_none() || steer::votes(snapshot.last_item, clock(now)) {
                vote = machine
                    .platform()
                    .at(machine.distance(g.state_cpu as usize, cpu as usize));
                g.state_cpu = cpu;
                let at = clock(now).max(g.pref.last_item);
                if let Recorded::Moved { .. } = steer::record(&mut g.pref, pool as usize, at) {
                    loc.home_changes += 1;
                }
            }
        }
        run + vote
    }

    /// A worker of `pool` has run an item of `group` (S5).
    pub(super) fn locality_ran(&mut self, group: u32, pool: u32) {
        if let Some(loc) = self.locality.as_deref_mut() {
            loc.pods[pool as usize].busy -= 1;
            if loc.steer {
                loc.groups[group as usize].runnable -= 1;
            }
        }
    }
}

/// Pod `p`'s load at `now` as a decision on dense CPU `cpu` reads it: sampled again when the
/// last sample is older than [`steer::SAMPLE_INTERVAL`] (`pool/load.rs`'s `LoadSignal::read`).
fn pod_load(p: &mut PodSim, now: u64, cpu: u32) -> PodLoad {
    let interval = steer::SAMPLE_INTERVAL.as_nanos() as u64;
    let due = p
        .sampled
        .is_none_or(|last| now.saturating_sub(last) >= interval);
    if due {
        let since = clock(now.saturating_sub(p.sampled.unwrap_or(now)));
        p.mean = steer::busy_mean(p.mean, Busy::of(p.busy, p.cpus), since);
        p.sampled = Some(now);
        p.signal_cpu = cpu;
    }
    PodLoad {
        cpus: p.cpus,
        busy: p.mean.mean,
    }
}

impl LocalityState {
    /// The latency of one line of `group`'s set for a walk on dense CPU `cpu`, by where the
    /// set is; the set then sits in `cpu`'s private cache and cache domain (the walk writes
    /// every line, so no other cache keeps a copy), evicting the least recently used sets
    /// beyond each cache's capacity.
    fn fetch(&mut self, machine: &SimMachine, group: usize, cpu: u32) -> f64 {
        let core = self.core_index[cpu as usize];
        let domain = machine.cache_of(cpu as usize);
        let g = self.groups[group];
        let line = if g.core == core {
            self.caches.private_hit_ns
        } else if g.domain == domain && g.core != NOWHERE {
            self.caches.peer_hit_ns
        } else if g.domain == domain {
            self.caches.llc_hit_ns
        } else if g.domain != NOWHERE {
            machine
                .platform()
                .at(machine.distance(g.last_cpu as usize, cpu as usize))
        } else {
            self.caches.memory_ns
        };
        let id = group as u32;
        if g.core != NOWHERE {
            remove(&mut self.cores[g.core as usize], id);
        }
        if g.domain != NOWHERE {
            remove(&mut self.domains[g.domain as usize], id);
        }
        self.groups[group].last_cpu = cpu;
        self.groups[group].core = NOWHERE;
        self.groups[group].domain = NOWHERE;
        for out in admit(&mut self.domains[domain as usize], id, self.llc_cap) {
            self.groups[out as usize].domain = NOWHERE;
            // The last-level cache is taken as inclusive: what leaves it leaves the core.
            let at = self.groups[out as usize].core;
            if at != NOWHERE {
                remove(&mut self.cores[at as usize], out);
                self.groups[out as usize].core = NOWHERE;
            }
        }
        if self.llc_cap > 0 {
            self.groups[group].domain = domain;
        }
        for out in admit(&mut self.cores[core as usize], id, self.private_cap) {
            self.groups[out as usize].core = NOWHERE;
        }
        if self.private_cap > 0 {
            self.groups[group].core = core;
        }
        line
    }
}

/// Puts set `id` in a cache holding `held` (least recently used first) of `cap` sets: last, if
/// the cache holds any; returns the sets pushed out.
fn admit(held: &mut VecDeque<u32>, id: u32, cap: usize) -> Vec<u32> {
    if cap == 0 {
        return Vec::new();
    }
    held.push_back(id);
    let over = held.len().saturating_sub(cap);
    held.drain(..over).collect()
}

/// Removes `id` from `held`, if there.
fn remove(held: &mut VecDeque<u32>, id: u32) {
    if let Some(at) = held.iter().position(|&g| g == id) {
        held.remove(at);
    }
}
