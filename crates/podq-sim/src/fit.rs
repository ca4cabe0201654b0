//! Fitting cost parameters to measured or published items/sec: a bounded Nelder-Mead search
//! over the logarithms of the parameters.

use crate::cost::{Costs, Param};

/// A parameter free to move between `low` and `high` (both above 0) during a fit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bound {
    /// The parameter.
    pub param: Param,
    /// Its least value.
    pub low: f64,
    /// Its greatest value.
    pub high: f64,
}

/// A point of the unit cube to the values it stands for: coordinate `u` in `[0, 1]` is
/// `low * (high / low)^u`.
pub fn to_values(bounds: &[(f64, f64)], unit: &[f64]) -> Vec<f64> {
    bounds
        .iter()
        .zip(unit)
        .map(|(&(low, high), &u)| low * (high / low).powf(u.clamp(0.0, 1.0)))
        .collect()
}

/// The unit-cube point of `values` (clamped into the bounds).
pub fn to_unit(bounds: &[(f64, f64)], values: &[f64]) -> Vec<f64> {
    bounds
        .iter()
        .zip(values)
        .map(|(&(low, high), &v)| ((v / low).ln() / (high / low).ln()).clamp(0.0, 1.0))
        .collect()
}

/// Minimises `objective` over the unit cube from `start` with Nelder-Mead (reflection 1,
/// expansion 2, contraction 1/2, shrink 1/2), an initial simplex of side `step`, for at most
/// `evaluations` calls. Returns the best point and its value.
pub fn nelder_mead(
    mut objective: impl FnMut(&[f64]) -> f64,
    start: &[f64],
    step: f64,
    evaluations: usize,
) -> (Vec<f64>, f64) {
    let n = start.len();
    let clamp = |x: Vec<f64>| -> Vec<f64> { x.into_iter().map(|v| v.clamp(0.0, 1.0)).collect() };
    let mut calls = 0;
    let mut eval = |x: &[f64], calls: &mut usize| {
        *calls += 1;
        objective(x)
    };
    let mut simplex: Vec<(Vec<f64>, f64)> = Vec::with_capacity(n + 1);
    let first = clamp(start.to_vec());
    let value = eval(&first, &mut calls);
    simplex.push((first, value));
    for i in 0..n {
        let mut x = start.to_vec();
        x[i] = if x[i] + step <= 1.0 {
            x[i] + step
        } else {
            x[i] - step
        };
        let x = clamp(x);
        let value = eval(&x, &mut calls);
        simplex.push((x, value));
    }
    while calls < evaluations {
        simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
        let worst = simplex[n].clone();
        let centroid: Vec<f64> = (0..n)
            .map(|j| simplex[..n].iter().map(|(x, _)| x[j]).sum::<f64>() / n as f64)
            .collect();
        let along = |t: f64| -> Vec<f64> {
            clamp(
                centroid
                    .iter()
                    .zip(&worst.0)
                    .map(|(c, w)| c + t * (c - w))
                    .collect(),
            )
        };
        let reflected = along(1.0);
        let fr = eval(&reflected, &mut calls);
        if fr < simplex[0].1 {
            let expanded = along(2.0);
            let fe = eval(&expanded, &mut calls);
            simplex[n] = if fe < fr {
                (expanded, fe)
            } else {
                (reflected, fr)
            };
        } else if fr < simplex[n - 1].1 {
            simplex[n] = (reflected, fr);
        } else {
            let contracted = along(if fr < worst.1 { 0.5 } else { -0.5 });
            let fc = eval(&contracted, &mut calls);
            if fc < worst.1.min(fr) {
                simplex[n] = (contracted, fc);
            } else {
                let best = simplex[0].0.clone();
                for vertex in simplex.iter_mut().skip(1) {
                    let x: Vec<f64> = best
                        .iter()
                        .zip(&vertex.0)
                        .map(|(b, v)| b + 0.5 * (v - b))
                        .collect();
                    let value = eval(&x, &mut calls);
                    *vertex = (x, value);
                }
            }
        }
    }
    simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
    simplex.swap_remove(0)
}

/// `start` with its `free` parameters at the unit-cube point `unit` of their `bounds`.
fn at_point(start: &Costs, free: &[Bound], bounds: &[(f64, f64)], unit: &[f64]) -> Costs {
    let mut costs = *start;
    for (b, v) in free.iter().zip(to_values(bounds, unit)) {
        costs.set(b.param, v);
    }
    costs
}

/// Fits the `free` parameters of `start` to minimise `objective(costs)`, for at most
/// `evaluations` calls; returns the best costs and their objective.
pub fn fit(
    start: &Costs,
    free: &[Bound],
    mut objective: impl FnMut(&Costs) -> f64,
    evaluations: usize,
) -> (Costs, f64) {
    let bounds: Vec<(f64, f64)> = free.iter().map(|b| (b.low, b.high)).collect();
    let with = |unit: &[f64]| at_point(start, free, &bounds, unit);
    let values: Vec<f64> = free.iter().map(|b| start.get(b.param)).collect();
    let (best, value) = nelder_mead(
        |unit| objective(&with(unit)),
        &to_unit(&bounds, &values),
        0.2,
        evaluations,
    );
    (with(&best), value)
}

/// Like [`fit`], for a rough objective with false minima (a simulation that switches between
/// regimes as its costs move): first `samples` points drawn uniformly (seeded, so the fit is
/// deterministic) from the bounds' logarithmic cube besides `start`, then Nelder-Mead from the
/// best of them, started again once from its own best point with a fresh simplex,
/// `evaluations` calls each.
pub fn fit_rough(
    start: &Costs,
    free: &[Bound],
    mut objective: impl FnMut(&Costs) -> f64,
    samples: usize,
    evaluations: usize,
) -> (Costs, f64) {
    let bounds: Vec<(f64, f64)> = free.iter().map(|b| (b.low, b.high)).collect();
    let with = |unit: &[f64]| at_point(start, free, &bounds, unit);
    let mut rng = crate::rng::Rng::new(1);
    let mut best = (*start, objective(start));
    for _ in 0..samples {
        let unit: Vec<f64> = free.iter().map(|_| 0.5 + 0.5 * rng.symmetric()).collect();
        let costs = with(&unit);
        let value = objective(&costs);
        if value < best.1 {
            best = (costs, value);
        }
    }
    for _ in 0..2 {
        let found = fit(&best.0, free, &mut objective, evaluations);
        if found.1 < best.1 {
            best = found;
        }
    }
    best
}

/// The sum over `(simulated, measured)` pairs of the squared logarithm of their ratio.
pub fn log_error(pairs: impl IntoIterator<Item = (f64, f64)>) -> f64 {
    pairs
        .into_iter()
        .map(|(s, m)| (s.max(1e-9) / m.max(1e-9)).ln().powi(2))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_minimum_of_a_bowl() {
        let (x, value) = nelder_mead(
            |x| (x[0] - 0.3).powi(2) + (x[1] - 0.7).powi(2),
            &[0.9, 0.1],
            0.2,
            400,
        );
        assert!(value < 1e-6, "{x:?} {value}");
        let bounds = [(10.0, 1000.0)];
        let unit = to_unit(&bounds, &[100.0]);
        assert!((unit[0] - 0.5).abs() < 1e-12);
        assert!((to_values(&bounds, &unit)[0] - 100.0).abs() < 1e-9);
    }
}
