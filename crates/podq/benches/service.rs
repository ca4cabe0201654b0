//! The cost of the service API per item: `spawn` and its join against `queue` and a flush,
//! and `try_queue` on a workqueue with a `max_backlog` (of 2^20 items, never reached) against
//! `queue` on one without. `spawn_interleaved*` alternate `spawn` and `queue` batches and print
//! the ratio of their sums: on a shared machine both see the same load, which the separate
//! rows, seconds apart, do not.
//! Reports numbers; asserts nothing.
//!
//! `cargo bench -p podq --bench service`; the results are in `docs/benchmarks.md`.

use std::cell::{Cell, RefCell};
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use podq::{JoinHandle, Workqueue, WorkqueueBuilder};

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

/// `n` queue calls of a closure that does nothing.
fn queue_calls(wq: &Workqueue, n: u64) {
    for i in 0..n {
        black_box(wq.queue(move || {
            black_box(i);
        }));
    }
}

/// `n` spawn calls of a closure that returns a number, their handles kept in `handles`.
fn spawn_calls(wq: &Workqueue, handles: &RefCell<Vec<JoinHandle<u64>>>, n: u64) {
    handles
        .borrow_mut()
        .extend((0..n).map(|i| wq.spawn(move || black_box(i))));
}

/// One wait for a batch of spawned closures, as `queue` has, then every value taken: a join
/// per handle as it comes would measure the wake-ups of 64 waits instead.
fn spawn_wait(wq: &Workqueue, handles: &RefCell<Vec<JoinHandle<u64>>>) {
    wq.flush();
    for h in handles.borrow_mut().drain(..) {
        black_box(h.join().expect("value"));
    }
}

fn spawn_vs_queue(c: &mut Criterion) {
    let mut group = c.benchmark_group("service");
    group.throughput(Throughput::Elements(1));
    let wq = build(Workqueue::builder("bench-service"));
    // The same attributes, so the same pool; a bound no batch reaches.
    let bounded = build(Workqueue::builder("bench-service-bounded").max_backlog(1 << 20));
    let handles = RefCell::new(Vec::with_capacity(BATCH as usize));
    for (name, timed) in [("+wait", true), ("_call", false)] {
        group.bench_function(format!("queue{name}"), |b| {
            b.iter_custom(|iters| {
                batches(
                    iters,
                    timed,
                    |n| queue_calls(&wq, n),
                    || {
                        wq.flush();
                    },
                )
            });
        });
        group.bench_function(format!("spawn{name}"), |b| {
            b.iter_custom(|iters| {
                let calls = |n| spawn_calls(&wq, &handles, n);
                batches(iters, timed, calls, || spawn_wait(&wq, &handles))
            });
        });
        // Criterion's estimate is spawn's; the sums of both, over every batch criterion ran
        // (its warm-up too), give the ratio printed after the row.
        let sums = Cell::new((Duration::ZERO, Duration::ZERO, 0u64));
        group.bench_function(format!("spawn_interleaved{name}"), |b| {
            b.iter_custom(|iters| {
                let (mut queue_sum, mut spawn_sum, mut items) = sums.get();
                let mut spawn_here = Duration::ZERO;
                let mut left = iters;
                while left > 0 {
                    let n = left.min(BATCH);
                    // The order flips every batch, so neither always follows the other's wait.
                    let queue_first = (items / BATCH).is_multiple_of(2);
                    let queue_batch = || {
                        batches(
                            n,
                            timed,
                            |n| queue_calls(&wq, n),
                            || {
                                wq.flush();
                            },
                        )
                    };
                    let spawn_batch = || {
                        let calls = |n| spawn_calls(&wq, &handles, n);
                        batches(n, timed, calls, || spawn_wait(&wq, &handles))
                    };
                    let (q, s) = if queue_first {
                        let q = queue_batch();
                        (q, spawn_batch())
                    } else {
                        let s = spawn_batch();
                        (queue_batch(), s)
                    };
                    queue_sum += q;
                    spawn_sum += s;
                    spawn_here += s;
                    items += n;
                    left -= n;
                }
                sums.set((queue_sum, spawn_sum, items));
                spawn_here
            });
        });
        let (queue_sum, spawn_sum, items) = sums.get();
        let per_item = |d: Duration| d.as_secs_f64() * 1e9 / items.max(1) as f64;
        println!(
            "service/spawn_interleaved{name}: spawn/queue {:.2} (queue {:.1} ns, spawn {:.1} ns \
             per item, {items} items each)",
            spawn_sum.as_secs_f64() / queue_sum.as_secs_f64().max(f64::MIN_POSITIVE),
            per_item(queue_sum),
            per_item(spawn_sum),
        );
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
