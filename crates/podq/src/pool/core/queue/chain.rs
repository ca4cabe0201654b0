//! A lane's tasks: a chain of fixed segments with one producer end, which pushers use under
//! their lane's lock (P2), and one consumer end, which workers use under the head lock (W3).
//!
//! The two ends share the slots and two counters, each on lines of its own: `pushed`, which
//! only the producer writes, and `claimed`, which only the consumer writes. A task is written
//! into its slot and then published by storing `pushed` (Release). The consumer claims every
//! task published so far by reading `pushed` (Acquire) and storing it as `claimed`, then reads
//! the claimed tasks one at a time, in order, from their slots. So a worker never writes a line
//! that the lane's pushers write, and a push reads nothing that a worker writes: no lock's line
//! crosses between the two CPUs for a batch taken (`pool/README.md`, "Why these choices").
//!
//! A segment is done with once the consumer has read the task of its last slot and the
//! producer has linked the next one (so the producer, which writes only at the end, has moved
//! on). The consumer keeps one such segment as the chain's spare, which the producer takes
//! when it needs a new one: in a steady flow, no segment is allocated or freed (freeing on
//! another thread than the allocating one takes the allocator's arena lock for a segment's
//! size). Past the spare, segments go to the [`Spares`] that the chains share (the pools of
//! one node share one), up to [`KEPT_SEGMENTS`], so that a backlog that grows after another
//! drained (a task that queues ten thousand) writes to memory already in use instead of
//! faulting in fresh pages. Each end is used through a token that only [`Chain::new`] makes,
//! one of each per chain, and holding a token `&mut` is what makes that end's use exclusive
//! (the lane lock holds the producer's, the head lock the consumer's). This file uses only
//! `crate::sync`, so that `crates/podq-loom` checks it with loom's cell, which fails a model
//! whose accesses to a slot could overlap.
#![allow(unsafe_code)]

use std::mem::MaybeUninit;
use std::ptr;

use crate::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use crate::sync::cell::UnsafeCell;
use crate::sync::{Arc, CachePadded, Mutex};

/// Slots per segment: 256 tasks of the workqueue (64 bytes) are 16 KiB. A pusher moves to a
/// new segment (the spare, or a new allocation) once every 256 tasks, under one in a hundred
/// of its calls, so that a growing backlog's allocations stay out of the queue call's p99:
/// `podq bench --workload blocking --runs 3 --scopes cache_shard --peers none` gives a p99 of
/// 2.4 us with 32 slots and 1.3 us with 256 (1.2 us without the backlog's allocations). A lane gets
/// its first segment with its first task.
pub(crate) const SEGMENT_SLOTS: usize = 256;

/// How many slots ahead of the one it writes a push asks for, ready to be written
/// ([`prefetch_write`], the slot's first two lines). The slots a pusher writes were last read
/// by a worker on another CPU (the spare goes back and forth), so with one producer each
/// write waited for its lines at the lane lock's release; asked for two pushes early, they are
/// mostly there. `podq bench --scopes cache_shard --peers channel --runs 5 --workload flood
/// --threads 1`: 6.74M items/s without the hint, 8.15M with it (with one producer per CPU,
/// 8.02M and 7.96M: no change); four slots ahead does worse with one producer per CPU.
const PREFETCH_AHEAD: usize = 2;

