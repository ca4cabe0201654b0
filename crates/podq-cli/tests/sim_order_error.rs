//! The order errors by which `podq sim` ranks configurations, against the machines measured in
//! `docs/machines`: each is the most the model misjudged the ratio of two scopes there, rounded
//! up, so a recommendation holds on the machines that were measured. The `kernel` profile's
//! factor is checked on the published tables (`podq-sim`'s `tests/published.rs`); the
//! calibrated `podq` profile's on the 2-CPU VM by `sim_flood_from_queue.rs` and on the 16-CPU
//! Xeon here, ignored (three fits: 260 s in release on 2 CPUs).

mod cli_support;

use std::path::PathBuf;

use cli_support::against_json;

/// `docs/machines` of the checkout.
fn machines() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/machines"))
}

/// How far an `--against` report misjudged the ratio of two of its configurations, and which.
fn order_missed(report: &serde_json::Value) -> (f64, String) {
    let missed = report["order_missed"].as_f64().expect("the order missed");
    (missed, report["order_missed_pair"].to_string())
}

/// The recorded workloads `podq sim --against` predicts.
const PREDICTED: [&str; 11] = [
    "queue",
    "queue-1",
    "flood",
    "flood-1",
    "sweep",
    "skew",
    "fanout",
    "rpc",
    "chain",
    "yield",
    "spawn-local",
];

#[test]
fn the_uncalibrated_podq_profile_ranks_by_its_worst_miss_on_the_measured_machines() {
    let mut worst = (1.0, String::new());
    let mut factor = None;
    let mut files = 0;
    for machine in std::fs::read_dir(machines()).expect("docs/machines") {
        let bench = machine.expect("an entry").path().join("bench");
        for workload in PREDICTED {
            let file = bench.join(format!("{workload}.json"));
            if !file.exists() {
                continue;
            }
            files += 1;
            let report = against_json(file.to_str().expect("a UTF-8 path"), &[]);
            factor = report["order_error"].as_f64();
            let (missed, pair) = order_missed(&report);
            if missed > worst.0 {
                worst = (missed, format!("{pair} in {}", file.display()));
            }
        }
    }
    assert!(
        files >= 2 * PREDICTED.len(),
        "the measured machines' runs: {files}"
    );
    let factor = factor.expect("the report's order error");
    assert!(
        worst.0 <= factor && worst.0 * 1.05 >= factor,
        "the worst miss, {:.2}x ({}), is the factor {factor}x rounded up",
        worst.0,
        worst.1
    );
}

#[test]
#[ignore = "three fits, 250-275 s in release on 2 CPUs: cargo test --release -p podq-cli --test sim_order_error -- --ignored"]
fn the_calibrated_podq_profile_ranks_by_its_worst_miss_on_the_xeons_floods() {
    let dir = machines().join("xeon-16cpu/flood-from-queue");
    let reports: Vec<serde_json::Value> = std::thread::scope(|scope| {
        let fits: Vec<_> = [1, 2, 3]
            .iter()
            .map(|run| {
                let dir = &dir;
                scope.spawn(move || {
                    let flood = dir.join(format!("flood-{run}.json"));
                    let queue = dir.join(format!("queue-{run}.json"));
                    against_json(
                        flood.to_str().expect("a UTF-8 path"),
                        &["--calibrate", queue.to_str().expect("a UTF-8 path")],
                    )
                })
            })
            .collect();
        fits.into_iter().map(|f| f.join().expect("a fit")).collect()
    });
    let factor = reports[0]["order_error"].as_f64().expect("the order error");
    let worst = reports
        .iter()
        .map(order_missed)
        .fold((1.0, String::new()), |a, b| if b.0 > a.0 { b } else { a });
    assert!(
        worst.0 <= factor && worst.0 * 1.05 >= factor,
        "the worst miss, {:.2}x ({}), is the factor {factor}x rounded up",
        worst.0,
        worst.1
    );
}
