//! The range of every prediction: how far each result moves when every cost parameter, every
//! platform parameter (line latencies, idle exits) and every cache parameter (the `locality`
//! workload's) may be off by up to P %, and each cost fitted on the published tables may take
//! any value its fits gave, each draw with a seed of its own; and which orders of
//! configurations that can flip, or are closer than the model's order error, so that a report
//! recommends only an order that holds.

use crate::cost::Param;
use crate::engine::simulate;
use crate::machine::SimMachine;
use crate::profile::Profile;
use crate::rng::Rng;
use crate::scenario::{Scenario, Workload};
use crate::SimError;

/// Draws of moved parameters per range, besides the nominal one: each moves every parameter
/// of [`Param::ALL`] uniformly within its [`draw_bounds`], and the platform's line latencies
/// and idle exits ([`Platform::moved`](crate::Platform::moved)) and every one
/// [`Caches::moved`](crate::Caches::moved) moves by its own factor, uniform in
/// `[1 - P, 1 + P]`, and runs with the seed after the previous draw's.
pub const DRAWS: usize = 8;

/// P when none is given: 20 %, under the 25 % a held-out published cell is held to
/// (`podq sim --published`).
pub const DEFAULT_PERCENT: f64 = 20.0;

/// Items per producer of the draws at most: a range is the nominal result times the draws'
/// ratios to a nominal run of this size, so that ranges cost a fixed time per configuration.
pub const DRAW_ITEMS: u64 = 2_000;

/// Items per producer of a draw of `s`: at most [`DRAW_ITEMS`], and for `chain`, whose
/// producers run their chains one after the other, at most [`DRAW_ITEMS`] links.
fn draw_items(s: &Scenario) -> u64 {
    match s.workload {
        Workload::Chain { depth } => s.items.min((DRAW_ITEMS / depth.max(1)).max(1)),
        _ => s.items.min(DRAW_ITEMS),
    }
}

/// Items/sec of each scenario under each draw: `runs[d][s]`, draw 0 the nominal profile, all
/// at no more than [`DRAW_ITEMS`] per producer.
#[derive(Clone, Debug, PartialEq)]
pub struct Spread {
    /// Items/sec by draw, then by scenario.
    pub runs: Vec<Vec<f64>>,
}

impl Spread {
    /// The least and greatest of `nominal` (scenario `s`'s items/sec at full size) times each
    /// draw's ratio to draw 0.
    pub fn range_of(&self, s: usize, nominal: f64) -> (f64, f64) {
        let base = self.runs[0][s].max(f64::MIN_POSITIVE);
        self.runs
            .iter()
            .map(|r| nominal * r[s] / base)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            })
    }

    /// The least and greatest items/sec of scenario `s` over the draws, at the draws' size.
    pub fn range(&self, s: usize) -> (f64, f64) {
        self.range_of(s, self.runs[0][s])
    }

    /// Pairs of scenarios `(a, b)` whose order in some draw differs from the nominal one.
    pub fn flips(&self) -> Vec<(usize, usize)> {
        let nominal = &self.runs[0];
        let mut out = Vec::new();
        for a in 0..nominal.len() {
            for b in a + 1..nominal.len() {
                let ahead = nominal[a] > nominal[b];
                if self.runs[1..].iter().any(|r| (r[a] > r[b]) != ahead) {
                    out.push((a, b));
                }
            }
        }
        out
    }

    /// Whether scenario `best` is ahead of every other in every draw, but those equal to it in
    /// every draw (another scope with the same pods).
    pub fn always_first(&self, best: usize) -> bool {
        self.within(best, 1.0).is_empty()
    }

    /// The scenarios, but `best` and those equal to it in every draw, that `best` is not ahead
    /// of by more than `factor` in every draw: those the model cannot rank below it when its
    /// ratios may be off by `factor` ([`ORDER_ERROR`](crate::published::ORDER_ERROR)).
    pub fn within(&self, best: usize, factor: f64) -> Vec<usize> {
        self.others(best)
            .filter(|&o| self.runs.iter().any(|r| r[best] <= r[o] * factor))
            .collect()
    }

    /// The scenarios `best` is ahead of by more than `factor` in every draw: those the model
    /// ranks below it even when its ratios may be off by `factor`.
    pub fn beyond(&self, best: usize, factor: f64) -> Vec<usize> {
        self.others(best)
            .filter(|&o| self.runs.iter().all(|r| r[best] > r[o] * factor))
            .collect()
    }

    /// The scenarios but `best` and those equal to it in every draw.
    fn others(&self, best: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.runs[0].len())
            .filter(move |&o| o != best && self.runs.iter().any(|r| r[o] != r[best]))
    }
}

