//! Helpers shared by the CLI's integration tests: run the `podq` binary and check what it
//! printed.

#![allow(dead_code)] // each test crate uses its own part of these helpers

use std::io::Read as _;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};

/// Every workload of `podq bench`, in the order `--workload all` measures them.
pub(crate) const WORKLOADS: [&str; 11] = [
    "queue",
    "flood",
    "skew",
    "fanout",
    "rpc",
    "blocking",
    "locality",
    "chain",
    "yield",
    "spawn-local",
    "checksum",
];

/// What one run of `podq` left behind.
#[derive(Debug)]
pub(crate) struct Run {
    /// The exit code (`None` when killed by a signal).
    pub(crate) code: Option<i32>,
    /// Everything printed on stdout.
    pub(crate) stdout: String,
    /// Everything printed on stderr.
    pub(crate) stderr: String,
}

/// The `podq` binary built for these tests.
pub(crate) fn podq_command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_podq"));
    // A backtrace request must change nothing: podq never prints one.
    command.env("RUST_BACKTRACE", "1").stdin(Stdio::null());
    command
}

/// Runs `podq ARGS...` to the end.
pub(crate) fn podq(args: &[&str]) -> Run {
    let output = podq_command()
        .args(args)
        .output()
        .expect("the podq binary runs");
    Run::from(output)
}

impl From<Output> for Run {
    /// The run `output` describes, its output read as (lossy) UTF-8.
    fn from(output: Output) -> Run {
        Run {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

/// Starts `podq ARGS...` with stdout and stderr piped, for tests that read or close them
/// while it runs.
pub(crate) fn podq_piped(args: &[&str]) -> Child {
    podq_command()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the podq binary starts")
}

/// Reads the rest of `child`'s piped stderr, waits for it to end, and returns how it ended and
/// that stderr.
pub(crate) fn wait_with_stderr(mut child: Child) -> (ExitStatus, String) {
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr is piped")
        .read_to_string(&mut stderr)
        .expect("stderr is readable");
    let status = child.wait().expect("podq can be waited for");
    (status, stderr)
}

/// Runs `podq ARGS...`, checks that it succeeded quietly, and returns its stdout.
pub(crate) fn podq_ok(args: &[&str]) -> String {
    let run = podq(args);
    assert_eq!(run.code, Some(0), "podq {args:?} failed: {run:?}");
    assert!(
        run.stderr.is_empty(),
        "podq {args:?} wrote to stderr: {run:?}"
    );
    run.stdout
}

/// The arguments of `podq sim` of `workload` with the `podq` profile on a 4-core machine, and
/// `extra`.
fn podq_sim_args<'a>(workload: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "sim",
        "--machine",
        "cores=4",
        "--profile",
        "podq",
        "--workload",
        workload,
    ];
    args.extend_from_slice(extra);
    args
}

/// `podq sim` of `workload` with the `podq` profile on a 4-core machine, and `extra`: its text.
pub(crate) fn podq_sim_text(workload: &str, extra: &[&str]) -> String {
    podq_ok(&podq_sim_args(workload, extra))
}

/// As [`podq_sim_text`], with `--json`: its report.
pub(crate) fn podq_sim_json(workload: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = podq_sim_args(workload, extra);
    args.push("--json");
    podq_json(&args)
}

/// Runs `podq ARGS... --json`-style commands and parses stdout as JSON.
pub(crate) fn podq_json(args: &[&str]) -> serde_json::Value {
    let stdout = podq_ok(args);
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("podq {args:?}: bad JSON ({e})"))
}

/// `podq sim --against FILE --uncertainty 0 --json`, with `extra` arguments.
pub(crate) fn against_json(file: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["sim", "--against", file, "--uncertainty", "0", "--json"];
    args.extend_from_slice(extra);
    podq_json(&args)
}

/// As [`podq_json`], for `podq topo --sysfs DIR --json` plus `extra`.
pub(crate) fn topo_sysfs_json(dir: &Path, extra: &[&str]) -> serde_json::Value {
    let dir = dir.to_str().expect("UTF-8 temp path");
    let mut args = vec!["topo", "--sysfs", dir, "--json"];
    args.extend_from_slice(extra);
    podq_json(&args)
}

/// Checks that `podq ARGS...` failed with exit code `code` and exactly one line on stderr that
/// starts with `podq: ` and contains every string of `mentions`; no panic, no backtrace, and
/// nothing on stdout. Returns that line.
pub(crate) fn assert_one_line_error(args: &[&str], code: i32, mentions: &[&str]) -> String {
    let run = podq(args);
    assert_eq!(run.code, Some(code), "exit code of podq {args:?}: {run:?}");
    assert_one_line(&run, args);
    let line = run.stderr.trim_end_matches('\n');
    for mention in mentions {
        assert!(
            line.contains(mention),
            "podq {args:?}: {line:?} does not mention {mention:?}"
        );
    }
    assert!(
        run.stdout.is_empty(),
        "podq {args:?} wrote to stdout: {run:?}"
    );
    line.to_owned()
}

/// Checks that `run`'s stderr is exactly one line starting with `podq: `, with no sign of a
/// panic or a backtrace.
pub(crate) fn assert_one_line(run: &Run, args: &[&str]) {
    assert!(
        run.stderr.ends_with('\n') && run.stderr.matches('\n').count() == 1,
        "podq {args:?}: stderr is not exactly one line: {:?}",
        run.stderr
    );
    assert!(
        run.stderr.starts_with("podq: "),
        "podq {args:?}: {:?}",
        run.stderr
    );
    for bad in ["panicked", "RUST_BACKTRACE", "stack backtrace"] {
        assert!(!run.stderr.contains(bad), "podq {args:?}: {:?}", run.stderr);
        assert!(!run.stdout.contains(bad), "podq {args:?}: {:?}", run.stdout);
    }
}

/// The pods of `scope` in a `podq topo --json` report, as lists of CPU ids.
pub(crate) fn scope_pods(report: &serde_json::Value, scope: &str) -> Vec<Vec<u64>> {
    report["scopes"][scope]
        .as_array()
        .unwrap_or_else(|| panic!("no scope {scope} in {report}"))
        .iter()
        .map(|pod| {
            pod.as_array()
                .expect("a pod is a list of CPUs")
                .iter()
                .map(|cpu| cpu.as_u64().expect("a CPU id"))
                .collect()
        })
        .collect()
}

/// The CPU lists (`0-7,88-95`) of the pods of `scope` in a `podq topo --json` report.
pub(crate) fn pod_lists(report: &serde_json::Value, scope: &str) -> Vec<String> {
    report["pods"][scope]
        .as_array()
        .unwrap_or_else(|| panic!("no pods for {scope} in {report}"))
        .iter()
        .map(|pod| pod["cpu_list"].as_str().expect("a CPU list").to_owned())
        .collect()
}
