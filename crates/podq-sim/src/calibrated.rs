//! The `kernel` profile's costs, as fitted on the two published `test_workqueue` tables
//! ([`crate::published`]) by `cargo run --release -p podq-sim --example fit_kernel -- 5000 300`;
//! `podq sim --published` prints the error per published cell.

use crate::cost::Costs;

/// The Linux workqueue's costs.
pub(crate) const KERNEL: Costs = Costs {
    lines_per_handover: 4.0,
    contended_factor: 1.9,
    critical_section_ns: 217.9,
    // Not a parameter of the kernel fit: an item's own lines are part of its fitted per-item
    // costs.
    item_lines: 0.0,
    wake_call_ns: 425.7,
    wake_idle_ns: 3891.0,
    switch_ns: 8494.3,
    producer_item_ns: 3261.3,
    worker_item_ns: 670.7,
    // EEVDF's `sysctl_sched_base_slice` before its scaling by the CPU count
    // (`Costs::slice_for`).
    slice_ns: 750_000.0,
    // A kthread start, about 50 us.
    spawn_ns: 50_000.0,
    spin_ns: 0.0,
    jitter: 0.1,
};

/// Idle-state exit on the Xeon Platinum 8321HC (Cascade Lake): fitted within 2-10 us, the
/// exit latencies of the two shallowest states of the kernel's `intel_idle` table for
/// Skylake-SP (`skx_cstates`), the states an idle period of tens of microseconds gets.
pub(crate) const XEON_IDLE_EXIT_NS: f64 = 5456.1;

/// Idle-state exit on NVIDIA Grace (Neoverse V2, WFI): fitted within 0.5-3 us; no published
/// figure gives it.
pub(crate) const GRACE_IDLE_EXIT_NS: f64 = 814.2;

/// Idle-state exit on any other machine: the middle of the two fitted ones (geometric mean).
pub(crate) const IDLE_EXIT_NS: f64 = 2107.7;

/// The Xeon's software factor against Grace's (1): fitted.
pub(crate) const XEON_SOFTWARE_FACTOR: f64 = 0.817;

/// The software factor of any other machine: the geometric mean of Grace's and the Xeon's.
pub(crate) const SOFTWARE_FACTOR: f64 = 0.904;
