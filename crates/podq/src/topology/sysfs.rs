//! Reads a topology from a Linux sysfs tree under any root folder.
//!
//! The only module that reads topology files. It never assumes `/sys`: the root is given, so
//! snapshots of other machines and test fixtures read exactly like this machine.
//!
//! What is read, per usable CPU (`sys/devices/system/cpu/cpuN`):
//!
//! - usable: listed in `cpu/online` (when present), its own `online` is not `0` (cpu0 often has
//!   no such file), it has a `topology/` folder, and (for [`discover`]) it is allowed;
//! - core: `topology/core_cpus_list` or `core_cpus`, older kernels `thread_siblings_list` or
//!   `thread_siblings`;
//! - cache: among `cache/indexN`, the largest `level` whose `type` is `Unified` or `Data`, its
//!   `shared_cpu_list` or `shared_cpu_map`;
//! - package: `topology/physical_package_id`; cluster: `topology/cluster_cpus_list` or
//!   `cluster_cpus`;
//! - node: the `sys/devices/system/node/nodeN` whose `cpulist` (or `cpumap`) holds it.
//!
//! Every set is read in list form first and mask form second, intersected with the usable CPUs,
//! and made to contain its own CPU.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::cpuset::CpuSet;
use crate::error::{Error, Result};

use super::{Cpu, Fallback, Topology};

/// The package id used when `physical_package_id` is missing: the kernel's own "unknown".
const UNKNOWN_PACKAGE: i64 = -1;

/// This machine: `/` and the CPUs this process may run on, or a flat machine of the allowed
/// CPUs when sysfs cannot be used.
pub(crate) fn discover() -> Result<Topology> {
    let allowed: Option<CpuSet> = crate::sys::allowed_cpus()
        .ok()
        .map(|cpus| cpus.into_iter().collect());
    discover_within(allowed)
}

/// This machine: `/` with every online CPU that has a topology, whatever this process may run
/// on now; a flat machine of the allowed CPUs when sysfs cannot be used.
pub(crate) fn discover_online() -> Result<Topology> {
    match read(Path::new("/"), None) {
        Ok(mut topo) => {
            "this machine".clone_into(&mut topo.source);
            Ok(topo)
        }
        Err(_) => discover(),
    }
}

/// This machine, keeping only `allowed` CPUs when given.
fn discover_within(allowed: Option<CpuSet>) -> Result<Topology> {
    match read(Path::new("/"), allowed.as_ref()) {
        Ok(mut topo) => {
            "this machine".clone_into(&mut topo.source);
            Ok(topo)
        }
        Err(err) => {
            let allowed = match allowed {
                Some(set) => set,
                None => {
                    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
                    (0..n).collect()
                }
            };
            flat_machine(&allowed, err.to_string())
        }
    }
}

/// A machine where every CPU of `cpus` is its own core, all in one cache domain (the package
/// standing in) and one node, recording why.
fn flat_machine(cpus: &CpuSet, reason: String) -> Result<Topology> {
    if cpus.is_empty() {
        return Err(Error::NoUsableCpus {
            source_name: "this machine".into(),
            reason: format!("the OS allows this process no CPU, and {reason}"),
        });
    }
    let list = cpus
        .iter()
        .map(|id| Cpu {
            id,
            core_cpus: std::iter::once(id).collect(),
            cache_cpus: cpus.clone(),
            cache_level: None,
            node: 0,
            package: 0,
            cluster_cpus: None,
        })
        .collect();
    Ok(Topology::from_parts(
        list,
        vec![Fallback::FlatMachine { reason }],
        "this machine".into(),
    ))
}

