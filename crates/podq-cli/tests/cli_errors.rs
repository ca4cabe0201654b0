//! Every way the command line can be wrong: one line on stderr naming the bad input and the
//! valid choices, exit code 2 for bad usage and 1 for unusable data, never a panic.

mod cli_support;

use std::fs;
use std::io::Read as _;

use cli_support::{
    assert_one_line, assert_one_line_error, podq, podq_command, podq_ok, podq_piped,
    wait_with_stderr,
};

#[test]
fn help_and_version_print_normally_and_succeed() {
    let help = podq_ok(&["--help"]);
    assert!(help.contains("Usage: podq"), "{help}");
    assert!(help.contains("topo") && help.contains("bench"), "{help}");

    let version = podq_ok(&["--version"]);
    assert_eq!(
        version.trim(),
        format!("podq {}", env!("CARGO_PKG_VERSION"))
    );

    for args in [&["topo", "--help"][..], &["help", "topo"], &["topo", "-h"]] {
        let help = podq_ok(args);
        assert!(help.contains("Usage: podq topo"), "{args:?}: {help}");
    }
}

#[test]
fn topo_help_says_what_each_flag_takes_and_its_default() {
    let help = podq_ok(&["topo", "--help"]);
    for flag in [
        "--sysfs <DIR>",
        "--machine <PRESET-OR-DESCRIPTION>",
        "--shard-size <CORES>",
    ] {
        assert!(help.contains(flag), "{flag} missing from:\n{help}");
    }
    assert!(
        help.contains("--scope <SCOPE>") && help.contains("--json"),
        "{help}"
    );
    assert!(help.contains("[default: 8]"), "{help}");
    // The presets named in the help are exactly the library's.
    for preset in podq::topology::PRESETS {
        assert!(
            help.contains(preset),
            "preset {preset} missing from:\n{help}"
        );
    }
    for scope in podq::AffinityScope::ALL {
        assert!(
            help.contains(scope.name()),
            "scope {scope} missing from:\n{help}"
        );
    }
}

#[test]
fn no_command_or_an_unknown_one_names_the_commands() {
    assert_one_line_error(&[], 2, &["no command", "topo", "bench"]);
    assert_one_line_error(&["tpo"], 2, &["'tpo'", "topo", "bench"]);
    assert_one_line_error(&["help", "frob"], 2, &["'frob'", "topo"]);
}

#[test]
fn unknown_flags_name_the_flag_and_the_valid_options() {
    let line = assert_one_line_error(&["topo", "--jsn"], 2, &["'--jsn'", "--json", "--sysfs"]);
    assert!(
        line.contains("--shard-size") && line.contains("--machine"),
        "{line}"
    );
    assert_one_line_error(&["topo", "extra"], 2, &["'extra'", "--json"]);
    assert_one_line_error(&["--frobnicate"], 2, &["'--frobnicate'", "--help"]);
    assert_one_line_error(&["topo", "--json", "--json"], 2, &["--json"]);
    assert_one_line_error(&["topo", "--scope"], 2, &["--scope"]);
}

#[test]
fn unknown_scope_names_the_scope_and_the_valid_ones() {
    for bad in ["cach", "Cache", "cache_shar", "cache-shard", "all", ""] {
        let line = assert_one_line_error(
            &["topo", "--machine", "grace", "--scope", bad],
            2,
            &[
                &format!("'{bad}'"),
                "cpu, smt, cache, cache_shard, numa, system",
            ],
        );
        assert!(line.contains("unknown scope"), "{line}");
    }
}

#[test]
fn unknown_preset_and_malformed_descriptions_are_usage_errors() {
    assert_one_line_error(
        &["topo", "--machine", "graze"],
        2,
        &["'graze'", "grace", "epyc-9d64", "skylake-18c"],
    );
    for bad in [
        "cores=0",
        "sockets=2,cores=3",
        "cores=x",
        "smt=2,,",
        "=",
        "cores=8,bogus=1",
    ] {
        assert_one_line_error(&["topo", "--machine", bad], 2, &[bad]);
    }
}

#[test]
fn bad_shard_sizes_name_the_value_and_what_is_expected() {
    for bad in ["0", "x", "-3", "1.5", "", "99999999999999999999999"] {
        assert_one_line_error(
            &["topo", "--machine", "grace", "--shard-size", bad],
            2,
            &[&format!("'{bad}'"), "--shard-size", "at least 1"],
        );
    }
}

#[test]
fn bad_pull_values_name_the_input_and_the_choices() {
    for bad in ["yes", "on,maybe", "", "ON", "on;off"] {
        let line = assert_one_line_error(
            &["bench", "--items", "1", "--pull", bad],
            2,
            &[&format!("--pull '{bad}'"), "expected on, off, or on,off"],
        );
        assert!(!line.contains("panicked"), "{line}");
    }
    assert_one_line_error(&["bench", "--pull"], 2, &["--pull"]);
}

