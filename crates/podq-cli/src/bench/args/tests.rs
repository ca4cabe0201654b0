//! The checks of `podq bench`'s command line.

use super::*;

fn args(extra: &[(&str, &str)]) -> BenchArgs {
    let mut args = BenchArgs {
        workload: "queue".into(),
        scopes: None,
        peers: None,
        threads: None,
        items: None,
        depth: None,
        yields: None,
        runs: "1".into(),
        work_ns: None,
        block_every: None,
        block_us: None,
        pull: "on".into(),
        steer: "on".into(),
        groups: None,
        set_kb: None,
        load: None,
        sweep: None,
        plot: None,
        json: false,
    };
    for (flag, value) in extra {
        let value = (*value).to_owned();
        match *flag {
            "workload" => args.workload = value,
            "scopes" => args.scopes = Some(value),
            "peers" => args.peers = Some(value),
            "threads" => args.threads = Some(value),
            "items" => args.items = Some(value),
            "depth" => args.depth = Some(value),
            "yields" => args.yields = Some(value),
            "runs" => args.runs = value,
            "work-ns" => args.work_ns = Some(value),
            "block-every" => args.block_every = Some(value),
            "block-us" => args.block_us = Some(value),
            "pull" => args.pull = value,
            "steer" => args.steer = value,
            "groups" => args.groups = Some(value),
            "set-kb" => args.set_kb = Some(value),
            "load" => args.load = Some(value),
            "sweep" => args.sweep = Some(value),
            "plot" => args.plot = Some(value.into()),
            other => panic!("no flag {other}"),
        }
    }
    args
}

fn usable() -> CpuSet {
    [0, 1, 4, 5].into_iter().collect()
}

fn usage(extra: &[(&str, &str)]) -> String {
    match Settings::from_args(&args(extra), &usable()) {
        Err(CliError::Usage(message)) => message,
        other => panic!("expected a usage error for {extra:?}, got {other:?}"),
    }
}

#[test]
fn defaults_measure_every_scope_in_kernel_order_then_every_peer() {
    let settings = Settings::from_args(&args(&[]), &usable()).expect("defaults are valid");
    let names: Vec<String> = settings
        .systems
        .iter()
        .map(|s| s.label(false, false))
        .collect();
    assert_eq!(
        names,
        [
            "cpu",
            "smt",
            "cache_shard",
            "cache",
            "numa",
            "system",
            "tokio",
            "rayon",
            "channel",
            "mpsc"
        ]
    );
    assert_eq!(settings.producer_cpus, vec![0, 1, 4, 5]);
    assert_eq!(settings.peer_workers, 4);
    assert_eq!(settings.items(Workload::Queue), DEFAULT_ITEMS);
    assert_eq!(settings.workloads, vec![Workload::Queue]);
    assert!(!settings.sweeping);
    assert_eq!(settings.pulls, [true]);
    assert!(!settings.show_pull());
    assert!(settings.systems.iter().all(|s| s.pull() != Some(false)));
}

#[test]
fn pull_on_off_measures_every_podq_configuration_with_each() {
    let settings = Settings::from_args(
        &args(&[
            ("scopes", "cpu,cache_shard"),
            ("peers", "rayon"),
            ("sweep", "shard-size=2,4"),
            ("pull", "off,on,off"),
        ]),
        &usable(),
    )
    .expect("valid");
    assert_eq!(settings.pulls, [false, true]);
    assert!(settings.show_pull());
    let names: Vec<String> = settings
        .systems
        .iter()
        .map(|s| s.label(settings.sweeping, settings.show_pull()))
        .collect();
    assert_eq!(
        names,
        [
            "cpu pull=off",
            "cpu pull=on",
            "cache_shard/2 pull=off",
            "cache_shard/2 pull=on",
            "cache_shard/4 pull=off",
            "cache_shard/4 pull=on",
            "rayon"
        ]
    );
}

#[test]
fn work_defaults_per_workload_and_an_explicit_value_overrides_all() {
    let settings = Settings::from_args(&args(&[("workload", "all")]), &usable()).expect("valid");
    let work: Vec<u64> = Workload::ALL
        .into_iter()
        .map(|w| settings.work_ns(w))
        .collect();
    assert_eq!(work, [0, 0, 10_000, 10_000, 0, 0, 0, 0, 0, 0, 0]);
    let settings =
        Settings::from_args(&args(&[("workload", "all"), ("work-ns", "500")]), &usable())
            .expect("valid");
    assert!(Workload::ALL
        .into_iter()
        .all(|w| settings.work_ns(w) == 500));
    assert_eq!(settings.producers(Workload::Skew), [0]);
    assert_eq!(settings.producers(Workload::Rpc), [0, 1, 4, 5]);
}

