//! Where the OS runs a pod's woken worker, and what an item pays to start on a CPU other than
//! its issuer's: the figures behind a table of `docs/benchmarks.md`.
//!
//! ```sh
//! cargo run --release -p podq --example wake_placement
//! ```
//!
//! Two issuer threads, pinned to the first two allowed CPUs (A and B), take turns queueing one
//! short item each (it spins for `ITEM`), then sleep for `GAP`, so the machine is lightly
//! loaded and a pod's worker parks between its items, as in `podq bench --workload locality`
//! at low load. Each item notes the CPU it started on and its queue-to-start time. Three ways
//! to queue, each on a `cpu`-scope workqueue (one pod per CPU):
//!
//! * to the issuer's own pod (`queue_on` the issuer's CPU), which is where an item that is not
//!   steered goes;
//! * to A's pod from both issuers, as steering does for a group whose home is A's pod, with
//!   the default (non-strict) workers, which the OS may run on any allowed CPU;
//! * the same with strict workers (`WorkqueueBuilder::strict(true)`), which run only on their
//!   pod's CPU.
//!
//! Printed per way and issuer: the share of items that started on CPU A, and the queue-to-start
//! p50 and p99.

use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use podq::affinity::{allowed_cpus, current_cpu, pin_current_thread};
use podq::{AffinityScope, CpuSet, Workqueue};

/// Items each issuer queues per way.
const ITEMS: usize = 2_000;
/// How long each item spins.
const ITEM: Duration = Duration::from_micros(30);
/// How long an issuer sleeps after each of its items.
const GAP: Duration = Duration::from_micros(200);

/// Where the items of one way go.
#[derive(Clone, Copy)]
enum Target {
    /// The issuer's own pod.
    Own,
    /// CPU A's pod, from both issuers.
    PodOfA,
}

/// One item's record: the issuer's index, the CPU it started on, its queue-to-start time.
type Record = (usize, Option<usize>, Duration);

fn spin_for(span: Duration) {
    let start = Instant::now();
    while start.elapsed() < span {
        std::hint::spin_loop();
    }
}

/// Runs one way: both issuers take turns, and every item's record comes back.
fn one_way(wq: &Arc<Workqueue>, cpus: [usize; 2], target: Target) -> Vec<Record> {
    let (tx, rx) = mpsc::channel::<Record>();
    let turn = Arc::new(Barrier::new(2));
    let issuers: Vec<_> = (0..2)
        .map(|issuer| {
            let wq = Arc::clone(wq);
            let tx = tx.clone();
            let turn = Arc::clone(&turn);
            std::thread::spawn(move || {
                pin_current_thread(&CpuSet::from_iter([cpus[issuer]]))
                    .expect("an issuer pins itself to an allowed CPU");
                let to = match target {
                    Target::Own => cpus[issuer],
                    Target::PodOfA => cpus[0],
                };
                for _ in 0..ITEMS {
                    // The issuers take turns: A queues, both wait, B queues, both wait.
                    for slot in 0..2 {
                        if slot == issuer {
                            let tx = tx.clone();
                            let queued = Instant::now();
                            let accepted = wq
                                .queue_on(to, move || {
                                    let waited = queued.elapsed();
                                    let _ = tx.send((issuer, current_cpu(), waited));
                                    spin_for(ITEM);
                                })
                                .expect("the target CPU is one of the workqueue's");
                            assert!(accepted, "a closure is always queued");
                            std::thread::sleep(GAP);
                        }
                        turn.wait();
                    }
                }
            })
        })
        .collect();
    drop(tx);
    for issuer in issuers {
        issuer.join().expect("an issuer ran to the end");
    }
    wq.flush();
    rx.iter().collect()
}

/// The value at `permille` (0 to 1000) of `sorted`, which is not empty.
fn quantile(sorted: &[Duration], permille: usize) -> Duration {
    sorted[(sorted.len() - 1) * permille / 1000]
}

fn report(way: &str, records: &[Record], cpus: [usize; 2]) {
    for (issuer, name) in ["A", "B"].iter().enumerate() {
        let mut waits: Vec<Duration> = records
            .iter()
            .filter(|r| r.0 == issuer)
            .map(|r| r.2)
            .collect();
        waits.sort_unstable();
        let on_a = records
            .iter()
            .filter(|r| r.0 == issuer && r.1 == Some(cpus[0]))
            .count();
        let share = 100.0 * on_a as f64 / waits.len().max(1) as f64;
        println!(
            "{way:<34} issuer {name} (CPU {}): started on A {share:>5.1} %, queue-to-start p50 {:>6.1} us, p99 {:>6.1} us",
            cpus[issuer],
            quantile(&waits, 500).as_secs_f64() * 1e6,
            quantile(&waits, 990).as_secs_f64() * 1e6,
        );
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let allowed = allowed_cpus()?;
    let mut first_two = allowed.iter();
    let (Some(a), Some(b)) = (first_two.next(), first_two.next()) else {
        println!("wake_placement needs two allowed CPUs; this process has {allowed}");
        return Ok(());
    };
    let cpus = [a, b];
    println!(
        "{ITEMS} items per issuer and way, each spinning {} us, {} us apart; CPU A = {a}, CPU B = {b}",
        ITEM.as_micros(),
        GAP.as_micros()
    );
    let ways = [
        ("to the issuer's pod", false, Target::Own),
        ("to A's pod, non-strict workers", false, Target::PodOfA),
        ("to A's pod, strict workers", true, Target::PodOfA),
    ];
    for (way, strict, target) in ways {
        let wq = Arc::new(
            Workqueue::builder(format!("wake-{}", if strict { "strict" } else { "free" }))
                .scope(AffinityScope::Cpu)
                .strict(strict)
                .cpus(CpuSet::from_iter(cpus))
                .build()?,
        );
        let records = one_way(&wq, cpus, target);
        report(way, &records, cpus);
    }
    Ok(())
}
