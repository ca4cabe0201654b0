//! Reading sysfs trees written by the tests: list and mask forms, NULs, offline CPUs, missing
//! information and garbage.

use std::fs;
use std::path::{Path, PathBuf};

use podq::topology::Fallback;
use podq::{AffinityScope, CpuSet, Error, Pods, Topology};

/// A sysfs tree in a temporary folder.
struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new() -> Tree {
        let tree = Tree {
            dir: tempfile::tempdir().expect("tempdir"),
        };
        fs::create_dir_all(tree.cpu_dir()).unwrap();
        tree
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn cpu_dir(&self) -> PathBuf {
        self.root().join("sys/devices/system/cpu")
    }

    /// Writes `contents` to `rel` (relative to `sys/devices/system`).
    fn file(&self, rel: &str, contents: &str) -> &Tree {
        let path = self.root().join("sys/devices/system").join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, contents).unwrap();
        self
    }

    /// A CPU with a topology folder, its core as a list, and a package.
    fn cpu(&self, id: usize, core: &str, package: i64) -> &Tree {
        self.file(
            &format!("cpu/cpu{id}/topology/core_cpus_list"),
            &format!("{core}\n"),
        )
        .file(
            &format!("cpu/cpu{id}/topology/physical_package_id"),
            &format!("{package}\n"),
        )
    }

    /// Cache `index` of CPU `id`, sharing given as a list.
    fn cache(&self, id: usize, index: usize, level: u8, kind: &str, list: &str) -> &Tree {
        let dir = format!("cpu/cpu{id}/cache/index{index}");
        self.file(&format!("{dir}/level"), &format!("{level}\n"))
            .file(&format!("{dir}/type"), &format!("{kind}\n"))
            .file(&format!("{dir}/shared_cpu_list"), &format!("{list}\n"))
    }

    fn read(&self) -> podq::error::Result<Topology> {
        Topology::from_sysfs(self.root())
    }
}

fn set(list: &str) -> CpuSet {
    CpuSet::parse_list(list).unwrap()
}

fn pods(topo: &Topology, scope: AffinityScope) -> Vec<String> {
    Pods::new(topo, scope, 8)
        .unwrap()
        .pods()
        .iter()
        .map(|p| p.cpus().to_string())
        .collect()
}

/// Four CPUs, two cores (0,2 and 1,3), L1d per core, L2 unified per core, L3 for all.
fn smt_box(tree: &Tree) {
    tree.file("cpu/online", "0-3\n");
    for id in 0..4 {
        let core = if id % 2 == 0 { "0,2" } else { "1,3" };
        tree.cpu(id, core, 0)
            .cache(id, 0, 1, "Data", core)
            .cache(id, 1, 1, "Instruction", core)
            .cache(id, 2, 2, "Unified", core)
            .cache(id, 3, 3, "Unified", "0-3");
    }
}

#[test]
fn reads_list_form() {
    let tree = Tree::new();
    smt_box(&tree);
    let topo = tree.read().unwrap();
    assert_eq!(topo.cpu_set(), set("0-3"));
    let cpu2 = topo.cpu(2).unwrap();
    assert_eq!(*cpu2.core_cpus(), set("0,2"));
    assert_eq!(*cpu2.cache_cpus(), set("0-3"));
    assert_eq!(cpu2.cache_level(), Some(3));
    assert_eq!(cpu2.package(), 0);
    assert_eq!(cpu2.node(), 0);
    assert_eq!(cpu2.cluster_cpus(), None);
    assert!(topo.fallbacks().is_empty(), "{:?}", topo.fallbacks());
    assert_eq!(topo.core_count(), 2);
    assert_eq!(topo.smt_width(), 2);
    assert_eq!(pods(&topo, AffinityScope::Smt), ["0,2", "1,3"]);
    assert_eq!(pods(&topo, AffinityScope::Cache), ["0-3"]);
    assert_eq!(topo.source(), tree.root().display().to_string());
}

