//! `podq::dump()`: every live workqueue and its pools, in text and (with the `serde` feature)
//! JSON; a dropped workqueue leaves it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use podq::{AffinityScope, Workqueue};

/// Runs `items` items on `wq` and waits for them.
fn load(wq: &Workqueue, items: u64) {
    let ran = Arc::new(AtomicU64::new(0));
    for _ in 0..items {
        let ran = Arc::clone(&ran);
        wq.queue(move || {
            ran.fetch_add(1, Ordering::Relaxed);
        });
    }
    assert!(wq.flush());
    assert_eq!(ran.load(Ordering::Relaxed), items);
}

#[test]
fn the_dump_shows_every_live_workqueue_and_its_pools() {
    let io = Workqueue::builder("dump-io")
        .scope(AffinityScope::Cpu)
        .pull(true)
        .build()
        .expect("workqueue");
    let db = Workqueue::builder("dump-db")
        .scope(AffinityScope::System)
        .max_active(4)
        .max_backlog(100)
        .pull(false)
        .steer(true)
        .build()
        .expect("workqueue");
    load(&io, 1_000);
    load(&db, 777);

    let dump = podq::dump();
    let find = |name: &str| {
        dump.workqueues
            .iter()
            .find(|w| w.name == name)
            .unwrap_or_else(|| panic!("{name} in {dump:?}"))
    };
    let (io_stats, db_stats) = (find("dump-io"), find("dump-db"));
    assert_eq!(io_stats.completed, 1_000);
    assert_eq!(io_stats.pools.len(), io.pools());
    assert_eq!(
        (
            db_stats.completed,
            db_stats.max_active,
            db_stats.max_backlog
        ),
        (777, Some(4), Some(100))
    );
    assert!(io_stats.pull && !db_stats.pull);
    assert_eq!(db_stats.pools.len(), 1);

    let text = dump.to_string();
    println!("{text}");
    let lines: Vec<&str> = text.lines().collect();
    let row = |first: &str, with: &str| {
        lines
            .iter()
            .find(|l| l.split_whitespace().next() == Some(first) && l.contains(with))
            .unwrap_or_else(|| panic!("no row of {first} with {with} in\n{text}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    // The workqueue table: name, scope, shard size, pull, steering, max_active, backlog.
    let db_row = row("dump-db", "system");
    assert_eq!(
        &db_row[..7],
        ["dump-db", "system", "8", "off", "on", "4", "0/100"]
    );
    assert!(db_row.contains(&"777"), "{db_row:?}");
    let io_row = row("dump-io", "cpu");
    assert!(io_row.contains(&"1000"), "{io_row:?}");
    // The pool table: one row per pool, under the workqueue's name, with its CPUs.
    let db_pool = &db_stats.pools[0];
    let pool_row = row("dump-db", &db_pool.name);
    assert_eq!(pool_row[1], db_pool.name);
    assert_eq!(pool_row[3], db_pool.cpus.to_string());
    let io_pools = lines
        .iter()
        .filter(|l| l.starts_with("dump-io ") && l.contains("cpu-p"))
        .count();
    assert_eq!(io_pools, io.pools(), "{text}");

    #[cfg(feature = "serde")]
    {
        let json: serde_json::Value = serde_json::to_value(&dump).expect("json");
        let wqs = json["workqueues"].as_array().expect("an array");
        let db_json = wqs
            .iter()
            .find(|w| w["name"] == "dump-db")
            .expect("dump-db in the JSON");
        assert_eq!(db_json["completed"], 777);
        assert_eq!(db_json["scope"], "system");
        assert_eq!(db_json["pull"], false);
        assert_eq!(db_json["max_backlog"], 100);
        assert_eq!(
            db_json["pools"][0]["cpus"].as_array().map(Vec::len),
            Some(db_pool.cpus.len())
        );
        let executed: u64 = db_json["pools"]
            .as_array()
            .expect("pools")
            .iter()
            .map(|p| p["executed"].as_u64().expect("a count"))
            .sum();
        assert!(executed > 0, "{db_json}");
        assert!(wqs.iter().any(|w| w["name"] == "dump-io"));
    }

    drop(db);
    let after = podq::dump();
    assert!(after.workqueues.iter().all(|w| w.name != "dump-db"));
    assert!(after.workqueues.iter().any(|w| w.name == "dump-io"));
}