#[test]
fn unknown_workloads_name_every_workload() {
    assert_one_line_error(
        &["bench", "--workload", "hackbench"],
        2,
        &[
            "'hackbench'",
            "queue, flood, skew, fanout, rpc, blocking, locality, chain, yield, spawn-local, checksum, all",
        ],
    );
}

#[test]
fn depth_and_yields_name_the_input_and_their_workload() {
    assert_one_line_error(&["bench", "--depth", "5"], 2, &["--depth 5", "chain"]);
    assert_one_line_error(
        &["bench", "--workload", "yield", "--yields", "many"],
        2,
        &["--yields 'many'", "whole number"],
    );
}

#[test]
fn bad_blocking_mixes_name_the_input_and_the_valid_range() {
    let cases: [(&str, &[&str], &str); 2] = [
        (
            "--block-every",
            &[
                "0",
                "1",
                "1000001",
                "ten",
                "-2",
                "2.5",
                "",
                "99999999999999999999999",
            ],
            "give 2 to 1000000",
        ),
        (
            "--block-us",
            &["0", "100001", "1ms", "-1", "", "99999999999999999999999"],
            "give 1 to 100000",
        ),
    ];
    for (flag, values, range) in cases {
        for bad in values {
            let line = assert_one_line_error(
                &["bench", "--workload", "blocking", "--items", "1", flag, bad],
                2,
                &[flag, range],
            );
            assert!(
                line.contains(&format!("{flag} '{bad}'"))
                    || line.contains(&format!("{flag} {bad}:")),
                "the line names the input: {line}"
            );
        }
        assert_one_line_error(&["bench", "--workload", "blocking", flag], 2, &[flag]);
    }
}

#[test]
fn bad_locality_values_name_the_input_and_the_valid_range() {
    let cases: [(&str, &[&str], &str); 3] = [
        (
            "--groups",
            &["0", "65537", "four", "-1", ""],
            "give 1 to 65536",
        ),
        (
            "--set-kb",
            &["0", "65537", "256k", "-8", ""],
            "give 1 to 65536",
        ),
        (
            "--load",
            &["0", "101", "40%", "-40", "0.5"],
            "give 1 to 100",
        ),
    ];
    for (flag, values, range) in cases {
        for bad in values {
            let line = assert_one_line_error(
                &["bench", "--workload", "locality", "--items", "1", flag, bad],
                2,
                &[flag, range],
            );
            assert!(
                line.contains(&format!("{flag} '{bad}'"))
                    || line.contains(&format!("{flag} {bad}:")),
                "the line names the input: {line}"
            );
        }
    }
    for bad in ["yes", "on,maybe", "", "OFF"] {
        assert_one_line_error(
            &["bench", "--items", "1", "--steer", bad],
            2,
            &[&format!("--steer '{bad}'"), "expected on, off, or on,off"],
        );
    }
}

#[test]
fn locality_flags_are_refused_without_the_locality_workload() {
    for (flag, value) in [("--groups", "2"), ("--set-kb", "64"), ("--load", "50")] {
        assert_one_line_error(
            &["bench", "--workload", "flood", "--items", "1", flag, value],
            2,
            &[
                &format!("{flag} {value}:"),
                "--workload flood",
                "--workload locality or all",
            ],
        );
    }
}

#[test]
fn blocking_flags_are_refused_without_the_blocking_workload() {
    for (flag, value) in [("--block-every", "5"), ("--block-us", "200")] {
        for workload in ["queue", "flood", "rpc"] {
            assert_one_line_error(
                &["bench", "--workload", workload, "--items", "1", flag, value],
                2,
                &[
                    &format!("{flag} {value}:"),
                    &format!("--workload {workload}"),
                    "--workload blocking or all",
                ],
            );
        }
    }
    // Left out, --workload defaults to queue, which does not block.
    assert_one_line_error(
        &["bench", "--items", "1", "--block-us", "200"],
        2,
        &["--block-us 200:", "--workload queue"],
    );
}

#[test]
fn sysfs_and_machine_cannot_be_combined() {
    assert_one_line_error(
        &["topo", "--sysfs", "/", "--machine", "grace"],
        2,
        &["--sysfs", "--machine"],
    );
}

#[test]
fn the_published_tables_and_a_machine_cannot_be_combined() {
    for machine in [&["--machine", "grace"][..], &["--sysfs", "/"]] {
        let args = [&["sim", "--published"][..], machine].concat();
        assert_one_line_error(&args, 2, &["--published", machine[0]]);
    }
}

