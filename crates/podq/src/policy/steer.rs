//! Steering: which pod a group's work item goes to, and how a group's preference for a pod
//! (its *home*) is learned, decays and moves. The decisions behind `Group` in the workqueue
//! layer, as pure functions; `docs/design.md`, "Steering", says why.
//!
//! This module owns the decisions and the arithmetic of the load signal ([`Busy`],
//! [`busy_mean`]); the pool measures the signal (`pool/load.rs`: sampling a pod's busy
//! workers, published for the issuers to read), and the workqueue carries the decisions out
//! (steps G1-G5 of `src/workqueue/README.md`).
//!
//! A group is a set of related work items (one connection, one key range, one tenant) whose
//! data is hot in the caches of the pod where they last ran. The policy follows the kernel's
//! cache-aware scheduling and its safeguards against stacking (the scheduler's cache-aware load
//! balancing RFC of 2025):
//!
//! * **Home**: where the group's items last ran ([`record`]); a vote, weighted by recency, so
//!   that a stray item elsewhere (a pull) does not move it at once.
//! * **Aim at a pod**: an item goes to its home pod's pool, whichever of its CPUs runs it.
//! * **Stay put**: an item issued on a CPU of the home pod goes there with no further look.
//! * **Overload**: a home pod whose recent busy fraction is above [`BUSY_LIMIT`] (a moving
//!   mean over [`LOAD_WINDOW`], [`busy_mean`]), or a group with as many runnable items as the
//!   home pod has CPUs, gets no more of the group's items: they go where ungrouped work goes
//!   (the issuing CPU's pod), and pull still applies.
//! * **Decay and expiry**: the home's weight halves every [`HALF_LIFE`] ([`decay`]); a group
//!   with no item for [`EXPIRY`] has no home.
//! * **Hysteresis**: a home moves at most once per [`HOME_HOLD`].
//! * **Amortised**: a group's starts vote at most once per [`VOTE_INTERVAL`] ([`votes`]).
//!
//! Time is a [`Duration`] since an origin of the caller's choosing (the runtime's process
//! clock, the simulator's simulated time), so tests and the simulator drive it without
//! sleeping: `crates/podq/tests/steer_policy.rs` does (decay, expiry, hysteresis, votes,
//! overload, the busy mean; properties with proptest).

use std::time::Duration;

/// How long a group's preference takes to halve: 10 ms, the decay of a process's
/// per-cache-domain occupancy in the scheduler's cache-aware load balancing RFC of 2025. A
/// cache keeps a set of data hot for about as long as other work takes to evict it; a preference
/// older than a few half-lives says little about where the data is.
pub const HALF_LIFE: Duration = Duration::from_millis(10);

/// How long a group keeps its home with no item: 50 ms, the kernel's expiry of a preference in
/// the same RFC. Five half-lives: a home this old has decayed to about 3 % of its weight, and
/// steering the next item there would only move it away from where it was issued.
pub const EXPIRY: Duration = Duration::from_millis(50);

/// The least time between two moves of a group's home: 100 ms. The cache-aware load balancing
/// RFC of 2025 moves work in a periodic balancer with hysteresis, since moving it on every
/// wake-up stacked it on one cache domain. Twice
/// [`EXPIRY`]: a group flapping between two pods pays for the move at most ten times a second.
pub const HOME_HOLD: Duration = Duration::from_millis(100);

/// Above this busy fraction a home pod gets no more of a group's items: one half, where the
/// cache-aware load balancing RFC of 2025 stops aggregating (a domain about 50 % utilized).
/// Below it a pod has a free CPU at least half the time; above it the wait for one grows fast (a
/// single server's mean wait is `u / (1 - u)` service times at utilization `u`: 1 at one half, 4 at
/// four fifths), and soon costs more than the hot cache saves.
pub const BUSY_LIMIT: Busy = Busy(1 << 15);

