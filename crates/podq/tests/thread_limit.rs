//! At the process's thread limit (`RLIMIT_NPROC` lowered to the process's own thread count by
//! an unprivileged process, once a first workqueue has run an item), everything queued still
//! runs, never on the caller, and nothing hangs: the scenario of `support/thread_limit.rs`,
//! run in a child process (this test binary, run again), so that the limit and the dropped
//! privileges stay there.

#[path = "support/thread_limit.rs"]
mod scenario;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The variable that makes this binary the child.
const CHILD: &str = "PODQ_THREAD_LIMIT_CHILD";

/// Longer than the scenario's waits together: a child still running then hangs.
const HANG: Duration = Duration::from_secs(180);

#[test]
fn at_the_thread_limit_everything_queued_runs_and_nothing_hangs() {
    if std::env::var_os(CHILD).is_some() {
        match scenario::run() {
            Ok(scenario::Outcome::Skipped(why)) => println!("skipped: {why}"),
            Ok(scenario::Outcome::Ran(times)) => println!(
                "ran: builds {:?}; try_queue returned in {:?}; the delayed item started {:?} late; 1 PiB stack: {}",
                times.builds, times.try_queue_return, times.delayed_late, times.huge_stack
            ),
            Err(what) => panic!("{what}"),
        }
        return;
    }
    let exe = std::env::current_exe().expect("the test binary");
    let mut child = Command::new(exe)
        .args([
            "--exact",
            "at_the_thread_limit_everything_queued_runs_and_nothing_hangs",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the child process");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > HANG {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "the child hung at the thread limit:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().expect("output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(status.success(), "the child failed:\n{stdout}{stderr}");
    // The child's line follows libtest's "test ... " on the same line.
    for line in stdout.lines() {
        if let Some(at) = line.find("skipped: ").or_else(|| line.find("ran: ")) {
            println!("{}", &line[at..]);
        }
    }
    assert!(
        stdout.contains("ran: ") || stdout.contains("skipped: "),
        "the child said nothing:\n{stdout}{stderr}"
    );
}
