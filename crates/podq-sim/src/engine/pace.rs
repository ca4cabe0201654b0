//! The `locality` workload's pace: one unsteered item's expected run time on the machine, taken
//! from the model's own caches ([`WorkingSets`]). `podq bench` paces from a warm-up too
//! (`bench/locality/pace.rs`: the run's items queued as plain closures to a channel pool, so
//! that the CPU that runs an item says nothing of its group), but counts the whole process's
//! CPU time per item, producing, queueing and waking included; the model counts the item's
//! run alone, and its queueing and waking show in `cpu_busy`.
//!
//! The warm-up walks the groups' sets one item after another, each item of a random group on a
//! random CPU of the machine: first [`WARM_WALKS`] walks per group untimed (the caches fill,
//! every set leaves memory), then [`TIMED_ITEMS`] timed ones, whose mean run time up to their
//! 99th percentile (as the bench's `trimmed_mean`) is the pace. Where a set sits depends only
//! on the order of the walks in the model (it has no memory bandwidth to share), so the load
//! does not enter, and one round is the bench's last.

use super::sets::WorkingSets;
use crate::cost::Caches;
use crate::machine::SimMachine;
use crate::rng::Rng;

/// Untimed walks per group before the timed items: enough that every set has left memory and
/// the caches hold what a long unsteered run leaves in them.
pub(super) const WARM_WALKS: usize = 4;

/// Timed items of the warm-up, and at least [`TIMED_PER_GROUP`] per group: enough that the
/// pace moves by well under 1 % from one seed to another.
pub(super) const TIMED_ITEMS: usize = 20_000;

/// The fewest timed items per group.
pub(super) const TIMED_PER_GROUP: usize = 8;

/// One unsteered item's expected run time, in ns: `work_ns` and a walk of a `set_kb` KiB set
/// of one of `groups` groups on `machine` with `caches`, the warm-up's draws from `seed` (see
/// the module's docs).
pub(super) fn unsteered_item_ns(
    machine: &SimMachine,
    caches: Caches,
    groups: usize,
    set_kb: u64,
    work_ns: u64,
    seed: u64,
) -> f64 {
    let groups = groups.max(1);
    let mut sets = WorkingSets::new(machine, caches, groups, set_kb);
    let mut rng = Rng::new(seed ^ 0x0000_9ace_3a11);
    let cpus = machine.len().max(1) as u64;
    let mut item = |rng: &mut Rng| {
        let group = (rng.next_u64() % groups as u64) as usize;
        let cpu = (rng.next_u64() % cpus) as u32;
        sets.walk(machine, group, cpu)
    };
    for _ in 0..groups * WARM_WALKS {
        item(&mut rng);
    }
    let timed = TIMED_ITEMS.max(groups * TIMED_PER_GROUP);
    let mut runs: Vec<f64> = (0..timed)
        .map(|_| item(&mut rng) + work_ns as f64)
        .collect();
    trimmed_mean(&mut runs)
}

/// The mean of `runs` up to their 99th percentile (those equal to it included), as the bench's
/// `trimmed_mean`; 0 for none.
fn trimmed_mean(runs: &mut [f64]) -> f64 {
    if runs.is_empty() {
        return 0.0;
    }
    runs.sort_unstable_by(f64::total_cmp);
    let rank = ((runs.len() as f64 * 0.99).ceil() as usize).clamp(1, runs.len()) - 1;
    let p99 = runs[rank];
    let kept: Vec<f64> = runs.iter().copied().filter(|&r| r <= p99).collect();
    kept.iter().sum::<f64>() / kept.len() as f64
}

#[cfg(test)]
mod tests {
    use podq::Topology;

    use super::*;

    #[test]
    fn the_trimmed_mean_leaves_out_the_slowest_hundredth() {
        let mut runs = vec![10.0; 99];
        runs.push(1e9);
        assert_eq!(trimmed_mean(&mut runs), 10.0);
        let mut ties = vec![10.0, 20.0, 20.0, 20.0];
        assert_eq!(trimmed_mean(&mut ties), 17.5);
        assert_eq!(trimmed_mean(&mut []), 0.0);
    }

    #[test]
    fn the_pace_is_a_walk_from_where_random_cpus_leave_the_sets() {
        // Two cache domains of four cores, 1 MiB L2s (three 256 KiB sets each): sixteen sets
        // fit the last-level caches, so an unsteered item finds its set in the other domain
        // about half the time, on its own core about one time in eight.
        let machine = SimMachine::new(
            Topology::from_machine("sockets=1,nodes=1,caches=2,cores=8,smt=1").unwrap(),
            "test",
        );
        let caches = *machine.caches();
        let lines = Caches::lines(256) as f64;
        let pace = unsteered_item_ns(&machine, caches, 16, 256, 1000, 1);
        let other = machine.platform().other_cache_ns;
        assert!(
            pace > lines * caches.llc_hit_ns && pace < lines * other + 1000.0,
            "{pace}"
        );
        // Mostly in the other domain: nearer the other domain's latency than the LLC's.
        assert!(
            pace > lines * (caches.llc_hit_ns + other) / 2.0 * 0.9,
            "{pace}"
        );
        assert_eq!(pace, unsteered_item_ns(&machine, caches, 16, 256, 1000, 1));
        // One group per core's worth that fits its L2, on a one-CPU machine: always hot.
        let one = SimMachine::new(Topology::from_machine("cores=1").unwrap(), "test");
        let hot = unsteered_item_ns(&one, *one.caches(), 2, 256, 0, 1);
        let walk = lines * one.caches().private_hit_ns;
        assert!((hot - walk).abs() < 1e-6 * walk, "{hot} against {walk}");
    }
}
