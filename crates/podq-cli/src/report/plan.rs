//! What a report measures on a machine: its steps, each one `podq bench` invocation, and the
//! notes that say what was left out and why.

use podq::Topology;

use crate::bench::peers::Peer;
use crate::bench::workload::Workload;

/// Cores a cache domain must exceed for the report to sweep the shard size: the kernel's
/// default shard of 8 cores then cuts it in more than one pod.
const SWEEP_ABOVE_CORES: usize = podq::scope::DEFAULT_SHARD_SIZE;

/// One step: a `podq bench` invocation without its item count and runs, which the budget
/// decides.
#[derive(Clone, Debug)]
pub(crate) struct Step {
    /// The step's name in the report, the plot's and the bench file's name.
    pub(crate) id: String,
    /// What it measures, in words.
    pub(crate) title: String,
    /// Its workload.
    pub(crate) workload: Workload,
    /// `podq bench`'s arguments, less `--items`, `--runs`, `--json` and `--plot`.
    pub(crate) args: Vec<String>,
    /// Configurations it measures: its share of the budget is in proportion.
    pub(crate) configurations: usize,
    /// Items per producer of its first trial run (see `step::run`), and the fewest it runs.
    pub(crate) base_items: u64,
    /// Whether `podq sim --against` predicts its podq rows.
    pub(crate) predicted: bool,
}

/// The steps for a machine, and notes on what the machine leaves out.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// In the order they run.
    pub(crate) steps: Vec<Step>,
    /// Why steps were left out.
    pub(crate) notes: Vec<String>,
}

/// The six scopes, each a configuration of every step that does not choose its own.
const SCOPES: usize = 6;

impl Plan {
    /// The steps for `topology` (its usable CPUs and cache domains).
    pub(crate) fn for_machine(topology: &Topology) -> Plan {
        let peers: Vec<&str> = Peer::KNOWN.iter().map(|p| p.name()).collect();
        let peers = peers.join(",");
        let peer_count = Peer::KNOWN.len();
        let usable = topology.cpu_set().len();
        let mut notes = Vec::new();
        let mut steps = Vec::new();
        let mut add = |id: &str, title: &str, workload: Workload, extra: &[&str], podq: usize| {
            let mut args = vec!["--workload".to_owned(), workload.name().to_owned()];
            args.extend(extra.iter().map(|a| (*a).to_owned()));
            let with_peers = !extra.contains(&"none");
            if with_peers {
                args.extend(["--peers".to_owned(), peers.clone()]);
            }
            steps.push(Step {
                id: id.to_owned(),
                title: title.to_owned(),
                workload,
                args,
                configurations: podq + if with_peers { peer_count } else { 0 },
                base_items: base_items(workload),
                predicted: matches!(
                    workload,
                    Workload::Queue
                        | Workload::Flood
                        | Workload::Skew
                        | Workload::Fanout
                        | Workload::Rpc
                ),
            });
        };
        let one = usable > 1;
        if !one {
            notes.push(
                "one usable CPU: the one-producer steps would repeat the per-CPU ones and are \
                 left out"
                    .to_owned(),
            );
        }
        add(
            "queue",
            "queue: one producer per CPU, closed loop",
            Workload::Queue,
            &[],
            SCOPES,
        );
        if one {
            add(
                "queue-1",
                "queue: one producer, closed loop",
                Workload::Queue,
                &["--threads", "1"],
                SCOPES,
            );
        }
        add(
            "flood",
            "flood: one producer per CPU, open loop",
            Workload::Flood,
            &[],
            SCOPES,
        );
        if one {
            add(
                "flood-1",
                "flood: one producer, open loop",
                Workload::Flood,
                &["--threads", "1"],
                SCOPES,
            );
        }
        let largest = topology
            .cache_domains()
            .iter()
            .map(|d| d.cores)
            .max()
            .unwrap_or(0);
        if largest > SWEEP_ABOVE_CORES {
            let mut sizes = Vec::new();
            let mut size = 2;
            while size < largest {
                sizes.push(size.to_string());
                size *= 2;
            }
            sizes.push(largest.to_string());
            let sweep = format!("shard-size={}", sizes.join(","));
            let count = sizes.len() + 1;
            add(
                "sweep",
                "flood: the shard size swept, one producer per CPU",
                Workload::Flood,
                &[
                    "--scopes",
                    "cache_shard,cache",
                    "--sweep",
                    &sweep,
                    "--peers",
                    "none",
                ],
                count,
            );
        } else {
            notes.push(format!(
                "no cache domain has more than {SWEEP_ABOVE_CORES} cores (the largest has \
                 {largest}): a cache shard is its whole domain, so no shard-size sweep"
            ));
        }
        for (workload, title) in [
            (
                Workload::Skew,
                "skew: work arriving on one CPU, pull on and off",
            ),
            (
                Workload::Fanout,
                "fanout: senders queueing receivers, pull on and off",
            ),
            (
                Workload::Rpc,
                "rpc: pairs of items queueing each other, pull on and off",
            ),
        ] {
            add(
                workload.name(),
                title,
                workload,
                &["--pull", "on,off"],
                2 * SCOPES,
            );
        }
        add(
            "blocking",
            "blocking: one item in 10 sleeps 1 ms",
            Workload::Blocking,
            &[],
            SCOPES,
        );
        add(
            "locality",
            "locality: groups walking their data, steering on and off",
            Workload::Locality,
            &["--steer", "on,off"],
            2 * SCOPES,
        );
        for (workload, title) in [
            (Workload::Chain, "chain: items queueing the next, in chains"),
            (Workload::Yield, "yield: items queueing their continuation"),
            (
                Workload::SpawnLocal,
                "spawn-local: one item queueing many from its worker",
            ),
        ] {
            add(workload.name(), title, workload, &[], SCOPES);
        }
        add(
            "checksum",
            "checksum: CRC-32C of 4 KiB blocks written by the producer",
            Workload::Checksum,
            &[],
            SCOPES,
        );
        Plan { steps, notes }
    }
}

