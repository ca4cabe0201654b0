//! [`PullGroup`]: the pools of one pool set that pull from each other, the summary of which of
//! them offer waiting work, and each pod's gate. The steps are "Pull" in `pool/README.md`
//! (O1-O4).
//!
//! This file owns the pool set's side: the summary and the gates' state, the offer (O1), which
//! sibling to kick (O2), the withdrawal (O3) and the search over the siblings (O4). The
//! decisions it asks are `policy::pull`'s; taking a task from a sibling and waking or starting
//! a sibling's worker happen in that sibling's core (`core/pull.rs`).
//!
//! The summary is a bitmap, a bit per pod, in words of 64 pods on lines of their own: a push
//! that leaves work waiting with every worker busy sets its pool's bit (once: it reads the
//! word first), and whoever finds that pool's queue empty clears it. A search reads the words
//! of its level and touches only the pools whose bit is set, so a search with nothing to find
//! takes no lock and reads no queue.

use std::cell::Cell;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::core::Stolen;
use super::{worker, Runnable, Shared};
use crate::policy::pull::{self as policy, Kick, Level, PodPlace, Ratio, Siblings};
use crate::scope::Pods;
use crate::stats::{PullLevelStats, PullStats};
use crate::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use crate::sync::{Arc, CachePadded};

/// Pods per word of the summary.
const WORD: usize = 64;

/// The pools of one pool set that pull from each other (pool `i` serves pod `i`).
pub(crate) struct PullGroup<T> {
    /// I: the pools' shared state, by pod id.
    pools: Box<[Arc<Shared<T>>]>,
    /// I: per pod: its siblings and its gate.
    pods: Box<[PodPull]>,
    /// A: the summary: bit `p % 64` of word `p / 64` says pool `p` offers waiting work to
    /// every level (`policy::pull::offer_reach`). `Relaxed`: a hint; the tasks themselves are
    /// taken under the victim's head lock.
    offering: Box<[CachePadded<AtomicU64>]>,
    /// A: the same for the offers that reach only the pool's cache domain.
    near: Box<[CachePadded<AtomicU64>]>,
    /// I/A: per search domain (a cache domain, or a pod that spans several): the searchers
    /// now and their cap.
    domains: Box<[CachePadded<Searchers>]>,
}

/// One search domain's searchers.
struct Searchers {
    /// A: workers searching now. `Relaxed`: a cap, not a lock.
    now: AtomicUsize,
    /// I: at most this many at once ([`policy::searcher_cap`]).
    cap: usize,
}

/// One pod's place in the group.
struct PodPull {
    /// I: its siblings, by level, in search order.
    siblings: Siblings,
    /// I: per level, the summary's words masked to the siblings at that level.
    masks: [Box<[u64]>; 3],
    /// I: its search domain, an index of [`PullGroup::domains`].
    domain: usize,
    /// A: its gate, written by its own workers.
    gate: CachePadded<Gate>,
}

/// One pod's gate: per level the success ratio and the counts, and the mean interval between
/// its workers' idle entries. Written by the pod's own workers with `Relaxed` loads and stores:
/// two workers updating at once may lose one update, which a moving mean shrugs off.
struct Gate {
    /// A: the success ratio per level, in [`Ratio`]'s 65536ths.
    ratio: [AtomicU32; 3],
    /// A: searches per level.
    searches: [AtomicU64; 3],
    /// A: searches per level that found a task.
    found: [AtomicU64; 3],
    /// A: idle entries per level that found work offered and did not search (the gate).
    gated: [AtomicU64; 3],
    /// A: idle entries that did not search because the domain had its cap of searchers.
    capped: AtomicU64,
    /// A: the mean interval between idle entries that found work offered, in nanoseconds.
    mean_idle_ns: AtomicU64,
    /// A: the last idle entry, in nanoseconds since [`epoch`].
    last_idle_ns: AtomicU64,
}

impl Gate {
    fn new() -> Self {
        Self {
            ratio: std::array::from_fn(|_| AtomicU32::new(Ratio::ONE.raw())),
            searches: Default::default(),
            found: Default::default(),
            gated: Default::default(),
            capped: AtomicU64::new(0),
            mean_idle_ns: AtomicU64::new(duration_ns(policy::RARE_IDLE)),
            last_idle_ns: AtomicU64::new(0),
        }
    }

    fn ratio(&self, level: Level) -> Ratio {
        Ratio::from_raw(self.ratio[level.index()].load(Ordering::Relaxed))
    }

    fn mean_idle(&self) -> Duration {
        Duration::from_nanos(self.mean_idle_ns.load(Ordering::Relaxed))
    }

