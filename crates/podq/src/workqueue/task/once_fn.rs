//! [`OnceFn`]: a one-shot closure queued with `Workqueue::queue`, kept inside the task itself
//! when it is small, so that queueing it allocates nothing.
//!
//! A boxed `dyn FnOnce` costs one `malloc` on the producer and one `free` on the worker that
//! runs it, on another thread. An `OnceFn` keeps a closure of at most [`INLINE_BYTES`] bytes,
//! aligned to at most a `usize`, in a buffer of its own, and boxes only the others: the
//! buffer then holds the `Box`.
//!
//! Invariants, on which every `unsafe` block of this file rests:
//!
//! * the buffer holds a valid value of exactly one type `C` (the closure, or the `Box` of a
//!   closure that does not fit), written by [`OnceFn::new`], which checked that `C` fits the
//!   buffer's size and alignment;
//! * `vtable` is `C`'s: its two functions read or drop a `C` and nothing else;
//! * that value is taken out exactly once: moved out and called by [`OnceFn::call`], which
//!   keeps `self` from being dropped afterwards (`ManuallyDrop`), or dropped in place by
//!   `Drop` when it was never called. A panic of the closure or of a captured value's drop
//!   unwinds out of that one function and never leads to a second one;
//! * `C` is `Send` and `'static` (the bounds of [`OnceFn::new`]), which is what lets an
//!   `OnceFn` go to another thread and outlive its queuer.
//!
//! [`PackedJob`] keeps any job of a task (a closure, a work item's `Arc`, a spawned closure's
//! slot) in the same buffer, its vtable saying which: a task needs no word for `Job`'s tag.
//!
//! This, `pod_ref.rs` and `api/owner_gate.rs` are the files of the workqueue that may use
//! `unsafe`.
#![allow(unsafe_code)]

use std::marker::PhantomData;
use std::mem::{self, ManuallyDrop, MaybeUninit};
use std::ptr;
use std::sync::Arc;

use crate::workqueue::task::spawned::SpawnJob;
use crate::workqueue::task::work_item::WorkInner;
use crate::workqueue::task::Job;

/// The most words a closure may take to be kept inline: 6 (48 bytes), what the bench's flood
/// item captures (an `Arc`, an index, an `Instant` and a `Duration`). It sets the size of
/// every queued `Task` (its test in `task/mod.rs`), closures and work items alike: 64 bytes with
/// the vtable and the accounting's word ([`PackedJob`]), where a task with a boxed closure
/// would take 24. Inline, the flood's closure costs no `malloc` on the producer and no `free` on
/// the worker: one producer's flood went from 0.72x to 0.82-0.95x of the channel pool's items/s
/// (`podq bench --threads 1 --runs 5 --peers channel --workload flood --scopes cache_shard`).
const INLINE_WORDS: usize = 6;

/// [`INLINE_WORDS`] in bytes.
pub(crate) const INLINE_BYTES: usize = INLINE_WORDS * mem::size_of::<usize>();

/// A type-erased `FnOnce() + Send + 'static`, run at most once; see the module's invariants.
/// In declaration order, as [`Task`](super::Task) says why.
#[repr(C)]
pub(crate) struct OnceFn {
    /// The closure, or its `Box` when it does not fit.
    buf: [MaybeUninit<usize>; INLINE_WORDS],
    /// How to run and drop what `buf` holds.
    vtable: &'static VTable,
    /// Owns a `dyn FnOnce() + Send`: `Send` (every constructor requires it of the closure),
    /// not `Sync` (nothing needs it).
    _owns: PhantomData<dyn FnOnce() + Send>,
}

/// The monomorphised functions of a stored type, and which kind of job it is.
struct VTable {
    /// Moves the value out of the buffer and calls it (a closure's; never called for the
    /// other kinds).
    call: unsafe fn(*mut u8),
    /// Drops the value in place.
    drop: unsafe fn(*mut u8),
    /// What the buffer holds.
    kind: Kind,
}

/// What a buffer holds: which [`Job`] it packs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A closure, or its `Box` ([`Job::Once`]).
    Once,
    /// An `Arc<WorkInner>` ([`Job::Work`]).
    Work,
    /// A [`SpawnJob`] ([`Job::Spawned`]).
    Spawned,
}

/// The vtable of a stored type `C`.
struct Erased<C>(PhantomData<C>);

