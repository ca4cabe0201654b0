//! Helpers of the tests that run real threads: the crate's unit tests, and (compiled in by
//! path from `tests/support/mod.rs`) its integration tests.

use std::thread;
use std::time::{Duration, Instant};

/// Long enough for anything in these tests to happen on a loaded 2-core CI machine; a test
/// that waits this long has failed (it bounds a hang, it is not a speed check).
pub(crate) const PATIENCE: Duration = Duration::from_secs(60);

/// Waits until `done` holds, polling; false after [`PATIENCE`]. A pool counts an item as
/// executed just after its run returns, so a flush may return a moment before the count moves.
pub(crate) fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < PATIENCE {
        if done() {
            return true;
        }
        thread::sleep(Duration::from_millis(2));
    }
    done()
}
