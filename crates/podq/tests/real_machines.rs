//! Topology discovery and pod formation on real machines' sysfs snapshots.
//!
//! For every `NAME.tar.bz2` in the topologies folder (`PODQ_TOPOLOGIES`, or
//! `../shared/topologies` beside the project), unpack it, read it with `Topology::from_sysfs`,
//! form the pods of all six scopes at shard size 8, and compare with `expected/NAME.json`.
//! The folder is not part of the project: when it is absent the test says so and passes.

use std::collections::HashSet;
use std::fs::File;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use tar::EntryType;

use podq::scope::DEFAULT_SHARD_SIZE;
use podq::{AffinityScope, Pods, Topology};
use serde_json::Value;

/// The topologies folder: `PODQ_TOPOLOGIES` (which must exist when set), else
/// `../shared/topologies` beside the project when present.
fn topologies_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("PODQ_TOPOLOGIES") {
        let dir = PathBuf::from(dir);
        assert!(
            dir.is_dir(),
            "PODQ_TOPOLOGIES={} is not a folder",
            dir.display()
        );
        return Some(dir);
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/topologies");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "skipping: topologies folder {} not found (set PODQ_TOPOLOGIES to check real machines)",
            dir.display()
        );
        None
    }
}

/// The folder under `dir` that holds `sys/devices/system/cpu` (the tarball's top folder, whose
/// name may differ from the tarball's).
fn find_root(dir: &Path) -> Option<PathBuf> {
    if dir.join("sys/devices/system/cpu").is_dir() {
        return Some(dir.to_owned());
    }
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_dir() && !p.is_symlink())
        .collect();
    subdirs.sort();
    subdirs.iter().find_map(|d| {
        // The sysfs root is near the top; do not wander into sys/ itself.
        if d.file_name().is_some_and(|n| n == "sys") {
            None
        } else {
            find_root(d)
        }
    })
}

/// Folders and files under `sys/devices/system/` that topology discovery never reads: runtime
/// power management, frequency, idle states, memory tiers. Snapshots hold thousands of them, and
/// writing them out would be most of this test's time.
const NOT_TOPOLOGY: &[&str] = &[
    "power",
    "uevent",
    "cpufreq",
    "cpuidle",
    "hotplug",
    "microcode",
    "thermal_throttle",
    "hugepages",
    "memory_side_cache",
    "crash_notes",
    "crash_notes_size",
];

/// Unpacks the topology part of a `.tar.bz2` sysfs snapshot into `into`: the plain files and
/// folders under `sys/devices/system/`, less [`NOT_TOPOLOGY`]. Symbolic links (a node's links
/// to its CPUs, drivers, subsystems) are left out: discovery reads real files only.
///
/// Files are written directly rather than with `Entry::unpack_in`, whose path checks cost
/// dozens of system calls per entry, which over the snapshots' tens of thousands of entries
/// was most of this test's time.
fn unpack_system_folders(file: File, into: &Path) -> std::io::Result<()> {
    let mut archive = tar::Archive::new(bzip2::read::BzDecoder::new(file));
    let mut made: HashSet<PathBuf> = HashSet::new();
    for entry in archive.entries()? {
        let mut entry = entry?;
        let path = entry.path()?.into_owned();
        let text = path.to_string_lossy();
        let Some((_, inside)) = text.split_once("sys/devices/system/") else {
            continue;
        };
        if inside.split('/').any(|part| NOT_TOPOLOGY.contains(&part)) {
            continue;
        }
        if !path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(std::io::Error::other(format!(
                "entry {} leaves the archive's folder",
                path.display()
            )));
        }
        let target = into.join(&path);
        match entry.header().entry_type() {
            EntryType::Directory if made.insert(target.clone()) => {
                std::fs::create_dir_all(&target)?;
            }
            EntryType::Regular => {
                let parent = target.parent().expect("joined path has a parent");
                if made.insert(parent.to_owned()) {
                    std::fs::create_dir_all(parent)?;
                }
                std::io::copy(&mut entry, &mut File::create(&target)?)?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// The pods as sorted lists of CPU ids, in pod order.
fn pod_lists(pods: &Pods) -> Vec<Vec<usize>> {
    pods.pods()
        .iter()
        .map(|p| p.cpus.iter().collect())
        .collect()
}

/// Checks one machine; returns the differences found, in words.
fn check_machine(tarball: &Path, expected_file: &Path) -> Vec<String> {
    let name = tarball.file_name().unwrap().to_string_lossy().into_owned();
    let mut problems = Vec::new();
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = File::open(tarball).expect("open tarball");
    if let Err(e) = unpack_system_folders(file, tmp.path()) {
        return vec![format!("{name}: cannot unpack: {e}")];
    }
    let Some(root) = find_root(tmp.path()) else {
        return vec![format!("{name}: no folder holds sys/devices/system/cpu")];
    };
    let topo = match Topology::from_sysfs(&root) {
        Ok(topo) => topo,
        Err(e) => return vec![format!("{name}: from_sysfs failed: {e}")],
    };
    let expected: Value = match std::fs::read(expected_file) {
        Ok(bytes) => serde_json::from_slice(&bytes).expect("expected file is JSON"),
        Err(e) => return vec![format!("{name}: no {}: {e}", expected_file.display())],
    };
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
    let Some(dir) = topologies_dir() else {
        return;
    };
    let mut tarballs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read topologies folder")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".tar.bz2"))
        .collect();
    tarballs.sort();
    assert!(
        !tarballs.is_empty(),
        "{} holds no *.tar.bz2 machine",
        dir.display()
    );
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
                        let Some(tarball) = tarballs.get(i) else {
                            return mine;
                        };
                        let stem = tarball
                            .file_name()
                            .unwrap()
                            .to_string_lossy()
                            .trim_end_matches(".tar.bz2")
                            .to_owned();
                        let expected = dir.join("expected").join(format!("{stem}.json"));
                        mine.push((i, check_machine(tarball, &expected)));
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
        tarballs.len(),
        problems.join("\n")
    );
}
