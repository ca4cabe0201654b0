//! [`Workqueue::scoped`]: items that borrow from the caller's stack, with the lifetimes of
//! [`std::thread::scope`]: the call returns only once every item queued through its
//! [`Scope`] has finished (run, or dropped unrun), so what they borrow outlives them.
//!
//! Unsafe code: an item's closure is queued with its lifetime erased to `'static` (as
//! `crossbeam::scope` and `rayon::scope` do); the scope's count of unfinished items, lowered
//! only after the closure ran or was dropped, keeps `scoped` from returning while one of them
//! may still touch a borrow.
#![allow(unsafe_code)]

use std::fmt;
use std::marker::PhantomData;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use crate::workqueue::api::join::{JoinError, JoinHandle};
use crate::workqueue::api::workqueue::Workqueue;

/// Where [`Workqueue::scoped`] queues items that borrow from its caller: made by `scoped`,
/// used through a reference to it.
pub struct Scope<'scope, 'env: 'scope> {
    /// The workqueue.
    wq: &'scope Workqueue,
    /// The items' count and the caller's wait.
    state: Arc<ScopeState>,
    /// Invariant in `'scope` and `'env`, as `std::thread::Scope`.
    scope: PhantomData<&'scope mut &'scope ()>,
    /// See `scope`.
    env: PhantomData<&'env mut &'env ()>,
}

/// What a scope's items share with its caller.
struct ScopeState {
    /// Items queued and not finished.
    unfinished: AtomicUsize,
    /// Items that panicked, less those whose panic a join handed over.
    panicked: AtomicUsize,
    /// The caller sleeps here until `unfinished` is zero.
    lock: Mutex<()>,
    /// See `lock`.
    done: Condvar,
}

impl ScopeState {
    /// One item finished (ran, panicked or was dropped unrun).
    fn finish(&self, panicked: bool) {
        if panicked {
            self.panicked.fetch_add(1, Ordering::Relaxed);
        }
        // Release: the caller that reads zero sees everything the item did.
        if self.unfinished.fetch_sub(1, Ordering::Release) == 1 {
            // Under the lock, so that the caller cannot miss it between its look and its sleep.
            let _held = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
            self.done.notify_all();
        }
    }

    /// Waits until every item finished.
    fn wait(&self) {
        let mut held = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        while self.unfinished.load(Ordering::Acquire) != 0 {
            held = self.done.wait(held).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// Tells the scope its item finished when dropped: after the closure returned, unwound, or
/// was dropped unrun (it is declared after the closure wherever both are held).
struct Finish(Arc<ScopeState>);

impl Drop for Finish {
    fn drop(&mut self) {
        self.0.finish(std::thread::panicking());
    }
}

/// A borrowing closure with its finish, its lifetime erased for the workqueue.
fn erase<'scope>(f: impl FnOnce() + Send + 'scope, finish: Finish) -> ErasedFn {
    let item: Box<dyn FnOnce() + Send + 'scope> = Box::new(move || {
        // The closure is consumed (run) before `finish` drops, also when it unwinds.
        let finish = finish;
        f();
        drop(finish);
    });
    // SAFETY: `Workqueue::scoped` returns only once `finish` dropped, which is after the
    // closure and every borrow it holds is gone: the closure never outlives `'scope`.
    unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + 'scope>, ErasedFn>(item) }
}

/// A scope's closure as the workqueue holds it.
type ErasedFn = Box<dyn FnOnce() + Send + 'static>;

impl<'scope> Scope<'scope, '_> {
    /// Queues a one-shot closure that may borrow from outside the scope, as
    /// [`Workqueue::queue`] does (same placement, same `max_backlog` wait, `false` where
    /// `queue` returns `false`: the closure is then dropped unrun).
    pub fn queue(&'scope self, f: impl FnOnce() + Send + 'scope) -> bool {
        self.state.unfinished.fetch_add(1, Ordering::Relaxed);
        self.wq.queue(erase(f, Finish(Arc::clone(&self.state))))
    }

    /// Queues a closure that returns a value and may borrow from outside the scope, as
    /// [`Workqueue::spawn`] does; its handle gives the value back.
    pub fn spawn<T: Send + 'scope>(
        &'scope self,
        f: impl FnOnce() -> T + Send + 'scope,
    ) -> ScopedJoinHandle<'scope, T> {
        let value = Arc::new(Mutex::new(None));
        let put = Arc::clone(&value);
        self.state.unfinished.fetch_add(1, Ordering::Relaxed);
        let erased = erase(
            move || {
                let v = f();
                *put.lock().unwrap_or_else(PoisonError::into_inner) = Some(v);
            },
            Finish(Arc::clone(&self.state)),
        );
        ScopedJoinHandle {
            handle: self.wq.spawn(erased),
            value,
            state: Arc::clone(&self.state),
            scope: PhantomData,
        }
    }
}

