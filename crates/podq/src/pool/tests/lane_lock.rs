//! The lane lock on its own, with real threads (`crates/podq-loom` checks its interleavings):
//! every addition made under it counts, whichever way each thread took it.

use std::sync::Arc;

use crate::pool::core::queue::lane_lock::LaneLock;

#[test]
fn additions_under_the_lock_all_count_with_four_threads() {
    const THREADS: usize = 4;
    const EACH: usize = 50_000;
    let lock = Arc::new(LaneLock::new(0usize));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let lock = Arc::clone(&lock);
            std::thread::spawn(move || {
                for i in 0..EACH {
                    // Half the time as the lanes take it (a try first), half straight away.
                    let mut guard = match (i + t) % 2 {
                        0 => lock.try_lock().unwrap_or_else(|| lock.lock()),
                        _ => lock.lock(),
                    };
                    let seen = guard.with(|count| *count);
                    if i % 64 == 0 {
                        std::thread::yield_now();
                    }
                    guard.with(|count| *count = seen + 1);
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("a locker");
    }
    assert_eq!(lock.lock().with(|count| *count), THREADS * EACH);
}

#[test]
fn a_failed_try_leaves_the_lock_held() {
    let lock = LaneLock::new(());
    let held = lock.lock();
    assert!(lock.try_lock().is_none());
    assert!(
        lock.try_lock().is_none(),
        "the failed try released the lock"
    );
    drop(held);
    assert!(lock.try_lock().is_some());
}