#[test]
fn reads_mask_form_with_nuls_and_newlines() {
    let tree = Tree::new();
    tree.file("cpu/online", "0-3\0\n");
    for id in 0..4 {
        let core = if id < 2 {
            "00000000,00000003\0\n"
        } else {
            "00000000,0000000c\n\n"
        };
        let dir = format!("cpu/cpu{id}");
        tree.file(&format!("{dir}/topology/thread_siblings"), core)
            .file(&format!("{dir}/topology/physical_package_id"), "0\0")
            .file(&format!("{dir}/cache/index0/level"), "2\n")
            .file(&format!("{dir}/cache/index0/type"), "Unified\0\n")
            .file(
                &format!("{dir}/cache/index0/shared_cpu_map"),
                "0000000f\0\0\n",
            );
    }
    tree.file("node/node0/cpumap", "00000000,00000003\n")
        .file("node/node1/cpumap", "0000000c\0\n");
    let topo = tree.read().unwrap();
    assert_eq!(*topo.cpu(1).unwrap().core_cpus(), set("0-1"));
    assert_eq!(*topo.cpu(3).unwrap().core_cpus(), set("2-3"));
    assert_eq!(*topo.cpu(3).unwrap().cache_cpus(), set("0-3"));
    assert_eq!(topo.cpu(3).unwrap().cache_level(), Some(2));
    assert_eq!(topo.node_ids(), vec![0, 1]);
    assert_eq!(topo.node_cpus(1), set("2-3"));
    assert_eq!(pods(&topo, AffinityScope::Numa), ["0-1", "2-3"]);
    assert!(topo.fallbacks().is_empty());
}

#[test]
fn list_form_wins_over_mask_form() {
    let tree = Tree::new();
    tree.cpu(0, "0", 0)
        .file(
            "cpu/cpu0/topology/core_cpus",
            "garbage that is never read\n",
        )
        .cache(0, 0, 3, "Unified", "0");
    let topo = tree.read().unwrap();
    assert_eq!(*topo.cpu(0).unwrap().core_cpus(), set("0"));
}

#[test]
fn offline_cpus_and_cpus_without_topology_are_not_usable() {
    let tree = Tree::new();
    smt_box(&tree);
    // cpu1 is offline by its own file, cpu3 is outside cpu/online, cpu4 has no topology folder.
    tree.file("cpu/online", "0-2,4\n")
        .file("cpu/cpu1/online", "0\n")
        .file("cpu/cpu2/online", "1\n")
        .file("cpu/cpu4/online", "1\n");
    let topo = tree.read().unwrap();
    assert_eq!(topo.cpu_set(), set("0,2"));
    assert!(topo.cpu(1).is_none() && topo.cpu(3).is_none() && topo.cpu(4).is_none());
    // Sets are cut down to the usable CPUs.
    assert_eq!(*topo.cpu(0).unwrap().cache_cpus(), set("0,2"));
    assert_eq!(pods(&topo, AffinityScope::Cpu), ["0", "2"]);
    assert_eq!(pods(&topo, AffinityScope::Smt), ["0,2"]);
}

#[test]
fn without_an_online_list_every_cpu_folder_counts() {
    let tree = Tree::new();
    smt_box(&tree);
    fs::remove_file(tree.cpu_dir().join("online")).unwrap();
    // An empty per-CPU online file (seen in snapshots) means "no information", not offline.
    tree.file("cpu/cpu3/online", "");
    assert_eq!(tree.read().unwrap().cpu_set(), set("0-3"));
}

#[test]
fn missing_caches_fall_back_to_the_package() {
    let tree = Tree::new();
    for id in 0..4 {
        tree.cpu(id, &id.to_string(), i64::from(id >= 2));
    }
    // cpu3 has an L1 only; its package still stands in, as an L1 is not shared.
    tree.cache(3, 0, 1, "Instruction", "3");
    let topo = tree.read().unwrap();
    assert_eq!(*topo.cpu(0).unwrap().cache_cpus(), set("0-1"));
    assert_eq!(topo.cpu(0).unwrap().cache_level(), None);
    assert_eq!(pods(&topo, AffinityScope::Cache), ["0-1", "2-3"]);
    assert_eq!(
        topo.fallbacks(),
        [Fallback::PackageForCache { cpus: set("0-3") }]
    );
    let words = topo.fallbacks()[0].to_string();
    assert!(
        words.contains("0-3") && words.contains("package"),
        "{words}"
    );
    assert_eq!(topo.package_ids(), vec![0, 1]);
}