/// Items per producer of a workload's first trial run: enough for the run to be more than its
/// setup, few enough to take milliseconds (`--items` means chains for `chain`, items of 1,000
/// continuations for `yield`, messages per team for `fanout`).
fn base_items(workload: Workload) -> u64 {
    match workload {
        Workload::Chain | Workload::Yield => 1,
        Workload::Locality => 5,
        Workload::Fanout => 20,
        Workload::Skew | Workload::Blocking => 50,
        Workload::Queue
        | Workload::Flood
        | Workload::Rpc
        | Workload::SpawnLocal
        | Workload::Checksum => 100,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_machine_has_every_workload_and_no_sweep() {
        let topology = Topology::from_machine("caches=1,cores=2").unwrap();
        let plan = Plan::for_machine(&topology);
        for workload in Workload::ALL {
            assert!(
                plan.steps.iter().any(|s| s.workload == workload),
                "{} is measured",
                workload.name()
            );
        }
        assert!(plan.steps.iter().all(|s| s.id != "sweep"));
        assert!(plan.notes.iter().any(|n| n.contains("no shard-size sweep")));
        assert!(plan.steps.iter().any(|s| s.id == "queue-1"));
    }

    #[test]
    fn a_large_cache_domain_is_swept_up_to_its_cores() {
        let topology = Topology::from_machine("caches=1,cores=24").unwrap();
        let plan = Plan::for_machine(&topology);
        let sweep = plan.steps.iter().find(|s| s.id == "sweep").unwrap();
        assert!(sweep.args.contains(&"shard-size=2,4,8,16,24".to_owned()));
        assert_eq!(sweep.configurations, 6);
    }

    #[test]
    fn one_cpu_leaves_out_the_one_producer_steps_and_says_so() {
        let topology = Topology::from_machine("caches=1,cores=1").unwrap();
        let plan = Plan::for_machine(&topology);
        assert!(plan.steps.iter().all(|s| !s.id.ends_with("-1")));
        assert!(plan.notes.iter().any(|n| n.contains("one usable CPU")));
    }
}
