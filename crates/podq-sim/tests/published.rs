//! The `kernel` profile against the two published `test_workqueue` tables
//! (`podq_sim::published`), run at the fit's scale ([`FIT_ITEMS`] per producer) to stay fast;
//! `podq sim --published` gives the figures at the published 50,000.
//!
//! The bars are 15 % per calibration cell and 25 % per leave-one-machine-out cell, except for
//! the calibration cell the model is known to miss, held at its own wider bar so that the miss
//! cannot grow unseen (and `podq sim --published` prints every one).

use std::sync::OnceLock;

use podq::AffinityScope;
use podq_sim::kernel_fit::{FIT_ITEMS, FREE};
use podq_sim::published::{
    against_run, check, distinct_values, leave_one_out, order_error, order_flips, CellCheck,
    ORDER_ERROR, OTHER_RUNS, TABLES,
};
use podq_sim::Profile;

/// The bar per calibration cell.
const CALIBRATION_BAR: f64 = 0.15;

/// The bar per leave-one-machine-out cell.
const HELD_OUT_BAR: f64 = 0.25;

/// Calibration cells the model misses, with the bar each is held at.
const CALIBRATION_MISSES: [(&str, AffinityScope, f64); 1] =
    [("xeon-8321hc", AffinityScope::CacheShard, 0.20)];

/// The calibration at the fit's scale, simulated once for every test that reads it.
fn calibration() -> &'static [CellCheck] {
    static CELLS: OnceLock<Vec<CellCheck>> = OnceLock::new();
    CELLS.get_or_init(|| check(&Profile::kernel(), FIT_ITEMS, 1).unwrap())
}

/// The leave-one-machine-out check at the fit's scale, simulated once.
fn held_out() -> &'static [CellCheck] {
    static CELLS: OnceLock<Vec<CellCheck>> = OnceLock::new();
    CELLS.get_or_init(|| leave_one_out(FIT_ITEMS, 1).unwrap())
}

fn assert_within(cells: &[CellCheck], bar: f64, misses: &[(&str, AffinityScope, f64)]) {
    for cell in cells {
        let allowed = misses
            .iter()
            .find(|(m, s, _)| *m == cell.machine && *s == cell.scope)
            .map_or(bar, |&(_, _, wider)| wider);
        assert!(
            cell.error().abs() <= allowed,
            "{} {}: simulated {:.0}, published {:.0} ({:+.1}%, bar {:.0}%)",
            cell.machine,
            cell.scope,
            cell.simulated,
            cell.published,
            100.0 * cell.error(),
            100.0 * allowed
        );
    }
}

#[test]
fn every_calibration_cell_is_within_its_bar() {
    let cells = calibration();
    assert_eq!(cells.len(), 12);
    assert_within(cells, CALIBRATION_BAR, &CALIBRATION_MISSES);
}

#[test]
fn every_held_out_cell_is_within_its_bar() {
    let cells = held_out();
    assert_eq!(cells.len(), 12);
    assert_within(cells, HELD_OUT_BAR, &[]);
}

#[test]
fn the_xeon_keeps_its_published_order_in_both_checks() {
    for cells in [calibration(), held_out()] {
        let flips: Vec<_> = order_flips(cells, 0.10)
            .into_iter()
            .filter(|(lo, _)| lo.machine == "xeon-8321hc")
            .collect();
        assert!(flips.is_empty(), "orders lost: {flips:?}");
    }
}

#[test]
fn the_order_error_is_the_validations() {
    // At the fit's scale the larger misjudgment of the two checks is within 5 % under the
    // constant taken at the published 50,000: a model that misjudges more, or much less, than
    // the constant says fails until the constant follows.
    let (held, held_pair) = order_error(held_out());
    let (calibrated, calibrated_pair) = order_error(calibration());
    let (factor, pair) = if calibrated > held {
        (calibrated, calibrated_pair)
    } else {
        (held, held_pair)
    };
    assert!(
        factor <= ORDER_ERROR && factor > ORDER_ERROR / 1.05,
        "the model misjudges {pair:?} by {factor:.3}x; ORDER_ERROR is {ORDER_ERROR}"
    );
}

#[test]
fn the_other_published_runs_are_within_the_held_out_bar_and_keep_their_order() {
    // Never fitted: the calibrated costs and the costs fitted without the run's machine both
    // predict it within the held-out bar, cell by cell, and keep every order published more
    // than 10 % apart.
    for (run, source) in &OTHER_RUNS {
        assert!(against_run(&[], run).is_none(), "no simulation of {source}");
        for cells in [calibration(), held_out()] {
            let cells = against_run(cells, run).expect("the run's machine has a table");
            assert_eq!(cells.len(), run.cells.len(), "{source}");
            assert_within(&cells, HELD_OUT_BAR, &[]);
            assert!(order_flips(&cells, 0.10).is_empty(), "{source}: {cells:?}");
        }
    }
}

#[test]
fn the_check_is_deterministic() {
    let a = check(&Profile::kernel(), 300, 5).unwrap();
    let b = check(&Profile::kernel(), 300, 5).unwrap();
    assert_eq!(a, b);
}

#[test]
fn every_fit_has_at_most_half_as_many_parameters_as_values() {
    // The costs fitted on both tables and each leave-one-machine-out set.
    let both = distinct_values(&TABLES).unwrap();
    assert_eq!(both, 14);
    assert!(
        2 * FREE.len() <= both,
        "{} parameters, {both} values",
        FREE.len()
    );
    for table in &TABLES {
        let alone = distinct_values(std::slice::from_ref(table)).unwrap();
        assert!(
            2 * FREE.len() <= alone,
            "{}: {} parameters, {alone} values",
            table.machine,
            FREE.len()
        );
    }
}
