//! `podq topo`: the machine and the pods of every scope.

use clap::Args;

use crate::error::CliError;

/// Arguments of `podq topo`.
#[derive(Debug, Args)]
pub(crate) struct TopoArgs {}

/// Runs `podq topo`.
pub(crate) fn run(_args: &TopoArgs) -> Result<(), CliError> {
    Err(CliError::Failed("podq topo is being written".into()))
}
