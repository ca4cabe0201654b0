//! Pull, modelled as podq's runtime does it (`src/pool/README.md`, "Pull": steps O1-O4), with
//! every decision asked of `podq::policy::pull` in simulated time: the sibling order
//! ([`pull::siblings`]), whether a push offers ([`pull::offers`]), what a kicked sibling does
//! ([`pull::kick`]), the gate ([`pull::idle_interval`], [`pull::attempt`] with a coin from the
//! seeded generator, [`pull::learn`]) and the searcher cap ([`pull::searcher_cap`]).
//!
//! What a step costs: setting an offer bit moves the summary's line from its last writer; a
//! kick takes the sibling's pool lock (its lines from their last holder, the critical section)
//! and pays the wake-up call; an idle entry reads the summary's line; a steal takes the
//! sibling's head lock like any other acquisition (queued behind its holders, its lines from
//! the last holder), and the pulled item's line comes from the CPU that queued it.

use std::time::Duration;

use podq::policy::growth;
use podq::policy::pull::{self, Kick, Level, PodPlace, Ratio, Siblings};
use podq::Pods;

use super::threads::{Phase, Role};
use super::{Action, Engine};
use crate::outcome::PullCounts;

/// The pull state of one simulated pool set: per pool its siblings and gate, the summary of
/// offering pools, and the searchers per search domain.
#[derive(Clone, Debug)]
pub(super) struct PullGroup {
    /// Per pool (pod id): its siblings, search domain and gate.
    pods: Vec<PodPull>,
    /// The summary: how far each pool's offer of its waiting work reaches (`None`: it offers
    /// none), as [`pull::offer_reach`] says.
    offering: Vec<Option<Level>>,
    /// The dense CPU that last wrote the summary: where its line is.
    summary_cpu: u32,
    /// Per search domain (a cache domain, or a pod spanning several): searchers now, and cap.
    domains: Vec<(usize, usize)>,
    /// What pull did.
    pub(super) counts: PullCounts,
}

/// One pool's place in the group.
#[derive(Clone, Debug)]
struct PodPull {
    /// Its siblings by level, in search order.
    siblings: Siblings,
    /// Its search domain, an index of [`PullGroup::domains`].
    domain: usize,
    /// Its gate.
    gate: Gate,
}

/// One pool's gate: the success ratio per level, and the mean interval between idle entries.
#[derive(Clone, Copy, Debug)]
struct Gate {
    /// Per level, by [`Level::index`].
    ratio: [Ratio; 3],
    /// The mean interval between its workers' idle entries.
    mean_idle: Duration,
    /// The last idle entry, in simulated ns.
    last_idle: u64,
}

/// Where a worker's search (O4) stands, kept between its lock requests.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Search {
    /// The level searched, by [`Level::index`] (3: done).
    level: u8,
    /// The next sibling to try at that level, an index of its siblings.
    next: u16,
    /// Whether the worker counts among its domain's searchers (the level is being searched).
    searching: bool,
    /// The pool whose head lock it asked for.
    pub(super) victim: u32,
    /// The pod's mean interval between idle entries at this idle entry, in ns.
    mean_idle_ns: u64,
}

impl PullGroup {
    /// The group of `pods` (pool `i` serves pod `i`), or `None` when fewer than two pods serve
    /// a CPU: then nobody has a sibling.
    pub(super) fn new(pods: &Pods) -> Option<PullGroup> {
        let places: Vec<PodPlace> = pods
            .pods()
            .iter()
            .map(|pod| PodPlace {
                cache_domain: pod.cache_domain(),
                node: pod.node(),
                serves: !pod.cpus().is_empty(),
            })
            .collect();
        if places.iter().filter(|p| p.serves).count() < 2 {
            return None;
        }
        let served: Vec<usize> = pods.pods().iter().map(|pod| pod.cpus().len()).collect();
        let domains = pull::search_domains(&places, &served);
        let mut group_pods = Vec::with_capacity(places.len());
        for (p, &domain) in domains.of_pod.iter().enumerate() {
            group_pods.push(PodPull {
                siblings: pull::siblings(&places, p),
                domain,
                gate: Gate {
                    ratio: [Ratio::ONE; 3],
                    mean_idle: pull::RARE_IDLE,
                    last_idle: 0,
                },
            });
        }
        Some(PullGroup {
            offering: vec![None; group_pods.len()],
            pods: group_pods,
            summary_cpu: 0,
            domains: domains.caps.into_iter().map(|cap| (0, cap)).collect(),
            counts: PullCounts::default(),
        })
    }