/// Asks the CPU to bring the cache line of `at` into its cache, ready to be written
/// (`prefetchw`, where the CPU has it): a hint, which never faults, whatever `at` is.
#[inline(always)]
fn prefetch_write(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    if has_prefetchw() {
        // SAFETY: the CPU has `prefetchw` (checked), which reads and writes nothing and never
        // faults.
        unsafe {
            std::arch::asm!("prefetchw [{0}]", in(reg) at, options(nostack, preserves_flags, readonly));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// Whether the CPU has `prefetchw` (CPUID leaf `0x8000_0001`, ECX bit 8, on Intel and AMD
/// alike), asked once.
#[cfg(target_arch = "x86_64")]
#[inline]
fn has_prefetchw() -> bool {
    use std::sync::atomic::{AtomicU8, Ordering};
    /// 0 until asked, then 1 without `prefetchw`, 2 with it. Relaxed: every thread that asks
    /// finds the same answer.
    static HAS: AtomicU8 = AtomicU8::new(0);
    match HAS.load(Ordering::Relaxed) {
        0 => {
            use std::arch::x86_64::__cpuid;
            let has =
                __cpuid(0x8000_0000).eax >= 0x8000_0001 && __cpuid(0x8000_0001).ecx & (1 << 8) != 0;
            HAS.store(1 + u8::from(has), Ordering::Relaxed);
            has
        }
        answer => answer == 2,
    }
}

/// Identifies a chain to its two tokens (from one process-wide count: unique, never reused).
static NEXT_ID: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);

/// `N` slots and the link to the next segment.
struct Segment<T, const N: usize> {
    /// Written once by the producer, then read once by the consumer.
    slots: [UnsafeCell<MaybeUninit<T>>; N],
    /// The next segment: null until the producer links it, which it does before it publishes
    /// the task of the next segment's first slot.
    next: UnsafeCell<*mut Segment<T, N>>,
}

impl<T, const N: usize> Segment<T, N> {
    /// A segment with empty slots and no next one, on the heap: `spare` when it holds one (which
    /// it empties), else a new one. Freed by [`Segment::free`].
    fn take_or_alloc(spare: &AtomicPtr<Self>, spares: &Spares<T, N>) -> *mut Self {
        // Acquire: the consumer's reads of the spare's slots come before this producer's
        // writes (its swap in `Chain::retire` is a Release).
        let mut segment = spare.swap(ptr::null_mut(), Ordering::Acquire);
        if segment.is_null() {
            match spares.take() {
                Some(kept) => segment = kept,
                None => return Self::alloc(),
            }
        }
        // SAFETY: the swap or the spares gave this end the segment alone; the consumer
        // left it once done with it (`Chain::retire`), so nobody else reaches it.
        unsafe { (*segment).next.with_mut(|link| *link = ptr::null_mut()) };
        segment
    }

    /// A new segment with empty slots, on the heap; freed by [`Segment::free`].
    fn alloc() -> *mut Self {
        Box::into_raw(Box::new(Segment {
            slots: std::array::from_fn(|_| UnsafeCell::new(MaybeUninit::uninit())),
            next: UnsafeCell::new(ptr::null_mut()),
        }))
    }

    /// Frees a segment from [`Segment::alloc`] whose slots hold no task.
    ///
    /// # Safety
    ///
    /// `segment` came from [`Segment::alloc`], is freed once, and nobody reaches it after.
    unsafe fn free(segment: *mut Self) {
        // SAFETY: the caller's contract; the slots are `MaybeUninit`, so nothing in them is
        // dropped.
        drop(unsafe { Box::from_raw(segment) });
    }
}

/// How many segments, at most, one [`Spares`] keeps beyond each chain's own spare: 64
/// segments of the workqueue's tasks are 1 MiB, the backlog of a task that queues 16,384
/// others (why keep them: `pool/README.md`, "Why these choices").
pub(crate) const KEPT_SEGMENTS: usize = 64;

/// Segments that chains are done with, past each chain's spare: at most [`KEPT_SEGMENTS`],
/// taken by a producer that needs a segment before it allocates one. Shared by the chains of
/// one node's pools (`pool/registry.rs`). [`Spares::free_all`] gives them back to the
/// allocator (a pool does when one of its workers has been idle for the pool's idle timeout,
/// W12); so does the drop.
pub(crate) struct Spares<T, const N: usize = SEGMENT_SLOTS> {
    /// The segments kept, each holding no task and reached by nobody else. Its lock is taken
    /// once per segment's worth of tasks at most, and holds no other lock.
    kept: Mutex<Vec<Kept<T, N>>>,
}

/// A segment in [`Spares`].
struct Kept<T, const N: usize>(*mut Segment<T, N>);

// SAFETY: a kept segment holds no task and only the spares reach it; sending it sends memory.
unsafe impl<T: Send, const N: usize> Send for Kept<T, N> {}

impl<T, const N: usize> Spares<T, N> {
    /// No segments kept.
    pub(crate) fn new() -> Self {
        Self {
            kept: Mutex::new(Vec::new()),
        }
    }

    /// How many segments are kept.
    pub(crate) fn len(&self) -> usize {
        self.kept.lock().len()
    }

    /// A kept segment, for the caller alone (the lock's release and acquire order the last
    /// reads of its slots before the caller's writes).
    #[cold]
    #[inline(never)]
    fn take(&self) -> Option<*mut Segment<T, N>> {
        self.kept.lock().pop().map(|kept| kept.0)
    }

    /// Keeps `segment` if fewer than [`KEPT_SEGMENTS`] are kept, and frees it otherwise.
    ///
    /// # Safety
    ///
    /// `segment` came from [`Segment::alloc`], holds no task, and nobody else reaches it.
    #[cold]
    #[inline(never)]
    unsafe fn keep(&self, segment: *mut Segment<T, N>) {
        let mut kept = self.kept.lock();
        if kept.len() < KEPT_SEGMENTS {
            kept.push(Kept(segment));
            return;
        }
        drop(kept);
        // SAFETY: the caller's contract.
        unsafe { Segment::free(segment) };
    }

    /// Frees every kept segment.
    pub(crate) fn free_all(&self) {
        let all = std::mem::take(&mut *self.kept.lock());
        for kept in all {
            // SAFETY: a kept segment came from `Segment::alloc`, holds no task, and the take
            // above removed it from the spares: nobody else reaches it.
            unsafe { Segment::free(kept.0) };
        }
    }
}

impl<T, const N: usize> Default for Spares<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, const N: usize> Drop for Spares<T, N> {
    fn drop(&mut self) {
        self.free_all();
    }
}

impl<T, const N: usize> std::fmt::Debug for Spares<T, N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spares").field("kept", &self.len()).finish()
    }
}

