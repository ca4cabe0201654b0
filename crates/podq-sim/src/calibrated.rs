//! The `kernel` profile's costs, the optimum of [`crate::kernel_fit`]'s objective on both
//! published `test_workqueue` tables ([`KERNEL`]) and, for the leave-one-machine-out check, on
//! each table alone ([`fitted_without`]), as
//! `cargo run --release -p podq-sim --example fit_kernel -- all|grace|xeon-8321hc` prints them.
//! `podq sim --published` prints the error per published cell.

use crate::cost::Costs;

/// The costs that are not fitted, with the fitted ones to be set.
const FIXED: Costs = Costs {
    // The lines of `struct worker_pool` touched under the lock (`kernel_fit::FREE`).
    lines_per_handover: 4.0,
    contended_factor: 1.0,
    critical_section_ns: 0.0,
    // An item's own lines are part of its fitted per-item costs.
    item_lines: 0.0,
    wake_call_ns: 0.0,
    wake_idle_ns: 0.0,
    switch_ns: 0.0,
    producer_item_ns: 0.0,
    worker_item_ns: 0.0,
    // EEVDF's `sysctl_sched_base_slice` before its scaling by the CPU count
    // (`Costs::slice_for`).
    slice_ns: 750_000.0,
    // A kthread start, about 50 us.
    spawn_ns: 50_000.0,
    spin_ns: 0.0,
    jitter: 0.1,
};

/// The Linux workqueue's costs, fitted on both tables.
pub(crate) const KERNEL: Costs = Costs {
    contended_factor: 1.3690631181010082,
    critical_section_ns: 248.60401826041323,
    wake_call_ns: 1001.462554796941,
    wake_idle_ns: 2527.254176303939,
    switch_ns: 5571.608900865319,
    producer_item_ns: 4747.390662403681,
    worker_item_ns: 881.6471297253997,
    ..FIXED
};

/// Fitted on the Grace table alone.
const GRACE_ONLY: Costs = Costs {
    contended_factor: 1.471371925920707,
    critical_section_ns: 191.7559556942136,
    wake_call_ns: 933.6258655523784,
    wake_idle_ns: 3713.4873075930627,
    switch_ns: 5603.759191757214,
    producer_item_ns: 6612.569407260314,
    worker_item_ns: 687.721871123268,
    ..FIXED
};

/// Fitted on the Xeon table alone.
const XEON_ONLY: Costs = Costs {
    contended_factor: 1.4787371713739719,
    critical_section_ns: 272.71997967204425,
    wake_call_ns: 993.6375664686184,
    wake_idle_ns: 2423.3099443513406,
    switch_ns: 4846.973693848603,
    producer_item_ns: 4222.943198336118,
    worker_item_ns: 893.018130308373,
    ..FIXED
};

/// The costs fitted on every published table but `machine`'s (`None` for a machine without
/// a table).
pub(crate) fn fitted_without(machine: &str) -> Option<Costs> {
    match machine {
        "grace" => Some(XEON_ONLY),
        "xeon-8321hc" => Some(GRACE_ONLY),
        _ => None,
    }
}
