//! [`Slots`]: an append-only table that readers index without a lock. A workqueue keeps its
//! pool sets in one (`shared.rs`, `PoolSets`) and its layouts in another (`layout/`): a queue
//! call reads an entry with one load and no write, and entries live as long as the table.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// An append-only table that readers index without a lock: the first `BASE` entries inline (a
/// workqueue rarely has more layouts or pool sets: one look-up is one load), then chunk `k`
/// holds `BASE << k` entries; each entry is set once. Writers are serialised by the caller.
pub(crate) struct Slots<T> {
    /// Entries 0 to `BASE - 1`.
    first: [OnceLock<T>; BASE],
    /// The chunks after them, made on first use.
    chunks: [OnceLock<Box<[OnceLock<T>]>>; CHUNKS],
    /// A: entries pushed. Release when raised, so that a reader that sees the length sees
    /// the entries below it.
    len: AtomicUsize,
}

/// Entries of the first chunk.
const BASE: usize = 4;
/// Chunks after the first entries at most: `BASE * 2^CHUNKS` entries, more than any process
/// makes.
const CHUNKS: usize = 40;

impl<T> Slots<T> {
    /// An empty table.
    pub(crate) fn new() -> Self {
        Slots {
            first: std::array::from_fn(|_| OnceLock::new()),
            chunks: std::array::from_fn(|_| OnceLock::new()),
            len: AtomicUsize::new(0),
        }
    }

    /// The chunk and the place in it of entry `index`, at least `BASE`.
    fn locate(index: usize) -> (usize, usize) {
        let n = index / BASE;
        let chunk = (usize::BITS - 1 - n.leading_zeros()) as usize;
        (chunk, index - BASE * (1 << chunk))
    }

    /// Entry `index`; `None` when it was not pushed.
    #[inline]
    pub(crate) fn get(&self, index: usize) -> Option<&T> {
        if let Some(entry) = self.first.get(index) {
            return entry.get();
        }
        let (chunk, at) = Self::locate(index);
        self.chunks.get(chunk)?.get()?.get(at)?.get()
    }

    /// Appends `value` and returns its index. Callers serialise their pushes.
    pub(crate) fn push(&self, value: T) -> usize {
        let index = self.len.load(Ordering::Relaxed);
        let slot = match self.first.get(index) {
            Some(slot) => slot,
            None => {
                let (chunk, at) = Self::locate(index);
                let slots = self.chunks[chunk]
                    .get_or_init(|| (0..BASE << chunk).map(|_| OnceLock::new()).collect());
                &slots[at]
            }
        };
        if slot.set(value).is_err() {
            unreachable!("pushes are serialised");
        }
        self.len.store(index + 1, Ordering::Release);
        index
    }

    /// Entries pushed so far.
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    /// Every entry, oldest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        (0..self.len()).filter_map(|i| self.get(i))
    }
}

#[cfg(test)]
mod tests {
    use super::Slots;

    #[test]
    fn slots_keep_every_entry_at_its_index() {
        let slots = Slots::new();
        for i in 0..1000usize {
            assert_eq!(slots.push(i * 3), i);
        }
        assert_eq!(slots.len(), 1000);
        assert!((0..1000).all(|i| slots.get(i) == Some(&(i * 3))));
        assert_eq!(slots.get(1000), None);
        assert_eq!(slots.iter().count(), 1000);
    }
}