/// The producer's end, on lines of its own.
struct Tail<T, const N: usize> {
    /// Tasks ever published. Written only by the producer; the consumer reads it.
    pushed: AtomicUsize,
    /// The segment of slot `pushed - 1` (null while `pushed` is 0). Producer only.
    last: UnsafeCell<*mut Segment<T, N>>,
    /// The first segment: null until the producer links it, before it publishes the first
    /// task; then read once by the consumer.
    first: UnsafeCell<*mut Segment<T, N>>,
    /// The chain's identity, which the producer's token must carry (read-only).
    id: usize,
}

/// The consumer's end, on lines of its own.
struct Head<T, const N: usize> {
    /// Tasks ever claimed. Written only by the consumer; read by [`Chain::len`].
    claimed: AtomicUsize,
    /// Tasks ever read, never past `claimed`: the next slot to read. Consumer only.
    read: UnsafeCell<usize>,
    /// The segment of slot `read - 1` (null while `read` is 0). Consumer only.
    current: UnsafeCell<*mut Segment<T, N>>,
    /// The chain's identity, which the consumer's token must carry (read-only).
    id: usize,
}

/// The producer end's token: whoever holds it `&mut` appends.
#[derive(Debug)]
pub(crate) struct Producer {
    /// The chain it belongs to.
    chain: usize,
}

/// The consumer end's token: whoever holds it `&mut` claims and reads, in order.
#[derive(Debug)]
pub(crate) struct Consumer {
    /// The chain it belongs to.
    chain: usize,
}

/// A lane's tasks, oldest first: see the module's doc.
pub(crate) struct Chain<T, const N: usize = SEGMENT_SLOTS> {
    /// The producer end.
    tail: CachePadded<Tail<T, N>>,
    /// The consumer end.
    head: CachePadded<Head<T, N>>,
    /// A segment the consumer is done with, for the producer's next one; null when none.
    spare: CachePadded<AtomicPtr<Segment<T, N>>>,
    /// Where the consumer puts a segment it is done with when the spare is taken, and where
    /// the producer looks when there is no spare: shared with other chains.
    spares: Arc<Spares<T, N>>,
}

// SAFETY: the slots and the ends' cells are the only fields that are not `Sync`. A slot is
// written by the holder of the producer token before its `pushed` store (Release) and read
// once by the holder of the consumer token after its `pushed` load (Acquire) shows it; each
// end's cells are reached only by its token's holder, and a token is used `&mut`. Tasks move
// between threads, hence `T: Send`.
unsafe impl<T: Send, const N: usize> Sync for Chain<T, N> {}
// SAFETY: the chain owns its segments and the tasks in them; sending it sends them.
unsafe impl<T: Send, const N: usize> Send for Chain<T, N> {}

impl<T, const N: usize> std::fmt::Debug for Chain<T, N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chain").field("len", &self.len()).finish()
    }
}