impl<C: FnOnce()> Erased<C> {
    /// `C`'s vtable; a constant, so that `&Self::VTABLE` is a `'static` promoted one.
    const VTABLE: VTable = VTable {
        call: call::<C>,
        drop: drop_value::<C>,
        kind: Kind::Once,
    };
}

// What the two vtables below are for fits the buffer.
const _: () = assert!(fits::<Arc<WorkInner>>() && fits::<SpawnJob>());

/// The vtable of a packed [`Job::Work`].
static WORK: VTable = VTable {
    call: not_a_closure,
    drop: drop_value::<Arc<WorkInner>>,
    kind: Kind::Work,
};

/// The vtable of a packed [`Job::Spawned`].
static SPAWNED: VTable = VTable {
    call: not_a_closure,
    drop: drop_value::<SpawnJob>,
    kind: Kind::Spawned,
};

/// The `call` of the vtables that hold no closure: never called (a [`PackedJob`] of those
/// kinds is never made an [`OnceFn`]).
unsafe fn not_a_closure(_: *mut u8) {
    unreachable!("only a closure's vtable is called");
}

/// Whether a `C` fits the buffer: at most its size, at most its alignment.
const fn fits<C>() -> bool {
    mem::size_of::<C>() <= INLINE_BYTES && mem::align_of::<C>() <= mem::align_of::<usize>()
}

impl OnceFn {
    /// Keeps `f` inline when it fits, else boxed.
    #[inline]
    pub(crate) fn new<F: FnOnce() + Send + 'static>(f: F) -> OnceFn {
        if fits::<F>() {
            OnceFn::store(f)
        } else {
            OnceFn::store(Box::new(f))
        }
    }

    /// Writes `c` into the buffer with its vtable.
    ///
    /// # Panics
    ///
    /// When `C` does not fit (a bug of [`OnceFn::new`]; [`buffer_of`] checks).
    #[inline]
    fn store<C: FnOnce() + Send + 'static>(c: C) -> OnceFn {
        OnceFn {
            buf: buffer_of(c),
            vtable: &Erased::<C>::VTABLE,
            _owns: PhantomData,
        }
    }

    /// Runs the closure (once: it takes `self`). A panic unwinds out of this call, after the
    /// closure's captures were dropped, once.
    #[inline]
    pub(crate) fn call(self) {
        // `Drop` must not run: the value moves out here, also when it panics.
        let mut this = ManuallyDrop::new(self);
        let call = this.vtable.call;
        // SAFETY: the buffer holds the value `vtable` is for (module invariants), not taken out
        // before (this is `call`, which consumes `self`); after this it is never touched again.
        unsafe { call(this.buf.as_mut_ptr().cast::<u8>()) };
    }
}

impl Drop for OnceFn {
    /// Drops a closure that was never called, with its captures; a capture's panicking drop
    /// unwinds out of here.
    fn drop(&mut self) {
        // SAFETY: the buffer holds the value `vtable` is for (module invariants); it was not
        // taken out, since `call` never lets `self` be dropped. `drop` runs once.
        unsafe { (self.vtable.drop)(self.buf.as_mut_ptr().cast::<u8>()) };
    }
}

/// A [`Job`] without its enum's tag: the buffer and vtable of an [`OnceFn`], which holds the
/// work item's `Arc` or the spawned closure's [`SpawnJob`] with a vtable of their own
/// ([`WORK`], [`SPAWNED`]), so that the vtable says which job it is. `Job` needs a word of
/// its own for its tag (64 bytes); packed, a queued task is 64 bytes with its accounting, one
/// cache line of a lane's chain.
///
/// Invariants: as [`OnceFn`]'s, with `vtable` the vtable of the buffer's type, whichever kind
/// it is; an `OnceFn` is made of a packed job only when its kind is [`Kind::Once`]. In
/// declaration order, as [`Task`](super::Task) says why.
#[repr(C)]
pub(crate) struct PackedJob {
    /// The closure (or its `Box`), the item's `Arc` or the `SpawnJob`.
    buf: [MaybeUninit<usize>; INLINE_WORDS],
    /// How to drop what `buf` holds, and which kind of job it is.
    vtable: &'static VTable,
    /// Owns a `Send` value that need not be `Sync`, as [`OnceFn`] does.
    _owns: PhantomData<dyn FnOnce() + Send>,
}

