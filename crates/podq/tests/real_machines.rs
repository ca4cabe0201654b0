//! Topology discovery and pod formation on real machines' sysfs snapshots.
//!
//! For every `NAME.tar.bz2` in the topologies folder (see `machines/mod.rs`), unpack it, read it
//! with `Topology::from_sysfs`, form the pods of all six scopes at shard size 8, and compare with
//! `expected/NAME.json`. When the folder is absent the test says so and passes.

use std::sync::atomic::{AtomicUsize, Ordering};

use podq::scope::DEFAULT_SHARD_SIZE;
use podq::{AffinityScope, Pods, Topology};

mod machines;
use machines::Machine;

/// The pods as sorted lists of CPU ids, in pod order.
fn pod_lists(pods: &Pods) -> Vec<Vec<usize>> {
    pods.pods()
        .iter()
        .map(|p| p.cpus().iter().collect())
        .collect()
}

/// Checks one machine; returns the differences found, in words.
fn check_machine(machine: &Machine) -> Vec<String> {
    let name = &machine.name;
    let mut problems = Vec::new();
    let (_scratch, root) = match machine.unpack() {
        Ok(unpacked) => unpacked,
        Err(e) => return vec![e],
    };
    let topo = match Topology::from_sysfs(&root) {
        Ok(topo) => topo,
        Err(e) => return vec![format!("{name}: from_sysfs failed: {e}")],
    };
    let expected = machine.expected();
    let cpus: Vec<usize> = topo.cpu_set().iter().collect();
    let want_cpus: Vec<usize> = serde_json::from_value(expected["cpus"].clone()).unwrap();
    if cpus != want_cpus {
        problems.push(format!(
            "{name}: usable CPUs {cpus:?}, expected {want_cpus:?}"
        ));
    }
    for scope in AffinityScope::ALL {
        let pods = Pods::new(&topo, scope, DEFAULT_SHARD_SIZE).expect("pods");
        let got = pod_lists(&pods);
        let want: Vec<Vec<usize>> =
            serde_json::from_value(expected["scopes"][scope.name()].clone())
                .unwrap_or_else(|e| panic!("{name}: expected pods of {scope}: {e}"));
        if got != want {
            problems.push(format!(
                "{name}: scope {scope}: got {got:?}, expected {want:?}"
            ));
        }
    }
    problems
}

#[test]
fn real_machines_form_the_expected_pods() {
    let Some(machines) = machines::machines() else {
        return;
    };
    // The machines are independent: check them on every core (unpacking is I/O bound).
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    let mut results: Vec<(usize, Vec<String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(machine) = machines.get(i) else {
                            return mine;
                        };
                        mine.push((i, check_machine(machine)));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("checker thread"))
            .collect()
    });
    results.sort_by_key(|&(i, _)| i);
    let failed_machines = results.iter().filter(|(_, p)| !p.is_empty()).count();
    let problems: Vec<String> = results.into_iter().flat_map(|(_, p)| p).collect();
    assert!(
        problems.is_empty(),
        "{failed_machines} of {} machines differ:\n{}",
        machines.len(),
        problems.join("\n")
    );
}
