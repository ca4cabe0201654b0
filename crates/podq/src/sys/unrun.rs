//! Freeing a panic payload without running its `Drop`: the end of a chain of payloads whose
//! drops panic again (see `pool::drop_payload`).
#![allow(unsafe_code)]

use std::alloc::{dealloc, Layout};
use std::any::Any;

/// Frees `payload`'s allocation without running its value's `Drop` (memory that the value
/// itself owns, if any, is not freed: such a value is forgotten, not dropped).
pub(crate) fn free_unrun(payload: Box<dyn Any + Send>) {
    let layout = Layout::for_value::<dyn Any + Send>(&*payload);
    let raw = Box::into_raw(payload);
    if layout.size() != 0 {
        // SAFETY: `raw` comes from `Box::into_raw` of a box with a non-zero-sized value, so it
        // was allocated by the global allocator with exactly `layout` (the value's size and
        // alignment, which `Layout::for_value` read through the box's vtable); it is freed
        // once, here, and never used again. Not running the value's `Drop` is safe: skipping
        // a destructor is always allowed (as `mem::forget` does).
        unsafe { dealloc(raw.cast::<u8>(), layout) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value whose drop must not run.
    struct Loud(#[allow(dead_code)] [u64; 3]);

    impl Drop for Loud {
        fn drop(&mut self) {
            panic!("dropped");
        }
    }

    #[test]
    fn a_payload_is_freed_without_its_drop() {
        free_unrun(Box::new(Loud([1, 2, 3])));
        free_unrun(Box::new(()));
    }
}