#[test]
fn an_unknown_cache_sharing_defers_to_the_level_below() {
    let tree = Tree::new();
    for id in 0..4 {
        let pair = if id < 2 { "0-1" } else { "2-3" };
        tree.cpu(id, &id.to_string(), 0)
            .cache(id, 0, 2, "Data", pair)
            .file(&format!("cpu/cpu{id}/cache/index1/level"), "3\n")
            .file(&format!("cpu/cpu{id}/cache/index1/type"), "Unified\n")
            .file(
                &format!("cpu/cpu{id}/cache/index1/shared_cpu_map"),
                "00000000,00000000\n",
            );
    }
    let topo = tree.read().unwrap();
    assert_eq!(topo.cpu(0).unwrap().cache_level(), Some(2));
    assert_eq!(pods(&topo, AffinityScope::Cache), ["0-1", "2-3"]);
}

#[test]
fn missing_core_information_makes_each_cpu_its_own_core() {
    let tree = Tree::new();
    for id in 0..2 {
        tree.file(&format!("cpu/cpu{id}/topology/physical_package_id"), "0\n")
            .cache(id, 0, 3, "Unified", "0-1");
    }
    let topo = tree.read().unwrap();
    assert_eq!(*topo.cpu(1).unwrap().core_cpus(), set("1"));
    assert_eq!(
        topo.fallbacks(),
        [Fallback::CpuForCore { cpus: set("0-1") }]
    );
    assert!(topo.fallbacks()[0].to_string().contains("own core"));
    // No physical_package_id either: the kernel's "unknown" package.
    fs::remove_file(tree.cpu_dir().join("cpu0/topology/physical_package_id")).unwrap();
    assert_eq!(tree.read().unwrap().cpu(0).unwrap().package(), -1);
}

#[test]
fn every_set_holds_its_own_cpu() {
    let tree = Tree::new();
    // Broken files that leave the CPU out of its own sets.
    tree.cpu(0, "1", 0).cache(0, 0, 3, "Unified", "1");
    tree.cpu(1, "1", 0).cache(1, 0, 3, "Unified", "1");
    let topo = tree.read().unwrap();
    assert_eq!(*topo.cpu(0).unwrap().core_cpus(), set("0-1"));
    assert_eq!(*topo.cpu(0).unwrap().cache_cpus(), set("0-1"));
    for scope in AffinityScope::ALL {
        let pods = Pods::new(&topo, scope, 8).unwrap();
        assert!(pods.pod_of(0).is_some() && pods.pod_of(1).is_some());
    }
}

#[test]
fn sparse_cpu_numbers() {
    let tree = Tree::new();
    tree.file("cpu/online", "0,4,8,100\n");
    for id in [0, 4, 8, 100] {
        let core = if id < 8 { "0,4" } else { "8,100" };
        tree.cpu(id, core, 0)
            .cache(id, 0, 3, "Unified", "0,4,8,100");
    }
    tree.file("node/node0/cpulist", "0,4\n")
        .file("node/node2/cpulist", "8,100\n")
        .file("node/node1/cpulist", "\n");
    let topo = tree.read().unwrap();
    assert_eq!(topo.cpu_set(), set("0,4,8,100"));
    assert_eq!(topo.node_ids(), vec![0, 2]);
    assert_eq!(topo.cpu(100).unwrap().node(), 2);
    assert_eq!(pods(&topo, AffinityScope::Smt), ["0,4", "8,100"]);
    let p = Pods::new(&topo, AffinityScope::Numa, 8).unwrap();
    assert_eq!(p.pod_of(100), Some(1));
    assert_eq!(p.pods()[1].node(), Some(2));
    assert_eq!(p.pod_of(5), None);
    assert_eq!(p.pod_of(100_000), None);
}

#[test]
fn cpus_in_no_node_are_put_on_node_zero() {
    let tree = Tree::new();
    smt_box(&tree);
    tree.file("node/node1/cpulist", "0-2\n");
    let topo = tree.read().unwrap();
    assert_eq!(topo.cpu(0).unwrap().node(), 1);
    assert_eq!(topo.cpu(3).unwrap().node(), 0);
    assert_eq!(topo.fallbacks(), [Fallback::NodeZero { cpus: set("3") }]);
}

#[test]
fn clusters_are_read_where_present() {
    let tree = Tree::new();
    smt_box(&tree);
    for id in 0..4 {
        let cluster = if id < 2 { "00000003\n" } else { "0000000c\n" };
        tree.file(&format!("cpu/cpu{id}/topology/cluster_cpus"), cluster);
    }
    let topo = tree.read().unwrap();
    assert_eq!(topo.cpu(0).unwrap().cluster_cpus(), Some(&set("0-1")));
    assert_eq!(topo.clusters(), vec![set("0-1"), set("2-3")]);
}

