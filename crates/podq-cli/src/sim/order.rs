//! How far apart two predicted configurations must be before `podq sim` ranks them: the most
//! the model misjudged the ratio of two scopes of a machine it was checked on, for each basis
//! its costs can rest on.

use podq_sim::published::ORDER_ERROR;

/// The most the `podq` profile fitted on a machine's `queue` run (`--calibrate`) misjudged the
/// ratio of two scopes of that machine's `flood`: 2.98x (`cache` against `smt`) in the third of
/// three invocations on the 16-CPU Xeon (`podq sim --against flood-3.json --calibrate
/// queue-3.json --uncertainty 0` in `docs/machines/xeon-16cpu/flood-from-queue`; 1.53x and
/// 2.63x in the others, 1.10x-1.39x on the 2-CPU VM's), rounded up.
pub(crate) const CALIBRATED_ORDER_ERROR: f64 = 3.0;

/// The most podq's mechanisms with the kernel profile's costs (the `podq` profile without
/// `--calibrate`) misjudged the ratio of two scopes in a measured machine's runs (every
/// workload it predicts in `docs/machines/*/bench`): 87.7x (`yield`, `cpu` against `cache`:
/// `podq sim --against docs/machines/xeon-16cpu-2/bench/yield.json --uncertainty 0`), rounded
/// up.
pub(crate) const UNCALIBRATED_ORDER_ERROR: f64 = 88.0;

/// The factor and what it was measured on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct OrderError {
    /// Two configurations are ranked only when one is ahead by more than this, in every draw.
    pub(crate) factor: f64,
    /// Where it comes from, as the report says it.
    pub(crate) measured_on: &'static str,
}

impl OrderError {
    /// The order error of the costs a run uses: the `kernel` profile's, or the `podq`
    /// profile's with or without `--calibrate`.
    pub(crate) fn of(profile: &str, calibrated: bool) -> OrderError {
        match (profile, calibrated) {
            ("podq", true) => OrderError {
                factor: CALIBRATED_ORDER_ERROR,
                measured_on: "the most a podq profile fitted on a machine's queue run \
                              misjudged two scopes of its flood",
            },
            ("podq", false) => OrderError {
                factor: UNCALIBRATED_ORDER_ERROR,
                measured_on: "the most podq's mechanisms with the kernel's costs misjudged two \
                              scopes of a measured machine",
            },
            _ => OrderError {
                factor: ORDER_ERROR,
                measured_on: "the most it misjudged two scopes of a published machine, \
                              fitted on it or not",
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_basis_has_its_own_factor() {
        assert_eq!(OrderError::of("kernel", false).factor, ORDER_ERROR);
        assert_eq!(OrderError::of("podq", true).factor, CALIBRATED_ORDER_ERROR);
        assert_eq!(
            OrderError::of("podq", false).factor,
            UNCALIBRATED_ORDER_ERROR
        );
    }
}
