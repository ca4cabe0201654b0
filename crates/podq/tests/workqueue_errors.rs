//! Bad input gives a typed error from `build()` or the call, never a panic.

use podq::{CpuSet, Error, Topology, Work, Workqueue};

fn synthetic() -> Topology {
    Topology::from_machine("sockets=1,nodes=2,caches=2,cores=4,smt=1").unwrap()
}

/// A workqueue on CPUs 0-1 (node 0) of [`synthetic`], whose node 1 holds CPUs 2-3.
fn on_node_0_only() -> Workqueue {
    let cpus: CpuSet = [0, 1].into_iter().collect();
    Workqueue::builder("e")
        .topology(synthetic())
        .cpus(cpus)
        .build()
        .unwrap()
}

#[test]
fn shard_size_of_zero() {
    let err = Workqueue::builder("e").shard_size(0).build().unwrap_err();
    assert!(matches!(err, Error::ZeroShardSize), "{err}");
}

#[test]
fn max_active_of_zero() {
    let err = Workqueue::builder("e").max_active(0).build().unwrap_err();
    assert!(matches!(err, Error::ZeroMaxActive), "{err}");
    assert!(err.to_string().contains("max_active"));
}

#[test]
fn max_workers_of_zero() {
    let err = Workqueue::builder("e").max_workers(0).build().unwrap_err();
    assert!(matches!(err, Error::ZeroMaxWorkers), "{err}");
}

#[test]
fn empty_cpu_set() {
    let err = Workqueue::builder("e")
        .cpus(CpuSet::new())
        .build()
        .unwrap_err();
    assert!(matches!(err, Error::EmptyCpuSet { .. }), "{err}");
}

#[test]
fn cpu_set_with_an_unusable_cpu() {
    let cpus: CpuSet = [0, 7].into_iter().collect();
    let err = Workqueue::builder("e")
        .topology(synthetic())
        .cpus(cpus)
        .build()
        .unwrap_err();
    assert!(matches!(err, Error::UnknownCpu { cpu: 7, .. }), "{err}");
    assert!(
        err.to_string().contains("0-3"),
        "names the usable CPUs: {err}"
    );
}

#[test]
fn queue_on_a_cpu_outside_the_workqueue() {
    let wq = on_node_0_only();
    let err = wq.queue_on(3, || {}).unwrap_err();
    assert!(matches!(err, Error::UnknownCpu { cpu: 3, .. }), "{err}");
    let err = wq.queue_on(1_000_000, || {}).unwrap_err();
    assert!(matches!(err, Error::UnknownCpu { .. }), "{err}");
    let err = wq.queue_work_on(2, &Work::new(|| {})).unwrap_err();
    assert!(matches!(err, Error::UnknownCpu { cpu: 2, .. }), "{err}");
    assert!(wq.queue_on(1, || {}).unwrap());
    wq.flush();
}

#[test]
fn queue_node_without_workqueue_cpus() {
    // Node 1 holds CPUs 2-3, outside this workqueue's CPUs.
    let wq = on_node_0_only();
    let err = wq.queue_node(1, || {}).unwrap_err();
    assert!(matches!(err, Error::UnknownNode { node: 1, .. }), "{err}");
    assert!(
        err.to_string().contains('0'),
        "names the valid nodes: {err}"
    );
    let err = wq.queue_node(9, || {}).unwrap_err();
    assert!(matches!(err, Error::UnknownNode { node: 9, .. }), "{err}");
    assert!(wq.queue_node(0, || {}).unwrap());
    wq.flush();
}
