//! The CLI's errors: one line on stderr, exit code 2 for bad usage and 1 for unusable data.
//!
//! Every way `podq` can fail ends here: [`CliError::report`] prints `podq: MESSAGE` as one line
//! and picks the exit code. Library errors are sorted into usage errors and failures in one
//! place (the `From<podq::Error>` impl of [`CliError`]), and clap's multi-line errors are
//! folded into one line by [`clap_exit`].

use std::io::Write as _;
use std::process::ExitCode;

use clap::error::{ContextKind, ContextValue, ErrorKind};

/// Exit code for bad usage: a bad flag, an unknown name, a malformed value.
pub(crate) const EXIT_USAGE: u8 = 2;
/// Exit code for input that was understood but cannot be used, or a run that failed.
pub(crate) const EXIT_FAILED: u8 = 1;

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
    /// The exit code for this error: [`EXIT_USAGE`] or [`EXIT_FAILED`].
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => EXIT_USAGE,
            CliError::Failed(_) => EXIT_FAILED,
        }
    }

    /// Prints the error as one line on stderr and returns the exit code for it.
    pub(crate) fn report(&self) -> ExitCode {
        print_line(&self.to_string());
        ExitCode::from(self.exit_code())
    }
}

/// Sorts the library's errors into bad usage (a name, value or CPU the user gave that does not
/// exist) and failures (data that was read but cannot be used). The one place that decides.
impl From<podq::Error> for CliError {
    fn from(err: podq::Error) -> Self {
        use podq::Error as E;
        let message = err.to_string();
        match err {
            E::UnknownScope { .. }
            | E::ZeroShardSize
            | E::UnknownPreset { .. }
            | E::BadMachineDescription { .. }
            | E::UnknownCpu { .. }
            | E::UnknownNode { .. }
            | E::EmptyCpuSet { .. } => CliError::Usage(message),
            // A sysfs tree that cannot be read or describes no usable CPU, and anything added
            // to the library later: the input was taken as given and did not work out.
            _ => CliError::Failed(message),
        }
    }
}

/// Prints `podq: LINE` on stderr, with any line breaks in `line` folded into spaces, so that a
/// message is always exactly one line. A closed stderr is ignored: there is nowhere left to say
/// anything.
pub(crate) fn print_line(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "podq: {}", one_line(line));
}

/// `text` with every run of line breaks and the whitespace around them folded into one space.
pub(crate) fn one_line(text: &str) -> String {
    text.split(['\n', '\r'])
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Handles a clap error: help and version requests print in full and succeed; every other
/// error is printed as one line naming the bad input and the valid choices, with exit code 2.
///
/// `cli` is the whole command tree and `args` the command line without the program name, used
/// to name the command at fault and its valid subcommands or options where clap's error does
/// not carry them.
pub(crate) fn clap_exit(err: &clap::Error, cli: &clap::Command, args: &[String]) -> ExitCode {
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            // Printing help to a closed stdout is not worth a failure.
            let _ = err.print();
            ExitCode::SUCCESS
        }
        _ => CliError::Usage(clap_message(err, cli, args)).report(),
    }
}

