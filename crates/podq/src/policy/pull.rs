//! Pull: where an idle worker looks for waiting work of other pools, and when it looks at all
//! (the adaptive gate). The decisions behind `src/pool/README.md`, "Pull" (O1-O4), as pure
//! functions.
//!
//! This file owns the decisions only: which siblings, in which order, when to offer, kick and
//! search, and how a search's outcome moves the gate. The pool set keeps the state they are
//! asked with and acts on the answers (`pool/pull.rs`: the summary of offering pools and each
//! pod's gate), and the concurrent core takes the task (`pool/core/pull.rs`: the steal and the
//! kick under the sibling's locks).
//!
//! * **Where**: [`siblings`] orders the other pods of a pod by [`Level`]: those of its cache
//!   domain first, then those of its node, then the rest of the machine, each level starting
//!   after the pod's own id so that the pods of a level do not all look at the same sibling
//!   first. A worker takes the oldest waiting item of the first sibling that has one.
//! * **Which pools offer work**: a pool offers its waiting items to its siblings when a push
//!   leaves [`OFFER_WAITING`] or more in its lane with every worker busy, or
//!   [`OFFER_WAITING_AWAY`] when the push comes from outside the pod ([`offers`]); the pool
//!   layer keeps a summary of the offering pools (a bit per pod), so a search that has nothing
//!   to find reads a few words and takes no lock. An offer also asks one sibling that has an
//!   idle worker, or room for one, to send it ([`kick`]).
//! * **When** (the gate): a search that rarely finds work must stop costing, because on a big
//!   machine many workers go idle many times a millisecond. Per pod and per level the pool
//!   keeps the searches' success ratio ([`learn`]), and per pod the mean interval between its
//!   workers' idle entries that find work offered ([`idle_interval`]; an entry that finds none
//!   reads a few words and costs nothing to weigh); [`attempt`] searches always when idle
//!   entries are rare (every [`RARE_IDLE`] or less often: then the search's cost cannot matter),
//!   and otherwise
//!   with a probability that follows the success ratio, never below [`MIN_ATTEMPT`] so that
//!   the gate notices when work comes back. At most [`searcher_cap`] workers of one cache
//!   domain search at once.
//!
//! The measurements behind these choices are those of the CFS shared runqueue series of 2023
//! (idle pull from the shards of a cache domain, and its cost on big machines when every idle
//! entry scans and rarely finds work); `docs/design.md`, "Pull", says how podq follows them.

use std::time::Duration;

use super::growth::{Limits, Workers};

/// How far a sibling pod is from a worker's pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    /// Another pod of the same cache domain: its items' data may be in the shared cache.
    CacheDomain,
    /// Another pod of the same node: same memory, another cache.
    Node,
    /// Any other pod of the machine.
    Machine,
}

impl Level {
    /// Every level, nearest first.
    pub const ALL: [Level; 3] = [Level::CacheDomain, Level::Node, Level::Machine];

    /// Its position in [`Level::ALL`].
    #[must_use]
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }

    /// Its name in statistics: `cache_domain`, `node` or `machine`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Level::CacheDomain => "cache_domain",
            Level::Node => "node",
            Level::Machine => "machine",
        }
    }
}

/// Where a pod sits, as the sibling order needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodPlace {
    /// The cache domain of all its CPUs; `None` when they span several.
    pub cache_domain: Option<usize>,
    /// The node of all its CPUs; `None` when they span several.
    pub node: Option<usize>,
    /// Whether the pod has any of the workqueue's CPUs (a pod without has no pool in use).
    pub serves: bool,
}

/// The sibling pods of one pod, by level, each level in search order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Siblings {
    /// Pod ids per level, indexed by [`Level::index`].
    levels: [Vec<usize>; 3],
}

impl Siblings {
    /// The siblings at `level`, in search order.
    #[must_use]
    pub fn level(&self, level: Level) -> &[usize] {
        &self.levels[level.index()]
    }

    /// Every sibling with its level, nearest level first.
    pub fn iter(&self) -> impl Iterator<Item = (Level, usize)> + '_ {
        Level::ALL
            .into_iter()
            .flat_map(move |level| self.level(level).iter().map(move |&pod| (level, pod)))
    }

    /// Whether the pod has no sibling at all (one pod, or it serves no CPU).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.levels.iter().all(Vec::is_empty)
    }
}

