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
    contended_factor: 1.3671844982884016,
    critical_section_ns: 248.74640093530658,
    wake_call_ns: 1000.488835668238,
    wake_idle_ns: 2527.378616674527,
    switch_ns: 5567.027429507836,
    producer_item_ns: 4759.969094203635,
    worker_item_ns: 880.9638778064277,
    ..FIXED
};

/// Fitted on the Grace table alone.
const GRACE_ONLY: Costs = Costs {
    contended_factor: 1.1595277927102756,
    critical_section_ns: 211.00209153034348,
    wake_call_ns: 1067.4495613927145,
    wake_idle_ns: 3873.2576291887026,
    switch_ns: 5934.780779659602,
    producer_item_ns: 6027.9450812823,
    worker_item_ns: 903.8884765294291,
    ..FIXED
};

/// Fitted on the Xeon table alone.
const XEON_ONLY: Costs = Costs {
    contended_factor: 1.1794036504344978,
    critical_section_ns: 231.56258282329264,
    wake_call_ns: 1338.9714076806672,
    wake_idle_ns: 2363.172829264598,
    switch_ns: 4440.957870440925,
    producer_item_ns: 2805.646726485428,
    worker_item_ns: 743.859772661834,
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
