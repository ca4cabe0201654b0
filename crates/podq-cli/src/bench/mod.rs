//! `podq bench`: the kernel's test_workqueue experiment and the peers, side by side.
//!
//! For every workload, configuration (a podq scope, shard size and pull setting, or a peer
//! runtime) and run, one fresh system is built, driven through the same loop by pinned producer
//! threads ([`harness`]), measured ([`queue`], [`flood`] and `skew`, [`fanout`], [`rpc`],
//! [`blocking`], [`checksum`]) and dropped. Runs go round-robin over the configurations so that
//! a slow drift of the machine touches them all alike. The report ([`report`]) gives the
//! kernel's lines, an aligned table and the machine, or JSON.

pub(crate) mod args;
mod blocking;
mod checksum;
mod executor;
mod fanout;
mod flood;
mod harness;
mod locality;
mod machine;
mod measurement;
pub(crate) mod peers;
mod plot;
mod queue;
mod report;
mod rpc;
pub(crate) mod spawned;
mod sweep;
pub(crate) mod system;
mod tally;
pub(crate) mod topology_record;
pub(crate) mod workload;
mod workqueue;

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use podq::Topology;

pub(crate) use self::args::BenchArgs;
use self::args::Settings;
use self::executor::Executor;
use self::machine::Machine;
use self::measurement::{Measurement, Summary};
use self::peers::{ChannelPeer, MpscPeer, MutexPeer, Peer, RayonPeer, TokioPeer};
use self::report::Row;
use self::system::System;
use self::workload::Workload;
use self::workqueue::PodqExecutor;
use crate::error::CliError;

/// Runs `podq bench`.
///
/// # Errors
///
/// [`CliError::Usage`] for a bad argument; [`CliError::Failed`] when the machine cannot be read,
/// a system cannot be started, a run goes wrong, or the output cannot be written.
pub(crate) fn run(args: &BenchArgs) -> Result<(), CliError> {
    let topology = Topology::discover()
        .map_err(|err| CliError::Failed(format!("cannot read this machine's topology: {err}")))?;
    let usable = topology.cpu_set();
    let mut settings = Settings::from_args(args, &usable)?;
    if settings.workloads.contains(&Workload::Locality) {
        settings.locality.work = Duration::from_nanos(settings.work_ns(Workload::Locality));
        settings.count_peer_pods(&topology, &usable);
        settings.locality.pace = locality::pace::measure(
            &settings.locality,
            settings.peer_groups(),
            settings.producers(Workload::Locality),
            settings.peer_workers,
        )?;
    }
    let machine = Machine::describe(&topology);
    let rows = measure_all(&settings)?;
    if let Some(path) = &settings.plot {
        plot::draw(path, &rows, &settings, &machine)?;
    }
    let out = if settings.json {
        crate::output::json_text(&report::json(&machine, &settings, &rows))?
    } else {
        report::text(&machine, &settings, &rows)
    };
    crate::output::print(&out)
}

/// Every run of every configuration, round-robin ([`round_order`]), summarised per
/// configuration in order.
fn measure_all(settings: &Settings) -> Result<Vec<Row>, CliError> {
    let configurations: Vec<(Workload, System)> = settings
        .workloads
        .iter()
        .flat_map(|&workload| {
            settings
                .systems
                .iter()
                .map(move |&system| (workload, system))
        })
        .collect();
    let progress = progress_bar(configurations.len() * settings.runs);
    let mut runs: Vec<Vec<Measurement>> =
        vec![Vec::with_capacity(settings.runs); configurations.len()];
    for round in 0..settings.runs {
        for at in round_order(round, configurations.len()) {
            let (workload, system) = configurations[at];
            progress.set_message(format!("{} {}", workload.name(), settings.label(system)));
            runs[at].push(measure(workload, system, settings)?);
            progress.inc(1);
        }
    }
    progress.finish_and_clear();
    Ok(configurations
        .into_iter()
        .zip(&runs)
        .filter_map(|((workload, system), measured)| {
            Summary::of(measured).map(|summary| Row {
                workload,
                system,
                summary,
            })
        })
        .collect())
}

/// The configurations of round `round` of `count`, by index: each round starts one
/// configuration later than the round before, so that every configuration takes every place in
/// a round in turn. A host that drifts within a round (a VM whose host moves its CPUs after a
/// busy run) then weighs on each alike, where a fixed order would load it onto the first ones.
fn round_order(round: usize, count: usize) -> impl Iterator<Item = usize> {
    (0..count).map(move |k| (round + k) % count)
}

/// A progress bar on stderr when it is a terminal; hidden otherwise.
fn progress_bar(total: usize) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total as u64);
    if let Ok(style) = ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}") {
        bar.set_style(style);
    }
    bar
}

