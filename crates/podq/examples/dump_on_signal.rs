//! An operator's view of a running service: `podq::dump()` printed to stderr each time the
//! process gets `SIGUSR1`, as `kill -USR1 <pid>` asks, while the service's workqueues run.
//!
//! ```sh
//! cargo run -p podq --example dump_on_signal -- 60   # serve for 60 s; send SIGUSR1 meanwhile
//! cargo run -p podq --example dump_on_signal          # sends itself one SIGUSR1, then stops
//! ```
//!
//! The signal is taken by a thread of `signal-hook`'s iterator, never inside the signal
//! handler: a dump takes locks and allocates, which a handler must not. With the `serde`
//! feature, `serde_json::to_string(&podq::dump())` gives the same snapshot for an admin
//! endpoint or a log line.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use podq::{AffinityScope, Workqueue};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seconds: Option<u64> = match std::env::args().nth(1) {
        None => None,
        Some(arg) => match arg.parse() {
            Ok(s) => Some(s),
            Err(_) => {
                eprintln!("dump_on_signal: '{arg}' is not a number of seconds (e.g. 60)");
                std::process::exit(2);
            }
        },
    };
    // The service: two workqueues and a producer that keeps them busy.
    let requests = Arc::new(Workqueue::builder("requests").build()?);
    let flushes = Arc::new(
        Workqueue::builder("flushes")
            .scope(AffinityScope::System)
            .max_active(2)
            .build()?,
    );
    let stop = Arc::new(AtomicBool::new(false));
    let producer = {
        let (requests, flushes, stop) = (
            Arc::clone(&requests),
            Arc::clone(&flushes),
            Arc::clone(&stop),
        );
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                requests.queue(move || {
                    std::hint::black_box((0..200u64).sum::<u64>() + n);
                });
                if n.is_multiple_of(64) {
                    flushes.queue(|| std::thread::sleep(Duration::from_micros(200)));
                    std::thread::sleep(Duration::from_micros(50));
                }
                n += 1;
            }
        })
    };

    run_until(seconds)?;

    stop.store(true, Ordering::Relaxed);
    producer.join().expect("the producer never panics");
    requests.flush();
    flushes.flush();
    Ok(())
}

/// Prints the dump on each `SIGUSR1`, until `seconds` pass (or, without them, after the one
/// `SIGUSR1` it sends itself), or until `SIGINT` / `SIGTERM`.
#[cfg(unix)]
fn run_until(seconds: Option<u64>) -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM, SIGUSR1};
    use signal_hook::iterator::Signals;

    let mut signals = Signals::new([SIGUSR1, SIGINT, SIGTERM])?;
    let deadline = Instant::now() + Duration::from_secs(seconds.unwrap_or(0));
    match seconds {
        Some(s) => eprintln!(
            "pid {}: `kill -USR1 {}` prints the dump; stopping in {s} s",
            std::process::id(),
            std::process::id()
        ),
        None => {
            std::thread::sleep(Duration::from_millis(100));
            signal_hook::low_level::raise(SIGUSR1)?;
        }
    }
    loop {
        for signal in signals.pending() {
            if signal != SIGUSR1 {
                return Ok(());
            }
            eprintln!("{}", podq::dump());
            if seconds.is_none() {
                return Ok(());
            }
        }
        if seconds.is_some() && Instant::now() >= deadline {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Without Unix signals: prints the dump once, after `seconds` (or at once).
#[cfg(not(unix))]
fn run_until(seconds: Option<u64>) -> std::io::Result<()> {
    std::thread::sleep(Duration::from_secs(seconds.unwrap_or(0)));
    eprintln!("{}", podq::dump());
    Ok(())
}
