//! [`WorkingSets`]: where each group's working set sits in a machine's caches, and what a walk
//! of it costs from there (the `locality` workload's cache model, with the figures of
//! [`Caches`]). The runs and the pace's warm-up (`pace.rs`) share it.

use std::collections::VecDeque;

use crate::cost::Caches;
use crate::machine::SimMachine;
use crate::outcome::WalksFrom;

/// No core or cache domain: the set is in none.
const NOWHERE: u32 = u32::MAX;

/// Where one group's set is.
#[derive(Clone, Copy, Debug)]
struct Place {
    /// The core whose private cache holds the set, or [`NOWHERE`].
    core: u32,
    /// The cache domain whose last-level cache holds the set, or [`NOWHERE`].
    domain: u32,
    /// The dense CPU its last walk ran on.
    last_cpu: u32,
}

/// Every group's working set in a machine's caches: per core and per cache domain the sets it
/// holds, least recently used first out.
#[derive(Clone, Debug)]
pub(super) struct WorkingSets {
    /// Per group.
    places: Vec<Place>,
    /// Per core (by [`WorkingSets::core_index`]): the sets its private cache holds, least
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
    /// Walks by where their set was.
    from: WalksFrom,
}

impl WorkingSets {
    /// `groups` sets of `set_kb` KiB on `machine`, with `caches`, in no cache yet.
    pub(super) fn new(
        machine: &SimMachine,
        caches: Caches,
        groups: usize,
        set_kb: u64,
    ) -> WorkingSets {
        let n = machine.len();
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
        WorkingSets {
            places: vec![
                Place {
                    core: NOWHERE,
                    domain: NOWHERE,
                    last_cpu: 0,
                };
                groups
            ],
            cores: vec![VecDeque::new(); cores_seen.len()],
            domains: vec![VecDeque::new(); domains],
            core_index,
            private_cap: caches.sets_held(caches.private_kb, set_kb),
            llc_cap: caches.sets_held(caches.llc_kb, set_kb),
            lines: Caches::lines(set_kb) as f64,
            caches,
            from: WalksFrom::default(),
        }
    }

    /// Walks so far by where their set was.
    pub(super) fn walks_from(&self) -> WalksFrom {
        self.from
    }

    /// A walk of `group`'s set on dense CPU `cpu`, in ns: its lines times the latency of where
    /// the set is. The set then sits in `cpu`'s private cache and cache domain (the walk writes
    /// every line, so no other cache keeps a copy), evicting the least recently used sets
    /// beyond each cache's capacity.
    pub(super) fn walk(&mut self, machine: &SimMachine, group: usize, cpu: u32) -> f64 {
        let core = self.core_index[cpu as usize];
        let domain = machine.cache_of(cpu as usize);
        let g = self.places[group];
        let from = &mut self.from;
        let (count, line) = if g.core == core {
            (&mut from.private, self.caches.private_hit_ns)
        } else if g.domain == domain && g.core != NOWHERE {
            (&mut from.peer, self.caches.peer_hit_ns)
        } else if g.domain == domain {
            (&mut from.llc, self.caches.llc_hit_ns)
        } else if g.domain != NOWHERE {
            let other = machine.distance(g.last_cpu as usize, cpu as usize);
            (&mut from.other_cache, machine.platform().at(other))
        } else {
            (&mut from.memory, self.caches.memory_ns)
        };
        *count += 1;
        let id = group as u32;
        if g.core != NOWHERE {
            remove(&mut self.cores[g.core as usize], id);
        }
        if g.domain != NOWHERE {
            remove(&mut self.domains[g.domain as usize], id);
        }
        self.places[group] = Place {
            core: NOWHERE,
            domain: NOWHERE,
            last_cpu: cpu,
        };
        for out in admit(&mut self.domains[domain as usize], id, self.llc_cap) {
            self.places[out as usize].domain = NOWHERE;
            // The last-level cache is taken as inclusive: what leaves it leaves the core.
            let at = self.places[out as usize].core;
            if at != NOWHERE {
                remove(&mut self.cores[at as usize], out);
                self.places[out as usize].core = NOWHERE;
            }
        }
        if self.llc_cap > 0 {
            self.places[group].domain = domain;
        }
        for out in admit(&mut self.cores[core as usize], id, self.private_cap) {
            self.places[out as usize].core = NOWHERE;
        }
        if self.private_cap > 0 {
            self.places[group].core = core;
        }
        self.lines * line
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
