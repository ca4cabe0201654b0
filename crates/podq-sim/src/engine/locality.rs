//! The `locality` workload and steering: paced producers queueing items of random groups (the
//! pace: one unsteered item's run time, `pace.rs`), each group's working set moving between the
//! caches as its items run (`sets.rs`), and, with steering, every
//! decision asked of `podq::policy::steer` with simulated time and state, supplied the way
//! `workqueue/steering.rs`, `workqueue/group.rs` and `pool/load.rs` supply them in the runtime
//! (steps G1-G5 of "Steering" in `src/workqueue/README.md`):
//!
//! * G1/G2, the queue call: the group's published home and last vote ([`Preference::snapshot`])
//!   and its runnable items (read before this item counts) go to [`steer::steer`], which asks
//!   the home pod's load only when the item is not issued there; the load is the pod's signal,
//!   sampled again when its last sample is older than [`steer::SAMPLE_INTERVAL`] (busy workers
//!   over the pod's CPUs, [`Busy::of`], into the moving mean of [`steer::busy_mean`]);
//! * G3, the start: counted at home when the group's home at that time
//!   ([`Snapshot::home_at`]) is the worker's pod, else elsewhere; a vote
//!   ([`steer::record`]: decay, expiry, hysteresis) when [`steer::votes`] lets it;
//! * G5, the end: the item no longer counts among its group's runnable items.
//!
//! What it costs: reading the group's line (from the CPU that last voted) at every grouped
//! queue call, reading the pod's signal line (from its last sampler) when the load is read, and
//! the group's line again for a vote. Without steering a group's items go where plain items go
//! and nothing of this is paid.

use std::time::Duration;

use podq::policy::steer::{
    self, Busy, BusyMean, PodLoad, Preference, Recorded, Snapshot, Steer, Unsteered,
};

use super::pace;
use super::sets::WorkingSets;
use super::Engine;
use crate::machine::SimMachine;
use crate::outcome::{LocalityCounts, Percentiles};
use crate::rng::Rng;
use crate::scenario::{Scenario, GROUPS_PER_POD};

/// One group: its preference and runnable items (steering).
#[derive(Clone, Copy, Debug)]
struct GroupSim {
    /// The preference, changed only by `steer::record`.
    pref: Preference,
    /// Items queued and not finished.
    runnable: usize,
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
    /// Where each group's set is.
    sets: WorkingSets,
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
    /// One unsteered item's expected run time, the pace, ns ([`pace`]).
    item_ns: f64,
    /// The hot walk and the work, ns ([`Caches::walk_ns`](crate::Caches::walk_ns)).
    walk_ns: f64,
    /// Every item's own run time, ns.
    runs: Vec<u32>,
    /// Starts at the group's home pod (G3).
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
    /// Items run on a CPU outside their pool's pod.
    outside_pod: u64,
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
        let domain_cpus = (0..n).filter(|&c| machine.cache_of(c) == 0).count().max(1);
        let per_pod = loc.groups.unwrap_or(GROUPS_PER_POD);
        let walk_ns = caches.walk_ns(loc.set_kb, per_pod, domain_cpus, scenario.work_ns);
        let item_ns = pace::unsteered_item_ns(
            machine,
            caches,
            groups,
            loc.set_kb,
            scenario.work_ns,
            scenario.seed,
        );
        let cpus = n as f64;
        let interval = item_ns * producers as f64 * 100.0 / (cpus * loc.load.clamp(1, 100) as f64);
        LocalityState {
            steer: scenario.steer,
            groups: vec![
                GroupSim {
                    pref: Preference::default(),
                    runnable: 0,
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
            sets: WorkingSets::new(machine, caches, groups, loc.set_kb),
            work_ns: scenario.work_ns as f64,
            rng: Rng::new(scenario.seed ^ 0x10ca_1157),
            interval,
            // Producers start a fraction of an interval apart, as the bench's do.
            due: (0..producers)
                .map(|p| interval * p as f64 / producers as f64)
                .collect(),
            next: vec![(0, 0); producers],
            item_ns,
            walk_ns,
            runs: Vec::new(),
            at_home: 0,
            elsewhere: 0,
            home_changes: 0,
            steered: 0,
            refused: 0,
            outside_pod: 0,
        }
    }

    /// What the run saw, its CPUs `cpu_busy` busy.
    pub(super) fn counts(&mut self, cpu_busy: f64) -> LocalityCounts {
        LocalityCounts {
            groups: self.groups.len(),
            item_ns: self.item_ns.round() as u64,
            walk_ns: self.walk_ns.round() as u64,
            cpu_busy,
            run_mean_ns: (self.runs.iter().map(|&r| u64::from(r)).sum::<u64>())
                .checked_div(self.runs.len() as u64)
                .unwrap_or(0),
            run_time: Percentiles::of(&mut self.runs),
            at_home: self.at_home,
            elsewhere: self.elsewhere,
            home_changes: self.home_changes,
            steered: self.steered,
            refused: self.refused,
            most_on_one_pod: self.pods.iter().map(|p| p.ran).max().unwrap_or(0),
            outside_pod: self.outside_pod,
            walks_from: self.sets.walks_from(),
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
        let walk = loc.sets.walk(machine, group as usize, cpu);
        if self.pod_of[cpu as usize] != pool {
            loc.outside_pod += 1;
        }
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

    /// A worker of `pool` has run an item of `group` (G5).
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