/// The level of `other` seen from `from`.
fn level_of(from: PodPlace, other: PodPlace) -> Level {
    let same = |a: Option<usize>, b: Option<usize>| a.is_some() && a == b;
    if same(from.cache_domain, other.cache_domain) {
        Level::CacheDomain
    } else if same(from.node, other.node) {
        Level::Node
    } else {
        Level::Machine
    }
}

/// The siblings of pod `pod` among `places` (indexed by pod id): every other pod that serves a
/// CPU, by level, each level in id order starting after `pod` (and wrapping). Empty when `pod`
/// itself serves no CPU.
///
/// # Panics
///
/// When `pod` is not an index of `places`.
#[must_use]
pub fn siblings(places: &[PodPlace], pod: usize) -> Siblings {
    let mut out = Siblings::default();
    let from = places[pod];
    if !from.serves {
        return out;
    }
    let n = places.len();
    for other in (1..n).map(|k| (pod + k) % n) {
        if places[other].serves {
            out.levels[level_of(from, places[other]).index()].push(other);
        }
    }
    out
}

/// Items a push from a CPU of the pool's own pod must leave waiting in its lane, with every
/// worker busy and no spinner to take them, before its pool offers its waiting work to
/// siblings: 2, so that an item queued behind one other item is offered, but a single item
/// queued while the pool's worker finishes the item that queued it (the request/response case:
/// one hop at a time) is not. Pulling that one item would move it to another CPU's cache while
/// its own worker is a moment away.
pub const OFFER_WAITING: usize = 2;

/// The same for a push from a CPU outside the pool's pod (a steered item issued elsewhere, a
/// `queue_on` another CPU, a timer firing): 1, offered only to the pod's cache domain, and only
/// while every worker of the pool is inside a task ([`offer_reach`]). No worker of the pool is
/// about to finish the item that queued this one, so a single item waits for whatever the busy
/// workers run, up to a whole item's time; offered, it starts on an idle sibling at once. In the
/// model (`podq sim --profile podq --workload locality --items 2000 --scopes cpu --steer on,off`)
/// steering's start p99 against unsteered items is 1.07x on `epyc-9d64` and 2.2x on `grace`
/// with this offer, 17x and 4.8x without it.
pub const OFFER_WAITING_AWAY: usize = 1;

/// How far the offer of a push that left `waiting` items in its lane with every worker busy
/// reaches: the farthest [`Level`] of siblings that may take the pool's waiting work, or `None`
/// for no offer. [`OFFER_WAITING`] items offer to every level. Fewer, but at least
/// [`OFFER_WAITING_AWAY`] from a CPU outside the pod (`from_pod` false), offer only to the
/// pod's cache domain, and only when `all_in_tasks` says every worker of the pool runs a task
/// (asked only then): a worker between two tasks is a moment away. In the cache domain the
/// item's data is one shared-cache hit away; an item moved to another cache runs cold, and on a
/// machine of many cache domains enough of those (the model: EPYC 9D64's cpu scope at 60 %
/// load) raise the pods' busy fractions over steering's `BUSY_LIMIT` and switch steering off.
#[must_use]
#[inline]
pub fn offer_reach(
    waiting: usize,
    from_pod: bool,
    all_in_tasks: impl FnOnce() -> bool,
) -> Option<Level> {
    if waiting >= OFFER_WAITING {
        Some(Level::Machine)
    } else if !from_pod && waiting >= OFFER_WAITING_AWAY && all_in_tasks() {
        Some(Level::CacheDomain)
    } else {
        None
    }
}

/// Whether such a push may offer, before the workers are looked at: [`offer_reach`] with
/// every worker in a task. The queue call uses it to decide whether the spinners matter.
#[must_use]
#[inline]
pub fn offers(waiting: usize, from_pod: bool) -> bool {
    offer_reach(waiting, from_pod, || true).is_some()
}

/// Whether an offer that reaches `reach` ([`offer_reach`]) is open to a sibling at `level`.
#[must_use]
#[inline]
pub fn reaches(reach: Level, level: Level) -> bool {
    level <= reach
}

/// What a pool asked by an offering sibling does ([`kick`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kick {
    /// Nothing: every worker is busy or one is on its way, and the pool is at its eager size.
    No,
    /// Wake the most recently parked worker; it pulls when it finds its own queue empty.
    Wake,
    /// Start a worker (counted by the pool); it pulls when it finds its own queue empty.
    Spawn,
}

