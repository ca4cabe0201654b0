//! `podq topo` and `podq sim` print the line an operator sets (`PODQ_SCOPE`,
//! `PODQ_SHARD_SIZE`) to give a service's workqueues the scope and shard size shown.

mod cli_support;

use cli_support::podq_ok;

#[test]
fn topo_prints_the_environment_of_the_scope_shown() {
    let all = podq_ok(&["topo", "--machine", "grace"]);
    assert!(
        all.lines()
            .any(|l| l == "environment    PODQ_SCOPE=cache_shard PODQ_SHARD_SIZE=8"),
        "{all}"
    );
    let one = podq_ok(&[
        "topo",
        "--machine",
        "grace",
        "--scope",
        "cpu",
        "--shard-size",
        "4",
    ]);
    assert!(
        one.lines()
            .any(|l| l == "environment    PODQ_SCOPE=cpu PODQ_SHARD_SIZE=4"),
        "{one}"
    );
}

#[test]
fn sim_prints_the_environment_of_its_fastest_configuration() {
    let text = podq_ok(&[
        "sim",
        "--machine",
        "grace",
        "--items",
        "200",
        "--uncertainty",
        "0",
    ]);
    let rates: Vec<(String, f64)> = text
        .lines()
        .filter(|l| l.contains(" items/sec"))
        .map(|l| {
            let mut fields = l.split_whitespace();
            let scope = fields.next().expect("scope").to_owned();
            let rate: f64 = fields.next().expect("rate").parse().expect("a number");
            (scope, rate)
        })
        .collect();
    let top = rates.iter().map(|r| r.1).fold(0.0, f64::max);
    let line = text
        .lines()
        .find(|l| l.starts_with("fastest"))
        .expect("a fastest line");
    assert!(
        rates.iter().any(|(scope, rate)| *rate == top
            && line.ends_with(&format!("(PODQ_SCOPE={scope} PODQ_SHARD_SIZE=8)"))),
        "{line} names no fastest scope of\n{text}"
    );
}
