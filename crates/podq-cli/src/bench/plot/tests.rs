use super::legend::PEERS;
use super::*;
use crate::bench::measurement::{Percentiles, Summary};
use crate::bench::peers::Peer;
use crate::bench::system::System;

fn settings(workloads: Vec<Workload>, sweeping: bool) -> Settings {
    Settings {
        workloads,
        systems: Vec::new(),
        sweeping,
        producer_cpus: vec![0, 1],
        peer_workers: 2,
        items_given: Some(50_000),
        depth: 1_000,
        yields: 1_000,
        runs: 5,
        work_ns: None,
        mix: crate::bench::blocking::Mix::default(),
        pulls: vec![true],
        steers: vec![true],
        locality: crate::bench::locality::Plan::default(),
        default_peer_groups: 8,
        plot: None,
        json: false,
    }
}

fn machine() -> Machine {
    Machine {
        source: "test".into(),
        model: Some("Test CPU 9000".into()),
        kernel: Some("6.8.0".into()),
        usable_cpus: "0-1".into(),
        cpus: 2,
        cores: 1,
        cache_domains: 1,
        cache_level: Some(3),
        nodes: 1,
        fallbacks: Vec::new(),
        topology: Default::default(),
    }
}

fn row(workload: Workload, system: System, items_per_sec: f64, p50: u64) -> Row {
    Row {
        workload,
        system,
        summary: Summary {
            runs: 5,
            items_per_sec,
            items_per_sec_min: items_per_sec * 0.9,
            items_per_sec_max: items_per_sec * 1.1,
            queue: Percentiles {
                p50,
                p90: p50 * 2,
                p95: p50 * 3,
                p99: p50 * 4,
            },
            pools: system.scope().map(|_| 1),
            workers: system.scope().map(|_| 2),
            ..Summary::default()
        },
    }
}

fn cache_shard(shard_size: usize) -> System {
    System::Podq {
        scope: podq::AffinityScope::CacheShard,
        shard_size,
        pull: true,
        steer: true,
    }
}

fn drawn(rows: &[Row], settings: &Settings) -> String {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("plot.svg");
    draw(&path, rows, settings, &machine()).expect("drawn");
    std::fs::read_to_string(&path).expect("written")
}

#[test]
fn numbers_read_with_k_m_and_thousands_separators() {
    assert_eq!(si(&0.0), "0");
    assert_eq!(si(&950.0), "950");
    assert_eq!(si(&12_500.0), "12.5k");
    assert_eq!(si(&250_000.0), "250k");
    assert_eq!(si(&1_600_000.0), "1.6M");
    assert_eq!(si(&2_000_000.0), "2M");
    assert_eq!(si(&12_345_678.0), "12.3M");
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(999), "999");
    assert_eq!(thousands(1_000), "1,000");
    assert_eq!(thousands(1_234_567), "1,234,567");
    assert_eq!(thousands_f64(&12_345.4), "12,345");
}

#[test]
fn bars_name_the_machine_and_workload_and_tell_peers_apart() {
    let rows = [
        row(Workload::Queue, cache_shard(8), 1_600_000.0, 280),
        row(Workload::Queue, System::Peer(Peer::Tokio), 900_000.0, 1_250),
        row(Workload::Queue, System::Peer(Peer::Rayon), 1_100_000.0, 640),
    ];
    let svg = drawn(&rows, &settings(vec![Workload::Queue], false));
    assert!(svg.contains("workload queue") && svg.contains("Test CPU 9000"));
    assert!(svg.contains("median of 5 runs") && svg.contains("50,000 items"));
    // Legend entries and each value, in k/M and with separators.
    for text in [
        "podq", "tokio", "rayon", "1.6M", "900k", "1,250 ns", "items/s",
    ] {
        assert!(svg.contains(text), "{text} missing");
    }
    assert!(!svg.contains("1600000"), "raw numbers on the axes");
    // podq's and the peers' colours differ.
    let hex = |c: RGBColor| format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2);
    for colour in [PODQ[0], PEERS[0], PEERS[1]] {
        assert!(svg.to_uppercase().contains(&hex(colour)), "{colour:?}");
    }
}

#[test]
fn a_sweep_is_a_curve_against_the_shard_size_with_workers() {
    let rows = [
        row(Workload::Queue, cache_shard(16), 800_000.0, 900),
        row(Workload::Queue, cache_shard(2), 1_500_000.0, 300),
        row(Workload::Queue, cache_shard(4), 1_200_000.0, 500),
        row(
            Workload::Queue,
            System::Peer(Peer::Channel),
            1_000_000.0,
            700,
        ),
        row(Workload::Flood, cache_shard(2), 3_000_000.0, 100),
        row(Workload::Flood, cache_shard(4), 2_500_000.0, 120),
        row(Workload::Flood, cache_shard(16), 2_000_000.0, 150),
        row(
            Workload::Flood,
            System::Peer(Peer::Channel),
            2_200_000.0,
            140,
        ),
    ];
    let svg = drawn(
        &rows,
        &settings(vec![Workload::Queue, Workload::Flood], true),
    );
    assert!(svg.contains("workload queue and flood"));
    for text in [
        "cache shard size (cores per shard)",
        "podq cache_shard",
        "channel",
        "1.5M, 1 pool, 2 workers",
        "queue: items/s against the cache shard size",
        "flood: queue call p50 against the cache shard size",
    ] {
        assert!(svg.contains(text), "{text} missing");
    }
    // The curve is a line through the sizes in ascending order: 1.5M at 2 cores first.
    let first = svg.find("1.5M, 1 pool, 2 workers").expect("size 2");
    let last = svg.find("800k, 1 pool, 2 workers").expect("size 16");
    assert!(first < last, "points not in shard size order");
    assert!(svg.contains("<polyline"), "no curve");
}