    /// Records an idle entry that found work offered, now; returns the mean interval between
    /// such entries. Two workers
    /// of the pod may enter at once, and the other's later time may be the one swapped out:
    /// that interval counts as 0.
    fn idle_entry(&self) -> Duration {
        let now = duration_ns(epoch().elapsed());
        let last = self.last_idle_ns.swap(now, Ordering::Relaxed);
        let mean = policy::idle_interval(
            self.mean_idle(),
            Duration::from_nanos(now.saturating_sub(last)),
        );
        self.mean_idle_ns
            .store(duration_ns(mean), Ordering::Relaxed);
        mean
    }

    /// Records a search at `level` and whether it found a task.
    fn learn(&self, level: Level, found: bool) {
        let l = level.index();
        self.searches[l].fetch_add(1, Ordering::Relaxed);
        if found {
            self.found[l].fetch_add(1, Ordering::Relaxed);
        }
        let ratio = policy::learn(self.ratio(level), found);
        self.ratio[l].store(ratio.raw(), Ordering::Relaxed);
    }
}

/// The instant the gates' clocks, and the load signals' ([`super::clock`]), count from.
pub(super) fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

thread_local! {
    /// The calling thread's random state for the gate's coins (xorshift64; never 0).
    static COIN: Cell<u64> = Cell::new(seed());
}

/// A seed that differs between threads: the address of a thread-local, mixed.
fn seed() -> u64 {
    let local = 0u8;
    let addr = std::ptr::addr_of!(local) as u64;
    (addr ^ 0x9e37_79b9_7f4a_7c15).wrapping_mul(0xbf58_476d_1ce4_e5b9) | 1
}

/// A uniform random number for the gate (the calling thread's xorshift64).
fn coin() -> u32 {
    COIN.with(|c| {
        let mut x = c.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c.set(x);
        (x >> 32) as u32
    })
}

impl<T: Runnable> PullGroup<T> {
    /// The group of `pools` (pool `i` serves pod `i` of `pods`), or `None` when fewer than two
    /// of them serve a CPU: then nobody has a sibling.
    pub(super) fn new(pods: &Pods, pools: &[Arc<Shared<T>>]) -> Option<Self> {
        debug_assert_eq!(pods.len(), pools.len());
        let serves = |p: usize| !pools[p].pod.cpus.is_empty();
        if (0..pools.len()).filter(|&p| serves(p)).count() < 2 {
            return None;
        }
        let places: Vec<PodPlace> = pods
            .pods()
            .iter()
            .map(|pod| PodPlace {
                cache_domain: pod.cache_domain(),
                node: pod.node(),
                serves: serves(pod.id()),
            })
            .collect();
        let words = pools.len().div_ceil(WORD);
        let served: Vec<usize> = pools.iter().map(|p| p.pod.cpus.len()).collect();
        let domains = policy::search_domains(&places, &served);
        let group_pods = (0..pools.len())
            .map(|p| {
                let siblings = policy::siblings(&places, p);
                let masks = Level::ALL.map(|level| {
                    let mut mask = vec![0u64; words];
                    for &s in siblings.level(level) {
                        mask[s / WORD] |= 1 << (s % WORD);
                    }
                    mask.into_boxed_slice()
                });
                PodPull {
                    siblings,
                    masks,
                    domain: domains.of_pod[p],
                    gate: CachePadded::new(Gate::new()),
                }
            })
            .collect();
        Some(Self {
            pools: pools.into(),
            pods: group_pods,
            offering: (0..words)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
            near: (0..words)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
            domains: domains
                .caps
                .into_iter()
                .map(|cap| {
                    CachePadded::new(Searchers {
                        now: AtomicUsize::new(0),
                        cap,
                    })
                })
                .collect(),
        })
    }

    /// Whether the group's pools are exactly `pools`, in order.
    pub(super) fn has_pools(&self, pools: &[Arc<Shared<T>>]) -> bool {
        self.pools.len() == pools.len()
            && self.pools.iter().zip(pools).all(|(a, b)| Arc::ptr_eq(a, b))
    }

    fn word_bit(pod: usize) -> (usize, u64) {
        (pod / WORD, 1 << (pod % WORD))
    }

    /// Word `w` of the summary as siblings at `level` read it: the offers to every level, and
    /// at the cache domain's level those to the cache domain only too.
    fn word(&self, w: usize, level: Level) -> u64 {
        let all = self.offering[w].load(Ordering::Relaxed);
        if policy::reaches(Level::CacheDomain, level) {
            all | self.near[w].load(Ordering::Relaxed)
        } else {
            all
        }
    }

    /// Whether pool `pod` offers its waiting work to its siblings at `level`.
    fn offers_to(&self, pod: usize, level: Level) -> bool {
        let (w, bit) = Self::word_bit(pod);
        self.word(w, level) & bit != 0
    }

