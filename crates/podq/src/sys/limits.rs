//! [`SystemLimits`]: the CPUs this process may use now, from the OS: the online CPUs, the
//! cgroup's effective cpuset and the main thread's affinity.
//!
//! The files are read under a root folder (`/` for this machine), so that tests read fixtures
//! exactly as this machine is read:
//!
//! * `sys/devices/system/cpu/online`: the online CPUs (hotplug);
//! * `proc/self/cgroup`: the process's cgroup. Under cgroup v2 (the line `0::/path`),
//!   `sys/fs/cgroup/path/cpuset.cpus.effective`, or that of the nearest parent that has one
//!   (a cgroup whose cpuset controller is off has none). Under cgroup v1 (a line
//!   `N:...cpuset...:/path`), `sys/fs/cgroup/cpuset/path/cpuset.effective_cpus` (or
//!   `cpuset.cpus`), likewise up the path.
//!
//! A file that is missing limits nothing. The main thread's affinity (`taskset -p`) is read
//! from the OS ([`super::process_allowed_cpus`]), whatever the root.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::cpuset::CpuSet;

/// The CPUs this process may use now, as the OS says: the online CPUs, the cgroup's effective
/// cpuset and the main thread's affinity, intersected. The files are read under a root folder
/// (`/` for this machine; a fixture in tests).
///
/// It is what every workqueue follows unless its builder was given another
/// [`CpuLimits`](crate::limits::CpuLimits).
#[derive(Clone, Debug)]
pub struct SystemLimits {
    /// The folder holding `sys/` and `proc/`.
    root: PathBuf,
}

impl SystemLimits {
    /// Limits read under `root` (a folder holding `sys/devices/system/cpu/online`,
    /// `proc/self/cgroup` and `sys/fs/cgroup`), and the main thread's affinity.
    pub fn new(root: impl Into<PathBuf>) -> SystemLimits {
        SystemLimits { root: root.into() }
    }

    /// This machine's limits: the files under `/`.
    pub fn this_machine() -> SystemLimits {
        SystemLimits::new("/")
    }

    /// The folder the files are read under.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The CPUs the process may use now: online, in the cgroup's effective cpuset, and in the
    /// main thread's affinity.
    ///
    /// # Errors
    ///
    /// A file that exists but cannot be read or parsed, or an affinity the OS does not give.
    pub fn allowed(&self) -> io::Result<CpuSet> {
        let affinity: CpuSet = super::process_allowed_cpus()?.into_iter().collect();
        Ok(match self.from_files()? {
            Some(files) => files.intersection(&affinity),
            None => affinity,
        })
    }

    /// The online CPUs and the cgroup's effective cpuset, intersected; `None` when neither
    /// file exists.
    ///
    /// # Errors
    ///
    /// A file that exists but cannot be read or parsed.
    pub fn from_files(&self) -> io::Result<Option<CpuSet>> {
        let online = read_list(&self.root.join("sys/devices/system/cpu/online"))?;
        let cgroup = self.cgroup_cpus()?;
        Ok(match (online, cgroup) {
            (Some(a), Some(b)) => Some(a.intersection(&b)),
            (a, b) => a.or(b),
        })
    }