impl PackedJob {
    /// Packs `job`.
    #[inline]
    pub(crate) fn pack(job: Job) -> PackedJob {
        match job {
            Job::Once(f) => {
                // Its buffer and vtable move into the packed job, which drops them.
                let f = ManuallyDrop::new(f);
                PackedJob {
                    buf: f.buf,
                    vtable: f.vtable,
                    _owns: PhantomData,
                }
            }
            Job::Work(item) => PackedJob::store(item, &WORK),
            Job::Spawned(job) => PackedJob::store(job, &SPAWNED),
        }
    }

    /// Writes `value` into a buffer with `vtable`, which must be its type's.
    #[inline]
    fn store<C: Send>(value: C, vtable: &'static VTable) -> PackedJob {
        PackedJob {
            buf: buffer_of(value),
            vtable,
            _owns: PhantomData,
        }
    }

    /// The job again.
    #[inline]
    pub(crate) fn unpack(self) -> Job {
        // The value moves out into the job: `Drop` must not run.
        let this = ManuallyDrop::new(self);
        let at = this.buf.as_ptr();
        match this.vtable.kind {
            Kind::Once => Job::Once(OnceFn {
                buf: this.buf,
                vtable: this.vtable,
                _owns: PhantomData,
            }),
            // SAFETY: the kind says the buffer holds an `Arc<WorkInner>` (invariants), which is
            // read once: `self` is not dropped.
            Kind::Work => Job::Work(unsafe { ptr::read(at.cast::<Arc<WorkInner>>()) }),
            // SAFETY: as above, a `SpawnJob`.
            Kind::Spawned => Job::Spawned(unsafe { ptr::read(at.cast::<SpawnJob>()) }),
        }
    }

    /// The work item, when the job is one.
    #[inline]
    pub(crate) fn work(&self) -> Option<&Arc<WorkInner>> {
        // SAFETY: the kind says the buffer holds an `Arc<WorkInner>` (invariants), borrowed
        // with `self`.
        (self.vtable.kind == Kind::Work)
            .then(|| unsafe { &*self.buf.as_ptr().cast::<Arc<WorkInner>>() })
    }

    /// Which kind of job it is, for `Debug`.
    pub(crate) fn kind(&self) -> &'static str {
        match self.vtable.kind {
            Kind::Once => "once",
            Kind::Work => "work",
            Kind::Spawned => "spawned",
        }
    }
}

impl Drop for PackedJob {
    /// Drops the job unrun, as dropping the [`Job`] would.
    fn drop(&mut self) {
        // SAFETY: the buffer holds the value `vtable` is for (invariants), not moved out
        // (`unpack` never lets `self` be dropped). `drop` runs once.
        unsafe { (self.vtable.drop)(self.buf.as_mut_ptr().cast::<u8>()) };
    }
}

/// A buffer holding `value`.
///
/// # Panics
///
/// When `C` does not fit (a bug of the caller); a constant check, compiled out.
#[inline]
fn buffer_of<C>(value: C) -> [MaybeUninit<usize>; INLINE_WORDS] {
    assert!(fits::<C>(), "a value stored inline fits the buffer");
    let mut buf = [MaybeUninit::<usize>::uninit(); INLINE_WORDS];
    // SAFETY: `C` fits the buffer's size and alignment (checked above), and the buffer is ours,
    // uninitialised: the write moves `value` in without dropping anything.
    unsafe { ptr::write(buf.as_mut_ptr().cast::<C>(), value) };
    buf
}

/// Moves the `C` at `p` out and calls it.
///
/// # Safety
///
/// `p` points to a valid, aligned `C`, which the caller never uses again.
unsafe fn call<C: FnOnce()>(p: *mut u8) {
    // SAFETY: the caller's contract; the read moves the value out, so the call consumes it and
    // drops its captures, also when it panics.
    let c = unsafe { ptr::read(p.cast::<C>()) };
    c();
}

/// Drops the `C` at `p` in place.
///
/// # Safety
///
/// `p` points to a valid, aligned `C`, which the caller never uses again.
unsafe fn drop_value<C>(p: *mut u8) {
    // SAFETY: the caller's contract.
    unsafe { ptr::drop_in_place(p.cast::<C>()) };
}

#[cfg(test)]
mod tests {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Instant;

    use super::{fits, OnceFn};

