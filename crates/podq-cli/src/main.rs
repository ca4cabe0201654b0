//! `podq`: see the pods of a machine (`podq topo`) and measure them (`podq bench`).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench;
mod error;
mod topo;

use error::CliError;

/// Topology-aware work queues: see a machine's pods and measure them.
#[derive(Debug, Parser)]
#[command(name = "podq", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show the machine's CPUs and the pods of every affinity scope.
    Topo(topo::TopoArgs),
    /// Measure queueing throughput and latency per scope, next to tokio, rayon and channel pools.
    Bench(bench::BenchArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return error::clap_exit(&err),
    };
    let result = match cli.command {
        Command::Topo(args) => topo::run(&args),
        Command::Bench(args) => bench::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => err.report(),
    }
}
