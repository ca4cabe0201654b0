//! Named synthetic machines, for tests, `podq topo --machine` and the simulator.

/// The preset machine names [`Topology::from_machine`](crate::Topology::from_machine) knows.
pub const PRESETS: &[&str] = &[
    "grace",
    "epyc-9d64",
    "ryzen-3900x",
    "ryzen-7950x",
    "skylake-18c",
];

/// The description of preset `name`, in the form [`super::synthetic`] parses.
pub(crate) fn description(name: &str) -> Option<&'static str> {
    Some(match name {
        // NVIDIA Grace: 72 Neoverse V2 cores, no SMT, one 114 MB L3.
        "grace" => "sockets=1,nodes=1,caches=1,cores=72,smt=1",
        // AMD EPYC 9D64: 88 cores, SMT2, 11 CCDs of 8 cores each with its own L3.
        "epyc-9d64" => "sockets=1,nodes=1,caches=11,cores=88,smt=2",
        // AMD Ryzen 9 3900X: 12 cores, SMT2, 4 CCXs of 3 cores.
        "ryzen-3900x" => "sockets=1,nodes=1,caches=4,cores=12,smt=2",
        // AMD Ryzen 9 7950X: 16 cores, SMT2, 2 CCDs of 8 cores.
        "ryzen-7950x" => "sockets=1,nodes=1,caches=2,cores=16,smt=2",
        // Intel Skylake with 18 cores, SMT2, one shared L3.
        "skylake-18c" => "sockets=1,nodes=1,caches=1,cores=18,smt=2",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_has_a_description() {
        for name in PRESETS {
            assert!(description(name).is_some(), "{name}");
        }
        assert!(description("cache").is_none());
    }
}