    /// Whether `OnceFn::new(f)` keeps `f` inline.
    fn fits_of<F>(_: &F) -> bool {
        fits::<F>()
    }

    /// Counts its drops in a shared counter.
    struct Tracked(Arc<AtomicUsize>);

    impl Drop for Tracked {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Counts its drop, then panics.
    struct Bomb(Arc<AtomicUsize>);

    impl Drop for Bomb {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
            panic!("a captured value's drop panics");
        }
    }

    /// 64 bytes aligned to 64: too aligned for the buffer, whatever its size.
    #[repr(align(64))]
    struct Aligned([u64; 8]);

    fn counter() -> Arc<AtomicUsize> {
        Arc::new(AtomicUsize::new(0))
    }

    fn count(c: &Arc<AtomicUsize>) -> usize {
        c.load(Ordering::SeqCst)
    }

    #[test]
    fn a_small_closure_runs_once_inline_with_its_captures() {
        let (ran, drops) = (counter(), counter());
        let (r, tracked, n) = (Arc::clone(&ran), Tracked(Arc::clone(&drops)), 7);
        let f = move || {
            let _tracked = tracked;
            r.fetch_add(n, Ordering::SeqCst);
        };
        assert!(fits_of(&f));
        let f = OnceFn::new(f);
        assert_eq!((count(&ran), count(&drops)), (0, 0));
        f.call();
        assert_eq!((count(&ran), count(&drops)), (7, 1));
    }

    #[test]
    fn an_arc_an_instant_and_a_usize_fit() {
        let (arc, t0, n) = (counter(), Instant::now(), 1_usize);
        let f = move || drop((arc, t0, n));
        assert!(fits_of(&f));
        OnceFn::new(f).call();
    }

    #[test]
    fn a_large_closure_runs_boxed() {
        let (sum, drops) = (counter(), counter());
        let (s, tracked) = (Arc::clone(&sum), Tracked(Arc::clone(&drops)));
        let data: [u64; 16] = std::array::from_fn(|i| i as u64);
        let f = move || {
            let _tracked = tracked;
            let total: u64 = data.iter().sum();
            s.fetch_add(usize::try_from(total).unwrap(), Ordering::SeqCst);
        };
        assert!(!fits_of(&f));
        OnceFn::new(f).call();
        assert_eq!((count(&sum), count(&drops)), (120, 1));
    }

    #[test]
    fn an_overaligned_closure_runs_boxed() {
        let (seen, drops) = (counter(), counter());
        let (s, tracked) = (Arc::clone(&seen), Tracked(Arc::clone(&drops)));
        let aligned = Aligned([3; 8]);
        let f = move || {
            let _tracked = tracked;
            let at = std::ptr::from_ref(&aligned) as usize;
            assert_eq!(at % 64, 0, "the boxed closure keeps its alignment");
            s.fetch_add(usize::try_from(aligned.0[7]).unwrap(), Ordering::SeqCst);
        };
        assert!(!fits_of(&f));
        OnceFn::new(f).call();
        assert_eq!((count(&seen), count(&drops)), (3, 1));
    }

    #[test]
    fn an_uncalled_closure_drops_its_captures_once() {
        let drops = counter();
        let (a, b) = (Tracked(Arc::clone(&drops)), Tracked(Arc::clone(&drops)));
        let inline = move || drop((a, b));
        assert!(fits_of(&inline));
        drop(OnceFn::new(inline));
        assert_eq!(count(&drops), 2);

        let (c, big) = (Tracked(Arc::clone(&drops)), [1_u64; 16]);
        let boxed = move || drop((c, big));
        assert!(!fits_of(&boxed));
        drop(OnceFn::new(boxed));
        assert_eq!(count(&drops), 3);

        let (d, aligned) = (Tracked(Arc::clone(&drops)), Aligned([0; 8]));
        let overaligned = move || drop((d, aligned));
        assert!(!fits_of(&overaligned));
        drop(OnceFn::new(overaligned));
        assert_eq!(count(&drops), 4);
    }

