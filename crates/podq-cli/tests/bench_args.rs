//! `podq bench` refuses bad input with one line naming the value and the valid choices, and
//! exit code 2, before measuring anything.

mod cli_support;

use cli_support::assert_one_line_error;

/// Runs `podq bench ARGS`, checks exit code 2, nothing on stdout and exactly one line on
/// stderr starting with `podq: `, and returns that line.
fn usage_error(args: &[&str]) -> String {
    let mut all = vec!["bench"];
    all.extend_from_slice(args);
    assert_one_line_error(&all, 2, &[])
}

#[test]
fn zero_and_too_many_threads_are_refused_with_the_valid_range() {
    let line = usage_error(&["--threads", "0"]);
    assert!(
        line.contains("--threads 0") && line.contains("give 1 to "),
        "{line}"
    );
    let line = usage_error(&["--threads", "100000"]);
    assert!(
        line.contains("--threads 100000") && line.contains("give 1 to "),
        "{line}"
    );
    let line = usage_error(&["--threads", "many"]);
    assert!(
        line.contains("'many'") && line.contains("whole number"),
        "{line}"
    );
}

#[test]
fn zero_items_and_runs_are_refused() {
    let line = usage_error(&["--items", "0"]);
    assert!(
        line.contains("--items 0") && line.contains("at least 1"),
        "{line}"
    );
    let line = usage_error(&["--runs", "0"]);
    assert!(
        line.contains("--runs 0") && line.contains("at least 1"),
        "{line}"
    );
}

#[test]
fn unknown_names_are_refused_with_the_valid_names() {
    let line = usage_error(&["--workload", "burst"]);
    assert!(
        line.contains("'burst'") && line.contains("queue, flood"),
        "{line}"
    );
    let line = usage_error(&["--scopes", "cpu,llc"]);
    assert!(
        line.contains("'llc'") && line.contains("cache_shard"),
        "{line}"
    );
    let line = usage_error(&["--scopes", "Cache"]);
    assert!(
        line.contains("'Cache'"),
        "scope names are case-sensitive: {line}"
    );
    let line = usage_error(&["--peers", "tokio,glommio"]);
    assert!(
        line.contains("'glommio'") && line.contains("tokio, rayon, channel, mpsc"),
        "{line}"
    );
}

#[test]
fn malformed_sweeps_and_plots_are_refused() {
    let line = usage_error(&["--sweep", "shard-size=2,four"]);
    assert!(
        line.contains("'four'") && line.contains("shard-size=N"),
        "{line}"
    );
    let line = usage_error(&["--sweep", "shard-size=0"]);
    assert!(line.contains("'0'"), "{line}");
    let line = usage_error(&["--sweep", "threads=1,2"]);
    assert!(
        line.contains("'threads'") && line.contains("shard-size"),
        "{line}"
    );
    let line = usage_error(&["--sweep", "shard-size"]);
    assert!(line.contains("'shard-size'"), "{line}");
    let line = usage_error(&["--plot", "out.png"]);
    assert!(line.contains("out.png") && line.contains(".svg"), "{line}");
}
