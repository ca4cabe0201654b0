//! The shared folder of real machines' sysfs snapshots (`../shared/topologies`, or
//! `PODQ_TOPOLOGIES`), for the tests of both crates: the library's `real_machines.rs` and the
//! CLI's `topo_sysfs.rs`, which includes this file with `#[path]`. The folder is not part of the
//! project: when it is absent the tests say so and pass.

use std::collections::HashSet;
use std::fs::File;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;
use tar::EntryType;

/// One machine of the folder: its snapshot and its reference answer.
pub(crate) struct Machine {
    /// The tarball's name without `.tar.bz2`.
    pub(crate) name: String,
    /// The `.tar.bz2` sysfs snapshot.
    pub(crate) tarball: PathBuf,
    /// `expected/NAME.json`.
    pub(crate) expected: PathBuf,
}

impl Machine {
    /// The reference answer: `{"cpus": [...], "scopes": {...}}`.
    pub(crate) fn expected(&self) -> Value {
        let text = std::fs::read_to_string(&self.expected)
            .unwrap_or_else(|e| panic!("{}: {e}", self.expected.display()));
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{}: not JSON: {e}", self.expected.display()))
    }

    /// Unpacks the topology part of the snapshot into a fresh scratch folder; returns the
    /// folder and the root inside it that holds `sys/devices/system/cpu`.
    pub(crate) fn unpack(&self) -> Result<(tempfile::TempDir, PathBuf), String> {
        let scratch = scratch_dir();
        let file =
            File::open(&self.tarball).map_err(|e| format!("{}: cannot open: {e}", self.name))?;
        unpack_system_folders(file, scratch.path())
            .map_err(|e| format!("{}: cannot unpack: {e}", self.name))?;
        let root = find_root(scratch.path())
            .ok_or_else(|| format!("{}: no folder holds sys/devices/system/cpu", self.name))?;
        Ok((scratch, root))
    }
}

/// Every machine of the topologies folder, by name; `None` (after saying so) when the folder is
/// absent.
pub(crate) fn machines() -> Option<Vec<Machine>> {
    let dir = topologies_dir()?;
    let mut machines: Vec<Machine> = std::fs::read_dir(&dir)
        .expect("read topologies folder")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter_map(|tarball| {
            let name = tarball
                .file_name()?
                .to_str()?
                .strip_suffix(".tar.bz2")?
                .to_owned();
            let expected = dir.join("expected").join(format!("{name}.json"));
            Some(Machine {
                name,
                tarball,
                expected,
            })
        })
        .collect();
    machines.sort_by(|a, b| a.name.cmp(&b.name));
    assert!(
        !machines.is_empty(),
        "{} holds no *.tar.bz2 machine",
        dir.display()
    );
    Some(machines)
}

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
/// dozens of system calls per entry: over the snapshots' tens of thousands of entries, that
/// would be most of this test's time.
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

/// A fresh temporary folder, in memory (`/dev/shm`) where there is one: the snapshots are
/// thousands of small files.
fn scratch_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    shm.is_dir()
        .then(|| tempfile::tempdir_in(shm).ok())
        .flatten()
        .unwrap_or_else(|| tempfile::tempdir().expect("tempdir"))
}
