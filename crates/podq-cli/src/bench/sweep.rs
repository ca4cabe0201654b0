//! `--sweep PARAM=V1,V2,...`: the parameter values a benchmark run walks through.

use crate::error::CliError;

/// The parameters `--sweep` can vary, for error messages.
const PARAMETERS: &str = "shard-size";

/// A parsed `--sweep`: the cache shard sizes to measure `cache_shard` at, in the order given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Sweep {
    /// Shard sizes in cores, each at least 1, without duplicates.
    pub(crate) shard_sizes: Vec<usize>,
}

impl Sweep {
    /// Parses `shard-size=2,4,8,16`.
    ///
    /// # Errors
    ///
    /// [`CliError::Usage`] naming the bad text and the expected form: an unknown parameter, a
    /// missing `=`, an empty list, or a size that is not a whole number of at least 1.
    pub(crate) fn parse(text: &str) -> Result<Sweep, CliError> {
        let form =
            "expected shard-size=N[,N...] with sizes of at least 1 core, e.g. shard-size=2,4,8,16";
        let Some((param, values)) = text.split_once('=') else {
            return Err(CliError::Usage(format!("bad --sweep '{text}': {form}")));
        };
        if param.trim() != "shard-size" {
            return Err(CliError::Usage(format!(
                "unknown --sweep parameter '{}': expected one of {PARAMETERS} \
                 (as in shard-size=2,4,8,16)",
                param.trim()
            )));
        }
        let mut shard_sizes = Vec::new();
        for value in values.split(',') {
            let size = match value.trim().parse::<usize>() {
                Ok(size) if size >= 1 => size,
                _ => {
                    return Err(CliError::Usage(format!(
                        "bad shard size '{}' in --sweep '{text}': {form}",
                        value.trim()
                    )))
                }
            };
            if !shard_sizes.contains(&size) {
                shard_sizes.push(size);
            }
        }
        Ok(Sweep { shard_sizes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(text: &str) -> String {
        match Sweep::parse(text) {
            Err(CliError::Usage(message)) => message,
            other => panic!("expected a usage error for {text:?}, got {other:?}"),
        }
    }

    #[test]
    fn parses_sizes_in_order_without_duplicates() {
        let sweep = Sweep::parse("shard-size=2,4,8,4,16").expect("valid sweep");
        assert_eq!(sweep.shard_sizes, vec![2, 4, 8, 16]);
        let sweep = Sweep::parse("shard-size= 3 ").expect("spaces are tolerated");
        assert_eq!(sweep.shard_sizes, vec![3]);
    }

    #[test]
    fn rejects_malformed_sweeps_naming_the_value() {
        assert!(usage("shard-size").contains("'shard-size'"));
        assert!(usage("shard-size=").contains("bad shard size ''"));
        assert!(usage("shard-size=0").contains("'0'"));
        assert!(usage("shard-size=2,x").contains("'x'"));
        assert!(usage("shard-size=2,,4").contains("bad shard size"));
        let message = usage("threads=1,2");
        assert!(message.contains("'threads'") && message.contains("shard-size"));
    }
}