/// The window of the pod's busy fraction: a moving mean over about the last 8 ms. Shorter than
/// [`HALF_LIFE`], so a pod that fills up stops taking steered items before the preferences that
/// filled it have halved; long enough for [`LOAD_SAMPLES`] samples, which smooth a one-CPU
/// pod's samples (each 0 or 1) to within about 8 % of its true fraction at 40-50 % busy (the
/// binomial spread: the square root of 0.25 / 40 is 0.079).
pub const LOAD_WINDOW: Duration = Duration::from_millis(8);

/// Samples of a pod's busy workers per [`LOAD_WINDOW`]: 40 (see there).
pub const LOAD_SAMPLES: u32 = 40;

/// The least time between two samples of one pod's busy workers: [`LOAD_WINDOW`] over
/// [`LOAD_SAMPLES`], 200 us. A sample is taken by a steering decision that reads the pod's load
/// and finds the last one older than this, so a pod is sampled at most 5,000 times a second,
/// however many items are steered to it.
pub const SAMPLE_INTERVAL: Duration = Duration::from_micros(200);

/// The least time between two votes of a group's starts ([`votes`]): 50 us. A vote takes the
/// group's lock and writes its published home and time, a line that every CPU running the
/// group's items would otherwise write for every item; a group whose items start more often
/// than this votes with one start per interval. That is still 200 votes per [`HALF_LIFE`],
/// more than the [`WEIGHT_CAP`] needs, and a thousandth of [`EXPIRY`], which it delays.
pub const VOTE_INTERVAL: Duration = Duration::from_micros(50);

/// Whether an item that starts at `now` votes ([`record`]), the group's last vote having been
/// at `last_vote`: when [`VOTE_INTERVAL`] has passed since (or the clock went back).
#[must_use]
pub fn votes(last_vote: Duration, now: Duration) -> bool {
    now < last_vote || now - last_vote >= VOTE_INTERVAL
}

/// One item's weight in a group's preference (fixed point: 256ths of an item, so that decay
/// over a fraction of [`HALF_LIFE`] keeps precision in an integer).
pub const ITEM: u32 = 256;

/// The most weight a home gathers: 64 items. A group that runs many items a millisecond would
/// otherwise hold a weight that only many half-lives erode; with the cap, 64 items run
/// elsewhere (the home being loaded, or its items pulled) outvote it within a few
/// milliseconds, and [`HOME_HOLD`] still bounds how often the home moves.
pub const WEIGHT_CAP: u32 = 64 * ITEM;

/// A busy fraction, in 65536ths (so that it fits an atomic word).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Busy(u32);

impl Busy {
    /// No CPU busy.
    pub const IDLE: Busy = Busy(0);

    /// Every CPU busy.
    pub const FULL: Busy = Busy(1 << 16);

    /// The fraction of `raw` 65536ths, clamped to [`Busy::FULL`].
    #[must_use]
    pub const fn from_raw(raw: u32) -> Busy {
        Busy(if raw > Busy::FULL.0 {
            Busy::FULL.0
        } else {
            raw
        })
    }

    /// `busy` of `cpus` CPUs busy (more busy workers than CPUs count as every CPU: workers
    /// past the CPU count are there for items that block); [`Busy::IDLE`] for no CPU.
    #[must_use]
    pub fn of(busy: usize, cpus: usize) -> Busy {
        if cpus == 0 {
            return Busy::IDLE;
        }
        let busy = busy.min(cpus) as u64;
        Busy((busy * u64::from(Busy::FULL.0) / cpus as u64) as u32)
    }

    /// The 65536ths.
    #[must_use]
    pub const fn raw(self) -> u32 {
        self.0
    }

    /// As a fraction from 0 to 1.
    #[must_use]
    pub fn as_f64(self) -> f64 {
        f64::from(self.0) / f64::from(Busy::FULL.0)
    }
}

/// A pod's busy fraction as a moving mean of samples ([`busy_mean`]), and how much time its
/// samples cover (at most [`LOAD_WINDOW`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BusyMean {
    /// The mean.
    pub mean: Busy,
    /// The time its samples cover: 0 before the first, then growing up to [`LOAD_WINDOW`].
    pub covers: Duration,
}