#[test]
fn threads_pin_to_the_lowest_usable_cpus() {
    let settings = Settings::from_args(&args(&[("threads", "2")]), &usable()).expect("valid");
    assert_eq!(settings.producer_cpus, vec![0, 1]);
    assert_eq!(
        settings.peer_workers, 4,
        "peers keep one worker per usable CPU"
    );
}

#[test]
fn the_locked_queue_reference_is_measured_only_when_asked_for() {
    let settings = Settings::from_args(
        &args(&[("scopes", "cache_shard"), ("peers", "mutex,channel")]),
        &usable(),
    )
    .expect("valid");
    let names: Vec<String> = settings
        .systems
        .iter()
        .map(|s| s.label(false, false))
        .collect();
    assert_eq!(names, ["cache_shard", "mutex", "channel"]);
}

#[test]
fn sweep_expands_cache_shard_in_place() {
    let settings = Settings::from_args(
        &args(&[
            ("scopes", "cpu,cache_shard,system"),
            ("peers", "none"),
            ("sweep", "shard-size=2,4"),
        ]),
        &usable(),
    )
    .expect("valid");
    let names: Vec<String> = settings
        .systems
        .iter()
        .map(|s| s.label(settings.sweeping, settings.show_pull()))
        .collect();
    assert_eq!(names, ["cpu", "cache_shard/2", "cache_shard/4", "system"]);
}

#[test]
fn the_blocking_mix_takes_its_flags_only_with_the_blocking_workload() {
    let settings =
        Settings::from_args(&args(&[("workload", "blocking")]), &usable()).expect("valid");
    assert_eq!(settings.mix, Mix::default());
    let settings = Settings::from_args(
        &args(&[
            ("workload", "all"),
            ("block-every", "2"),
            ("block-us", "100_000"),
        ]),
        &usable(),
    )
    .expect("valid");
    assert_eq!(settings.mix.every, 2);
    assert_eq!(settings.mix.block, Duration::from_millis(100));
    for (flag, value) in [("block-every", "5"), ("block-us", "50")] {
        let message = usage(&[("workload", "flood"), (flag, value)]);
        assert!(
            message.starts_with(&format!("--{flag} {value}:"))
                && message.contains("--workload flood")
                && message.contains("blocking or all"),
            "{message}"
        );
    }
}

#[test]
fn help_gives_the_blocking_flags_bounds_and_defaults() {
    use clap::Args as _;

    use crate::bench::blocking::{DEFAULT_BLOCK_EVERY, DEFAULT_BLOCK_US};

    let help = BenchArgs::augment_args(clap::Command::new("bench"))
        .term_width(1000)
        .render_help()
        .to_string();
    for (flag, min, max, default) in [
        ("--block-every", 2, MAX_BLOCK_EVERY, DEFAULT_BLOCK_EVERY),
        ("--block-us", 1, MAX_BLOCK_US, DEFAULT_BLOCK_US),
    ] {
        let line = help
            .lines()
            .find(|line| line.trim_start().starts_with(flag))
            .unwrap_or_else(|| panic!("{flag} missing from:\n{help}"));
        assert!(
            line.contains(&format!("({min} to {max})"))
                && line.ends_with(&format!("[default: {default}]")),
            "{line}"
        );
    }
}

#[test]
fn bad_values_name_the_value_and_the_choices() {
    let message = usage(&[("threads", "0")]);
    assert!(
        message.starts_with("--threads 0") && message.contains("1 to 4"),
        "{message}"
    );
    let message = usage(&[("threads", "5")]);
    assert!(
        message.contains("--threads 5") && message.contains("1 to 4"),
        "{message}"
    );
    assert!(usage(&[("threads", "two")]).contains("'two'"));
    assert!(usage(&[("items", "0")]).starts_with("--items 0"));
    assert!(usage(&[("runs", "0")]).starts_with("--runs 0"));
    let message = usage(&[("workload", "burst")]);
    assert!(
        message.contains("'burst'") && message.contains("queue, flood, skew, fanout, rpc"),
        "{message}"
    );
    for bad in ["yes", "on,maybe", "", " , ", "On"] {
        let message = usage(&[("pull", bad)]);
        assert!(
            message.starts_with(&format!("--pull '{bad}'"))
                && message.contains("expected on, off, or on,off"),
            "{message}"
        );
    }
    let message = usage(&[("scopes", "cpu,Cache")]);
    assert!(
        message.contains("'Cache'") && message.contains("cache_shard"),
        "{message}"
    );
    let message = usage(&[("peers", "tokio,glommio")]);
    assert!(
        message.contains("'glommio'") && message.contains("rayon"),
        "{message}"
    );
    assert!(usage(&[("sweep", "shard-size=4"), ("scopes", "cpu")]).contains("cache_shard"));
    assert!(usage(&[("plot", "out.png")]).contains("out.png"));
    assert!(usage(&[("scopes", ""), ("peers", "none")]).contains("nothing to measure"));
    let blocking = |flag: &str, value: &str| usage(&[("workload", "blocking"), (flag, value)]);
    for bad in ["0", "1", "1000001"] {
        let message = blocking("block-every", bad);
        assert!(
            message.starts_with(&format!("--block-every {bad}:"))
                && message.contains("give 2 to 1000000"),
            "{message}"
        );
    }
    for bad in ["0", "100001"] {
        let message = blocking("block-us", bad);
        assert!(
            message.starts_with(&format!("--block-us {bad}:"))
                && message.contains("give 1 to 100000"),
            "{message}"
        );
    }
    let message = blocking("block-us", "1ms");
    assert!(
        message.contains("'1ms'") && message.contains("whole number"),
        "{message}"
    );
    for message in [
        blocking("block-every", "-1"),
        blocking("block-us", "99999999999999999999999"),
        usage(&[("threads", "0")]),
        usage(&[("sweep", "size=1")]),
        usage(&[("pull", "sometimes")]),
    ] {
        assert!(!message.contains('\n'), "one line: {message}");
    }
}

