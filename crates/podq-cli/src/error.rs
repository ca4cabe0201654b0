//! The CLI's errors: one line on stderr, exit code 2 for bad usage and 1 for unusable data.

use std::process::ExitCode;

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// The command line asked for something that does not exist (exit code 2).
    #[error("{0}")]
    Usage(String),
    /// The input was understood but cannot be used, or the run itself failed (exit code 1).
    #[error("{0}")]
    Failed(String),
}

impl CliError {
    /// Prints the error as one line and returns the exit code for it.
    pub(crate) fn report(&self) -> ExitCode {
        eprintln!("podq: {self}");
        match self {
            CliError::Usage(_) => ExitCode::from(2),
            CliError::Failed(_) => ExitCode::from(1),
        }
    }
}

/// Prints a clap error (or help/version) and returns its exit code.
pub(crate) fn clap_exit(err: &clap::Error) -> ExitCode {
    // Help and version requests print in full and succeed; everything else is a usage error.
    let _ = err.print();
    ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(2))
}
