//! `podq sim --workload locality`: rows per scope and steering setting with the bench's
//! locality fields, one result per seed, the kernel lines, and its options refused with one
//! line and exit code 2 where they do not apply or are out of bounds.

mod cli_support;

use cli_support::{assert_one_line_error, podq_json, podq_ok};

/// A machine of two cache domains, a few items: seconds in a debug build.
const ARGS: [&str; 12] = [
    "sim",
    "--machine",
    "caches=2,cores=8",
    "--profile",
    "podq",
    "--workload",
    "locality",
    "--items",
    "300",
    "--scopes",
    "cpu,cache",
    "--json",
];

#[test]
fn steer_on_off_crosses_every_scope_and_rows_carry_the_locality_fields() {
    let mut args = ARGS.to_vec();
    args.extend(["--steer", "on,off", "--set-kb", "128", "--load", "30"]);
    let report = podq_json(&args);
    assert_eq!(report["settings"]["steer"], "on,off");
    let rows = report["results"].as_array().expect("results");
    let keys: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["scope"].as_str().unwrap(), r["steer"].as_str().unwrap()))
        .collect();
    assert_eq!(
        keys,
        [
            ("cpu", "on"),
            ("cpu", "off"),
            ("cache", "on"),
            ("cache", "off")
        ]
    );
    for row in rows {
        assert_eq!(row["workload"], "locality");
        assert_eq!(row["set_kb"], 128);
        assert_eq!(row["load"], 30);
        let groups = if row["scope"] == "cpu" { 32 } else { 8 };
        assert_eq!(row["groups"], groups, "four per pod: {row}");
        for key in [
            "run_p50_ns",
            "run_p99_ns",
            "start_p99_ns",
            "item_ns",
            "walk_ns",
        ] {
            assert!(row[key].as_u64().unwrap() > 0, "{key}: {row}");
        }
        // The pace: an unsteered item, which often finds its set in the other domain.
        assert!(row["item_ns"].as_u64() > row["walk_ns"].as_u64(), "{row}");
        let walks: u64 = ["private", "peer", "llc", "other_cache", "memory"]
            .iter()
            .map(|k| row["walks_from"][k].as_u64().unwrap())
            .sum();
        assert_eq!(walks, 8 * 300, "one walk per item: {row}");
        assert!(row["outside_pod"].as_u64().unwrap() <= 8 * 300, "{row}");
        let busy = row["cpu_busy"].as_f64().unwrap();
        assert!(busy > 0.0 && busy < 1.0, "{row}");
        let started =
            row["grouped_at_home"].as_u64().unwrap() + row["grouped_elsewhere"].as_u64().unwrap();
        let expected = if row["steer"] == "on" { 8 * 300 } else { 0 };
        assert_eq!(started, expected, "{row}");
    }
    // Two cache domains: steered items find their sets hot, plain ones often in the other
    // domain, so the steered machine is the less busy.
    let run_p50 = |i: usize| rows[i]["run_p50_ns"].as_u64().unwrap();
    let busy = |i: usize| rows[i]["cpu_busy"].as_f64().unwrap();
    for (on, off) in [(0, 1), (2, 3)] {
        assert!(
            run_p50(on) < run_p50(off) && busy(on) < busy(off),
            "steered {} ns {} busy, plain {} ns {} busy",
            run_p50(on),
            busy(on),
            run_p50(off),
            busy(off)
        );
    }
}

#[test]
fn one_seed_gives_one_result() {
    let text = |seed: &str| {
        let mut args = ARGS[..ARGS.len() - 1].to_vec();
        args.extend(["--seed", seed]);
        podq_ok(&args)
    };
    let first = text("3");
    assert_eq!(first, text("3"));
    assert_ne!(first, text("4"));
    assert!(first.contains("run_p50="), "{first}");
    assert!(
        first.contains("at_home="),
        "steering on by default for podq: {first}"
    );
}

#[test]
fn locality_options_are_refused_where_they_do_not_apply_or_out_of_bounds() {
    let cases: [(&[&str], &[&str]); 6] = [
        (&["--steer", "on"], &["--steer", "locality workload only"]),
        (&["--groups", "4"], &["--groups", "locality workload only"]),
        (
            &["--workload", "locality", "--load", "0"],
            &["--load 0", "1 to 100"],
        ),
        (
            &["--workload", "locality", "--groups", "0"],
            &["--groups 0", "1 to 65536"],
        ),
        (
            &["--workload", "locality", "--set-kb", "many"],
            &["--set-kb 'many'", "whole number"],
        ),
        (
            &["--workload", "locality", "--steer", "maybe"],
            &["'maybe'", "on, off, or on,off"],
        ),
    ];
    for (args, mentions) in cases {
        let mut all = vec!["sim", "--machine", "cores=4"];
        all.extend_from_slice(args);
        assert_one_line_error(&all, 2, mentions);
    }
}
