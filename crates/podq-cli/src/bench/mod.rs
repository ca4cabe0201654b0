//! `podq bench`: the kernel's test_workqueue experiment and the peers, side by side.

use clap::Args;

use crate::error::CliError;

/// Arguments of `podq bench`.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {}

/// Runs `podq bench`.
pub(crate) fn run(_args: &BenchArgs) -> Result<(), CliError> {
    Err(CliError::Failed("podq bench is being written".into()))
}