/// Folds a clap error into one line: clap's own first line, the valid values or subcommands
/// where clap has them (or the command's options for an unknown argument), clap's suggestion,
/// and where to find help.
pub(crate) fn clap_message(err: &clap::Error, cli: &clap::Command, args: &[String]) -> String {
    // For a missing command clap renders the whole help text; say what happened instead.
    let rendered = match err.kind() {
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => "no command given".to_owned(),
        _ => err.render().to_string(),
    };
    let mut first = rendered
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .trim_start_matches("error:")
        .trim()
        .to_owned();
    // Lists that clap prints on the lines below its first line.
    if first.ends_with(':') {
        first.pop();
        let listed = match (
            err.get(ContextKind::InvalidArg),
            err.get(ContextKind::PriorArg),
        ) {
            (Some(ContextValue::Strings(args)), _) | (_, Some(ContextValue::Strings(args))) => {
                args.join(", ")
            }
            _ => String::new(),
        };
        if !listed.is_empty() {
            first = format!("{first}: {listed}");
        }
    }
    if first.is_empty() {
        first = format!("bad command line ({:?})", err.kind());
    }

    let command = command_path(err, cli, args);
    let mut parts = vec![first];
    if let Some(ContextValue::Strings(values)) = err.get(ContextKind::ValidValue) {
        if !values.is_empty() {
            parts.push(format!("expected one of {}", values.join(", ")));
        }
    }
    match err.get(ContextKind::ValidSubcommand) {
        Some(ContextValue::Strings(subs)) => {
            parts.push(format!("expected one of {}", subs.join(", ")));
        }
        _ if matches!(
            err.kind(),
            ErrorKind::InvalidSubcommand
                | ErrorKind::MissingSubcommand
                | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        ) =>
        {
            let subs = subcommand_names(find_command(cli, &command));
            if !subs.is_empty() {
                parts.push(format!("expected one of {}", subs.join(", ")));
            }
        }
        _ => {}
    }
    for (kind, what) in [
        (ContextKind::SuggestedSubcommand, "command"),
        (ContextKind::SuggestedArg, "option"),
        (ContextKind::SuggestedValue, "value"),
    ] {
        match err.get(kind) {
            Some(ContextValue::String(s)) => parts.push(format!("did you mean the {what} '{s}'?")),
            Some(ContextValue::Strings(s)) if !s.is_empty() => {
                parts.push(format!("did you mean the {what} '{}'?", s.join("' or '")));
            }
            _ => {}
        }
    }
    if err.kind() == ErrorKind::UnknownArgument {
        let options = option_names(find_command(cli, &command));
        if !options.is_empty() {
            parts.push(format!(
                "the options of '{}' are {}",
                command.join(" "),
                options.join(", ")
            ));
        }
    }
    if let Some(ContextValue::StyledStrs(tips)) = err.get(ContextKind::Suggested) {
        parts.extend(tips.iter().map(|tip| format!("tip: {tip}")));
    }
    parts.push(format!("see '{} --help'", command.join(" ")));
    one_line(&parts.join("; "))
}

/// The command path the error is about (`["podq", "topo"]`), read from clap's usage line, or
/// else from the subcommand names among `args`.
fn command_path(err: &clap::Error, cli: &clap::Command, args: &[String]) -> Vec<String> {
    let usage = match err.get(ContextKind::Usage) {
        Some(ContextValue::StyledStr(usage)) => usage.to_string(),
        _ => String::new(),
    };
    let words: Vec<String> = usage
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .trim_start_matches("Usage:")
        .split_whitespace()
        .take_while(|w| !w.starts_with(['[', '<', '-']))
        .map(str::to_owned)
        .collect();
    if !words.is_empty() {
        return words;
    }
    let mut path = vec![cli.get_name().to_owned()];
    let mut command = cli;
    for arg in args {
        if let Some(sub) = command.find_subcommand(arg) {
            path.push(sub.get_name().to_owned());
            command = sub;
        }
    }
    path
}

/// The (sub)command named by `path` (program name first), or the closest ancestor found.
fn find_command<'a>(cli: &'a clap::Command, path: &[String]) -> &'a clap::Command {
    let mut command = cli;
    for name in path.iter().skip(1) {
        match command.find_subcommand(name) {
            Some(sub) => command = sub,
            None => break,
        }
    }
    command
}

/// The names of `command`'s visible subcommands, `help` included.
fn subcommand_names(command: &clap::Command) -> Vec<String> {
    let mut names: Vec<String> = command
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set())
        .map(|sub| sub.get_name().to_owned())
        .collect();
    if !names.is_empty() && !command.is_disable_help_subcommand_set() {
        names.push("help".to_owned());
    }
    names
}

/// `command`'s visible options as typed (`--json`), plus `--help` (and `--version` where the
/// command has one).
fn option_names(command: &clap::Command) -> Vec<String> {
    let mut names: Vec<String> = command
        .get_arguments()
        .filter(|arg| !arg.is_hide_set())
        .filter_map(|arg| {
            arg.get_long()
                .map(|long| format!("--{long}"))
                .or_else(|| arg.get_short().map(|short| format!("-{short}")))
        })
        .collect();
    if !names.iter().any(|n| n == "--help") {
        names.push("--help".to_owned());
    }
    if command.get_version().is_some() && !names.iter().any(|n| n == "--version") {
        names.push("--version".to_owned());
    }
    names
}
