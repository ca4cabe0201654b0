//! The `checksum` workload: storage-like items whose data was written on the issuing CPU.
//!
//! Each producer thread (pinned, released together) owns a ring of [`RING_BLOCKS`] blocks of
//! [`BLOCK_BYTES`]. For every item it takes the next free block of its ring, fills it (so the
//! block's cache lines are written on the producer's CPU), and queues an item that computes the
//! block's CRC-32C (iSCSI, RFC 3720: the checksum btrfs and ext4 use for their metadata) and
//! hands the block back to the ring. This is what a storage stack's submission path does: a
//! filesystem or dm-crypt fills a buffer and queues the work that checksums or encrypts it, and
//! whether that work runs near the CPU that wrote the buffer decides whether it reads it from
//! its own cache or from another core's.
//!
//! **Invariant: no block is rewritten while an item may read it.** The ring is a set of owned
//! blocks: a block moves into the item that checksums it and only comes back to the ring's free
//! list when that item is done with it, and the producer writes only blocks it has taken from
//! the free list. So at most [`RING_BLOCKS`] items of a producer are in flight; a producer that
//! finds no free block waits for one (the open loop becomes a window of [`RING_BLOCKS`] items),
//! and the ownership of the block, not a timing assumption, is what keeps its data intact.
//!
//! Reported: items/sec (all items over the wall time until the last has run), the queue call's
//! latency and the time from queueing to starting, as `flood` reports them (it is `flood`'s
//! [`open_loop`] with these items).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{bounded, Receiver, Sender};

use super::executor::{burn, Executor};
use super::flood::open_loop;
use super::measurement::Measurement;
use crate::error::CliError;

/// Bytes per block: a page, the unit a filesystem checksums and a block device writes.
pub(crate) const BLOCK_BYTES: usize = 4096;

/// Blocks per producer's ring: 128 blocks of 4 KiB, 512 KiB, which fits a core's L2 cache on
/// current server parts, so a block is still in the writing CPU's cache when a nearby worker
/// reads it; and also the most items of one producer in flight at once.
pub(crate) const RING_BLOCKS: usize = 128;

/// One producer's ring: the blocks not in flight. A block leaves it to be written and
/// checksummed, and comes back when its item is done with it.
struct Ring {
    /// Blocks free to be written.
    free: Receiver<Box<[u8]>>,
    /// Where items return their block.
    back: Sender<Box<[u8]>>,
}

impl Ring {
    /// A ring of [`RING_BLOCKS`] zeroed blocks.
    fn new() -> Ring {
        let (back, free) = bounded(RING_BLOCKS);
        for _ in 0..RING_BLOCKS {
            // The channel holds exactly RING_BLOCKS, and its receiver is alive.
            let _ = back.send(vec![0u8; BLOCK_BYTES].into_boxed_slice());
        }
        Ring { free, back }
    }

    /// The next free block, waiting while all of them are in flight.
    fn take(&self) -> Result<Box<[u8]>, CliError> {
        // The ring holds a sender itself, so the channel never disconnects while it lives.
        self.free
            .recv()
            .map_err(|_| CliError::Failed("checksum: a producer's ring lost its blocks".into()))
    }
}

/// Fills `block` with data that differs per producer and item: 64-bit words, so the writes are
/// whole cache lines as a real buffer's would be.
fn fill(block: &mut [u8], producer: usize, item: usize) {
    let seed = ((producer as u64) << 40) ^ (item as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for (i, word) in block.chunks_exact_mut(8).enumerate() {
        word.copy_from_slice(&(seed ^ i as u64).to_le_bytes());
    }
}

/// Runs the checksum workload on `executor`: `items` per thread, one thread per CPU of `cpus`,
/// each item busy for `work` after its checksum (`--work-ns`, none by default).
///
/// # Errors
///
/// [`CliError::Failed`] when a producer cannot be started or pinned, the start times do not fit
/// in memory, or the system refuses an item.
pub(crate) fn run(
    executor: &impl Executor,
    cpus: &[usize],
    items: u64,
    work: Duration,
) -> Result<Measurement, CliError> {
    // Every checksum is folded in here, so that no item's work can be left out as unused.
    let folded = Arc::new(AtomicU32::new(0));
    let next = |(index, ring): &mut (usize, Ring), n: usize| {
        let mut block = ring.take()?;
        fill(&mut block, *index, n);
        let back = ring.back.clone();
        let folded = Arc::clone(&folded);
        Ok(move || {
            folded.fetch_xor(crc32c::crc32c(&block), Ordering::Relaxed);
            // The ring has room for every one of its blocks, so this never waits.
            let _ = back.send(block);
            burn(work);
        })
    };
    let measured = open_loop(
        executor,
        cpus,
        items,
        "checksum",
        |index| (index, Ring::new()),
        next,
    );
    std::hint::black_box(folded.load(Ordering::Relaxed));
    measured
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::harness::test_cpus;
    use crate::bench::peers::ChannelPeer;

    #[test]
    fn a_ring_never_hands_out_a_block_in_flight() {
        let ring = Ring::new();
        let taken: Vec<Box<[u8]>> = (0..RING_BLOCKS).map(|_| ring.take().unwrap()).collect();
        assert!(
            ring.free.try_recv().is_err(),
            "with every block in flight, none is free"
        );
        let first = taken.into_iter().next().unwrap();
        let address = first.as_ptr();
        ring.back.send(first).unwrap();
        let again = ring.take().unwrap();
        assert_eq!(again.as_ptr(), address, "only a returned block is reused");
    }

    #[test]
    fn fill_differs_per_item_and_producer() {
        let mut a = vec![0u8; BLOCK_BYTES];
        let mut b = vec![0u8; BLOCK_BYTES];
        fill(&mut a, 0, 1);
        fill(&mut b, 0, 2);
        assert_ne!(crc32c::crc32c(&a), crc32c::crc32c(&b));
        fill(&mut b, 1, 1);
        assert_ne!(crc32c::crc32c(&a), crc32c::crc32c(&b));
    }

    #[test]
    fn runs_every_item_of_every_producer() {
        let peer = ChannelPeer::new(2).unwrap();
        let cpus = test_cpus();
        // More items than the ring has blocks: producers must wait for returned blocks.
        let items = 3 * RING_BLOCKS as u64 + 7;
        let measured = run(&peer, &cpus, items, Duration::ZERO).unwrap();
        assert_eq!(measured.items, items * cpus.len() as u64);
        assert!(measured.items_per_sec > 0.0);
        assert!(measured.queue_to_start.is_some());
    }
}
