//! [`Work::with_self`]: a work item whose closure receives the item it runs as, so that it can
//! queue itself again (the kernel's most common pattern: a poll, a retry, a periodic flush)
//! without a slot holding its own handle, and stops when its handles go.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::workqueue::api::work::Work;
use crate::workqueue::task::work_item::WorkInner;

impl Work {
    /// A new item running `f` each time it is queued, with the item itself as `f`'s argument:
    /// `f` may queue it again (on a workqueue it holds, for example through an `Arc`), flush
    /// nothing of its own, or keep a clone of it somewhere (that clone is a handle like any
    /// other).
    ///
    /// The argument does not keep the item up. Once the last handle (every [`Work`] the user
    /// holds, clones included, but not the argument of a run) is dropped, the item runs at
    /// most once more: an execution pending then, or queued by the run going on then, still
    /// runs; after that run the closure is dropped (and what it holds, a workqueue's `Arc`
    /// included), a queue call it made is left to run nothing, and the item is freed once no
    /// execution holds it. Nothing leaks and nothing needs breaking by hand.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// use podq::{Work, Workqueue};
    ///
    /// let wq = Arc::new(Workqueue::builder("poller").build()?);
    /// let polls = Arc::new(AtomicUsize::new(0));
    /// let (on, count) = (Arc::clone(&wq), Arc::clone(&polls));
    /// let poller = Work::with_self(move |me| {
    ///     if count.fetch_add(1, Ordering::Relaxed) < 9 {
    ///         on.queue_work(me);
    ///     }
    /// });
    /// wq.queue_work(&poller);
    /// while polls.load(Ordering::Relaxed) < 10 {
    ///     poller.flush();
    /// }
    /// drop(poller);
    /// # Ok::<(), podq::Error>(())
    /// ```
    pub fn with_self(f: impl FnMut(&Work) + Send + 'static) -> Work {
        let mut f = Some(f);
        let run = move |item: &Arc<WorkInner>| {
            // Acquire: the handles' drops (release) happened before.
            let last = item.handles.load(Ordering::Acquire) == 0;
            let Some(func) = f.as_mut() else {
                return;
            };
            // The argument is a handle while the run lasts: a clone the closure keeps is one.
            item.handles.fetch_add(1, Ordering::Relaxed);
            let me = Work {
                inner: Arc::clone(item),
            };
            let outcome = catch_unwind(AssertUnwindSafe(|| func(&me)));
            drop(me);
            if last {
                f = None;
            }
            if let Err(payload) = outcome {
                // The worker counts it as any item's panic.
                resume_unwind(payload);
            }
        };
        Work {
            inner: Arc::new(WorkInner::new(run)),
        }
    }
}