/// What a pool does when a sibling offers work: wake a parked worker, or start one while
/// below its eager size (never past it: a pool grows past its CPUs only for its own blocked
/// items, through the stall watchdog), and nothing while a worker is on its way.
#[must_use]
pub fn kick(workers: Workers, limits: Limits) -> Kick {
    if workers.idle > 0 {
        Kick::Wake
    } else if workers.coming == 0 && workers.live < limits.eager_workers {
        Kick::Spawn
    } else {
        Kick::No
    }
}

/// A success ratio, in 65536ths (so that it fits an atomic word and a uniform 16-bit coin
/// compares with it directly).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ratio(u32);

impl Ratio {
    /// Every search found work: the gate's starting point, so that a new pool searches.
    pub const ONE: Ratio = Ratio(1 << 16);

    /// The ratio of `raw` 65536ths, clamped to [`Ratio::ONE`].
    #[must_use]
    pub const fn from_raw(raw: u32) -> Ratio {
        Ratio(if raw > Ratio::ONE.0 {
            Ratio::ONE.0
        } else {
            raw
        })
    }

    /// The 65536ths.
    #[must_use]
    pub const fn raw(self) -> u32 {
        self.0
    }

    /// As a fraction from 0 to 1.
    #[must_use]
    pub fn as_f64(self) -> f64 {
        f64::from(self.0) / f64::from(Ratio::ONE.0)
    }
}

/// How far one search moves the success ratio towards its outcome: 1/8 (a shift of 3), an
/// exponentially weighted mean over about the last 8 searches, so that the gate closes after a
/// handful of failures and opens as quickly when work comes back.
pub const LEARN_SHIFT: u32 = 3;

/// The success ratio after one more search that `found` work, or not ([`LEARN_SHIFT`]).
#[must_use]
pub fn learn(ratio: Ratio, found: bool) -> Ratio {
    let target = if found { Ratio::ONE.0 } else { 0 };
    let r = i64::from(ratio.0);
    Ratio::from_raw((r + ((i64::from(target) - r) >> LEARN_SHIFT)) as u32)
}

/// The lowest probability with which the gate still searches while idle entries are frequent:
/// 1/32, so that a gate closed by failures opens again within a few dozen idle entries of work
/// coming back, while a machine on which pulls never succeed pays for one search in 32.
pub const MIN_ATTEMPT: Ratio = Ratio(1 << 11);

/// Idle entries at most this frequent (the mean interval between a pod's idle entries at
/// least this long) are rare enough that the gate always searches: 1 ms. A search that finds
/// nothing costs a few microseconds at most (the kernel's per-cache-domain mask search measured
/// 1-2 us), so at one idle entry per millisecond per pod it costs under 0.5 % of a CPU.
pub const RARE_IDLE: Duration = Duration::from_millis(1);

/// How far one idle entry moves the mean interval between idle entries: 1/8 (a shift of 3).
pub const IDLE_SHIFT: u32 = 3;

/// The mean interval between a pod's idle entries after one more that came `since_last` after
/// the previous one ([`IDLE_SHIFT`]).
#[must_use]
pub fn idle_interval(mean: Duration, since_last: Duration) -> Duration {
    let m = mean.as_nanos().min(u128::from(u64::MAX)) as i128;
    let s = since_last.as_nanos().min(u128::from(u64::MAX)) as i128;
    Duration::from_nanos((m + ((s - m) >> IDLE_SHIFT)).max(0) as u64)
}

/// Whether an idle worker searches a level, given the level's success ratio, the pod's mean
/// interval between idle entries, and `coin`, a uniform random number whose low 16 bits are
/// used: always when idle entries are rare ([`RARE_IDLE`]), otherwise with a probability of the
/// success ratio, and at least [`MIN_ATTEMPT`].
#[must_use]
pub fn attempt(ratio: Ratio, mean_idle_interval: Duration, coin: u32) -> bool {
    if mean_idle_interval >= RARE_IDLE {
        return true;
    }
    (coin & 0xffff) < ratio.max(MIN_ATTEMPT).0
}

