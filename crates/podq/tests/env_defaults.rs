//! `PODQ_SCOPE`, `PODQ_SHARD_SIZE`, `PODQ_PULL` and `PODQ_STEER` give the scope, shard size,
//! pull and steering of every workqueue built without one; a bad value is an error at build that names the variable. Its own test binary,
//! with one test: it sets the process's environment.

use podq::{AffinityScope, Topology, Workqueue};

fn build(explicit: bool) -> Result<Workqueue, podq::Error> {
    let machine = Topology::from_machine("sockets=1,nodes=1,caches=1,cores=8,smt=1").unwrap();
    let builder = Workqueue::builder("env").topology(machine);
    if explicit {
        builder.scope(AffinityScope::Cache).shard_size(4).build()
    } else {
        builder.build()
    }
}

#[test]
fn the_environment_sets_the_defaults_and_a_bad_value_names_its_variable() {
    std::env::remove_var("PODQ_SCOPE");
    std::env::remove_var("PODQ_SHARD_SIZE");
    let wq = build(false).expect("workqueue");
    assert_eq!(
        (wq.scope(), wq.shard_size()),
        (AffinityScope::CacheShard, 8)
    );

    std::env::set_var("PODQ_SCOPE", "cache_shard");
    std::env::set_var("PODQ_SHARD_SIZE", "2");
    let wq = build(false).expect("workqueue");
    assert_eq!((wq.scope(), wq.pools()), (AffinityScope::CacheShard, 4));
    // A choice made in the code wins over the environment.
    let wq = build(true).expect("workqueue");
    assert_eq!((wq.scope(), wq.shard_size()), (AffinityScope::Cache, 4));

    std::env::set_var("PODQ_SCOPE", "cache-shard");
    let err = build(false).expect_err("a bad scope");
    assert!(
        matches!(&err, podq::Error::BadEnvironment { variable, .. } if variable == "PODQ_SCOPE")
    );
    let text = err.to_string();
    assert!(
        text.contains("PODQ_SCOPE") && text.contains("cache_shard"),
        "{text}"
    );
    // ...which an explicit scope never reads.
    build(true).expect("explicit attributes");

    std::env::set_var("PODQ_SCOPE", "cpu");
    std::env::set_var("PODQ_SHARD_SIZE", "0");
    let err = build(false).expect_err("a bad shard size").to_string();
    assert!(err.contains("PODQ_SHARD_SIZE"), "{err}");
    std::env::remove_var("PODQ_SCOPE");
    std::env::remove_var("PODQ_SHARD_SIZE");

    let wq = build(false).expect("workqueue");
    assert!(wq.pulls() && wq.steers());
    std::env::set_var("PODQ_PULL", "off");
    std::env::set_var("PODQ_STEER", "off");
    let wq = build(false).expect("workqueue");
    assert!(!wq.pulls() && !wq.steers());
    let stats = wq.stats();
    assert!(!stats.pull && !stats.steer, "{stats:?}");
    let machine = Topology::from_machine("sockets=1,nodes=1,caches=1,cores=8,smt=1").unwrap();
    let chosen = Workqueue::builder("env")
        .topology(machine)
        .pull(true)
        .steer(true)
        .build()
        .expect("workqueue");
    assert!(chosen.pulls() && chosen.steers());
    for var in ["PODQ_PULL", "PODQ_STEER"] {
        std::env::set_var(var, "no");
        let err = build(false).expect_err("a bad switch");
        assert!(
            matches!(&err, podq::Error::BadEnvironment { variable, .. } if variable == var),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            format!("environment variable {var}='no': expected on or off")
        );
        std::env::set_var(var, "on");
    }
    let wq = build(false).expect("workqueue");
    assert!(wq.pulls() && wq.steers());
    std::env::remove_var("PODQ_PULL");
    std::env::remove_var("PODQ_STEER");
}
