//! Helpers of the crate's unit tests that run real threads.

use std::thread;
use std::time::{Duration, Instant};

/// Long enough for anything in these tests to happen on a loaded 2-core CI machine; a test
/// that waits this long has failed (it bounds a hang, it is not a speed check).
pub(crate) const PATIENCE: Duration = Duration::from_secs(60);

/// Waits until `done` holds, polling; false after [`PATIENCE`].
pub(crate) fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < PATIENCE {
        if done() {
            return true;
        }
        thread::sleep(Duration::from_millis(5));
    }
    done()
}
