//! `--uncertainty P`: how far each result moves when every cost parameter and every cache
//! parameter (the `locality` workload's) may be off by up to P %, and which orders of
//! configurations that can flip.

use crate::cost::Param;
use crate::engine::simulate;
use crate::machine::SimMachine;
use crate::profile::Profile;
use crate::rng::Rng;
use crate::scenario::Scenario;
use crate::SimError;

/// Draws of moved parameters per `--uncertainty` run, besides the nominal one: each moves
/// every parameter of [`Param::ALL`] and every one [`Caches::moved`](crate::Caches::moved)
/// moves by its own factor, uniform in `[1 - P, 1 + P]`.
pub const DRAWS: usize = 8;

/// Items/sec of each scenario under each draw: `runs[d][s]`, draw 0 the nominal profile.
#[derive(Clone, Debug, PartialEq)]
pub struct Spread {
    /// Items/sec by draw, then by scenario.
    pub runs: Vec<Vec<f64>>,
}

impl Spread {
    /// The least and greatest items/sec of scenario `s` over the draws.
    pub fn range(&self, s: usize) -> (f64, f64) {
        self.runs
            .iter()
            .map(|r| r[s])
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            })
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
}

/// Runs `scenarios` with `profile` on `machine`, and with [`DRAWS`] profiles and machines whose
/// every cost and cache parameter is moved by up to `percent` %, the moves drawn from `seed`
/// (the caches' from a generator of their own, so that the costs' draws are those of a run
/// without caches).
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
    let mut runs = Vec::with_capacity(DRAWS + 1);
    for draw in 0..=DRAWS {
        let mut moved = profile.clone();
        let mut on = machine.clone();
        if draw > 0 {
            for param in Param::ALL {
                let factor = 1.0 + percent / 100.0 * rng.symmetric();
                moved.costs.set(param, profile.costs.get(param) * factor);
            }
            let caches = machine
                .caches()
                .moved(|| 1.0 + percent / 100.0 * cache_rng.symmetric());
            on = on.with_caches(caches, machine.caches_source());
        }
        let row = scenarios
            .iter()
            .map(|s| simulate(&on, &moved, s).map(|o| o.items_per_sec))
            .collect::<Result<Vec<f64>, SimError>>()?;
        runs.push(row);
    }
    Ok(Spread { runs })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(spread.flips(), vec![(0, 1)]);
    }
}
