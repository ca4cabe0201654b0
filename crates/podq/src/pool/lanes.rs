//! Which lane of a pool's tail the pushers on each CPU use.

use crate::cpuset::CpuSet;

/// Lanes of a pool's tail at most: one per CPU of the pod up to this many, then CPUs share
/// lanes. A worker's last look before it parks reads every lane's length, so the lanes stay
/// few even on a pod of 72 CPUs.
const MAX_LANES: usize = 16;

/// The lane of each CPU: the CPU's position in the pod, wrapped to the lanes. Pushers on
/// different CPUs then share no lock and no line.
#[derive(Debug)]
pub(super) struct LaneMap {
    /// The lane of CPU `cpu` at index `cpu`; CPUs outside the pod are absent or `usize::MAX`.
    by_cpu: Box<[usize]>,
}

impl LaneMap {
    /// The map for a pod with `cpus`, and how many lanes it uses.
    pub(super) fn new(cpus: &CpuSet) -> (LaneMap, usize) {
        let lanes = cpus.len().clamp(1, MAX_LANES);
        let mut by_cpu = vec![usize::MAX; cpus.last().map_or(0, |cpu| cpu + 1)];
        for (position, cpu) in cpus.iter().enumerate() {
            by_cpu[cpu] = position % lanes;
        }
        let map = LaneMap {
            by_cpu: by_cpu.into_boxed_slice(),
        };
        (map, lanes)
    }

    /// The lane of a thread at `at`, a CPU id or (where the CPU cannot be read) a thread index
    /// as [`crate::here::Here::index`] gives it: its CPU's lane, or, off the pod, `at` itself,
    /// which the core wraps to its lanes.
    #[inline]
    pub(super) fn lane(&self, at: usize) -> usize {
        self.lookup(at).unwrap_or(at)
    }

    /// The lane of `at` (as for [`LaneMap::lane`]) when it is a CPU of the pod; `None` off the
    /// pod.
    #[inline]
    pub(super) fn lookup(&self, at: usize) -> Option<usize> {
        self.by_cpu
            .get(at)
            .copied()
            .filter(|&lane| lane != usize::MAX)
    }

    /// The calling thread's lane (see [`LaneMap::lane`]), for the paths that read the CPU
    /// where they push: a worker, and a re-queue after a run.
    #[inline]
    pub(super) fn here(&self) -> usize {
        self.lane(crate::here::cpu_or_thread())
    }
}
