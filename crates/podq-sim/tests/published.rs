//! The `kernel` profile against the two published `test_workqueue` tables
//! (`podq_sim::published`): every cell within 15 % of its items/sec, and every pair of cells
//! published more than 10 % apart in the same order. Run with 2,000 items per producer to stay
//! fast; `podq sim --published` gives the figures at the published 50,000.

use podq_sim::published::{check, order_flips};
use podq_sim::Profile;

/// The bar per cell.
const MAX_ERROR: f64 = 0.15;

#[test]
fn every_published_cell_is_within_the_bar_and_keeps_its_order() {
    let cells = check(&Profile::kernel(), 2_000, 1).unwrap();
    assert_eq!(cells.len(), 12);
    for cell in &cells {
        assert!(
            cell.error().abs() <= MAX_ERROR,
            "{} {}: simulated {:.0}, published {:.0} ({:+.1}%)",
            cell.machine,
            cell.scope,
            cell.simulated,
            cell.published,
            100.0 * cell.error()
        );
    }
    let flips = order_flips(&cells, 0.10);
    assert!(flips.is_empty(), "orders lost: {flips:?}");
}

#[test]
fn the_check_is_deterministic() {
    let a = check(&Profile::kernel(), 300, 5).unwrap();
    let b = check(&Profile::kernel(), 300, 5).unwrap();
    assert_eq!(a, b);
}
