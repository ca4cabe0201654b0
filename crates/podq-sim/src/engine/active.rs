//! The Linux workqueue's count of active items per node (`wq_node_nr_active`, Linux 6.9 on):
//! every queue call (`tryinc_node_nr_active`, a compare-and-exchange loop) and every
//! completion (`pwq_dec_nr_active`, `atomic_dec_return`) of an unbound workqueue changes it
//! under its pool's lock, so the pools of one node, whatever the scope, share its cache line.
//! The line serves one change at a time, first come first served: a change waits for those
//! before it, then moves [`Costs::active_lines`](crate::Costs::active_lines) lines from the
//! CPU that made the last one.

use super::Engine;

/// One node's count: when its line is next free, and the dense CPU that changed it last.
#[derive(Clone, Copy, Debug)]
pub(super) struct ActiveCount {
    free_at: f64,
    last_cpu: u32,
}

/// The counts of a machine: one per node, and one for pools spanning nodes (the kernel's
/// `NUMA_NO_NODE` slot).
pub(super) fn counts(nodes: usize) -> Vec<ActiveCount> {
    vec![
        ActiveCount {
            free_at: 0.0,
            last_cpu: 0,
        };
        nodes + 1
    ]
}

impl Engine<'_> {
    /// The count's slot of the pool of dense CPUs `cpus`: their node, or the last slot when
    /// they span nodes.
    pub(super) fn active_slot(&self, cpus: &[u32]) -> usize {
        let first = self.machine.node_of(cpus[0] as usize);
        if cpus
            .iter()
            .all(|&c| self.machine.node_of(c as usize) == first)
        {
            first as usize
        } else {
            self.active.len() - 1
        }
    }

    /// A change of `pool`'s count from dense CPU `cpu`, now: the time until it is done (the
    /// wait for the line and the line's move), 0 when the profile has no such count.
    pub(super) fn active_change(&mut self, pool: usize, cpu: u32) -> f64 {
        if self.costs.active_lines <= 0.0 {
            return 0.0;
        }
        let slot = self.pools[pool].active;
        let count = self.active[slot];
        let start = count.free_at.max(self.now as f64);
        let moved = self.costs.active_lines * self.line(count.last_cpu, cpu);
        self.active[slot] = ActiveCount {
            free_at: start + moved,
            last_cpu: cpu,
        };
        start + moved - self.now as f64
    }
}
