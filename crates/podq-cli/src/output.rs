//! Writing to stdout without ever panicking: a reader that closes the pipe early
//! (`podq topo | head -1`) ends the output quietly and successfully.

use std::io::{self, Write};

use crate::error::CliError;

/// Writes `text` to stdout and flushes it.
///
/// A closed stdout (`BrokenPipe`) counts as success: the reader has all it wanted.
///
/// # Errors
///
/// [`CliError::Failed`] for any other write error (a full disk, a revoked terminal).
pub(crate) fn print(text: &str) -> Result<(), CliError> {
    let mut out = io::stdout().lock();
    finish(out.write_all(text.as_bytes()).and_then(|()| out.flush()))
}

/// A JSON report as the CLI prints it: pretty, with a final newline.
///
/// # Errors
///
/// [`CliError::Failed`] when `value` cannot be written as JSON.
pub(crate) fn json_text(value: &serde_json::Value) -> Result<String, CliError> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|err| CliError::Failed(format!("cannot write the JSON report: {err}")))?;
    text.push('\n');
    Ok(text)
}

/// Turns the outcome of a write to stdout into the CLI's result: `BrokenPipe` is success,
/// anything else a failure naming stdout.
///
/// # Errors
///
/// [`CliError::Failed`] for every error other than `BrokenPipe`.
pub(crate) fn finish(result: io::Result<()>) -> Result<(), CliError> {
    match result {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(err) => Err(CliError::Failed(format!(
            "cannot write to standard output: {err}"
        ))),
    }
}
