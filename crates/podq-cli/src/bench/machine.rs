//! The machine a benchmark ran on, in a few numbers (for the report and the JSON).

use podq::Topology;
use serde::Serialize;

/// What the report says about the machine.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Machine {
    /// Where the topology came from.
    pub(crate) source: String,
    /// The CPU model, where `/proc/cpuinfo` names one.
    pub(crate) model: Option<String>,
    /// The kernel release, where `/proc/sys/kernel/osrelease` is readable.
    pub(crate) kernel: Option<String>,
    /// The usable CPUs, as a CPU list.
    pub(crate) usable_cpus: String,
    /// How many CPUs are usable.
    pub(crate) cpus: usize,
    /// Cores among the usable CPUs.
    pub(crate) cores: usize,
    /// Cache domains (LLCs) among the usable CPUs.
    pub(crate) cache_domains: usize,
    /// The level of the last-level cache; `None` when the package stands in for it.
    pub(crate) cache_level: Option<u8>,
    /// NUMA nodes with usable CPUs.
    pub(crate) nodes: usize,
    /// What podq had to guess about the topology, in words.
    pub(crate) fallbacks: Vec<String>,
    /// The layout, for rebuilding the machine in the simulator.
    pub(crate) topology: super::topology_record::TopologyRecord,
}

impl Machine {
    /// Describes `topology` (and, for the model and kernel, this machine).
    pub(crate) fn describe(topology: &Topology) -> Machine {
        let cpus = topology.cpus();
        Machine {
            source: topology.source().to_owned(),
            model: cpu_model(),
            kernel: read_trimmed("/proc/sys/kernel/osrelease"),
            usable_cpus: topology.cpu_set().to_string(),
            cpus: cpus.len(),
            cores: topology.core_count(),
            cache_domains: topology.cache_domains().len(),
            cache_level: cpus.first().and_then(|cpu| cpu.cache_level()),
            nodes: topology.node_ids().len(),
            fallbacks: topology
                .fallbacks()
                .iter()
                .map(ToString::to_string)
                .collect(),
            topology: super::topology_record::TopologyRecord::of(topology),
        }
    }

    /// One line, such as
    /// `machine: Xeon ..., Linux 6.8, 2 usable CPUs (0-1), 1 core, 1 cache domain (L3), 1 node`.
    pub(crate) fn summary(&self) -> String {
        let mut parts = Vec::new();
        if let Some(model) = &self.model {
            parts.push(model.clone());
        }
        if let Some(kernel) = &self.kernel {
            parts.push(format!("Linux {kernel}"));
        }
        parts.push(format!("{} usable CPUs ({})", self.cpus, self.usable_cpus));
        parts.push(plural(self.cores, "core"));
        let level = match self.cache_level {
            Some(level) => format!("L{level}"),
            None => "the package stands in".to_owned(),
        };
        parts.push(format!(
            "{} ({level})",
            plural(self.cache_domains, "cache domain")
        ));
        parts.push(plural(self.nodes, "node"));
        let mut line = format!("machine: {}", parts.join(", "));
        for fallback in &self.fallbacks {
            line.push_str(&format!("; {fallback}"));
        }
        line
    }
}

/// `1 core`, `2 cores`.
pub(crate) fn plural(count: usize, what: &str) -> String {
    if count == 1 {
        format!("{count} {what}")
    } else {
        format!("{count} {what}s")
    }
}

/// The first `model name` of `/proc/cpuinfo`.
fn cpu_model() -> Option<String> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "model name").then(|| value.trim().to_owned())
    })
}

/// A one-line file, trimmed.
fn read_trimmed(path: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(text.trim().to_owned()).filter(|text| !text.is_empty())
}