#[test]
fn missing_sysfs_folder_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-folder");
    let missing = missing.to_str().unwrap();
    for command in ["topo", "sim"] {
        assert_one_line_error(
            &[command, "--sysfs", missing],
            2,
            &[missing, "does not exist"],
        );
    }

    let file = dir.path().join("a-file");
    fs::write(&file, "not a folder").unwrap();
    let file = file.to_str().unwrap();
    assert_one_line_error(&["topo", "--sysfs", file], 2, &[file, "not a folder"]);
}

#[test]
fn bench_files_that_do_not_exist_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-file.json");
    let missing = missing.to_str().unwrap();
    for flag in ["--against", "--calibrate"] {
        assert_one_line_error(
            &["sim", flag, missing],
            2,
            &[flag, missing, "no such file", "podq bench --json"],
        );
    }
    // There, but not a bench report: unusable data.
    let text = dir.path().join("notes.txt");
    fs::write(&text, "not JSON").unwrap();
    let text = text.to_str().unwrap();
    assert_one_line_error(
        &["sim", "--against", text],
        1,
        &["--against", text, "not JSON", "podq bench --json"],
    );
}

#[test]
fn a_folder_without_a_cpu_tree_is_unusable_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_str().unwrap();
    assert_one_line_error(
        &["topo", "--sysfs", path],
        1,
        &[path, "sys/devices/system/cpu"],
    );
}

#[test]
fn a_tree_without_usable_cpus_is_unusable_data() {
    let dir = tempfile::tempdir().unwrap();
    let cpu = dir.path().join("sys/devices/system/cpu");
    // CPU 0 is online but has no topology folder; CPU 1 is offline.
    fs::create_dir_all(cpu.join("cpu0")).unwrap();
    fs::create_dir_all(cpu.join("cpu1/topology")).unwrap();
    fs::write(cpu.join("cpu1/online"), "0\n").unwrap();
    fs::write(cpu.join("online"), "0\n").unwrap();
    let path = dir.path().to_str().unwrap();
    assert_one_line_error(&["topo", "--sysfs", path], 1, &[path]);
}

#[test]
fn garbage_files_are_unusable_data() {
    let dir = tempfile::tempdir().unwrap();
    let cpu = dir.path().join("sys/devices/system/cpu");
    fs::create_dir_all(cpu.join("cpu0/topology")).unwrap();
    fs::write(cpu.join("online"), "zero to three\n").unwrap();
    let path = dir.path().to_str().unwrap();
    assert_one_line_error(&["topo", "--sysfs", path], 1, &["online"]);
}

#[test]
fn a_panic_prints_one_line_and_exits_101() {
    if !cfg!(debug_assertions) {
        eprintln!("skipped: PODQ_DEBUG_PANIC exists in debug builds only");
        return;
    }
    let output = podq_command()
        .args(["topo", "--machine", "grace"])
        .env("PODQ_DEBUG_PANIC", "1")
        .output()
        .unwrap();
    let run = cli_support::Run::from(output);
    assert_eq!(run.code, Some(101), "{run:?}");
    assert_one_line(&run, &["PODQ_DEBUG_PANIC"]);
    assert!(
        run.stderr
            .starts_with("podq: internal error: deliberate panic"),
        "{run:?}"
    );
    assert!(run.stderr.contains("second line of the message"), "{run:?}");
    assert!(run.stdout.is_empty(), "{run:?}");
}

/// A machine of 2048 CPUs, whose reports are far larger than a pipe's buffer.
const BIG_MACHINE: &str = "sockets=2,nodes=8,caches=64,cores=1024,smt=2";

#[test]
fn a_closed_stdout_is_not_an_error() {
    // The JSON report is far larger than a pipe's buffer, so writing it must hit the closed
    // pipe rather than fit in the buffer unread.
    let mut child = podq_piped(&["topo", "--machine", BIG_MACHINE, "--json"]);
    drop(child.stdout.take());
    let (status, stderr) = wait_with_stderr(child);
    assert_eq!(status.code(), Some(0), "stderr: {stderr:?}");
    assert!(stderr.is_empty(), "{stderr:?}");
}

#[test]
fn reading_only_the_first_line_is_not_an_error() {
    // As `podq topo | head -1`: read one line, then close the pipe.
    let mut child = podq_piped(&["topo", "--machine", BIG_MACHINE]);
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    let n = stdout.read(&mut first).unwrap();
    assert!(String::from_utf8_lossy(&first[..n]).starts_with("source"));
    drop(stdout);
    let (status, stderr) = wait_with_stderr(child);
    assert_eq!(status.code(), Some(0), "stderr: {stderr:?}");
    assert!(stderr.is_empty(), "{stderr:?}");
    let _ = podq(&["--version"]);
}