/// The moving mean after one more `sample`, taken `since_last` after the previous one (any
/// value for the first). A sample stands for the time since the previous one (at most
/// [`LOAD_WINDOW`]; the first for [`SAMPLE_INTERVAL`]), so samples taken close together do not
/// outweigh the window; until the samples cover a whole window the mean is their
/// time-weighted average (the first sample is the mean), and from then on each sample moves it
/// by `since_last` over the window.
#[must_use]
pub fn busy_mean(old: BusyMean, sample: Busy, since_last: Duration) -> BusyMean {
    let window = LOAD_WINDOW.as_nanos();
    let stands_for = if old.covers.is_zero() {
        SAMPLE_INTERVAL
    } else {
        since_last
    };
    let weight = stands_for.as_nanos().clamp(1, window);
    let covers = (old.covers.as_nanos() + weight).min(window);
    let m = i128::from(old.mean.0);
    let s = i128::from(sample.0);
    // |s - m| <= 2^16 and weight <= covers <= window < 2^63: the product fits.
    let moved = (s - m) * weight as i128 / covers as i128;
    BusyMean {
        mean: Busy::from_raw((m + moved) as u32),
        covers: Duration::from_nanos(covers as u64),
    }
}

/// A pod's load as a steering decision reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodLoad {
    /// The pod's CPUs (within the workqueue's CPUs).
    pub cpus: usize,
    /// Its recent busy fraction ([`busy_mean`]).
    pub busy: Busy,
}

/// A group's preference: its home, the home's weight, and when it last changed. Plain data,
/// kept by whoever drives the policy (the workqueue layer per group, the simulator per
/// simulated group) and changed only by [`record`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Preference {
    /// The home pod; `None` before the group's first item ran.
    pub home: Option<usize>,
    /// The home's weight, in [`ITEM`]s, as of `last_item` (decayed since by [`decay`]).
    pub weight: u32,
    /// When the group's last item started.
    pub last_item: Duration,
    /// When the home last changed (or was first taken).
    pub home_changed: Duration,
}

impl Preference {
    /// What a steering decision reads of it ([`steer`]).
    #[must_use]
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            home: self.home,
            last_item: self.last_item,
        }
    }

    /// The home at `now`: `None` when there is none or it has expired ([`EXPIRY`]).
    #[must_use]
    pub fn home_at(&self, now: Duration) -> Option<usize> {
        self.snapshot().home_at(now)
    }
}

/// What a steering decision reads of a group: its home and when its last item started (the
/// runtime publishes these two in atomic words; the weight is only [`record`]'s).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// The home pod, if any.
    pub home: Option<usize>,
    /// When the group's last item started.
    pub last_item: Duration,
}

impl Snapshot {
    /// The home at `now`: `None` when there is none or it has expired ([`EXPIRY`]).
    #[must_use]
    pub fn home_at(&self, now: Duration) -> Option<usize> {
        self.home.filter(|_| !expired(self.last_item, now))
    }
}

/// Whether a preference whose last item started at `last_item` has expired at `now`.
#[must_use]
pub fn expired(last_item: Duration, now: Duration) -> bool {
    now.saturating_sub(last_item) >= EXPIRY
}

/// `weight` after `elapsed` more time: halved once per whole [`HALF_LIFE`], and within a
/// half-life taken down in a straight line towards the next half (exact at every half-life,
/// never increasing with `elapsed`).
#[must_use]
pub fn decay(weight: u32, elapsed: Duration) -> u32 {
    let half = HALF_LIFE.as_nanos();
    let halvings = elapsed.as_nanos() / half;
    if halvings >= 32 {
        return 0;
    }
    let w = u128::from(weight >> halvings);
    let into = elapsed.as_nanos() % half;
    // Down from w at the start of the half-life to w/2 at its end.
    (w - w * into / (2 * half)) as u32
}