/// Where a draw may put `param` of `profile`'s costs: within ±`percent` % of its value and, for
/// a cost fitted on the published tables, across every value its fits gave
/// ([`Profile::fit_spread`]).
pub fn draw_bounds(profile: &Profile, param: Param, percent: f64) -> (f64, f64) {
    let value = profile.costs.get(param);
    let (low, high) = (
        value * (1.0 - percent / 100.0),
        value * (1.0 + percent / 100.0),
    );
    match profile.fit_spread.iter().find(|s| s.0 == param) {
        Some(&(_, least, most)) => (low.min(least), high.max(most)),
        None => (low, high),
    }
}

/// Runs `scenarios` (at most [`DRAW_ITEMS`] per producer) with `profile` on `machine`, and
/// with [`DRAWS`] profiles and machines whose every cost, platform and cache parameter is moved
/// by up to `percent` %, the moves drawn from `seed` (the caches' and the platform's from
/// generators of their own, so that the costs' draws are those of a run without them); draw
/// `d` runs with seed `seed + d`.
///
/// # Errors
///
/// What [`simulate`] reports.
pub fn spread(
    machine: &SimMachine,
    profile: &Profile,
    scenarios: &[Scenario],
    percent: f64,
    seed: u64,
) -> Result<Spread, SimError> {
    let mut rng = Rng::new(seed ^ 0x005e_ed0f_0dd5);
    let mut cache_rng = Rng::new(seed ^ 0x00ca_c4e5_0dd5);
    let mut platform_rng = Rng::new(seed ^ 0x0071_a7f0_0dd5);
    // The draws' profiles and machines, drawn in order so that one seed gives one spread.
    let mut draws = Vec::with_capacity(DRAWS + 1);
    for draw in 0..=DRAWS {
        let mut moved = profile.clone();
        let mut on = machine.clone();
        if draw > 0 {
            for param in Param::ALL {
                let (low, high) = draw_bounds(profile, param, percent);
                let at = (rng.symmetric() + 1.0) / 2.0;
                moved.costs.set(param, low + (high - low) * at);
            }
            let caches = machine
                .caches()
                .moved(|| 1.0 + percent / 100.0 * cache_rng.symmetric());
            let platform = machine
                .platform()
                .moved(|| 1.0 + percent / 100.0 * platform_rng.symmetric());
            on = on
                .with_caches(caches, machine.caches_source())
                .with_platform(platform);
        }
        draws.push((draw, moved, on));
    }
    // Scenarios that differ only by a scope with the same pods give the same result: each
    // runs once.
    let keys: Vec<Option<(Scenario, Vec<podq::CpuSet>)>> =
        scenarios.iter().map(|s| pods_key(machine, s)).collect();
    let first: Vec<usize> = (0..scenarios.len())
        .map(|i| {
            (0..i)
                .find(|&j| keys[j].is_some() && keys[j] == keys[i])
                .unwrap_or(i)
        })
        .collect();
    let run_draw = |(draw, moved, on): &(usize, Profile, SimMachine)| {
        let mut row: Vec<f64> = Vec::with_capacity(scenarios.len());
        for (i, s) in scenarios.iter().enumerate() {
            if first[i] < i {
                row.push(row[first[i]]);
                continue;
            }
            let scenario = Scenario {
                items: draw_items(s),
                seed: s.seed.wrapping_add(*draw as u64),
                ..*s
            };
            row.push(simulate(on, moved, &scenario)?.items_per_sec);
        }
        Ok(row)
    };
    // The draws are independent: one thread each, up to the CPUs there are.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut runs: Vec<Vec<f64>> = Vec::with_capacity(draws.len());
    for chunk in draws.chunks(threads.max(1)) {
        let rows: Vec<Result<Vec<f64>, SimError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|d| scope.spawn(move || run_draw(d)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a draw's simulation does not panic"))
                .collect()
        });
        for row in rows {
            runs.push(row?);
        }
    }
    Ok(Spread { runs })
}

