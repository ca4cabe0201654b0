//! A tokio program that hands CPU-bound work to podq and awaits the results: the async tasks
//! stay free to serve, and the work runs on the pools of the cache shards it was queued from.
//!
//! ```sh
//! cargo run --release -p podq --example tokio_spawn
//! ```
//!
//! Each of 16 "requests" is a tokio task that counts the primes below a bound on a podq
//! workqueue (`spawn_async(...).await`, then the handle's `.await`), with a `max_backlog` so
//! that a burst of requests waits for room instead of piling up: `spawn_async` waits as a
//! future, so no tokio worker thread blocks while the backlog is full. One request panics on
//! purpose, and its task gets the panic back as a value.

use std::sync::Arc;

use podq::{JoinError, Workqueue};

/// Primes below `n`, by trial division: deliberately CPU-bound.
fn primes_below(n: u64) -> u64 {
    (2..n)
        .filter(|&k| (2..).take_while(|d| d * d <= k).all(|d| k % d != 0))
        .count() as u64
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // One line per panic rather than a backtrace: the request that panics does so on purpose.
    std::panic::set_hook(Box::new(|info| eprintln!("a work item panicked: {info}")));
    let wq = Arc::new(
        Workqueue::builder("cpu-work")
            .max_backlog(4)
            .on_worker_start(|w| eprintln!("worker of pool {} starts on CPUs {}", w.pool, w.cpus))
            .build()?,
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()?;
    let answers = rt.block_on(async {
        let requests: Vec<_> = (0..16u64)
            .map(|i| {
                let wq = Arc::clone(&wq);
                tokio::spawn(async move {
                    let bound = 20_000 + 5_000 * i;
                    // Both awaits park this task, not a tokio worker: the first until the
                    // backlog has room, the second until a podq worker is done.
                    let handle = wq
                        .spawn_async(move || {
                            assert!(i != 13, "request {i} fails on purpose");
                            primes_below(bound)
                        })
                        .await;
                    let counted = handle.await;
                    (bound, counted)
                })
            })
            .collect();
        let mut answers = Vec::new();
        for request in requests {
            answers.push(request.await.expect("a tokio task"));
        }
        answers
    });
    for (bound, counted) in answers {
        match counted {
            Ok(primes) => println!("{primes:>6} primes below {bound}"),
            Err(JoinError::Panicked(_)) => println!("  (panicked) primes below {bound}"),
            Err(other) => println!("  ({other}) primes below {bound}"),
        }
    }
    let stats = wq.stats();
    println!(
        "{} items completed, {} panicked, on {} pools",
        stats.completed,
        stats.panicked,
        stats.pools.len()
    );
    Ok(())
}