/// What one item's start did to its group's preference ([`record`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recorded {
    /// The group had no home, or it had expired: the pod the item ran on is its home now.
    Adopted,
    /// It ran at home: the home's weight grew.
    AtHome,
    /// It ran elsewhere: the home's weight shrank (and the home stayed, being still heavier,
    /// or having moved less than [`HOME_HOLD`] ago).
    Elsewhere,
    /// It ran elsewhere and outvoted the home, which moved to where it ran.
    Moved {
        /// The home before.
        from: usize,
    },
}

/// Records that one of the group's items started on pod `ran_on` at `now`: the home is where
/// the items last ran, by a vote that decays ([`decay`]): an item at home adds an [`ITEM`] to
/// the home's weight (up to [`WEIGHT_CAP`]), one elsewhere takes one away, and when the weight
/// is gone the home moves to where that item ran, at most once per [`HOME_HOLD`]. A group with
/// no home, or whose home expired ([`EXPIRY`]), takes the item's pod as its home. A driver
/// calls it for the starts that vote ([`votes`]); the others change nothing.
pub fn record(pref: &mut Preference, ran_on: usize, now: Duration) -> Recorded {
    let fresh = pref.home.is_none() || expired(pref.last_item, now);
    let weight = decay(pref.weight, now.saturating_sub(pref.last_item));
    pref.last_item = now;
    if fresh {
        pref.home = Some(ran_on);
        pref.weight = ITEM;
        pref.home_changed = now;
        return Recorded::Adopted;
    }
    match pref.home {
        Some(home) if home == ran_on => {
            pref.weight = (weight + ITEM).min(WEIGHT_CAP);
            Recorded::AtHome
        }
        Some(home) => {
            pref.weight = weight.saturating_sub(ITEM);
            if pref.weight == 0 && now.saturating_sub(pref.home_changed) >= HOME_HOLD {
                pref.home = Some(ran_on);
                pref.weight = ITEM;
                pref.home_changed = now;
                Recorded::Moved { from: home }
            } else {
                Recorded::Elsewhere
            }
        }
        None => unreachable!("a group without a home is fresh"),
    }
}

/// Why an item is not steered: it goes where ungrouped work goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unsteered {
    /// The group has no home yet (no item of it has run).
    NoHome,
    /// The group's home expired: no item for [`EXPIRY`].
    Expired,
    /// The group has as many runnable items as the home pod has CPUs: one more there would
    /// wait for a CPU.
    Crowded,
    /// The home pod is busier than [`BUSY_LIMIT`].
    Loaded,
}

/// Where a grouped item goes ([`steer`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Steer {
    /// To its group's home pod.
    Home(usize),
    /// Where an ungrouped item issued here goes, for the reason given.
    Plain(Unsteered),
}

impl Steer {
    /// The pod the item goes to, given `plain`, the pod where an ungrouped item would go.
    #[must_use]
    pub fn pod(self, plain: usize) -> usize {
        match self {
            Steer::Home(pod) => pod,
            Steer::Plain(_) => plain,
        }
    }
}

/// Where an item of a group goes, issued at `now` where an ungrouped item would go to pod
/// `plain`, with `runnable` items of the group queued or running already. `load` gives a pod's
/// load; it is asked at most once, for the home, and only when the item is not issued at home.
///
/// The home, unless: the group has none or it expired; the home pod already has as many of the
/// group's runnable items as it has CPUs; or it is busier than [`BUSY_LIMIT`]. An item issued
/// at home stays there (the same pod either way), without a look at the load.
pub fn steer(
    group: Snapshot,
    now: Duration,
    plain: usize,
    runnable: usize,
    load: impl FnOnce(usize) -> PodLoad,
) -> Steer {
    let Some(home) = group.home else {
        return Steer::Plain(Unsteered::NoHome);
    };
    if expired(group.last_item, now) {
        return Steer::Plain(Unsteered::Expired);
    }
    if home == plain {
        return Steer::Home(home);
    }
    let load = load(home);
    if runnable >= load.cpus {
        return Steer::Plain(Unsteered::Crowded);
    }
    if load.busy > BUSY_LIMIT {
        return Steer::Plain(Unsteered::Loaded);
    }
    Steer::Home(home)
}