#[test]
fn steer_on_off_measures_every_podq_configuration_once_per_value() {
    let usable: CpuSet = [0, 1].into_iter().collect();
    let settings = Settings::from_args(
        &args(&[
            ("workload", "locality"),
            ("scopes", "cpu,cache"),
            ("peers", "channel"),
            ("steer", "on,off"),
        ]),
        &usable,
    )
    .expect("valid");
    let labels: Vec<String> = settings
        .systems
        .iter()
        .map(|&s| settings.label(s))
        .collect();
    assert_eq!(
        labels,
        [
            "cpu steer=on",
            "cpu steer=off",
            "cache steer=on",
            "cache steer=off",
            "channel"
        ]
    );
    assert!(settings.show_steer());
    let default = Settings::from_args(&args(&[]), &usable).expect("valid");
    assert_eq!(default.steers, [true]);
    assert!(!default.show_steer());
    assert_eq!(default.label(default.systems[0]), "cpu");
}

#[test]
fn locality_options_are_checked_and_only_for_locality() {
    let usable: CpuSet = [0, 1].into_iter().collect();
    let usage = |extra: &[(&str, &str)]| match Settings::from_args(&args(extra), &usable) {
        Err(CliError::Usage(message)) => message,
        other => panic!("expected a usage error, got {other:?}"),
    };
    let plan = Settings::from_args(
        &args(&[
            ("workload", "locality"),
            ("groups", "1"),
            ("set-kb", "64"),
            ("load", "100"),
        ]),
        &usable,
    )
    .expect("valid")
    .locality;
    assert_eq!((plan.groups, plan.set_kb, plan.load), (Some(1), 64, 100));
    let locality = ("workload", "locality");
    assert!(usage(&[locality, ("load", "0")]).contains("--load 0: give 1 to 100"));
    assert!(usage(&[locality, ("load", "101")]).contains("--load 101"));
    assert!(usage(&[locality, ("groups", "0")]).contains("--groups 0: give 1 to"));
    assert!(usage(&[locality, ("set-kb", "lots")]).contains("--set-kb 'lots'"));
    assert!(usage(&[("groups", "4")]).contains("only the locality workload uses it"));
    assert!(usage(&[("steer", "maybe")]).contains("--steer 'maybe': unknown value 'maybe'"));
    assert!(usage(&[("steer", "")]).contains("expected on, off, or on,off"));
}

#[test]
fn items_default_per_workload_and_depth_and_yields_only_with_their_workload() {
    let all = Settings::from_args(&args(&[("workload", "all")]), &usable()).expect("all");
    let counts: Vec<u64> = [
        Workload::Queue,
        Workload::Chain,
        Workload::Yield,
        Workload::SpawnLocal,
    ]
    .into_iter()
    .map(|w| all.items(w))
    .collect();
    assert_eq!(counts, [DEFAULT_ITEMS, 100, 200, 10_000]);
    assert_eq!((all.depth, all.yields), (1_000, 1_000));
    let given = Settings::from_args(
        &args(&[("workload", "chain"), ("items", "7"), ("depth", "9")]),
        &usable(),
    )
    .expect("chain");
    assert_eq!((given.items(Workload::Chain), given.depth), (7, 9));
    let message = usage(&[("depth", "5")]);
    assert!(
        message.contains("--depth 5") && message.contains("chain"),
        "{message}"
    );
    let message = usage(&[("workload", "yield"), ("yields", "0")]);
    assert!(message.contains("--yields 0"), "{message}");
}
