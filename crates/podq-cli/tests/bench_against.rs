//! `podq bench --json` records the machine's layout (`machine.topology`) and `podq sim
//! --against` rebuilds it from that record: the same pods per scope, and one prediction per
//! measured podq row beside its measurement.

mod cli_support;

use cli_support::{against_json, podq_ok};

#[test]
fn a_bench_report_rebuilds_in_the_simulator_with_its_pods() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.json");
    let bench = podq_ok(&[
        "bench",
        "--items",
        "100",
        "--runs",
        "1",
        "--workload",
        "flood",
        "--json",
    ]);
    std::fs::write(&path, &bench).unwrap();
    let report: serde_json::Value = serde_json::from_str(&bench).unwrap();
    let topology = &report["machine"]["topology"];
    let description = topology["description"].as_str().expect("a description");
    assert!(description.starts_with("sockets="), "{topology}");
    assert!(topology["smt"].as_u64().unwrap() >= 1, "{topology}");
    let pods = topology["pods"].as_object().unwrap();
    assert_eq!(pods.len(), 6, "{topology}");
    assert_eq!(
        pods["cpu"].as_u64().unwrap(),
        report["machine"]["cpus"].as_u64().unwrap(),
        "{topology}"
    );
    let podq_rows = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["system"] == "podq")
        .count();
    let rebuilt = against_json(path.to_str().unwrap(), &[]);
    assert_eq!(rebuilt["description"], description);
    let notes = rebuilt["notes"].as_array().unwrap();
    assert!(notes.is_empty(), "the rebuild forms other pods: {notes:?}");
    assert_eq!(rebuilt["cells"].as_array().unwrap().len(), podq_rows);
    let costs = rebuilt["costs"].as_str().unwrap();
    assert!(
        costs.contains("not fitted to this machine") && costs.contains("--calibrate"),
        "uncalibrated costs must say so and name the way to fit them: {costs}"
    );
    // The model string's clock, where it states one, against the kernel costs' (Grace's).
    let mut stated = report.clone();
    stated["machine"]["model"] = "Intel(R) Xeon(R) Platinum 8321HC CPU @ 1.40GHz".into();
    std::fs::write(&path, stated.to_string()).unwrap();
    let clocked = against_json(path.to_str().unwrap(), &[]);
    assert_eq!(clocked["family"], "xeon-8321hc");
    assert_eq!(clocked["clock_ghz"], 1.4);
    let factor = clocked["work_factor"].as_f64().unwrap();
    assert!((factor - 3.0816 / 1.4).abs() < 0.01, "{factor}");
    stated["machine"]["model"] = "Intel(R) Xeon(R) Processor".into();
    std::fs::write(&path, stated.to_string()).unwrap();
    let unstated = against_json(path.to_str().unwrap(), &[]);
    assert!(unstated["clock_ghz"].is_null(), "{}", unstated["clock_ghz"]);
    assert_eq!(unstated["work_factor"], 1.0);
}
