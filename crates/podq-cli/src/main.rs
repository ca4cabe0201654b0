//! `podq`: see the pods of a machine (`podq topo`), measure them (`podq bench`), predict
//! them on other machines (`podq sim`), and measure a whole machine in one go (`podq report`).
//!
//! Every failure is one line on stderr (`podq: ...`) that names the bad input and the valid
//! choices, with exit code 2 for bad usage and 1 for input that cannot be used. Even a bug
//! prints one line (`podq: internal error: ...`, exit code 101), never a backtrace.

use std::io::Write as _;
use std::panic::PanicHookInfo;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

mod bench;
mod error;
mod output;
mod report;
mod sim;
mod topo;

use error::CliError;

/// Exit code after a bug (a panic), as Rust itself uses for a panicking `main`.
const EXIT_INTERNAL: i32 = 101;

/// Topology-aware work queues: see a machine's pods and measure them.
#[derive(Debug, Parser)]
#[command(name = "podq", version, about)]
struct Cli {
    /// What to do.
    #[command(subcommand)]
    command: Command,
}

/// The commands of `podq`.
#[derive(Debug, Subcommand)]
enum Command {
    /// Show the machine's CPUs and the pods of every affinity scope.
    Topo(topo::TopoArgs),
    /// Measure queueing throughput and latency per scope, next to tokio, rayon and channel pools.
    Bench(Box<bench::BenchArgs>),
    /// Predict every scope and shard size on any machine with a calibrated simulator.
    Sim(Box<sim::SimArgs>),
    /// Measure this machine within a time budget: every workload, scope and peer, written as
    /// report.md, report.json and plots.
    Report(report::ReportArgs),
}

fn main() -> ExitCode {
    install_panic_hook();
    #[cfg(debug_assertions)]
    panic_on_request();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let args: Vec<String> = std::env::args_os()
                .skip(1)
                .map(|arg| arg.to_string_lossy().into_owned())
                .collect();
            return error::clap_exit(&err, &Cli::command(), &args);
        }
    };
    let result: Result<(), CliError> = match cli.command {
        Command::Topo(args) => topo::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Sim(args) => sim::run(&args),
        Command::Report(args) => report::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => err.report(),
    }
}

/// Replaces Rust's panic message (several lines, a backtrace hint) with one line.
///
/// A panic on the main thread ends the process with [`EXIT_INTERNAL`]. A panic on another
/// thread prints its line and unwinds as usual, so that code which catches panics (the
/// workqueue catches a panicking work item and goes on) keeps working; if nothing catches it,
/// the thread that joins it reports the failure.
fn install_panic_hook() {
    let main_thread = std::thread::current().id();
    std::panic::set_hook(Box::new(move |info| {
        let message = panic_message(info);
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let thread = std::thread::current();
        let on_main = thread.id() == main_thread;
        let which = if on_main {
            String::new()
        } else {
            format!(" in thread '{}'", thread.name().unwrap_or("unnamed"))
        };
        let line = error::one_line(&format!(
            "internal error{which}: {message}{location} (this is a bug in podq; please report it)"
        ));
        let _ = writeln!(std::io::stderr().lock(), "podq: {line}");
        if on_main {
            std::process::exit(EXIT_INTERNAL);
        }
    }));
}

/// Debug builds only: with `PODQ_DEBUG_PANIC` set, podq panics on purpose (with a two-line
/// message), so that tests can check the panic hook end to end.
#[cfg(debug_assertions)]
fn panic_on_request() {
    if std::env::var_os("PODQ_DEBUG_PANIC").is_some() {
        panic!("deliberate panic requested by PODQ_DEBUG_PANIC\nsecond line of the message");
    }
}

/// The text a panic was raised with.
fn panic_message(info: &PanicHookInfo<'_>) -> String {
    let payload = info.payload();
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_owned()
    }
}
