//! Async admission: [`Workqueue::queue_async`] and [`Workqueue::spawn_async`] wait for room
//! under a `max_backlog` as futures, with any executor and no runtime (B4, B5 of
//! `workqueue/README.md`; the waker list is `task/admission.rs`'s).

use std::future::{poll_fn, Future};
use std::task::{Context, Poll};

use crate::here::Here;
use crate::workqueue::api::join::{spawned, JoinHandle};
use crate::workqueue::api::workqueue::Workqueue;
use crate::workqueue::task::Job;

/// Room in the backlog for one execution, as a future: [`Workqueue::admit`] without a
/// blocked thread.
struct Admit<'a> {
    /// The workqueue.
    wq: &'a Workqueue,
    /// The registration with the backlog's waker list, while the future waits (B4).
    reg: Option<u64>,
}

impl Admit<'_> {
    /// `Ready(true)` once it has room (or needs none), `Ready(false)` when refused.
    fn poll_admit(&mut self, cx: &mut Context<'_>) -> Poll<bool> {
        let wq = self.wq;
        if wq.refused() {
            self.withdraw();
            return Poll::Ready(false);
        }
        let Some(backlog) = &wq.shared.backlog else {
            return Poll::Ready(true);
        };
        if wq.called_from_own_item() {
            // As B1: an item of the workqueue goes over the bound rather than wait for itself.
            self.withdraw();
            backlog.force();
            return Poll::Ready(true);
        }
        if !backlog.poll_enter(&mut self.reg, cx.waker()) {
            return Poll::Pending;
        }
        if wq.refused() {
            // A drain began while it waited: the room goes back (B1).
            backlog.leave();
            return Poll::Ready(false);
        }
        Poll::Ready(true)
    }

    /// B5: gives up a registration.
    fn withdraw(&mut self) {
        if let Some(backlog) = &self.wq.shared.backlog {
            backlog.withdraw(&mut self.reg);
        }
    }
}

impl Drop for Admit<'_> {
    fn drop(&mut self) {
        self.withdraw();
    }
}

impl Workqueue {
    /// Queues a one-shot closure as [`Workqueue::queue`] does, waiting for room in a full
    /// [`max_backlog`](crate::WorkqueueBuilder::max_backlog) as a future rather than with a
    /// blocked thread: it completes with what `queue` returns. Any executor can await it; it
    /// needs no runtime. Dropped before it completes, it queues nothing and gives up its
    /// place (a wake-up meant for it goes to the next waiter).
    ///
    /// ```
    /// use podq::Workqueue;
    ///
    /// let wq = Workqueue::builder("admission").max_backlog(64).build()?;
    /// futures_executor::block_on(async {
    ///     for i in 0..1000 {
    ///         assert!(wq.queue_async(move || drop(i)).await);
    ///     }
    /// });
    /// wq.flush();
    /// # Ok::<(), podq::Error>(())
    /// ```
    pub fn queue_async<F>(&self, f: F) -> impl Future<Output = bool> + Send + '_
    where
        F: FnOnce() + Send + 'static,
    {
        let mut admit = Admit {
            wq: self,
            reg: None,
        };
        async move {
            if !poll_fn(|cx| admit.poll_admit(cx)).await {
                return false;
            }
            let here = Here::now();
            self.submit(Job::once(f), self.pick_here(here), here.index());
            true
        }
    }

    /// Queues a closure that returns a value as [`Workqueue::spawn`] does, waiting for room as
    /// [`Workqueue::queue_async`] does; completes with the closure's handle once it is queued
    /// (or refused: the handle then gives [`JoinError::Cancelled`](crate::JoinError)). The
    /// handle is itself a future of the value: `wq.spawn_async(f).await.await`.
    // The handle is the output on purpose: it is awaited apart, or joined, or dropped.
    #[allow(clippy::async_yields_async)]
    pub fn spawn_async<F, T>(&self, f: F) -> impl Future<Output = JoinHandle<T>> + Send + '_
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let mut admit = Admit {
            wq: self,
            reg: None,
        };
        async move {
            let admitted = poll_fn(|cx| admit.poll_admit(cx)).await;
            let (handle, job) = spawned(f);
            if admitted {
                let here = Here::now();
                self.submit(job, self.pick_here(here), here.index());
            }
            handle
        }
    }
}
