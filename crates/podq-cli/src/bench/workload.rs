//! The workloads `podq bench` drives every system through, and what each takes from the
//! command line.

use super::args::DEFAULT_ITEMS;
use super::spawned;
use crate::error::CliError;

/// Busy-wait per item, in nanoseconds, of the CPU-bound workloads (`skew`, `fanout`) when
/// `--work-ns` is not given: 10 us, long enough that running the items, not queueing them,
/// decides the rate, so that a CPU left idle shows.
pub(crate) const CPU_BOUND_WORK_NS: u64 = 10_000;

/// A benchmark workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Workload {
    /// The kernel's test_workqueue: a closed loop with one item in flight per thread.
    Queue,
    /// An open loop: each producer queues all of its items as fast as it can.
    Flood,
    /// The open loop of `Flood` from one producer on the first usable CPU, with CPU-bound
    /// items: work that arrives unevenly, all of it on one pod.
    Skew,
    /// The hackbench analogue ([`fanout`](super::fanout)): teams of sender items queueing
    /// messages as receiver items, from the workers, open loop, CPU-bound.
    Fanout,
    /// Request/response ([`rpc`](super::rpc)): pairs of items queueing each other for many
    /// round trips with little work each.
    Rpc,
    /// Flood's open loop with one item in N that blocks ([`blocking`](super::blocking)):
    /// whether blocked items hold up the short ones.
    Blocking,
    /// Items of related groups walking their group's working set, at a steady rate
    /// ([`locality`](super::locality)): whether they run where their data is hot.
    Locality,
    /// Chains of items, each queueing the next from its worker ([`spawned`]).
    Chain,
    /// Items that queue their own continuation many times ([`spawned`]).
    Yield,
    /// One item queueing many from its worker ([`spawned`]).
    SpawnLocal,
    /// Flood's open loop with storage-like items: each checksums a 4 KiB block its producer
    /// has just written ([`checksum`](super::checksum)).
    Checksum,
}

impl Workload {
    /// Every workload, in the order `--workload all` measures them.
    pub(crate) const ALL: [Workload; 11] = [
        Workload::Queue,
        Workload::Flood,
        Workload::Skew,
        Workload::Fanout,
        Workload::Rpc,
        Workload::Blocking,
        Workload::Locality,
        Workload::Chain,
        Workload::Yield,
        Workload::SpawnLocal,
        Workload::Checksum,
    ];

