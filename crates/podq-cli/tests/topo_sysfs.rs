//! `podq topo --sysfs`: a sysfs tree generated here, and, when the project's shared folder of
//! real machines is present, every one of them against its reference answer.

mod cli_support;
#[path = "../../podq/tests/machines/mod.rs"]
mod machines;

use std::fs;
use std::path::Path;

use cli_support::{
    assert_one_line_error, pod_lists, podq_json, podq_ok, scope_pods, topo_sysfs_json,
};
use serde_json::Value;

/// Writes `text` to `root/rel`, creating folders on the way.
fn put(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// How the generated machine's CPU sets are written.
#[derive(Clone, Copy, PartialEq)]
enum Sets {
    /// `*_list` files (`0,8`), as current kernels write them.
    Lists,
    /// Only hex masks (`00000101`), as old kernels write them, with a NUL and no newline.
    Masks,
}

/// A CPU set as a 32-bit hex mask.
fn mask(cpus: &[usize]) -> String {
    let bits = cpus.iter().fold(0u32, |m, &c| m | (1 << c));
    format!("{bits:08x}\0")
}

/// A CPU set as a CPU list (`0,8`), with a trailing newline.
fn list(cpus: &[usize]) -> String {
    let parts: Vec<String> = cpus.iter().map(ToString::to_string).collect();
    format!("{}\n", parts.join(","))
}

/// Writes the sysfs tree of a 16-CPU machine under `root`: 2 packages (one node and one L3
/// each) of 4 cores with 2 SMT siblings; CPU `c` and `c + 8` share a core. The CPUs in
/// `offline` are marked offline.
fn write_machine(root: &Path, sets: Sets, offline: &[usize]) {
    let set = |name: &str, cpus: &[usize]| -> (String, String) {
        match sets {
            Sets::Lists => (format!("{name}_list"), list(cpus)),
            Sets::Masks => (
                match name {
                    "shared_cpu" => "shared_cpu_map".to_owned(),
                    "core_cpus" => "thread_siblings".to_owned(),
                    other => other.to_owned(),
                },
                mask(cpus),
            ),
        }
    };
    let online: Vec<usize> = (0..16).filter(|c| !offline.contains(c)).collect();
    put(root, "sys/devices/system/cpu/online", &list(&online));
    put(root, "sys/devices/system/cpu/possible", "0-15\n");
    for cpu in 0..16 {
        let dir = format!("sys/devices/system/cpu/cpu{cpu}");
        let core = cpu % 8;
        let package = core / 4;
        let siblings = [core, core + 8];
        let llc: Vec<usize> = (0..16).filter(|c| (c % 8) / 4 == package).collect();
        if offline.contains(&cpu) {
            put(root, &format!("{dir}/online"), "0\n");
            continue;
        }
        put(root, &format!("{dir}/online"), "1\n");
        let (name, text) = set("core_cpus", &siblings);
        put(root, &format!("{dir}/topology/{name}"), &text);
        put(
            root,
            &format!("{dir}/topology/physical_package_id"),
            &format!("{package}\n"),
        );
        put(
            root,
            &format!("{dir}/topology/core_id"),
            &format!("{core}\n"),
        );
        for (index, level, kind, cpus) in [
            (0, 1, "Data", &siblings[..]),
            (1, 1, "Instruction", &siblings[..]),
            (2, 2, "Unified", &siblings[..]),
            (3, 3, "Unified", &llc[..]),
        ] {
            let cache = format!("{dir}/cache/index{index}");
            put(root, &format!("{cache}/level"), &format!("{level}\n"));
            put(root, &format!("{cache}/type"), &format!("{kind}\n"));
            let (name, text) = set("shared_cpu", cpus);
            put(root, &format!("{cache}/{name}"), &text);
        }
    }
    for node in 0..2 {
        let cpus: Vec<usize> = (0..16).filter(|c| (c % 8) / 4 == node).collect();
        let (name, text) = match sets {
            Sets::Lists => ("cpulist", list(&cpus)),
            Sets::Masks => ("cpumap", mask(&cpus)),
        };
        put(
            root,
            &format!("sys/devices/system/node/node{node}/{name}"),
            &text,
        );
    }
}

/// Checks the pods of the generated machine with every CPU online.
fn check_full_machine(report: &Value) {
    assert_eq!(report["cpus"], Value::from((0..16).collect::<Vec<u64>>()));
    assert_eq!(scope_pods(report, "cpu").len(), 16);
    assert_eq!(
        scope_pods(report, "smt"),
        (0..8).map(|c| vec![c, c + 8]).collect::<Vec<_>>()
    );
    let packages = ["0-3,8-11", "4-7,12-15"];
    assert_eq!(pod_lists(report, "cache"), packages);
    assert_eq!(pod_lists(report, "cache_shard"), packages);
    assert_eq!(pod_lists(report, "numa"), packages);
    assert_eq!(pod_lists(report, "system"), ["0-15"]);
    let nodes: Vec<u64> = report["pods"]["numa"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["node"].as_u64().unwrap())
        .collect();
    assert_eq!(nodes, [0, 1]);
    assert_eq!(report["machine"]["cores"], 8);
    assert_eq!(report["machine"]["smt_width"], 2);
    assert_eq!(report["machine"]["cache_domains"][0]["level"], 3);
    assert_eq!(report["fallbacks"], Value::Array(vec![]));
}

#[test]
fn a_generated_tree_with_cpu_lists() {
    let dir = tempfile::tempdir().unwrap();
    write_machine(dir.path(), Sets::Lists, &[]);
    let report = topo_sysfs_json(dir.path(), &[]);
    check_full_machine(&report);
    assert_eq!(report["source"], dir.path().to_str().unwrap());
    // Shards of 2 cores split each cache domain in two, siblings staying together.
    let report = topo_sysfs_json(dir.path(), &["--shard-size", "2"]);
    assert_eq!(
        pod_lists(&report, "cache_shard"),
        ["0-1,8-9", "2-3,10-11", "4-5,12-13", "6-7,14-15"]
    );
}

#[test]
fn a_generated_tree_with_masks_only() {
    let dir = tempfile::tempdir().unwrap();
    write_machine(dir.path(), Sets::Masks, &[]);
    check_full_machine(&topo_sysfs_json(dir.path(), &[]));
}

#[test]
fn offline_cpus_are_in_no_pod() {
    let dir = tempfile::tempdir().unwrap();
    write_machine(dir.path(), Sets::Lists, &[5, 15]);
    let report = topo_sysfs_json(dir.path(), &[]);
    let cpus: Vec<u64> = (0..16).filter(|c| *c != 5 && *c != 15).collect();
    assert_eq!(report["cpus"], Value::from(cpus));
    assert_eq!(pod_lists(&report, "cache"), ["0-3,8-11", "4,6-7,12-14"]);
    assert!(scope_pods(&report, "smt").contains(&vec![7]));
    assert!(scope_pods(&report, "smt").contains(&vec![13]));
}

#[test]
fn an_unpacked_snapshot_folder_is_accepted_as_it_comes() {
    // Snapshots unpack into one top folder that holds `sys/`.
    let dir = tempfile::tempdir().unwrap();
    write_machine(&dir.path().join("my-machine"), Sets::Lists, &[]);
    let report = topo_sysfs_json(dir.path(), &[]);
    check_full_machine(&report);
    assert!(report["source"].as_str().unwrap().ends_with("my-machine"));
}

#[test]
fn podq_sim_reads_an_unpacked_snapshot_folder_as_podq_topo_does() {
    let dir = tempfile::tempdir().unwrap();
    write_machine(&dir.path().join("my-machine"), Sets::Lists, &[]);
    let path = dir.path().to_str().unwrap();
    let sim = podq_json(&[
        "sim",
        "--sysfs",
        path,
        "--scopes",
        "cache",
        "--items",
        "50",
        "--uncertainty",
        "0",
        "--json",
    ]);
    assert_eq!(sim["machine"]["cpus"], 16, "{sim}");
    assert_eq!(sim["machine"]["cache_domains"], 2, "{sim}");
}

#[test]
fn the_text_report_of_a_tree_names_it() {
    let dir = tempfile::tempdir().unwrap();
    write_machine(dir.path(), Sets::Lists, &[]);
    let text = podq_ok(&["topo", "--sysfs", dir.path().to_str().unwrap()]);
    assert!(
        text.starts_with(&format!("source         {}", dir.path().display())),
        "{text}"
    );
    assert!(
        text.contains("nodes          2: 0-3,8-11 (node 0)  4-7,12-15 (node 1)"),
        "{text}"
    );
    assert!(text.contains("cores          8 (SMT width 2)"), "{text}");
}

#[test]
fn a_tree_without_cache_information_says_so() {
    let dir = tempfile::tempdir().unwrap();
    write_machine(dir.path(), Sets::Lists, &[]);
    for cpu in 0..16 {
        fs::remove_dir_all(
            dir.path()
                .join(format!("sys/devices/system/cpu/cpu{cpu}/cache")),
        )
        .unwrap();
    }
    let report = topo_sysfs_json(dir.path(), &[]);
    // The packages stand in for the cache domains, and the report says so.
    assert_eq!(pod_lists(&report, "cache"), ["0-3,8-11", "4-7,12-15"]);
    assert_eq!(report["machine"]["cache_domains"][0]["level"], Value::Null);
    let fallbacks = report["fallbacks"].as_array().unwrap();
    assert!(
        fallbacks
            .iter()
            .any(|f| f.as_str().unwrap().contains("package")),
        "{fallbacks:?}"
    );
    let text = podq_ok(&["topo", "--sysfs", dir.path().to_str().unwrap()]);
    let line = text.lines().find(|l| l.starts_with("fallbacks")).unwrap();
    assert!(line.contains("package"), "{line}");
}

#[test]
fn a_garbage_cpu_list_is_unusable_data() {
    let dir = tempfile::tempdir().unwrap();
    write_machine(dir.path(), Sets::Lists, &[]);
    put(
        dir.path(),
        "sys/devices/system/cpu/cpu3/topology/core_cpus_list",
        "three and eleven\n",
    );
    let path = dir.path().to_str().unwrap();
    assert_one_line_error(&["topo", "--sysfs", path], 1, &["core_cpus_list"]);
}

#[test]
fn real_machines_match_their_reference_answers() {
    let Some(machines) = machines::machines() else {
        return;
    };
    let mut failures = Vec::new();
    for machine in &machines {
        let name = &machine.name;
        let expected = machine.expected();
        let (scratch, _root) = machine.unpack().unwrap_or_else(|e| panic!("{e}"));
        // Pass the folder the archive unpacked into: podq finds its one top folder.
        let report = topo_sysfs_json(scratch.path(), &[]);
        if report["cpus"] != expected["cpus"] {
            failures.push(format!(
                "{name}: cpus {} != {}",
                report["cpus"], expected["cpus"]
            ));
        }
        if report["scopes"] != expected["scopes"] {
            let scopes: Vec<&String> = expected["scopes"]
                .as_object()
                .unwrap()
                .keys()
                .filter(|s| report["scopes"][s.as_str()] != expected["scopes"][s.as_str()])
                .collect();
            failures.push(format!("{name}: scopes {scopes:?} differ"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    println!(
        "{} real machines match their reference answers",
        machines.len()
    );
}
