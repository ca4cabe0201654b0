//! What a process sees at its thread limit: it drops to the unprivileged user 65534 when run
//! as root, lowers `RLIMIT_NPROC` to its own thread count once a first workqueue has run an
//! item, and then queues to workqueues built after that (`max_active` chain, `try_queue` of a
//! 2-second item, `queue` under a lock the item takes, a 10 ms delayed item). Prints how long
//! `try_queue` took to return and how late the delayed item started.
//!
//! `cargo run --release -p podq --example thread_limit` (run it as root or as a user whose
//! thread limit it may lower; it leaves the process unprivileged).

#[path = "../tests/support/thread_limit.rs"]
mod scenario;

fn main() {
    match scenario::run() {
        Ok(scenario::Outcome::Skipped(why)) => println!("skipped: {why}"),
        Ok(scenario::Outcome::Ran(times)) => {
            for build in &times.builds {
                println!("{build}");
            }
            println!(
                "try_queue of a 2 s item returned in {:?}",
                times.try_queue_return
            );
            println!(
                "10 ms delayed item started {:?} after its delay",
                times.delayed_late
            );
            println!("1 PiB worker_stack_size: {}", times.huge_stack);
        }
        Err(what) => {
            eprintln!("thread_limit: {what}");
            std::process::exit(1);
        }
    }
}