/// Reads the tree under `root`, keeping only `allowed` CPUs when given.
pub(crate) fn read(root: &Path, allowed: Option<&CpuSet>) -> Result<Topology> {
    if !root.is_dir() {
        return Err(sysfs_error(
            root,
            "no such folder; expected a folder holding sys/devices/system/cpu",
        ));
    }
    let cpu_dir = root.join("sys/devices/system/cpu");
    if !cpu_dir.is_dir() {
        return Err(sysfs_error(
            &cpu_dir,
            "no such folder; expected the kernel's CPU folder (cpu0, cpu1, ..., online)",
        ));
    }
    let usable = usable_cpus(root, &cpu_dir, allowed)?;
    let nodes = read_nodes(root)?;

    struct Raw {
        id: usize,
        core: Option<CpuSet>,
        cache: Option<(CpuSet, u8)>,
        package: i64,
        cluster: Option<CpuSet>,
    }
    let mut raw = Vec::with_capacity(usable.len());
    for id in usable.iter() {
        let dir = cpu_dir.join(format!("cpu{id}"));
        let topo = dir.join("topology");
        let core = match read_set(&topo, "core_cpus_list", "core_cpus")? {
            Some(set) => Some(set),
            None => read_set(&topo, "thread_siblings_list", "thread_siblings")?,
        };
        raw.push(Raw {
            id,
            core,
            cache: read_cache(&dir.join("cache"))?,
            package: read_int(&topo.join("physical_package_id"))?.unwrap_or(UNKNOWN_PACKAGE),
            cluster: read_set(&topo, "cluster_cpus_list", "cluster_cpus")?,
        });
    }

    // Within the usable CPUs, and always holding the CPU itself.
    let own = |set: &CpuSet, id: usize| {
        let mut set = set.intersection(&usable);
        set.insert(id);
        set
    };
    let mut no_core = CpuSet::new();
    let mut no_cache = CpuSet::new();
    let mut no_node = CpuSet::new();
    let cpus: Vec<Cpu> = raw
        .iter()
        .map(|r| {
            let core_cpus = match &r.core {
                Some(set) => own(set, r.id),
                None => {
                    no_core.insert(r.id);
                    std::iter::once(r.id).collect()
                }
            };
            let (cache_cpus, cache_level) = match &r.cache {
                Some((set, level)) => (own(set, r.id), Some(*level)),
                None => {
                    no_cache.insert(r.id);
                    let package: CpuSet = raw
                        .iter()
                        .filter(|o| o.package == r.package)
                        .map(|o| o.id)
                        .collect();
                    (package, None)
                }
            };
            let node = match &nodes {
                None => 0,
                Some(nodes) => match nodes.iter().find(|(_, set)| set.contains(r.id)) {
                    Some(&(node, _)) => node,
                    None => {
                        no_node.insert(r.id);
                        0
                    }
                },
            };
            Cpu {
                id: r.id,
                core_cpus,
                cache_cpus,
                cache_level,
                node,
                package: r.package,
                cluster_cpus: r.cluster.as_ref().map(|set| own(set, r.id)),
            }
        })
        .collect();

    let mut fallbacks = Vec::new();
    if !no_cache.is_empty() {
        fallbacks.push(Fallback::PackageForCache { cpus: no_cache });
    }
    if !no_core.is_empty() {
        fallbacks.push(Fallback::CpuForCore { cpus: no_core });
    }
    if !no_node.is_empty() {
        fallbacks.push(Fallback::NodeZero { cpus: no_node });
    }
    Ok(Topology::from_parts(
        cpus,
        fallbacks,
        root.display().to_string(),
    ))
}

/// The usable CPUs: online, with a `topology/` folder, and allowed.
fn usable_cpus(root: &Path, cpu_dir: &Path, allowed: Option<&CpuSet>) -> Result<CpuSet> {
    let online = read_list(&cpu_dir.join("online"))?;
    let mut present = CpuSet::new();
    let mut usable = CpuSet::new();
    for entry in fs::read_dir(cpu_dir).map_err(|e| io_error(cpu_dir, &e))? {
        let entry = entry.map_err(|e| io_error(cpu_dir, &e))?;
        let name = entry.file_name();
        let Some(id) = name
            .to_str()
            .and_then(|n| n.strip_prefix("cpu"))
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|&id| id <= crate::cpuset::MAX_CPU_ID)
        else {
            continue;
        };
        let dir = entry.path();
        if !dir.is_dir() {
            continue;
        }
        present.insert(id);
        if online.as_ref().is_some_and(|set| !set.contains(id)) {
            continue;
        }
        if read_int(&dir.join("online"))? == Some(0) {
            continue;
        }
        if !dir.join("topology").is_dir() {
            continue;
        }
        if allowed.is_some_and(|set| !set.contains(id)) {
            continue;
        }
        usable.insert(id);
    }
    if usable.is_empty() {
        let reason = if present.is_empty() {
            "no cpuN folder".to_owned()
        } else {
            format!(
                "CPUs {present} are present, online {}, allowed {}, but none is online with a topology folder{}",
                online.map_or_else(|| "(no online file)".to_owned(), |s| s.to_string()),
                allowed.map_or_else(|| "(all)".to_owned(), |s| s.to_string()),
                if allowed.is_some() { " and allowed" } else { "" },
            )
        };
        return Err(Error::NoUsableCpus {
            source_name: root.display().to_string(),
            reason,
        });
    }
    Ok(usable)
}

/// The last-level data or unified cache under `cache_dir` (`cache/indexN`): its CPUs and
/// level, or `None` when there is no such cache with sharing information.
fn read_cache(cache_dir: &Path) -> Result<Option<(CpuSet, u8)>> {
    let Some(entries) = read_dir_if_exists(cache_dir)? else {
        return Ok(None);
    };
    let mut indexes: Vec<(usize, PathBuf)> = entries
        .into_iter()
        .filter_map(|(name, path)| {
            let n = name.strip_prefix("index")?.parse().ok()?;
            Some((n, path))
        })
        .collect();
    indexes.sort();
    let mut best: Option<(CpuSet, u8)> = None;
    for (_, dir) in indexes {
        let Some(kind) = read_text(&dir.join("type"))? else {
            continue;
        };
        if !matches!(
            kind.trim_matches(|c: char| c == '\0' || c.is_whitespace()),
            "Unified" | "Data"
        ) {
            continue;
        }
        let level_file = dir.join("level");
        let Some(level) = read_int(&level_file)? else {
            continue;
        };
        let level = u8::try_from(level).map_err(|_| {
            sysfs_error(
                &level_file,
                format!("cache level {level} is out of range; expected 0 to 255"),
            )
        })?;
        if best.as_ref().is_some_and(|(_, l)| *l >= level) {
            continue;
        }
        // Some kernels leave a cache's sharing unknown (an all-zero map); such a cache tells
        // nothing, so the next level down stands.
        if let Some(set) =
            read_set(&dir, "shared_cpu_list", "shared_cpu_map")?.filter(|set| !set.is_empty())
        {
            best = Some((set, level));
        }
    }
    Ok(best)
}