impl<T, const N: usize> Chain<T, N> {
    /// An empty chain (no segment yet) that shares `spares` with other chains, and the tokens
    /// of its two ends.
    pub(crate) fn new(spares: Arc<Spares<T, N>>) -> (Self, Producer, Consumer) {
        const { assert!(N > 0, "a segment holds at least one slot") };
        let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let chain = Self {
            tail: CachePadded::new(Tail {
                pushed: AtomicUsize::new(0),
                last: UnsafeCell::new(ptr::null_mut()),
                first: UnsafeCell::new(ptr::null_mut()),
                id,
            }),
            head: CachePadded::new(Head {
                claimed: AtomicUsize::new(0),
                read: UnsafeCell::new(0),
                current: UnsafeCell::new(ptr::null_mut()),
                id,
            }),
            spare: CachePadded::new(AtomicPtr::new(ptr::null_mut())),
            spares,
        };
        (chain, Producer { chain: id }, Consumer { chain: id })
    }

    /// Tasks published and not claimed: a hint, unless read by the consumer's holder after a
    /// `SeqCst` fence (W10), which sees every task published before the fence of a push (P3).
    #[inline]
    pub(crate) fn len(&self) -> usize {
        // `claimed` first: it never passes `pushed`, so a `pushed` read after it is no smaller
        // except in a stale read, which the saturation turns into "empty".
        let claimed = self.head.claimed.load(Ordering::Relaxed);
        self.tail
            .pushed
            .load(Ordering::Relaxed)
            .saturating_sub(claimed)
    }

    /// Appends `task` at the producer end and publishes it. It reads nothing that the consumer
    /// writes.
    #[inline]
    pub(crate) fn push(&self, producer: &mut Producer, task: T) {
        assert_eq!(
            producer.chain, self.tail.id,
            "a producer token of another chain"
        );
        // Relaxed: only the holder of the token writes `pushed`, and holders follow each other
        // through the lane lock.
        let pushed = self.tail.pushed.load(Ordering::Relaxed);
        let segment = self.tail.last.with_mut(|last| {
            // SAFETY: `last` and `first` are reached only through the producer token, held
            // `&mut` (the consumer reads `first` only after it sees the first task published).
            // `last` points to the segment of slot `pushed - 1`, which the consumer is done
            // with only after it has read slot `pushed`, not yet published.
            unsafe {
                if pushed.is_multiple_of(N) {
                    let next = Segment::take_or_alloc(&self.spare, &self.spares);
                    // The consumer follows the link only after it sees this task published.
                    if pushed == 0 {
                        self.tail.first.with_mut(|link| *link = next);
                    } else {
                        (**last).next.with_mut(|link| *link = next);
                    }
                    *last = next;
                }
                *last
            }
        });
        // SAFETY: slot `pushed` is empty (a segment's slots are written once per use, in
        // order, by this end only, and read empty by the consumer before the segment is used
        // again), and the consumer reads it only after the store below.
        unsafe {
            (*segment).slots[pushed % N].with_mut(|slot| {
                (*slot).write(task);
            });
        }
        // Release: the consumer that sees it (Acquire) sees the task and the link.
        self.tail.pushed.store(pushed + 1, Ordering::Release);
        let ahead = pushed % N + PREFETCH_AHEAD;
        if ahead < N {
            // SAFETY: only an address is formed (the slot is within the segment, and
            // `segment` stays allocated while the producer is on it); nothing is read.
            let slot = unsafe { std::ptr::addr_of!((*segment).slots[ahead]) };
            prefetch_write(slot.cast());
            prefetch_write(slot.cast::<u8>().wrapping_add(64));
        }
    }

    /// Claims every task published and not yet claimed, for the holder to read with
    /// [`Chain::next`]; returns how many. Claimed tasks no longer count in [`Chain::len`].
    #[inline]
    pub(crate) fn claim(&self, consumer: &mut Consumer) -> usize {
        assert_eq!(
            consumer.chain, self.head.id,
            "a consumer token of another chain"
        );
        // Acquire: the tasks published up to it, and their segments' links, are visible.
        let pushed = self.tail.pushed.load(Ordering::Acquire);
        // Relaxed: only the holder of the token writes `claimed`.
        let claimed = self.head.claimed.load(Ordering::Relaxed);
        if pushed > claimed {
            self.head.claimed.store(pushed, Ordering::Relaxed);
        }
        pushed.saturating_sub(claimed)
    }