    /// Whether a sibling of `pool` at `level` offers work to that level.
    fn offered_at(&self, pool: usize, level: Level) -> bool {
        self.pods[pool]
            .siblings
            .level(level)
            .iter()
            .any(|&s| self.offers_to(s, level))
    }

    /// Whether `pool` offers its waiting work to its siblings at `level`.
    fn offers_to(&self, pool: usize, level: Level) -> bool {
        self.offering[pool].is_some_and(|reach| pull::reaches(reach, level))
    }
}

impl Engine<'_> {
    /// A coin for the gate, from the seeded generator.
    fn coin(&mut self) -> u32 {
        (self.rng.next_u64() >> 32) as u32
    }

    /// The cost of moving one cache line from dense CPU `from` to `to`.
    pub(super) fn line(&self, from: u32, to: u32) -> f64 {
        self.machine
            .platform()
            .at(self.machine.distance(from as usize, to as usize))
    }

    /// (O1) A push from dense CPU `cpu` left `waiting` items in its lane of `pool` with every
    /// worker busy (P4's `Busy`, or P6's `Watch`): the pool offers its waiting work as far as
    /// [`pull::offer_reach`] says (for a push from a CPU of the pool's pod or from elsewhere),
    /// and kicks a sibling within that reach (O2). Returns what it costs the pusher.
    pub(super) fn offer(&mut self, pool: usize, waiting: usize, cpu: u32) -> f64 {
        let from_pod = self.pools[pool].cpus.contains(&cpu);
        let Some(group) = &mut self.pull else {
            return 0.0;
        };
        // The model does not tell a worker between two items from one inside an item: every
        // worker counts as inside one.
        let Some(reach) = pull::offer_reach(waiting, from_pod, || true) else {
            return 0.0;
        };
        if group.offering[pool].is_some_and(|now| pull::reaches(now, reach)) {
            return 0.0;
        }
        group.offering[pool] = Some(reach);
        group.counts.offers += 1;
        let from = std::mem::replace(&mut group.summary_cpu, cpu);
        self.line(from, cpu) + self.kick_one(pool, reach, cpu)
    }

    /// (O2) Asks the nearest sibling of `pool` that may help and whose gate would search at
    /// that level to wake or start a worker, as [`pull::kick`] decides under its pool lock.
    /// Returns what it costs the pusher on dense CPU `cpu`.
    fn kick_one(&mut self, pool: usize, reach: Level, cpu: u32) -> f64 {
        let Some(group) = &self.pull else {
            return 0.0;
        };
        let order: Vec<(Level, usize)> = group.pods[pool]
            .siblings
            .iter()
            .filter(|&(level, _)| pull::reaches(reach, level))
            .collect();
        let mut cost = 0.0;
        for (level, sib) in order {
            let p = &self.pools[sib];
            if !growth::wants_help(p.workers, p.limits) {
                continue;
            }
            let gate = self
                .pull
                .as_ref()
                .map(|g| g.pods[sib].gate)
                .expect("pull is on");
            let coin = self.coin();
            if !pull::attempt(gate.ratio[level.index()], gate.mean_idle, coin) {
                continue;
            }
            // The sibling's pool lock: its lines come over, the decision is made inside.
            let synced = self.pools[sib].synced as usize;
            let from = std::mem::replace(&mut self.locks[synced].last_cpu, cpu);
            cost +=
                self.line(from, cpu) * self.locks[synced].lines + self.costs.critical_section_ns;
            let action = match pull::kick(self.pools[sib].workers, self.pools[sib].limits) {
                Kick::No => continue,
                Kick::Wake => Action::Wake(self.take_idle(sib)),
                Kick::Spawn => {
                    let p = &mut self.pools[sib];
                    p.workers.live += 1;
                    p.workers.coming += 1;
                    Action::Spawn
                }
            };
            if let Some(group) = &mut self.pull {
                group.counts.kicks += 1;
            }
            return cost + self.perform(Some(action), sib, cpu, true);
        }
        cost
    }

    /// (O3) A worker on dense CPU `cpu` found `pool`'s queue empty: it offers no more.
    pub(super) fn withdraw(&mut self, pool: usize, cpu: u32) {
        if let Some(group) = &mut self.pull {
            if group.offering[pool].is_some() {
                group.offering[pool] = None;
                group.summary_cpu = cpu;
            }
        }
    }

    /// Whether worker `tid` of `pool`, whose queue is empty, asks its siblings now (O4): pull
    /// is on, the pool has siblings, and it has not asked since its queue ran empty, and it has
    /// spun or the item it ran last was pulled too (or it does not spin). Marks it as having
    /// asked.
    pub(super) fn asks_siblings(&mut self, tid: u32, pool: usize) -> bool {
        let Some(group) = &self.pull else {
            return false;
        };
        if group.pods[pool].siblings.is_empty() {
            return false;
        }
        let no_spin = self.costs.spin_ns <= 0.0;
        let Role::Worker {
            spun,
            asked,
            pulled,
            ..
        } = &mut self.threads[tid as usize].role
        else {
            return false;
        };
        if *asked || !(*spun || *pulled || no_spin) {
            return false;
        }
        *asked = true;
        true
    }

    /// The idle entry of worker `tid` of `pool` that asks its siblings, its head lock released:
    /// reads the summary and, when a sibling offers work, records the entry in the pod's gate
    /// ([`pull::idle_interval`]);
    /// the search goes on in [`Phase::Search`] once the summary's line is here.
    pub(super) fn idle_entry(&mut self, tid: u32, pool: usize) {
        let cpu = self.threads[tid as usize].cpu;
        let now = self.now;
        let group = self.pull.as_mut().expect("asked with pull on");
        group.counts.idle_entries += 1;
        // As the runtime: only an entry that finds work offered is weighed by the gate.
        let offered = Level::ALL
            .iter()
            .any(|&level| group.offered_at(pool, level));
        let gate = &mut group.pods[pool].gate;
        if offered {
            gate.mean_idle =
                pull::idle_interval(gate.mean_idle, Duration::from_nanos(now - gate.last_idle));
            gate.last_idle = now;
        }
        let search = Search {
            mean_idle_ns: u64::try_from(gate.mean_idle.as_nanos()).unwrap_or(u64::MAX),
            ..Search::default()
        };
        let from = group.summary_cpu;
        if let Role::Worker { search: s, .. } = &mut self.threads[tid as usize].role {
            *s = search;
        }
        self.threads[tid as usize].phase = Phase::Search;
        let read = self.line(from, cpu);
        self.after(tid, read);
    }

    /// Goes on with worker `tid`'s search of its pool `pool`'s siblings: for each level whose
    /// siblings offer work, if the gate lets it and its domain has room, it asks for the head
    /// lock of the next offering sibling (then `true`: it waits for the lock, in
    /// [`Phase::Steal`]). `false`: the search is over with nothing found.
    pub(super) fn search_on(&mut self, tid: u32, pool: usize) -> bool {
        let Role::Worker { search, .. } = self.threads[tid as usize].role else {
            return false;
        };
        let mut s = search;
        let mean_idle = Duration::from_nanos(s.mean_idle_ns);
        while let Some(&level) = Level::ALL.get(usize::from(s.level)) {
            if !s.searching {
                let group = self.pull.as_ref().expect("searching with pull on");
                let ratio = group.pods[pool].gate.ratio[level.index()];
                let offered = group.offered_at(pool, level);
                let domain = group.pods[pool].domain;
                if !offered {
                    s.level += 1;
                    continue;
                }
                let coin = self.coin();
                let group = self.pull.as_mut().expect("searching with pull on");
                if !pull::attempt(ratio, mean_idle, coin) {
                    group.counts.gated += 1;
                    s.level += 1;
                    continue;
                }
                let (now, cap) = &mut group.domains[domain];
                if *now >= *cap {
                    group.counts.capped += 1;
                    break;
                }
                *now += 1;
                s.searching = true;
                s.next = 0;
            }
            let group = self.pull.as_ref().expect("searching with pull on");
            let at_level = group.pods[pool].siblings.level(level);
            let victim = at_level[usize::from(s.next)..]
                .iter()
                .position(|&sib| group.offers_to(sib, level))
                .map(|k| usize::from(s.next) + k);
            if let Some(k) = victim {
                let sib = at_level[k];
                s.next = (k + 1) as u16;
                s.victim = sib as u32;
                self.store_search(tid, s);
                self.threads[tid as usize].phase = Phase::Steal;
                let lock = self.pools[sib].head;
                self.acquire(tid, lock);
                return true;
            }
            // Nothing at this level.
            self.end_level(pool, level, false);
            s.searching = false;
            s.level += 1;
        }
        self.store_search(tid, s);
        false
    }

    /// A level's search by a worker of `pool` is over: the domain has one searcher less, and
    /// the level's success ratio learns whether it `found` an item.
    pub(super) fn end_level(&mut self, pool: usize, level: Level, found: bool) {
        let group = self.pull.as_mut().expect("searching with pull on");
        let domain = group.pods[pool].domain;
        group.domains[domain].0 -= 1;
        group.counts.searches += 1;
        if found {
            group.counts.found += 1;
        }
        let ratio = &mut group.pods[pool].gate.ratio[level.index()];
        *ratio = pull::learn(*ratio, found);
    }

    /// The level worker `tid` searches.
    pub(super) fn search_level(&self, tid: u32) -> Level {
        match self.threads[tid as usize].role {
            Role::Worker { search, .. } => Level::ALL[usize::from(search.level).min(2)],
            Role::Producer { .. } => unreachable!("only workers search"),
        }
    }

    fn store_search(&mut self, tid: u32, s: Search) {
        if let Role::Worker { search, .. } = &mut self.threads[tid as usize].role {
            *search = s;
        }
    }

    /// The steal's critical section, under the victim's head lock (`Core::steal`): takes an
    /// item one of its workers holds ahead (H8), or else its oldest item as W2-W4 would
    /// (counted in its `started`), the items left handed on as W4 decides for that pool;
    /// withdraws its offer when it is left empty. Returns the time it takes inside the lock.
    pub(super) fn steal(&mut self, tid: u32) -> f64 {
        let t = &self.threads[tid as usize];
        let (cpu, Role::Worker { search, .. }) = (t.cpu, t.role) else {
            unreachable!("only workers steal")
        };
        let victim = search.victim as usize;
        let popped = match self.take_held_ahead(victim) {
            Some(item) => Some((item, false)),
            None => {
                let popped = self.pools[victim].pop();
                if popped.is_some() {
                    self.pools[victim].started += 1;
                }
                popped
            }
        };
        let item = popped.map(|(item, _)| item);
        let mut action = None;
        if let Some((item, refilled)) = popped {
            if self.mech.push_lanes && refilled {
                self.locks[item.lane as usize].last_cpu = cpu;
            }
            if self.pools[victim].queue.is_empty() {
                self.withdraw(victim, cpu);
            } else {
                action = self.decide(victim);
            }
            if let Some(group) = &mut self.pull {
                group.counts.pulled += 1;
            }
        } else {
            self.withdraw(victim, cpu);
        }
        if let Role::Worker {
            item: slot,
            action: decided,
            ..
        } = &mut self.threads[tid as usize].role
        {
            *slot = item;
            *decided = action;
        }
        self.threads[tid as usize].phase = Phase::StealRelease;
        let cpu = self.threads[tid as usize].cpu;
        self.cpu_work(cpu, self.costs.critical_section_ns) + self.wake_inside(action, cpu)
    }
}
