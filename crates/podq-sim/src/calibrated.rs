//! The `kernel` profile's costs, the optimum of [`crate::kernel_fit`]'s objective on both
//! published `test_workqueue` tables ([`KERNEL`]) and, for the leave-one-machine-out check, on
//! each table alone ([`fitted_without`]), as
//! `cargo run --release -p podq-sim --example fit_kernel -- all|grace|xeon-8321hc` prints them.
//! `podq sim --published` prints the error per published cell.

use crate::cost::{Costs, Param};

/// The costs that are not fitted, with the fitted ones ([`crate::kernel_fit::FREE`]) to be
/// set.
const FIXED: Costs = Costs {
    // The lines of `struct worker_pool` that `__queue_work` and `worker_thread` touch under
    // the lock: the lock word with `nr_running`, the worklist, the idle list, the counts.
    lines_per_handover: 4.0,
    // The platform's line latencies are the core-to-core tools' figures, the time a line
    // takes to reach a thread spinning on it: what a hand-over to a spinning waiter moves,
    // with nothing to add.
    contended_factor: 1.0,
    // Measured (`examples/measure_os.rs`, the least of five medians) on the 2-CPU AMD EPYC
    // virtual machine of the project, Linux 6.18: an uncontended lock, a list append and
    // removal and three count updates, 5.5 ns; the hand-overs' line moves are added to it.
    critical_section_ns: 5.5,
    // An item's own lines are part of its per-item costs.
    item_lines: 0.0,
    wake_call_ns: 0.0,
    wake_idle_ns: 0.0,
    switch_ns: 0.0,
    producer_item_ns: 0.0,
    // `process_one_work`'s own work outside the lock is part of the fitted per-item time
    // (`producer_item_ns`): in the closed loop the producer waits for its item, so the two
    // run in series and one figure covers both.
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
    wake_call_ns: 1285.647735220501,
    switch_ns: 3569.5781597588043,
    // `kernel_fit::derive_wake_idle`.
    wake_idle_ns: 1285.647735220501,
    producer_item_ns: 11028.270021371833,
    ..FIXED
};

/// Fitted on the Grace table alone.
const GRACE_ONLY: Costs = Costs {
    wake_call_ns: 1313.238404409653,
    switch_ns: 4817.660348315952,
    // `kernel_fit::derive_wake_idle`.
    wake_idle_ns: 1313.238404409653,
    producer_item_ns: 9688.989633972285,
    ..FIXED
};

/// Fitted on the Xeon table alone.
const XEON_ONLY: Costs = Costs {
    wake_call_ns: 1183.4832419859395,
    switch_ns: 1497.914969621474,
    // `kernel_fit::derive_wake_idle`.
    wake_idle_ns: 1183.4832419859395,
    producer_item_ns: 12694.483277426078,
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

/// The least and greatest value of each fitted cost ([`crate::kernel_fit::FREE`]) over the
/// three fits: on both tables and on each alone. The published tables leave each cost open that
/// far, so a range drawn for the `kernel` profile's costs spans at least this
/// ([`crate::uncertainty::spread`]).
pub(crate) const FIT_SPREAD: [(Param, f64, f64); 3] = [
    span(
        Param::WakeCall,
        [
            KERNEL.wake_call_ns,
            GRACE_ONLY.wake_call_ns,
            XEON_ONLY.wake_call_ns,
        ],
    ),
    span(
        Param::Switch,
        [KERNEL.switch_ns, GRACE_ONLY.switch_ns, XEON_ONLY.switch_ns],
    ),
    span(
        Param::ProducerItem,
        [
            KERNEL.producer_item_ns,
            GRACE_ONLY.producer_item_ns,
            XEON_ONLY.producer_item_ns,
        ],
    ),
];

/// `param` with the least and greatest of its fitted values.
const fn span(param: Param, [a, b, c]: [f64; 3]) -> (Param, f64, f64) {
    (param, a.min(b).min(c), a.max(b).max(c))
}