    #[test]
    fn a_panicking_closure_drops_its_captures_once() {
        let drops = counter();
        let tracked = Tracked(Arc::clone(&drops));
        let inline = OnceFn::new(move || {
            let _tracked = &tracked;
            panic!("the closure panics");
        });
        assert!(catch_unwind(AssertUnwindSafe(|| inline.call())).is_err());
        assert_eq!(count(&drops), 1);

        let (tracked, big) = (Tracked(Arc::clone(&drops)), [2_u64; 16]);
        let boxed = move || {
            let _keep = (&tracked, &big);
            panic!("the closure panics");
        };
        assert!(!fits_of(&boxed));
        let boxed = OnceFn::new(boxed);
        assert!(catch_unwind(AssertUnwindSafe(|| boxed.call())).is_err());
        assert_eq!(count(&drops), 2);
    }

    #[test]
    fn zero_sized_closures_run_and_drop() {
        static RUNS: AtomicUsize = AtomicUsize::new(0);
        let f = || {
            RUNS.fetch_add(1, Ordering::SeqCst);
        };
        assert_eq!(std::mem::size_of_val(&f), 0);
        assert!(fits_of(&f));
        OnceFn::new(f).call();
        drop(OnceFn::new(f));
        OnceFn::new(f).call();
        assert_eq!(RUNS.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_captures_panicking_drop_unwinds_once_out_of_an_uncalled_closure() {
        for boxed in [false, true] {
            let (bombs, drops) = (counter(), counter());
            let bomb = Bomb(Arc::clone(&bombs));
            let tracked = Tracked(Arc::clone(&drops));
            let big = [0_u64; 16];
            let f = if boxed {
                OnceFn::new(move || drop((bomb, tracked, big)))
            } else {
                OnceFn::new(move || drop((bomb, tracked)))
            };
            assert!(catch_unwind(AssertUnwindSafe(move || drop(f))).is_err());
            // Every capture is dropped, the one after the panicking one too, each once.
            assert_eq!((count(&bombs), count(&drops)), (1, 1), "boxed: {boxed}");
        }
    }

    #[test]
    fn a_captures_panicking_drop_unwinds_once_out_of_a_call() {
        let (ran, bombs) = (counter(), counter());
        let (r, bomb) = (Arc::clone(&ran), Bomb(Arc::clone(&bombs)));
        let f = OnceFn::new(move || {
            let _bomb = bomb;
            r.fetch_add(1, Ordering::SeqCst);
        });
        assert!(catch_unwind(AssertUnwindSafe(move || f.call())).is_err());
        assert_eq!((count(&ran), count(&bombs)), (1, 1));
    }

    #[test]
    fn a_packed_closure_unpacks_to_run_once_or_drops_its_captures_once() {
        use super::PackedJob;
        use crate::workqueue::task::Job;
        for boxed in [false, true] {
            let (ran, drops) = (counter(), counter());
            let make = || {
                let (r, tracked, big) = (Arc::clone(&ran), Tracked(Arc::clone(&drops)), [1_u64; 8]);
                let small = move || {
                    let _tracked = tracked;
                    r.fetch_add(1, Ordering::SeqCst);
                };
                if boxed {
                    Job::once(move || {
                        small();
                        std::hint::black_box(big);
                    })
                } else {
                    Job::once(small)
                }
            };
            let packed = PackedJob::pack(make());
            assert_eq!((packed.kind(), packed.work().is_none()), ("once", true));
            match packed.unpack() {
                Job::Once(f) => f.call(),
                _ => panic!("a closure unpacks as a closure"),
            }
            drop(PackedJob::pack(make()));
            assert_eq!((count(&ran), count(&drops)), (1, 2), "boxed: {boxed}");
        }
    }

    #[test]
    fn a_packed_work_item_is_its_arc() {
        use super::PackedJob;
        use crate::workqueue::task::work_item::WorkInner;
        use crate::workqueue::task::Job;
        let work = Arc::new(WorkInner::new(|_| {}));
        let item = Arc::clone(&work);
        let packed = PackedJob::pack(Job::Work(Arc::clone(&item)));
        assert_eq!(packed.kind(), "work");
        assert!(packed.work().is_some_and(|w| Arc::ptr_eq(w, &item)));
        assert_eq!(Arc::strong_count(&item), 3);
        match packed.unpack() {
            Job::Work(w) => assert!(Arc::ptr_eq(&w, &item)),
            _ => panic!("a work item unpacks as a work item"),
        }
        assert_eq!(Arc::strong_count(&item), 2);
        drop(PackedJob::pack(Job::Work(Arc::clone(&item))));
        assert_eq!(
            Arc::strong_count(&item),
            2,
            "dropping a packed item drops its Arc"
        );
    }
}