/// The nodes under `sys/devices/system/node` with their CPUs, ascending node id; `None` when
/// there is no node folder (or no `nodeN` in it), meaning one node 0.
fn read_nodes(root: &Path) -> Result<Option<Vec<(usize, CpuSet)>>> {
    let Some(entries) = read_dir_if_exists(&root.join("sys/devices/system/node"))? else {
        return Ok(None);
    };
    let mut nodes = Vec::new();
    for (name, path) in entries {
        let Some(id) = name
            .strip_prefix("node")
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        if !path.is_dir() {
            continue;
        }
        let cpus = read_set(&path, "cpulist", "cpumap")?.unwrap_or_default();
        nodes.push((id, cpus));
    }
    if nodes.is_empty() {
        return Ok(None);
    }
    nodes.sort_by_key(|&(id, _)| id);
    Ok(Some(nodes))
}

/// The entries of `dir` as (name, path), or `None` when `dir` does not exist.
fn read_dir_if_exists(dir: &Path) -> Result<Option<Vec<(String, PathBuf)>>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.kind() == io::ErrorKind::NotADirectory => return Ok(None),
        Err(e) => return Err(io_error(dir, &e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| io_error(dir, &e))?;
        if let Some(name) = entry.file_name().to_str() {
            out.push((name.to_owned(), entry.path()));
        }
    }
    Ok(Some(out))
}

/// The text of `file`, or `None` when it does not exist. Sysfs files may hold NUL bytes and
/// non-UTF-8 junk; both are kept for the parsers to judge.
fn read_text(file: &Path) -> Result<Option<String>> {
    match fs::read(file) {
        Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(file, &e)),
    }
}

/// A CPU list file, or `None` when it does not exist.
fn read_list(file: &Path) -> Result<Option<CpuSet>> {
    read_text(file)?
        .map(|text| CpuSet::parse_list(&text).map_err(|e| sysfs_error(file, e.to_string())))
        .transpose()
}

/// A CPU mask file, or `None` when it does not exist.
fn read_mask(file: &Path) -> Result<Option<CpuSet>> {
    read_text(file)?
        .map(|text| CpuSet::parse_mask(&text).map_err(|e| sysfs_error(file, e.to_string())))
        .transpose()
}

/// The set in `dir/list` (list form) or else `dir/mask` (mask form); `None` when neither exists.
fn read_set(dir: &Path, list: &str, mask: &str) -> Result<Option<CpuSet>> {
    match read_list(&dir.join(list))? {
        Some(set) => Ok(Some(set)),
        None => read_mask(&dir.join(mask)),
    }
}

/// A whole number file (`level`, `online`, `physical_package_id`), or `None` when it does not
/// exist or is empty.
fn read_int(file: &Path) -> Result<Option<i64>> {
    let Some(text) = read_text(file)? else {
        return Ok(None);
    };
    let clean: String = text.chars().filter(|&c| c != '\0').collect();
    let clean = clean.trim();
    if clean.is_empty() {
        // Some snapshots (and some kernels) leave these files empty: no information.
        return Ok(None);
    }
    clean.parse().map(Some).map_err(|_| {
        sysfs_error(
            file,
            format!(
                "'{}' is not a whole number; expected a number such as 0 or 3",
                clean.escape_debug()
            ),
        )
    })
}

/// An [`Error::Sysfs`] for `path`.
fn sysfs_error(path: &Path, reason: impl Into<String>) -> Error {
    Error::Sysfs {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

/// An [`Error::Sysfs`] for an I/O error on `path`.
fn io_error(path: &Path, err: &io::Error) -> Error {
    sysfs_error(path, format!("cannot be read: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flat_machine_is_one_cache_domain_of_single_cpu_cores() {
        let cpus: CpuSet = [0, 2, 5].into_iter().collect();
        let topo = flat_machine(&cpus, "no /sys here".into()).unwrap();
        assert_eq!(topo.cpu_set(), cpus);
        assert_eq!(topo.core_count(), 3);
        assert_eq!(topo.cache_domains().len(), 1);
        assert_eq!(topo.cpu(5).unwrap().cache_cpus, cpus);
        assert_eq!(topo.source(), "this machine");
        let words = topo.fallbacks()[0].to_string();
        assert!(words.contains("no /sys here"), "{words}");
        let err = flat_machine(&CpuSet::new(), "no /sys here".into()).unwrap_err();
        assert!(matches!(err, Error::NoUsableCpus { .. }));
    }
}
