//! The cost of queueing: the queue call alone, queue-to-completion on one thread, and a
//! crossbeam-channel send as reference. Reports numbers; asserts nothing.
//!
//! `cargo bench -p podq --bench queue`

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use podq::{AffinityScope, Work, Workqueue};

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
        let work = Work::new(|| {});
        group.bench_function(format!("queue_work/{scope}"), |b| {
            b.iter(|| {
                // Mostly the pending fast path once the item waits; measured as the kernel's
                // test does: the call alone, the item re-queued after each run.
                black_box(wq.queue_work(&work));
            });
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
    let runs = Arc::new(AtomicU64::new(0));
    let work = {
        let runs = Arc::clone(&runs);
        Work::new(move || {
            runs.fetch_add(1, Ordering::Relaxed);
        })
    };
    group.bench_function("queue_work+flush", |b| {
        b.iter(|| {
            wq.queue_work(&work);
            work.flush();
        });
    });
    let (tx, rx) = crossbeam_channel::bounded::<()>(1);
    group.bench_function("queue+recv", |b| {
        b.iter(|| {
            let tx = tx.clone();
            wq.queue(move || {
                let _ = tx.send(());
            });
            rx.recv().expect("completion");
        });
    });
    group.finish();
}

criterion_group!(benches, queue_call, queue_to_completion);
criterion_main!(benches);
