//! `podq sim --against FLOOD --calibrate QUEUE` on three recorded invocations of the 2-CPU
//! AMD EPYC VM (`docs/machines/vm-2cpu/flood-from-queue`, each a `podq bench --runs 5 --json`
//! and a `podq bench --runs 5 --workload flood --json`): the `podq` profile fitted on one
//! invocation's queue run predicts that invocation's flood, and the median of the three errors
//! per scope stays within 25 % of the measured medians (`docs/simulator.md`, "Predict, measure,
//! compare"). The runs are files, so the check is deterministic; it fails when the model, the
//! fit or `--against` moves a scope's prediction that far.

mod cli_support;

use std::collections::BTreeMap;

use cli_support::podq_json;

/// The recorded invocations.
const RUNS: [u32; 3] = [1, 2, 3];

/// The bar on the median error per scope.
const BAR: f64 = 0.25;

#[test]
fn a_profile_fitted_on_the_vms_queue_runs_predicts_their_floods_within_a_quarter() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/machines/vm-2cpu/flood-from-queue"
    );
    // The three invocations at once: each is a fit of its own.
    let results: Vec<_> = std::thread::scope(|scope| {
        let fits: Vec<_> = RUNS
            .iter()
            .map(|run| {
                scope.spawn(move || {
                    let flood = format!("{dir}/flood-{run}.json");
                    let queue = format!("{dir}/queue-{run}.json");
                    podq_json(&[
                        "sim",
                        "--against",
                        &flood,
                        "--calibrate",
                        &queue,
                        "--uncertainty",
                        "0",
                        "--json",
                    ])
                })
            })
            .collect();
        fits.into_iter()
            .map(|fit| fit.join().expect("an invocation's thread"))
            .collect()
    });
    let mut errors: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for against in results {
        // The calibrated profile ranks scopes only when they are further apart than it
        // misjudged two of a measured machine's: the VM's floods stay within that.
        let factor = against["order_error"].as_f64().expect("the order error");
        let missed = against["order_missed"].as_f64().expect("the order missed");
        let pair = &against["order_missed_pair"];
        assert!(missed <= factor, "{pair}: {missed:.2}x against {factor}x");
        let cells = against["cells"].as_array().expect("cells");
        assert_eq!(cells.len(), 6, "one cell per scope: {against}");
        for cell in cells {
            assert_eq!(cell["workload"], "flood", "{cell}");
            let scope = cell["scope"].as_str().expect("a scope").to_owned();
            let error = cell["error"].as_f64().expect("an error");
            errors.entry(scope).or_default().push(error);
        }
    }
    for (scope, mut three) in errors {
        assert_eq!(three.len(), RUNS.len(), "{scope}: {three:?}");
        three.sort_by(f64::total_cmp);
        let median = three[1];
        assert!(
            median.abs() <= BAR,
            "{scope}: median error {:+.1} % over the three invocations ({three:?})",
            100.0 * median
        );
    }
}