/// One run of one configuration on a freshly built system.
fn measure(
    workload: Workload,
    system: System,
    settings: &Settings,
) -> Result<Measurement, CliError> {
    let workers = settings.peer_workers;
    match system {
        System::Podq {
            scope,
            shard_size,
            pull,
            steer,
        } => {
            let executor = PodqExecutor::with_steer(scope, shard_size, pull, steer)?;
            let mut measurement = if workload == Workload::Locality {
                let wq = executor.workqueue();
                let count = settings
                    .locality
                    .groups
                    .unwrap_or(locality::GROUPS_PER_POD * wq.pools());
                let groups: Vec<podq::Group> = (0..count).map(|_| wq.group()).collect();
                let queue =
                    |group: &podq::Group, item: locality::Item| group.queue(move || item.run());
                let mut measured = drive_locality(&executor, &groups, queue, settings)?;
                measured.steering = Some(executor.steering());
                measured
            } else {
                drive(&executor, workload, settings)?
            };
            let counts = executor.pool_counts();
            measurement.pools = Some(counts.pools);
            measurement.workers = Some(counts.workers_created);
            measurement.lock_contended = Some(counts.lock_contended);
            measurement.pulled = Some(counts.pulled);
            measurement.seen_blocked = Some(counts.seen_blocked);
            measurement.started_for_blocked = Some(counts.started_for_blocked);
            let items = measurement.items.max(1) as f64;
            measurement.by_queuer = Some(counts.ran_by_queuer as f64 / items);
            measurement.ahead = Some(counts.ran_ahead as f64 / items);
            measurement.locks_per_item = Some(counts.lock_acquisitions as f64 / items);
            Ok(measurement)
        }
        System::Peer(Peer::Tokio) => peer_run(&TokioPeer::new(workers)?, workload, settings),
        System::Peer(Peer::Rayon) => peer_run(&RayonPeer::new(workers)?, workload, settings),
        System::Peer(Peer::Channel) => peer_run(&ChannelPeer::new(workers)?, workload, settings),
        System::Peer(Peer::Mpsc) => peer_run(&MpscPeer::new(workers)?, workload, settings),
        System::Peer(Peer::Mutex) => peer_run(&MutexPeer::new(workers)?, workload, settings),
    }
}

/// One run on a peer, which always has `settings.peer_workers` workers.
fn peer_run<E: Executor>(
    peer: &E,
    workload: Workload,
    settings: &Settings,
) -> Result<Measurement, CliError> {
    let mut measurement = if workload == Workload::Locality {
        // The peers have no groups: the same items, queued as plain closures.
        let groups = vec![(); settings.peer_groups()];
        let queue = |_: &(), item: locality::Item| peer.spawn(move || item.run());
        drive_locality(peer, &groups, queue, settings)?
    } else {
        drive(peer, workload, settings)?
    };
    measurement.workers = Some(settings.peer_workers as u64);
    Ok(measurement)
}

/// Drives `executor` through the locality workload, queueing each item of `groups` with
/// `queue`, at the pace of `settings.locality`.
fn drive_locality<E: Executor, G: Sync>(
    executor: &E,
    groups: &[G],
    queue: impl Fn(&G, locality::Item) -> bool + Sync,
    settings: &Settings,
) -> Result<Measurement, CliError> {
    locality::run(
        executor,
        groups,
        queue,
        settings.producers(Workload::Locality),
        settings.peer_workers,
        settings.items(Workload::Locality),
        &settings.locality,
    )
}

/// Drives `executor` through `workload`.
fn drive<E: Executor>(
    executor: &E,
    workload: Workload,
    settings: &Settings,
) -> Result<Measurement, CliError> {
    let work = Duration::from_nanos(settings.work_ns(workload));
    let cpus = settings.producers(workload);
    let items = settings.items(workload);
    match workload {
        Workload::Queue => queue::run(executor, cpus, items, work),
        // skew is flood's loop from one producer (see `Workload::Skew`).
        Workload::Flood | Workload::Skew => flood::run(executor, cpus, items, work),
        Workload::Fanout => fanout::run(executor, cpus, items, work),
        Workload::Rpc => rpc::run(executor, cpus, items, work),
        Workload::Blocking => blocking::run(executor, cpus, items, work, settings.mix),
        Workload::Chain => spawned::chain(executor, cpus, items, settings.depth, work),
        Workload::Yield => spawned::yielding(executor, cpus, items, settings.yields, work),
        Workload::SpawnLocal => spawned::spawn_local(executor, cpus, items, work),
        Workload::Checksum => checksum::run(executor, cpus, items, work),
        // Its items need their groups: `drive_locality`.
        Workload::Locality => Err(CliError::Failed(
            "the locality workload is driven with its groups".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::round_order;

    #[test]
    fn each_round_starts_one_configuration_later_and_runs_each_once() {
        let rounds: Vec<Vec<usize>> = (0..4).map(|r| round_order(r, 3).collect()).collect();
        assert_eq!(
            rounds,
            [vec![0, 1, 2], vec![1, 2, 0], vec![2, 0, 1], vec![0, 1, 2]]
        );
        assert_eq!(round_order(5, 0).count(), 0, "no configurations, no runs");
    }
}