    /// (O1) Pool `pod` leaves work waiting with every worker busy: it offers its waiting work
    /// to its siblings up to level `reach`, and asks one of them to send a worker. Nothing when
    /// it offers that far already.
    pub(super) fn offer(&self, pod: usize, reach: Level) {
        let (w, bit) = Self::word_bit(pod);
        if self.offers_to(pod, reach) {
            return;
        }
        let words = if reach == Level::CacheDomain {
            &self.near
        } else {
            &self.offering
        };
        words[w].fetch_or(bit, Ordering::Relaxed);
        self.kick_one(pod, reach);
    }

    /// (O2) Asks the nearest sibling up to level `reach` that may help (someone idle, or room
    /// to grow), and whose gate would search at that level, to wake or start a worker, which
    /// pulls.
    fn kick_one(&self, pod: usize, reach: Level) {
        for (level, sib) in self.pods[pod].siblings.iter() {
            if !policy::reaches(reach, level) {
                continue;
            }
            let shared = &self.pools[sib];
            if !shared.core.may_help() || shared.is_shut() {
                continue;
            }
            let gate = &self.pods[sib].gate;
            if !policy::attempt(gate.ratio(level), gate.mean_idle(), coin()) {
                continue;
            }
            match shared.core.kick() {
                Kick::No => continue,
                Kick::Wake => return,
                Kick::Spawn => {
                    worker::start(shared);
                    return;
                }
            }
        }
    }

    /// (O3) Pool `pod`'s worker found its queue empty: it no longer offers work.
    #[inline]
    pub(super) fn withdraw(&self, pod: usize) {
        let (w, bit) = Self::word_bit(pod);
        for word in [&self.offering[w], &self.near[w]] {
            if word.load(Ordering::Relaxed) & bit != 0 {
                word.fetch_and(!bit, Ordering::Relaxed);
            }
        }
    }

    /// Whether a sibling of `pod` at `level` offers work: a few loads, no lock.
    fn offered_at(&self, pod: usize, level: Level) -> bool {
        self.pods[pod].masks[level.index()]
            .iter()
            .enumerate()
            .any(|(w, &mask)| mask != 0 && self.word(w, level) & mask != 0)
    }

    /// (O4) A worker of pool `pod` found its queue empty: at each level whose siblings offer
    /// work, if the gate lets it and its domain has room for one more searcher, take the oldest
    /// task of the first offering sibling that still has one.
    pub(super) fn pull(&self, pod: usize) -> Option<T> {
        // Nothing offered: nothing to search, and nothing for the gate to weigh.
        if !Level::ALL.iter().any(|&level| self.offered_at(pod, level)) {
            return None;
        }
        let me = &self.pods[pod];
        let mean_idle = me.gate.idle_entry();
        for level in Level::ALL {
            if !self.offered_at(pod, level) {
                continue;
            }
            if !policy::attempt(me.gate.ratio(level), mean_idle, coin()) {
                me.gate.gated[level.index()].fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let searchers = &self.domains[me.domain];
            if searchers.now.fetch_add(1, Ordering::Relaxed) >= searchers.cap {
                searchers.now.fetch_sub(1, Ordering::Relaxed);
                me.gate.capped.fetch_add(1, Ordering::Relaxed);
                return None;
            }
            let found = self.search(pod, level);
            searchers.now.fetch_sub(1, Ordering::Relaxed);
            me.gate.learn(level, found.is_some());
            if found.is_some() {
                return found;
            }
        }
        None
    }

    /// Tries the offering siblings of `pod` at `level` in order; withdraws the offers of those
    /// found empty.
    fn search(&self, pod: usize, level: Level) -> Option<T> {
        for &sib in self.pods[pod].siblings.level(level) {
            if !self.offers_to(sib, level) {
                continue;
            }
            let victim = &self.pools[sib];
            match victim.core.steal() {
                Stolen::Empty => self.withdraw(sib),
                Stolen::Took { item, grow, more } => {
                    if !more {
                        self.withdraw(sib);
                    }
                    worker::grow_pool(victim, grow);
                    victim.pulled_out.fetch_add(1, Ordering::Relaxed);
                    self.pools[pod].pulled_in.fetch_add(1, Ordering::Relaxed);
                    return Some(item);
                }
            }
        }
        None
    }

    /// Pod `pod`'s gate and searches, for its pool's stats.
    pub(super) fn stats(&self, pod: usize) -> PullStats {
        let gate = &self.pods[pod].gate;
        PullStats {
            levels: Level::ALL
                .iter()
                .map(|&level| {
                    let l = level.index();
                    PullLevelStats {
                        level: level.name(),
                        siblings: self.pods[pod].siblings.level(level).len(),
                        searches: gate.searches[l].load(Ordering::Relaxed),
                        found: gate.found[l].load(Ordering::Relaxed),
                        gated: gate.gated[l].load(Ordering::Relaxed),
                        success_ratio: gate.ratio(level).as_f64(),
                    }
                })
                .collect(),
            capped: gate.capped.load(Ordering::Relaxed),
            mean_idle_interval: gate.mean_idle(),
            offering: self.offers_to(pod, Level::CacheDomain),
        }
    }
}