#[test]
fn an_allowed_set_restricts_the_usable_cpus() {
    let tree = Tree::new();
    smt_box(&tree);
    let topo = Topology::from_sysfs_allowed(tree.root(), &set("1-3,9")).unwrap();
    assert_eq!(topo.cpu_set(), set("1-3"));
    assert_eq!(*topo.cpu(2).unwrap().core_cpus(), set("2"));
    assert_eq!(pods(&topo, AffinityScope::Smt), ["1,3", "2"]);
    assert_eq!(pods(&topo, AffinityScope::System), ["1-3"]);
    let err = Topology::from_sysfs_allowed(tree.root(), &set("7")).unwrap_err();
    assert!(matches!(err, Error::NoUsableCpus { .. }), "{err:?}");
}

#[test]
fn missing_folders_are_typed_errors() {
    let tree = Tree::new();
    let missing = tree.root().join("nope");
    let err = Topology::from_sysfs(&missing).unwrap_err();
    assert!(
        matches!(&err, Error::Sysfs { path, .. } if *path == missing),
        "{err:?}"
    );
    assert!(err.to_string().contains("sys/devices/system/cpu"), "{err}");

    let empty = tempfile::tempdir().unwrap();
    let err = Topology::from_sysfs(empty.path()).unwrap_err();
    assert!(matches!(err, Error::Sysfs { .. }), "{err:?}");
    assert!(err.to_string().contains("sys/devices/system/cpu"), "{err}");

    // A CPU folder with no CPU in it.
    let err = tree.read().unwrap_err();
    assert!(matches!(err, Error::NoUsableCpus { .. }), "{err:?}");
    // CPUs, but none online with a topology.
    tree.file("cpu/cpu0/online", "0\n")
        .file("cpu/cpu1/online", "1\n");
    let err = tree.read().unwrap_err();
    assert!(matches!(err, Error::NoUsableCpus { .. }), "{err:?}");
    assert!(err.to_string().contains("0-1"), "{err}");
}

#[test]
fn garbage_files_are_typed_errors_naming_the_file() {
    let cases: [(&str, &str, &str); 6] = [
        ("cpu/cpu1/topology/core_cpus_list", "zero-one\n", "CPU list"),
        ("cpu/cpu1/cache/index3/shared_cpu_list", "0-x\n", "CPU list"),
        ("cpu/cpu1/cache/index3/level", "three\n", "whole number"),
        ("cpu/online", "all of them\n", "CPU list"),
        ("cpu/cpu1/online", "yes\n", "whole number"),
        (
            "cpu/cpu1/topology/physical_package_id",
            "0x\n",
            "whole number",
        ),
    ];
    for (rel, junk, expected) in cases {
        let tree = Tree::new();
        smt_box(&tree);
        tree.file(rel, junk);
        let err = tree.read().unwrap_err();
        let Error::Sysfs { path, .. } = &err else {
            panic!("{rel}: {err:?}");
        };
        assert!(path.ends_with(rel), "{rel}: {}", path.display());
        let msg = err.to_string();
        assert!(msg.contains(rel) && msg.contains(expected), "{rel}: {msg}");
    }
    // A garbage mask, read because there is no list.
    let tree = Tree::new();
    smt_box(&tree);
    fs::remove_file(tree.cpu_dir().join("cpu0/topology/core_cpus_list")).unwrap();
    tree.file("cpu/cpu0/topology/core_cpus", "ffffzzzz\n");
    let err = tree.read().unwrap_err();
    assert!(err.to_string().contains("core_cpus") && err.to_string().contains("mask"));
}

#[test]
fn discover_reads_this_machine_within_the_allowed_cpus() {
    let topo = Topology::discover().expect("discover");
    assert!(!topo.cpus().is_empty());
    assert_eq!(topo.source(), "this machine");
    let allowed = podq::affinity::allowed_cpus().expect("allowed CPUs");
    assert!(
        topo.cpu_set().is_subset(&allowed),
        "{} not within {allowed}",
        topo.cpu_set()
    );
    for cpu in topo.cpus() {
        assert!(cpu.core_cpus().contains(cpu.id()) && cpu.cache_cpus().contains(cpu.id()));
        assert!(cpu.core_cpus().is_subset(&topo.cpu_set()));
    }
    for scope in AffinityScope::ALL {
        let pods = Pods::new(&topo, scope, 8).unwrap();
        assert!(topo.cpus().iter().all(|c| pods.pod_of(c.id()).is_some()));
    }
}