    /// Tasks claimed and not yet read.
    #[inline]
    pub(crate) fn claimed_left(&self, consumer: &Consumer) -> usize {
        assert_eq!(
            consumer.chain, self.head.id,
            "a consumer token of another chain"
        );
        // SAFETY: `read` is reached only through the consumer token, which the caller holds.
        let read = self.head.read.with_mut(|read| unsafe { *read });
        self.head.claimed.load(Ordering::Relaxed) - read
    }

    /// Reads the oldest claimed task; `None` when every claimed task has been read.
    #[inline]
    pub(crate) fn next(&self, consumer: &mut Consumer) -> Option<T> {
        assert_eq!(
            consumer.chain, self.head.id,
            "a consumer token of another chain"
        );
        // SAFETY: `read` and `current` are reached only through the consumer token, held
        // `&mut`.
        unsafe { self.read_next(self.head.claimed.load(Ordering::Relaxed)) }
    }

    /// Reads the oldest task below `claimed` not yet read, and moves past it.
    ///
    /// # Safety
    ///
    /// The caller holds the consumer end (its token `&mut`, or the chain `&mut`), and every
    /// task below `claimed` was published and seen through an Acquire load of `pushed`.
    unsafe fn read_next(&self, claimed: usize) -> Option<T> {
        let i = self.head.read.with_mut(|read| {
            // SAFETY: the caller holds the consumer end.
            unsafe {
                let i = *read;
                if i < claimed {
                    *read = i + 1;
                }
                i
            }
        });
        if i == claimed {
            return None;
        }
        let segment = self.head.current.with_mut(|current| {
            // SAFETY: the caller holds the consumer end. At a segment's start, slot `i` is
            // published: the producer linked its segment before it (and, past the first, has
            // moved on from the old one, which nobody else reaches).
            unsafe {
                if i.is_multiple_of(N) {
                    if i == 0 {
                        *current = self.tail.first.with_mut(|link| *link);
                    } else {
                        let old = *current;
                        *current = (*old).next.with_mut(|link| *link);
                        self.retire(old);
                    }
                }
                *current
            }
        });
        // SAFETY: slot `i` was written and published (the caller's contract) and is read once:
        // `read` has moved past it, and only this end reads slots.
        Some(unsafe { (*segment).slots[i % N].with_mut(|slot| (*slot).assume_init_read()) })
    }

    /// The consumer is done with `segment`: it becomes the spare, and the spare it replaces goes
    /// to the shared spares.
    ///
    /// # Safety
    ///
    /// Only the consumer end's holder calls it, with a segment whose tasks it has all read and
    /// that the producer has moved past: nobody else reaches it.
    unsafe fn retire(&self, segment: *mut Segment<T, N>) {
        // Release: this end's reads of its slots come before the producer's next writes there
        // (its swap in `Segment::take_or_alloc` is an Acquire).
        let old = self.spare.swap(segment, Ordering::AcqRel);
        if !old.is_null() {
            // SAFETY: the swap took the old spare back from the chain: this end alone has it,
            // and it holds no task.
            unsafe { self.spares.keep(old) };
        }
    }
}

impl<T, const N: usize> Drop for Chain<T, N> {
    fn drop(&mut self) {
        // `&mut self`: both ends are here. Drop the tasks not yet read, in order, then free
        // the one segment both ends are on (if a task was ever pushed), and the spare.
        let pushed = self.tail.pushed.load(Ordering::Acquire);
        // SAFETY: `&mut self` holds the consumer end, and `pushed` was read Acquire.
        while let Some(task) = unsafe { self.read_next(pushed) } {
            drop(task);
        }
        let last = self.head.current.with_mut(|current| {
            // SAFETY: `&mut self`: nobody else reaches the segment pointer.
            unsafe { *current }
        });
        if !last.is_null() {
            // SAFETY: every task is read, so both ends are on the segment of slot `pushed - 1`:
            // the one segment left in the chain, freed once, here.
            unsafe { Segment::free(last) };
        }
        let spare = self.spare.swap(ptr::null_mut(), Ordering::Acquire);
        if !spare.is_null() {
            // SAFETY: the spare is no one else's now, and holds no task.
            unsafe { Segment::free(spare) };
        }
    }
}