/// What makes two scenarios one simulation: the scenario without its scope and shard size, and
/// the pods they form (`None` when they cannot be formed; the simulation reports why).
fn pods_key(machine: &SimMachine, s: &Scenario) -> Option<(Scenario, Vec<podq::CpuSet>)> {
    use crate::scenario::ShardRule;
    use podq::{AffinityScope, Pods};
    let pods = match (s.scope, s.shard_rule) {
        (AffinityScope::CacheShard, ShardRule::Cpus) => {
            Pods::cache_shards_by_cpu(machine.topology(), s.shard_size)
        }
        (scope, _) => Pods::new(machine.topology(), scope, s.shard_size),
    }
    .ok()?;
    let sets = pods.pods().iter().map(|p| p.cpus().clone()).collect();
    let bare = Scenario {
        scope: AffinityScope::System,
        shard_size: 0,
        ..*s
    };
    Some((bare, sets))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fitted_cost_is_drawn_across_all_its_fits() {
        let kernel = Profile::kernel();
        // Every fitted cost and every cost derived from one, and no other, has its fits'
        // span; the costs fitted on both tables lie within it.
        let mut fitted: Vec<Param> = crate::kernel_fit::FREE.iter().map(|f| f.0).collect();
        fitted.extend([Param::WakeIdle, Param::Switch]);
        let spread: Vec<Param> = kernel.fit_spread.iter().map(|s| s.0).collect();
        assert_eq!(spread, fitted);
        for &(param, least, most) in kernel.fit_spread.iter() {
            let value = kernel.costs.get(param);
            assert!(least <= value && value <= most, "{}", param.name());
        }
        // A switch whose fits span `least`-`most` of its value.
        let switch = kernel.costs.switch_ns;
        let spread = |least: f64, most: f64| Profile {
            fit_spread: std::borrow::Cow::Owned(vec![(
                Param::Switch,
                switch * least,
                switch * most,
            )]),
            ..Profile::kernel()
        };
        // Fits that reach below -20 % widen the bounds that far; the other side keeps +20 %.
        assert_eq!(
            draw_bounds(&spread(0.5, 1.0), Param::Switch, 20.0),
            (switch * 0.5, switch * 1.2)
        );
        // A cost no fit moves is moved by ±20 %.
        let cs = kernel.costs.get(Param::CriticalSection);
        assert_eq!(
            draw_bounds(&kernel, Param::CriticalSection, 20.0),
            (cs * 0.8, cs * 1.2)
        );
        let unspread = Profile {
            fit_spread: std::borrow::Cow::Borrowed(&[]),
            ..Profile::kernel()
        };
        assert_eq!(
            draw_bounds(&unspread, Param::Switch, 20.0),
            (switch * 0.8, switch * 1.2)
        );
        // A spread inside ±20 % leaves the ±20 % bounds.
        assert_eq!(
            draw_bounds(&spread(0.9, 1.0), Param::Switch, 20.0),
            (switch * 0.8, switch * 1.2)
        );
    }

    #[test]
    fn ranges_and_flips_come_from_the_draws() {
        let spread = Spread {
            runs: vec![
                vec![10.0, 5.0, 1.0],
                vec![8.0, 9.0, 1.5],
                vec![12.0, 4.0, 0.5],
            ],
        };
        assert_eq!(spread.range(0), (8.0, 12.0));
        assert_eq!(spread.range_of(0, 100.0), (80.0, 120.0));
        assert_eq!(spread.flips(), vec![(0, 1)]);
        assert!(!spread.always_first(0));
        let steady = Spread {
            runs: vec![vec![10.0, 5.0], vec![8.0, 7.0]],
        };
        assert!(steady.always_first(0));
        assert!(!steady.always_first(1));
        // Ahead in every draw, but by 1.14x in one: within an order error of 1.5, not of 1.1.
        assert_eq!(steady.within(0, 1.5), vec![1]);
        assert!(steady.beyond(0, 1.5).is_empty());
        assert!(steady.within(0, 1.1).is_empty());
        assert_eq!(steady.beyond(0, 1.1), vec![1]);
        // A scenario equal to the best in every draw is neither ahead nor behind it.
        let twins = Spread {
            runs: vec![vec![10.0, 10.0, 2.0], vec![9.0, 9.0, 1.0]],
        };
        assert!(twins.within(0, 1.74).is_empty());
        assert_eq!(twins.beyond(0, 1.74), vec![2]);
        assert_eq!(twins.within(0, 5.0), vec![2]);
        assert!(twins.beyond(0, 5.0).is_empty());
    }
}