    /// The name on the command line and in the JSON.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Workload::Queue => "queue",
            Workload::Flood => "flood",
            Workload::Skew => "skew",
            Workload::Fanout => "fanout",
            Workload::Rpc => "rpc",
            Workload::Blocking => "blocking",
            Workload::Locality => "locality",
            Workload::Chain => "chain",
            Workload::Yield => "yield",
            Workload::SpawnLocal => "spawn-local",
            Workload::Checksum => "checksum",
        }
    }

    /// The workloads `--workload NAME` asks for: one, or all of them for `all`.
    ///
    /// # Errors
    ///
    /// [`CliError::Usage`] naming `name` and the valid names.
    pub(crate) fn parse(name: &str) -> Result<Vec<Workload>, CliError> {
        if name == "all" {
            return Ok(Workload::ALL.to_vec());
        }
        Workload::ALL
            .into_iter()
            .find(|workload| workload.name() == name)
            .map(|workload| vec![workload])
            .ok_or_else(|| {
                let names: Vec<&str> = Workload::ALL.into_iter().map(Workload::name).collect();
                CliError::Usage(format!(
                    "unknown workload '{name}': expected one of {}, all",
                    names.join(", ")
                ))
            })
    }

    /// Busy-wait per item when `--work-ns` is not given: [`CPU_BOUND_WORK_NS`] for `skew` and
    /// `fanout`, none for the others (for `blocking`, the short items'; the blocking ones only
    /// sleep; `locality`'s items walk their group's data instead).
    pub(crate) fn default_work_ns(self) -> u64 {
        match self {
            Workload::Skew | Workload::Fanout => CPU_BOUND_WORK_NS,
            Workload::Queue
            | Workload::Flood
            | Workload::Rpc
            | Workload::Blocking
            | Workload::Locality
            | Workload::Chain
            | Workload::Yield
            | Workload::SpawnLocal
            | Workload::Checksum => 0,
        }
    }

    /// The CPUs the workload's producer threads are pinned to, out of `cpus` (one per
    /// `--threads`, the lowest usable CPUs): all of them, or for `skew` the first alone.
    pub(crate) fn producer_cpus(self, cpus: &[usize]) -> &[usize] {
        match self {
            Workload::Skew => &cpus[..cpus.len().min(1)],
            Workload::Queue
            | Workload::Flood
            | Workload::Fanout
            | Workload::Rpc
            | Workload::Blocking
            | Workload::Locality
            | Workload::Chain
            | Workload::Yield
            | Workload::SpawnLocal
            | Workload::Checksum => cpus,
        }
    }

    /// What the workload's rows report.
    pub(crate) fn shape(self) -> Shape {
        match self {
            Workload::Queue => Shape::Closed,
            Workload::Flood | Workload::Skew | Workload::Fanout | Workload::Checksum => Shape::Open,
            Workload::Rpc => Shape::RoundTrips,
            Workload::Blocking => Shape::Mixed,
            Workload::Locality => Shape::Local,
            Workload::Chain | Workload::Yield | Workload::SpawnLocal => Shape::Spawned,
        }
    }

    /// `--items` when it is not given: chains per producer for `chain`, items per producer
    /// for `yield`, items the one item queues for `spawn-local`, and [`DEFAULT_ITEMS`] items
    /// (messages, round trips) per producer for the others.
    pub(crate) fn default_items(self) -> u64 {
        match self {
            Workload::Chain => spawned::CHAINS,
            Workload::Yield => spawned::YIELDING_ITEMS,
            Workload::SpawnLocal => spawned::SPAWNED_ITEMS,
            Workload::Queue
            | Workload::Flood
            | Workload::Skew
            | Workload::Fanout
            | Workload::Rpc
            | Workload::Blocking
            | Workload::Locality
            | Workload::Checksum => DEFAULT_ITEMS,
        }
    }
}

/// What a workload's rows report, besides items/sec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// The queue call's p50/p90/p95 (the kernel's lines).
    Closed,
    /// The queue call's p50/p99 and the queue-to-start p50/p99.
    Open,
    /// Round trips per second, the queue call's p50/p99 and the per-hop p50/p99.
    RoundTrips,
    /// The queue call's p50/p99 and the short items' queue-to-start p50/p99.
    Mixed,
    /// The queue call's p50/p99, the queue-to-start p50/p99 and the items' own run time
    /// p50/p99.
    Local,
    /// The time per item, and for podq the share of items run by the worker of the item that
    /// queued them.
    Spawned,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_all_is_every_workload_in_order() {
        for workload in Workload::ALL {
            assert_eq!(Workload::parse(workload.name()).ok(), Some(vec![workload]));
        }
        assert_eq!(Workload::parse("all").ok(), Some(Workload::ALL.to_vec()));
        let Err(CliError::Usage(message)) = Workload::parse("Skew") else {
            panic!("names are case-sensitive");
        };
        assert!(
            message.contains("'Skew'")
                && message.contains(
                    "queue, flood, skew, fanout, rpc, blocking, locality, chain, yield, \
                     spawn-local, checksum, all"
                ),
            "{message}"
        );
    }

    #[test]
    fn cpu_bound_workloads_default_to_ten_microseconds_of_work() {
        let defaults: Vec<u64> = Workload::ALL
            .into_iter()
            .map(Workload::default_work_ns)
            .collect();
        assert_eq!(defaults, [0, 0, 10_000, 10_000, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn skew_has_one_producer_on_the_first_cpu() {
        let cpus = [2, 3, 5];
        assert_eq!(Workload::Skew.producer_cpus(&cpus), [2]);
        assert_eq!(Workload::Fanout.producer_cpus(&cpus), cpus);
        assert_eq!(Workload::Rpc.producer_cpus(&cpus), cpus);
    }
}
