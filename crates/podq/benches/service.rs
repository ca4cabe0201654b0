//! The cost of the service API per item: `spawn` and its join against `queue` and a flush,
//! and `try_queue` on a workqueue with a `max_backlog` (of 2^20 items, never reached) against
//! `queue` on one without.
//! Reports numbers; asserts nothing.
//!
//! `cargo bench -p podq --bench service`; the results are recorded in docs/benchmarks.md
//! ("Results: service API costs").

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use podq::{Workqueue, WorkqueueBuilder};

/// Items per batch: each batch is queued and then waited for (a flush; for `spawn`, a flush
/// and then a join of every handle, each finished by then). `*+wait` times both, the whole
/// cost of an item from the queue call to holding its result; `*_call` times the queue calls
/// alone, and waits untimed. 1024: long enough that the one wake-up of a parked worker at the
/// start of a batch (microseconds, more after a longer untimed wait) weighs on no figure.
const BATCH: u64 = 1024;

/// Times `calls(n)` (and `wait()` too when `wait_timed`) over `iters` items in batches of at
/// most [`BATCH`].
fn batches(
    iters: u64,
    wait_timed: bool,
    mut calls: impl FnMut(u64),
    mut wait: impl FnMut(),
) -> Duration {
    let mut timed = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(BATCH);
        let start = Instant::now();
        calls(n);
        if wait_timed {
            wait();
            timed += start.elapsed();
        } else {
            timed += start.elapsed();
            wait();
        }
        left -= n;
    }
    timed
}

fn build(builder: WorkqueueBuilder) -> Workqueue {
    builder.build().expect("workqueue")
}

fn spawn_vs_queue(c: &mut Criterion) {
    let mut group = c.benchmark_group("service");
    group.throughput(Throughput::Elements(1));
    let wq = build(Workqueue::builder("bench-service"));
    // The same attributes, so the same pool; a bound no batch reaches.
    let bounded = build(Workqueue::builder("bench-service-bounded").max_backlog(1 << 20));
    for (name, timed) in [("+wait", true), ("_call", false)] {
        group.bench_function(format!("queue{name}"), |b| {
            b.iter_custom(|iters| {
                let calls = |n| {
                    for i in 0..n {
                        black_box(wq.queue(move || {
                            black_box(i);
                        }));
                    }
                };
                batches(iters, timed, calls, || {
                    wq.flush();
                })
            });
        });
        let handles = std::cell::RefCell::new(Vec::with_capacity(BATCH as usize));
        group.bench_function(format!("spawn{name}"), |b| {
            b.iter_custom(|iters| {
                let calls = |n| {
                    let mut handles = handles.borrow_mut();
                    handles.extend((0..n).map(|i| wq.spawn(move || black_box(i))));
                };
                // One wait for the batch, as `queue` has, then every value taken: a join per
                // handle as it comes would measure the wake-ups of 64 waits instead.
                let wait = || {
                    wq.flush();
                    for h in handles.borrow_mut().drain(..) {
                        black_box(h.join().expect("value"));
                    }
                };
                batches(iters, timed, calls, wait)
            });
        });
        group.bench_function(format!("try_queue_bounded{name}"), |b| {
            b.iter_custom(|iters| {
                let calls = |n| {
                    for i in 0..n {
                        black_box(bounded.try_queue(move || {
                            black_box(i);
                        }))
                        .expect("room");
                    }
                };
                batches(iters, timed, calls, || {
                    bounded.flush();
                })
            });
        });
    }
    group.finish();
}

criterion_group!(benches, spawn_vs_queue);
criterion_main!(benches);