/// Workers of one cache domain that may search at once: half its CPUs (the pools keep about
/// one worker per CPU busy, so this is about half its workers), and at least 1. More searchers
/// than that only fight over the same few offering pools' head locks.
#[must_use]
pub fn searcher_cap(cpus: usize) -> usize {
    (cpus / 2).max(1)
}

/// Where the pods' workers count as searchers ([`searcher_cap`]): each pod's search domain,
/// and each domain's cap.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SearchDomains {
    /// The search domain of each pod, by pod id: an index of `caps`.
    pub of_pod: Vec<usize>,
    /// The most workers of each domain that search at once.
    pub caps: Vec<usize>,
}

/// The search domains of the pods at `places`, whose pod `p` serves `cpus[p]` CPUs: one per
/// cache domain, and one for each pod that spans several cache domains (scopes `numa` and
/// `system`), each capped at [`searcher_cap`] of its CPUs.
///
/// # Panics
///
/// When `places` and `cpus` differ in length.
#[must_use]
pub fn search_domains(places: &[PodPlace], cpus: &[usize]) -> SearchDomains {
    assert_eq!(places.len(), cpus.len(), "a CPU count per pod");
    let mut keys: Vec<(bool, usize)> = Vec::new();
    let mut domain_cpus: Vec<usize> = Vec::new();
    let of_pod = places
        .iter()
        .enumerate()
        .map(|(p, place)| {
            let key = place.cache_domain.map_or((false, p), |d| (true, d));
            let at = keys.iter().position(|&k| k == key).unwrap_or_else(|| {
                keys.push(key);
                domain_cpus.push(0);
                keys.len() - 1
            });
            domain_cpus[at] += cpus[p];
            at
        })
        .collect();
    SearchDomains {
        of_pod,
        caps: domain_cpus.into_iter().map(searcher_cap).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(cache_domain: usize, node: usize) -> PodPlace {
        PodPlace {
            cache_domain: Some(cache_domain),
            node: Some(node),
            serves: true,
        }
    }

    #[test]
    fn siblings_come_by_level_each_starting_after_the_pod() {
        // Two nodes of two cache domains of two pods each: pods 0-3 on node 0, 4-7 on node 1.
        let places: Vec<PodPlace> = (0..8).map(|p| place(p / 2, p / 4)).collect();
        let s = siblings(&places, 2);
        assert_eq!(s.level(Level::CacheDomain), &[3]);
        assert_eq!(s.level(Level::Node), &[0, 1]);
        assert_eq!(s.level(Level::Machine), &[4, 5, 6, 7]);
        let s = siblings(&places, 5);
        assert_eq!(s.level(Level::CacheDomain), &[4]);
        assert_eq!(s.level(Level::Node), &[6, 7]);
        assert_eq!(s.level(Level::Machine), &[0, 1, 2, 3]);
        let all: Vec<(Level, usize)> = s.iter().collect();
        assert_eq!(all.len(), 7);
        assert_eq!(all[0], (Level::CacheDomain, 4));
    }

    #[test]
    fn pods_that_span_domains_or_serve_nothing() {
        // A pod spanning two cache domains (scope numa) has no cache-domain siblings; a pod
        // serving no CPU is nobody's sibling and has none.
        let mut places = vec![
            PodPlace {
                cache_domain: None,
                node: Some(0),
                serves: true,
            },
            place(1, 0),
            place(2, 1),
        ];
        let s = siblings(&places, 0);
        assert!(s.level(Level::CacheDomain).is_empty());
        assert_eq!(s.level(Level::Node), &[1]);
        assert_eq!(s.level(Level::Machine), &[2]);
        places[2].serves = false;
        assert_eq!(siblings(&places, 0).iter().count(), 1);
        assert!(siblings(&places, 2).is_empty());
        assert!(siblings(&[place(0, 0)], 0).is_empty());
    }

    #[test]
    fn offers_need_an_item_behind_another_from_the_pod_and_one_item_from_elsewhere() {
        assert!(!offers(0, true));
        assert!(!offers(1, true));
        assert!(offers(OFFER_WAITING, true));
        assert!(!offers(0, false));
        assert!(offers(1, false));
        assert!(offers(OFFER_WAITING, false));
        let busy = || true;
        assert_eq!(offer_reach(OFFER_WAITING, true, busy), Some(Level::Machine));
        assert_eq!(
            offer_reach(OFFER_WAITING, false, busy),
            Some(Level::Machine)
        );
        assert_eq!(
            offer_reach(OFFER_WAITING, false, || false),
            Some(Level::Machine)
        );
        assert_eq!(
            offer_reach(OFFER_WAITING_AWAY, false, busy),
            Some(Level::CacheDomain)
        );
        assert_eq!(offer_reach(OFFER_WAITING_AWAY, false, || false), None);
        assert_eq!(offer_reach(OFFER_WAITING_AWAY, true, busy), None);
        assert!(reaches(Level::Machine, Level::Node));
        assert!(reaches(Level::CacheDomain, Level::CacheDomain));
        assert!(!reaches(Level::CacheDomain, Level::Node));
    }

    #[test]
    fn kick_wakes_then_spawns_up_to_the_eager_size() {
        let limits = Limits::new(256, 2);
        let w = |live, idle, coming| Workers {
            live,
            idle,
            coming,
            watched: false,
        };
        assert_eq!(kick(w(2, 1, 0), limits), Kick::Wake);
        assert_eq!(kick(w(0, 0, 0), limits), Kick::Spawn);
        assert_eq!(kick(w(1, 0, 0), limits), Kick::Spawn);
        assert_eq!(kick(w(1, 0, 1), limits), Kick::No);
        assert_eq!(kick(w(2, 0, 0), limits), Kick::No);
    }

    #[test]
    fn the_ratio_follows_outcomes_and_stays_in_range() {
        let mut r = Ratio::ONE;
        for _ in 0..100 {
            r = learn(r, false);
        }
        assert!(r < MIN_ATTEMPT, "{r:?}");
        let closed = r;
        r = learn(r, true);
        assert!(r > closed);
        for _ in 0..100 {
            r = learn(r, true);
        }
        assert!(r.as_f64() > 0.99 && r <= Ratio::ONE, "{r:?}");
        // Eight failures from 1 leave about (7/8)^8 = 0.34.
        let mut r = Ratio::ONE;
        for _ in 0..8 {
            r = learn(r, false);
        }
        assert!((r.as_f64() - 0.344).abs() < 0.01, "{}", r.as_f64());
        assert_eq!(Ratio::from_raw(u32::MAX), Ratio::ONE);
    }

    #[test]
    fn the_gate_always_searches_when_idle_entries_are_rare() {
        let closed = Ratio::from_raw(0);
        for coin in [0, 0x7fff, 0xffff] {
            assert!(attempt(closed, RARE_IDLE, coin));
        }
        let busy = Duration::from_micros(10);
        // Closed: only coins under MIN_ATTEMPT search.
        assert!(attempt(closed, busy, 0));
        assert!(!attempt(closed, busy, MIN_ATTEMPT.raw()));
        // Half open: half the coins.
        let half = Ratio::from_raw(1 << 15);
        let searched = (0..0x1_0000u32).filter(|&c| attempt(half, busy, c)).count();
        assert_eq!(searched, 1 << 15);
        assert!((0..0x1_0000u32).all(|c| attempt(Ratio::ONE, busy, c)));
    }

    #[test]
    fn the_idle_interval_is_a_moving_mean() {
        let mut mean = RARE_IDLE;
        for _ in 0..100 {
            mean = idle_interval(mean, Duration::from_micros(10));
        }
        assert!(mean < Duration::from_micros(11), "{mean:?}");
        let after = idle_interval(mean, Duration::from_millis(9));
        assert!(
            after > mean && after < Duration::from_millis(2),
            "{after:?}"
        );
    }

    #[test]
    fn a_cache_domain_is_one_search_domain_and_a_spanning_pod_its_own() {
        let spanning = PodPlace {
            cache_domain: None,
            node: Some(0),
            serves: true,
        };
        let places = [place(0, 0), place(1, 0), place(0, 0), spanning, spanning];
        let domains = search_domains(&places, &[8, 8, 8, 16, 4]);
        assert_eq!(domains.of_pod, [0, 1, 0, 2, 3]);
        assert_eq!(domains.caps, [8, 4, 8, 2]);
    }

    #[test]
    fn searchers_are_half_the_cpus_and_at_least_one() {
        assert_eq!(searcher_cap(0), 1);
        assert_eq!(searcher_cap(1), 1);
        assert_eq!(searcher_cap(72), 36);
    }
}
