//! A `podq bench --json` report named on the command line (`--against`, `--calibrate`).

use std::io::ErrorKind;
use std::path::Path;

use serde_json::Value;

use crate::error::CliError;

/// The report in `path`, named by option `flag`.
///
/// # Errors
///
/// [`CliError::Usage`] when no such file exists; [`CliError::Failed`] when it cannot be read
/// or is not JSON.
pub(super) fn read(flag: &str, path: &Path) -> Result<Value, CliError> {
    const EXPECTED: &str = "give the output of podq bench --json";
    let file = path.display();
    let text = std::fs::read_to_string(path).map_err(|err| {
        if err.kind() == ErrorKind::NotFound {
            CliError::Usage(format!("{flag} {file}: no such file; {EXPECTED}"))
        } else {
            CliError::Failed(format!("{flag} {file}: cannot read it: {err}"))
        }
    })?;
    serde_json::from_str(&text)
        .map_err(|err| CliError::Failed(format!("{flag} {file}: not JSON ({err}); {EXPECTED}")))
}
