//! The `kernel` profile's costs, the optimum of [`crate::kernel_fit`]'s objective on both
//! published `test_workqueue` tables ([`KERNEL`]) and, for the leave-one-machine-out check, on
//! each table alone ([`fitted_without`]), as
//! `cargo run --release -p podq-sim --example fit_kernel -- all|grace|xeon-8321hc` prints them.
//! `podq sim --published` prints the error per published cell.

use crate::cost::{Costs, Param};
use crate::kernel_fit::derived;

/// The costs that are not fitted, with the fitted ones ([`crate::kernel_fit::FREE`]) to be
/// set.
const FIXED: Costs = Costs {
    lines_per_handover: 0.0,
    // The platform's line latencies are the core-to-core tools' figures, the time a line
    // takes to reach a thread spinning on it: what a hand-over to a spinning waiter moves,
    // with nothing to add.
    contended_factor: 1.0,
    // Measured (`examples/measure_os.rs`, the least of five medians) on the 2-CPU AMD EPYC
    // virtual machine of the project, Linux 6.18: an uncontended lock, a list append and
    // removal and three count updates, 5.5 ns; the hand-overs' line moves are added to it.
    critical_section_ns: 5.5,
    // An item's own lines are part of the hand-overs' lines.
    item_lines: 0.0,
    wake_call_ns: 0.0,
    // Both follow from `wake_call_ns` (`kernel_fit::derived`).
    wake_idle_ns: 0.0,
    switch_ns: 0.0,
    // Measured there too: one pass of `lib/test_workqueue.c`'s loop outside `queue_work` when
    // the item has run (the completion's lock twice, `INIT_WORK`'s stores, two clock reads
    // and the latency's store), 64.5 ns.
    producer_item_ns: 64.5,
    // `process_one_work`'s own work outside the lock: the item only completes its producer's
    // completion, whose wake-up is `wake_call_ns`.
    worker_item_ns: 0.0,
    active_lines: 0.0,
    // EEVDF's `sysctl_sched_base_slice` before its scaling by the CPU count
    // (`Costs::slice_for`).
    slice_ns: 750_000.0,
    // A kthread start, about 50 us.
    spawn_ns: 50_000.0,
    spin_ns: 0.0,
    jitter: 0.1,
};

/// The Linux workqueue's costs, fitted on both tables.
pub(crate) const KERNEL: Costs = derived(Costs {
    wake_call_ns: 884.1662610153068,
    lines_per_handover: 11.728468162183194,
    active_lines: 3.224592272793434,
    ..FIXED
});

/// Fitted on the Grace table alone.
const GRACE_ONLY: Costs = derived(Costs {
    wake_call_ns: 830.6051370184223,
    lines_per_handover: 11.697052932871712,
    active_lines: 3.2755843863386884,
    ..FIXED
});

/// Fitted on the Xeon table alone.
const XEON_ONLY: Costs = derived(Costs {
    wake_call_ns: 918.0971977004705,
    lines_per_handover: 11.756660019062014,
    active_lines: 3.0849526526305846,
    ..FIXED
});

/// The costs fitted on every published table but `machine`'s (`None` for a machine without
/// a table).
pub(crate) fn fitted_without(machine: &str) -> Option<Costs> {
    match machine {
        "grace" => Some(XEON_ONLY),
        "xeon-8321hc" => Some(GRACE_ONLY),
        _ => None,
    }
}

/// The least and greatest value of each fitted cost ([`crate::kernel_fit::FREE`]), and of
/// each cost derived from one ([`crate::kernel_fit::derived`]), over the three fits:
/// on both tables and on each alone. The published tables leave each cost open that far, so a
/// range drawn for the `kernel` profile's costs spans at least this
/// ([`crate::uncertainty::spread`]).
pub(crate) const FIT_SPREAD: [(Param, f64, f64); 5] = [
    span(
        Param::WakeCall,
        [
            KERNEL.wake_call_ns,
            GRACE_ONLY.wake_call_ns,
            XEON_ONLY.wake_call_ns,
        ],
    ),
    span(
        Param::LinesPerHandover,
        [
            KERNEL.lines_per_handover,
            GRACE_ONLY.lines_per_handover,
            XEON_ONLY.lines_per_handover,
        ],
    ),
    span(
        Param::ActiveLines,
        [
            KERNEL.active_lines,
            GRACE_ONLY.active_lines,
            XEON_ONLY.active_lines,
        ],
    ),
    span(
        Param::WakeIdle,
        [
            KERNEL.wake_idle_ns,
            GRACE_ONLY.wake_idle_ns,
            XEON_ONLY.wake_idle_ns,
        ],
    ),
    span(
        Param::Switch,
        [KERNEL.switch_ns, GRACE_ONLY.switch_ns, XEON_ONLY.switch_ns],
    ),
];

/// `param` with the least and greatest of its fitted values.
const fn span(param: Param, [a, b, c]: [f64; 3]) -> (Param, f64, f64) {
    (param, a.min(b).min(c), a.max(b).max(c))
}
