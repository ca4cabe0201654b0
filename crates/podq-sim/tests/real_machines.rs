//! Every real machine of the project's shared folder (`../shared/topologies`) simulates every
//! scope of both workloads to the end: odd topologies (offline CPUs, CPUs without caches,
//! sparse numbering, SMT4) must not stall the engine. Without the folder the test says so and
//! passes.

#[path = "../../podq/tests/machines/mod.rs"]
mod machines;

use podq::{AffinityScope, Topology};
use podq_sim::{simulate, Profile, Scenario, SimMachine, Workload};

#[test]
fn every_real_machine_simulates_every_scope() {
    let Some(machines) = machines::machines() else {
        return;
    };
    for machine in &machines {
        let (_scratch, root) = machine.unpack().unwrap_or_else(|e| panic!("{e}"));
        let topology =
            Topology::from_sysfs(&root).unwrap_or_else(|e| panic!("{}: {e}", machine.name));
        let sim = SimMachine::new(topology, &machine.name);
        let usable = machine.expected()["cpus"].as_array().map_or(0, Vec::len);
        assert_eq!(
            sim.len(),
            usable,
            "{}: one producer per usable CPU",
            machine.name
        );
        for workload in [Workload::Queue, Workload::Flood] {
            for scope in AffinityScope::ALL {
                let scenario = Scenario {
                    workload,
                    items: 20,
                    ..Scenario::kernel_test(scope, sim.len())
                };
                let outcome = simulate(&sim, &Profile::kernel(), &scenario)
                    .unwrap_or_else(|e| panic!("{} {workload:?} {scope}: {e}", machine.name));
                assert!(outcome.items_per_sec > 0.0, "{}", machine.name);
            }
        }
    }
}