impl fmt::Debug for Scope<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scope")
            .field("workqueue", &self.wq.name())
            .field("unfinished", &self.state.unfinished.load(Ordering::Relaxed))
            .finish()
    }
}

/// The handle of a closure queued with [`Scope::spawn`].
///
/// Dropping it does not cancel the closure; `scoped` still waits for it, and panics at the
/// end if it panicked.
#[must_use = "dropping a ScopedJoinHandle lets the closure run but loses its value"]
pub struct ScopedJoinHandle<'scope, T> {
    /// The handle of the erased closure.
    handle: JoinHandle<()>,
    /// Where the closure puts its value.
    value: Arc<Mutex<Option<T>>>,
    /// The scope, told when this join takes a panic over.
    state: Arc<ScopeState>,
    /// Tied to the scope.
    scope: PhantomData<&'scope ()>,
}

impl<T> ScopedJoinHandle<'_, T> {
    /// Waits until the closure has run and returns its value.
    ///
    /// # Errors
    ///
    /// As [`JoinHandle::join`]: [`JoinError::Panicked`] (the panic is then the caller's:
    /// `scoped` does not panic for it), or [`JoinError::Cancelled`].
    pub fn join(self) -> Result<T, JoinError> {
        match self.handle.join() {
            Ok(()) => Ok(self
                .value
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
                .expect("a closure that returned put its value")),
            Err(e) => {
                if e.is_panic() {
                    self.state.panicked.fetch_sub(1, Ordering::Relaxed);
                }
                Err(e)
            }
        }
    }

    /// Whether the closure has finished: [`ScopedJoinHandle::join`] would return at once.
    pub fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }
}

impl<T> fmt::Debug for ScopedJoinHandle<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScopedJoinHandle")
            .field("finished", &self.is_finished())
            .finish()
    }
}

impl Workqueue {
    /// Runs `f` with a [`Scope`] whose items may borrow from the caller's stack (the name
    /// `scope` is the affinity scope's), as [`std::thread::scope`] runs threads: it returns
    /// `f`'s value once every item queued through the scope has finished, and if one of them
    /// panicked (and no [`ScopedJoinHandle::join`] took that panic), it panics after all have
    /// finished. A panic of `f` itself is resumed, also after every item finished.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use podq::Workqueue;
    ///
    /// let wq = Workqueue::builder("fan-out").build()?;
    /// let data: Vec<u64> = (1..=1000).collect();
    /// let total = AtomicU64::new(0);
    /// let max = wq.scoped(|s| {
    ///     for chunk in data.chunks(100) {
    ///         s.queue(|| {
    ///             total.fetch_add(chunk.iter().sum::<u64>(), Ordering::Relaxed);
    ///         });
    ///     }
    ///     let max = s.spawn(|| data.iter().copied().max());
    ///     max.join().unwrap()
    /// });
    /// assert_eq!(total.into_inner(), 500_500);
    /// assert_eq!(max, Some(1000));
    /// # Ok::<(), podq::Error>(())
    /// ```
    ///
    /// Called from one of this workqueue's own items, the calling item blocks until the scope's
    /// items finished; the pool replaces a worker whose item blocks, so they run.
    ///
    /// # Panics
    ///
    /// * after every item finished, when one of them panicked, or when `f` did;
    /// * at once, before `f` runs, when called from an item of this same workqueue and the
    ///   workqueue runs one item at a time (ordered, or `max_active(1)`): the scope's items
    ///   could only run after the caller, so it would never finish.
    #[track_caller]
    pub fn scoped<'env, F, T>(&'env self, f: F) -> T
    where
        F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> T,
    {
        assert!(
            !(self.called_from_own_item() && self.max_active() == Some(1)),
            "Workqueue::scoped called from an item of workqueue '{}', which runs one item at \
             a time: the scope's items could never run",
            self.name()
        );
        let scope = Scope {
            wq: self,
            state: Arc::new(ScopeState {
                unfinished: AtomicUsize::new(0),
                panicked: AtomicUsize::new(0),
                lock: Mutex::new(()),
                done: Condvar::new(),
            }),
            scope: PhantomData,
            env: PhantomData,
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| f(&scope)));
        scope.state.wait();
        match outcome {
            Err(payload) => resume_unwind(payload),
            Ok(_) if scope.state.panicked.load(Ordering::Relaxed) != 0 => {
                panic!("an item of a Workqueue::scoped scope panicked")
            }
            Ok(value) => value,
        }
    }
}