    /// The effective cpuset of the process's cgroup, v2 first, then v1; `None` when the
    /// process is in no cgroup with a cpuset.
    fn cgroup_cpus(&self) -> io::Result<Option<CpuSet>> {
        let Some(text) = read_text(&self.root.join("proc/self/cgroup"))? else {
            return Ok(None);
        };
        let fs_root = self.root.join("sys/fs/cgroup");
        for line in text.lines() {
            let mut fields = line.splitn(3, ':');
            let (Some(id), Some(controllers), Some(path)) =
                (fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            if id == "0" && controllers.is_empty() {
                if let Some(set) = up_the_path(&fs_root, path, &["cpuset.cpus.effective"])? {
                    return Ok(Some(set));
                }
            } else if controllers.split(',').any(|c| c == "cpuset") {
                let v1 = fs_root.join("cpuset");
                let names = ["cpuset.effective_cpus", "cpuset.cpus"];
                if let Some(set) = up_the_path(&v1, path, &names)? {
                    return Ok(Some(set));
                }
            }
        }
        Ok(None)
    }
}

impl Default for SystemLimits {
    fn default() -> Self {
        SystemLimits::this_machine()
    }
}

/// The first of `names` found in the cgroup folder `path` under `fs_root`, or in the nearest
/// parent folder that has one. An empty file (a v2 cgroup whose cpuset is not set) is passed
/// over as missing.
fn up_the_path(fs_root: &Path, path: &str, names: &[&str]) -> io::Result<Option<CpuSet>> {
    let mut dir = fs_root.join(path.trim_start_matches('/'));
    loop {
        for name in names {
            if let Some(set) = read_list(&dir.join(name))?.filter(|s| !s.is_empty()) {
                return Ok(Some(set));
            }
        }
        if dir == fs_root || !dir.pop() || !dir.starts_with(fs_root) {
            return Ok(None);
        }
    }
}

/// The text of `file`, or `None` when it does not exist.
fn read_text(file: &Path) -> io::Result<Option<String>> {
    match fs::read_to_string(file) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// A CPU list file (`0-3,8`), or `None` when it does not exist. An empty file is an empty set.
fn read_list(file: &Path) -> io::Result<Option<CpuSet>> {
    let Some(text) = read_text(file)? else {
        return Ok(None);
    };
    if text.trim().is_empty() {
        return Ok(Some(CpuSet::new()));
    }
    CpuSet::parse_list(text.trim()).map(Some).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {e}", file.display()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixture root holding `files` (path, text).
    fn root(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        for (path, text) in files {
            let file = dir.path().join(path);
            fs::create_dir_all(file.parent().unwrap()).unwrap();
            fs::write(file, text).unwrap();
        }
        dir
    }

    fn set(list: &str) -> Option<CpuSet> {
        Some(CpuSet::parse_list(list).unwrap())
    }

    #[test]
    fn online_and_the_v2_cpuset_are_intersected() {
        let dir = root(&[
            ("sys/devices/system/cpu/online", "0-7\n"),
            ("proc/self/cgroup", "0::/app/web\n"),
            ("sys/fs/cgroup/app/web/cpuset.cpus.effective", "2-9\n"),
        ]);
        let limits = SystemLimits::new(dir.path());
        assert_eq!(limits.from_files().unwrap(), set("2-7"));
    }

    #[test]
    fn a_v2_cgroup_without_a_cpuset_takes_its_nearest_parents() {
        let dir = root(&[
            ("proc/self/cgroup", "0::/app/web\n"),
            ("sys/fs/cgroup/app/cpuset.cpus.effective", "1,3\n"),
            ("sys/fs/cgroup/app/web/cpuset.cpus.effective", "\n"),
            ("sys/fs/cgroup/cpuset.cpus.effective", "0-3\n"),
        ]);
        let limits = SystemLimits::new(dir.path());
        assert_eq!(limits.from_files().unwrap(), set("1,3"));
    }

    #[test]
    fn a_v1_cpuset_is_read_from_its_controller() {
        let dir = root(&[
            (
                "proc/self/cgroup",
                "12:memory:/x\n5:cpuset,cpu:/box\n0::/ignored\n",
            ),
            ("sys/fs/cgroup/cpuset/box/cpuset.effective_cpus", "4-5\n"),
        ]);
        let limits = SystemLimits::new(dir.path());
        assert_eq!(limits.from_files().unwrap(), set("4-5"));
    }

    #[test]
    fn missing_files_limit_nothing_and_bad_ones_are_errors() {
        let empty = root(&[]);
        assert_eq!(SystemLimits::new(empty.path()).from_files().unwrap(), None);
        let bad = root(&[("sys/devices/system/cpu/online", "0-x\n")]);
        assert!(SystemLimits::new(bad.path()).from_files().is_err());
    }

    #[test]
    fn this_machine_allows_the_calling_process_some_cpu() {
        let allowed = SystemLimits::this_machine().allowed().expect("limits");
        assert!(!allowed.is_empty());
    }
}
