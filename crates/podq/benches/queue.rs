//! The cost of queueing: the queue call alone, queue-to-completion on one thread, and a
//! crossbeam-channel send (and round trip) as reference. Reports numbers; asserts nothing.
//!
//! `cargo bench -p podq --bench queue`; the results are in `docs/benchmarks.md`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use podq::{AffinityScope, Work, Workqueue};

/// Work items queued per timed batch in `queue_work/*`: each is idle when queued (the batch is
/// flushed, untimed, before the next), so every call is a real queueing, not the refusal of an
/// item that is still pending.
const BATCH: usize = 64;

fn queue_call(c: &mut Criterion) {
    let mut group = c.benchmark_group("queue_call");
    for scope in [
        AffinityScope::Cpu,
        AffinityScope::CacheShard,
        AffinityScope::System,
    ] {
        let wq = Workqueue::builder(format!("bench-{scope}"))
            .scope(scope)
            .build()
            .expect("workqueue");
        let items: Vec<Work> = (0..BATCH).map(|_| Work::new(|| {})).collect();
        group.bench_function(format!("queue_work/{scope}"), |b| {
            b.iter_custom(|iters| {
                let mut timed = Duration::ZERO;
                let mut left = iters;
                while left > 0 {
                    let n = left.min(BATCH as u64);
                    wq.flush();
                    let start = Instant::now();
                    for item in &items[..n as usize] {
                        black_box(wq.queue_work(item));
                    }
                    timed += start.elapsed();
                    left -= n;
                }
                timed
            });
        });
        wq.flush();
        group.bench_function(format!("queue_work_pending/{scope}"), |b| {
            let item = &items[0];
            wq.queue_work(item);
            // The refusal path: the item is still pending (the kernel's test_and_set_bit).
            b.iter(|| black_box(wq.queue_work(item)));
        });
        wq.flush();
        group.bench_function(format!("queue_closure/{scope}"), |b| {
            b.iter(|| black_box(wq.queue(|| {})));
        });
        wq.flush();
    }
    let (tx, rx) = crossbeam_channel::unbounded::<Box<dyn FnOnce() + Send>>();
    let drain = std::thread::spawn(move || {
        for f in rx {
            f();
        }
    });
    group.bench_function("crossbeam_channel_send", |b| {
        b.iter(|| tx.send(Box::new(|| {})).expect("send"));
    });
    drop(tx);
    drain.join().expect("drain thread");
    group.finish();
}

fn queue_to_completion(c: &mut Criterion) {
    let mut group = c.benchmark_group("queue_to_completion");
    let wq = Workqueue::builder("bench-roundtrip")
        .build()
        .expect("workqueue");
    let work = Work::new(|| {});
    group.bench_function("queue_work+flush", |b| {
        b.iter(|| {
            wq.queue_work(&work);
            work.flush();
        });
    });
    let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(1);
    group.bench_function("queue+recv", |b| {
        b.iter(|| {
            let done_tx = done_tx.clone();
            wq.queue(move || {
                let _ = done_tx.send(());
            });
            done_rx.recv().expect("completion");
        });
    });
    // Reference: the same round trip through one crossbeam-channel worker thread.
    let (tx, rx) = crossbeam_channel::unbounded::<Box<dyn FnOnce() + Send>>();
    let worker = std::thread::spawn(move || {
        for f in rx {
            f();
        }
    });
    group.bench_function("crossbeam_channel_send+recv", |b| {
        b.iter(|| {
            let done_tx = done_tx.clone();
            tx.send(Box::new(move || {
                let _ = done_tx.send(());
            }))
            .expect("send");
            done_rx.recv().expect("completion");
        });
    });
    drop(tx);
    worker.join().expect("worker thread");
    group.finish();
}

criterion_group!(benches, queue_call, queue_to_completion);
criterion_main!(benches);
