//! Worker threads: start, placement on the pod's CPUs, the run loop, and exit.
//!
//! A worker is a detached thread named `podq/{pool}`. Nothing ever joins it: it holds its own
//! handle on the pool's shared state and ends by itself when the core tells it to (retired
//! after `idle_timeout`, or shut down with an empty queue). [`super::Pool`]'s drop waits for
//! the workers to be gone through the core's worker count, never by joining, and not at all on
//! a worker of the same pool.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::thread;

use super::core::{Grow, Next, NoSiblings, Siblings, WorkerSlot};
use super::probe::WorkerProbe;
use super::pull::PullGroup;
use super::{Hook, Runnable, Shared, WorkerInfo};
use crate::cpuset::CpuSet;
use crate::sync::atomic::Ordering;
use crate::sync::Arc;

thread_local! {
    /// The address of the pool state this thread works for; 0 on threads that are not podq
    /// workers. Only compared, never dereferenced.
    static WORKER_OF: Cell<usize> = const { Cell::new(0) };
    /// The pod of the pool this thread works for; `usize::MAX` on threads that are not podq
    /// workers. Written once when the worker starts.
    static WORKER_POD: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// The pod of the pool whose worker the calling thread is (where a task running on it runs),
/// `None` on any other thread.
pub(crate) fn worker_pod() -> Option<usize> {
    let pod = WORKER_POD.with(Cell::get);
    (pod != usize::MAX).then_some(pod)
}

/// Whether the calling thread is a worker of the pool whose state is `shared`.
pub(super) fn is_worker_of<T>(shared: &Arc<Shared<T>>) -> bool {
    let addr = Arc::as_ptr(shared) as usize;
    WORKER_OF.with(|w| w.get() == addr)
}

/// Starts one worker for the pool, as the core asked; where a pinned calling thread would
/// confine it, on the CPU of its home with the fewest of the pool's workers launched there
/// (`launch.rs`). If the pool's gate or the OS refuses the thread, or the last refusal was
/// less than `threads::RETRY_INTERVAL` ago (M3), the core takes the worker back and the pool's
/// waiting tasks go to its rescuer (M1, M2 in `rescuer.rs`): they never run on the calling
/// thread.
pub(super) fn start<T: Runnable>(shared: &Arc<Shared<T>>) {
    if shared.refusals.backing_off() {
        shared.core.spawn_failed();
        super::rescuer::refused(shared);
        return;
    }
    start_retry(shared);
}

/// Starts one worker for the pool as [`start`] does, asking the OS even within
/// `threads::RETRY_INTERVAL` of the last refusal (the rescuer's retry, M5).
pub(super) fn start_retry<T: Runnable>(shared: &Arc<Shared<T>>) {
    let name = format!("podq/{}", shared.name);
    let spawned =
        crate::threads::Gate::check(shared.worker.starts.as_ref(), &name).and_then(|()| {
            let for_worker = Arc::clone(shared);
            let mut builder = thread::Builder::new().name(name);
            if let Some(bytes) = shared.worker.stack_size {
                builder = builder.stack_size(bytes);
            }
            let choose = |here| shared.launched.choose(&home(shared).first, here);
            crate::launch::spawn(builder, choose, move |launched| {
                let _live = launched.map(|cpu| for_worker.launched.until_exit(cpu));
                run(&for_worker);
            })
        });
    if let Err(_error) = &spawned {
        shared.spawn_failures.fetch_add(1, Ordering::Relaxed);
        shared.refusals.refused();
        #[cfg(feature = "tracing")]
        crate::trace::spawn_failed(&shared.name, _error, shared.refusals.refused_for());
        shared.core.spawn_failed();
        super::rescuer::refused(shared);
    }
}

/// Acts on what the core asked for when work waits with every worker busy: start a worker now,
/// or have the stall watchdog watch the pool. Inline: most pushes ask for nothing.
#[inline]
pub(super) fn grow_pool<T: Runnable>(shared: &Arc<Shared<T>>, grow: Grow) {
    if !matches!(grow, Grow::No) {
        grow_now(shared, grow);
    }
}

/// [`grow_pool`] once the core asked for a worker or a watch.
#[inline(never)]
fn grow_now<T: Runnable>(shared: &Arc<Shared<T>>, grow: Grow) {
    match grow {
        Grow::No => {}
        Grow::Spawn => {
            #[cfg(feature = "tracing")]
            crate::trace::pool_grows(&shared.name, "busy");
            start(shared);
        }
        Grow::Watch => {
            let weak: std::sync::Weak<Shared<T>> = Arc::downgrade(shared);
            super::watchdog::watch(weak);
        }
    }
}

/// The worker thread's body.
fn run<T: Runnable>(shared: &Arc<Shared<T>>) {
    shared.refusals.worker_started();
    WORKER_OF.with(|w| w.set(Arc::as_ptr(shared) as usize));
    WORKER_POD.with(|w| w.set(shared.pod.id));
    place(shared);
    if let Some(nice) = shared.worker.nice {
        // Checked when the workqueue was built (`check_nice`); should the OS refuse it now
        // (its limits changed), the worker runs at the nice value it inherited.
        let _ = crate::sys::set_current_thread_nice(nice);
    }
    run_hook(shared, shared.worker.on_start.as_ref());
    #[cfg(feature = "tracing")]
    crate::trace::worker_started(&shared.name);
    let probe = shared.probes.register();
    let group = shared.group.get().and_then(std::sync::Weak::upgrade);
    match group {
        Some(group) => work(
            shared,
            &mut Puller {
                group: &group,
                shared,
            },
            probe.as_deref().map(|p| &**p),
        ),
        None => work(shared, &mut NoSiblings, probe.as_deref().map(|p| &**p)),
    }
    if let Some(probe) = &probe {
        shared.probes.remove(probe);
    }
    #[cfg(feature = "tracing")]
    crate::trace::worker_exits(&shared.name);
    run_hook(shared, shared.worker.on_stop.as_ref());
    WORKER_OF.with(|w| w.set(0));
    WORKER_POD.with(|w| w.set(usize::MAX));
}

/// Runs a worker hook, if there is one, with this worker's pool, pod and CPUs. A panic in it
/// is contained and counted in `worker_panics`; the worker goes on.
fn run_hook<T>(shared: &Shared<T>, hook: Option<&Hook>) {
    let Some(hook) = hook else {
        return;
    };
    let info = WorkerInfo {
        pool: shared.name.clone(),
        pod: shared.pod.id,
        cpus: shared.pod.cpus.clone(),
    };
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| (hook.0)(&info))) {
        shared.worker_panics.fetch_add(1, Ordering::Relaxed);
        drop_payload(payload);
    }
}

/// The run loop. Leaves on `Next::Exit` (retired when idle, or shut down with nothing
/// queued): either way nothing waits that another worker, or one that the next push starts,
/// will not run. Marks each task's start and end in the worker's `probe`, if it has one.
fn work<T: Runnable>(
    shared: &Arc<Shared<T>>,
    siblings: &mut impl Siblings<T>,
    probe: Option<&WorkerProbe>,
) {
    let mut slot = WorkerSlot::new();
    let _holding = super::held::enter(shared, &mut slot);
    let mut runs = 0u64;
    let mut wakes = 0u64;
    loop {
        // (H3) The task this worker's last task queued, which it holds, first: no growth to
        // act on and nothing for the watchdog, which only a take from the queue asks for.
        let (looked, held) = shared
            .core
            .take_held_first(&mut slot, || shared.lanes.here());
        let item = match held {
            Some(item) => item,
            None => {
                let Next::Run { item, grow } =
                    shared
                        .core
                        .next(&mut slot, || shared.lanes.here(), siblings, !looked)
                else {
                    break;
                };
                if slot.take_watch_held() {
                    super::held::watch_held(shared);
                }
                if slot.wakes() != wakes {
                    wakes = slot.wakes();
                    super::apart::woken(wakes);
                }
                grow_pool(shared, grow);
                item
            }
        };
        if let Some(probe) = probe {
            runs += 1;
            probe.mark(runs);
        }
        let ran = run_task(shared, item);
        if let Some(probe) = probe {
            runs += 1;
            probe.mark(runs);
        }
        if ran {
            slot.ran_one();
        }
    }
}

/// Runs one of the pool's tasks on its rescuer's thread (M4), as one of its workers would:
/// with no lock held, the thread counted as the pool's for the task ([`worker_pod`],
/// [`is_worker_of`]) while it runs.
pub(super) fn run_rescued<T: Runnable>(shared: &Arc<Shared<T>>, task: T) {
    WORKER_OF.with(|w| w.set(Arc::as_ptr(shared) as usize));
    WORKER_POD.with(|w| w.set(shared.pod.id));
    run_task(shared, task);
    WORKER_OF.with(|w| w.set(0));
    WORKER_POD.with(|w| w.set(usize::MAX));
}

/// A worker's siblings: its pool's pull group.
struct Puller<'a, T: Runnable> {
    /// The group of the worker's pool.
    group: &'a PullGroup<T>,
    /// The worker's pool.
    shared: &'a Shared<T>,
}

impl<T: Runnable> Siblings<T> for Puller<'_, T> {
    #[inline]
    fn drained(&mut self) {
        self.group.withdraw(self.shared.pod.id);
    }

    fn pull(&mut self) -> Option<T> {
        // A pool being shut down lets its workers exit once its own queue is empty.
        if self.shared.is_shut() {
            return None;
        }
        self.group.pull(self.shared.pod.id)
    }
}

/// Runs one task, containing a panic that escapes it (a task is not supposed to unwind; the
/// worker goes on either way). Returns whether it ran to the end.
fn run_task<T: Runnable>(shared: &Shared<T>, task: T) -> bool {
    match panic::catch_unwind(AssertUnwindSafe(|| task.run())) {
        Ok(()) => true,
        Err(payload) => {
            shared.worker_panics.fetch_add(1, Ordering::Relaxed);
            drop_payload(payload);
            false
        }
    }
}

/// Payloads in a row that [`drop_payload`] drops, each the panic of the one before's `Drop`:
/// 8. A payload whose drop panics with one that does not is dropped whole; the last of a
/// longer chain is freed without its drop.
const PAYLOAD_DROPS: usize = 8;

/// Drops a caught panic's payload, containing a panic of the payload's own `Drop` (a payload
/// such as `panic_any(Bomb)` whose `Drop` panics): that panic's payload is dropped in turn, up
/// to [`PAYLOAD_DROPS`] of them; a payload still left then (each drop panicked again) is freed
/// without running its `Drop`, so that no payload's memory is kept.
pub(crate) fn drop_payload(payload: Box<dyn std::any::Any + Send>) {
    let mut payload = payload;
    for _ in 0..PAYLOAD_DROPS {
        match panic::catch_unwind(AssertUnwindSafe(move || drop(payload))) {
            Ok(()) => return,
            Err(again) => payload = again,
        }
    }
    crate::sys::free_unrun(payload);
}

/// Where a worker belongs, within the CPUs the process may use now (its main thread's
/// affinity): [`home`] computes it, [`place`] puts the worker there.
#[derive(Debug)]
struct Home {
    /// Where the worker goes first, so that it starts near the queue's data: the pod's allowed
    /// CPUs, or the workqueue's allowed CPUs when none of the pod's is allowed; empty when none
    /// at all is.
    first: CpuSet,
    /// The workqueue's allowed CPUs, where a non-strict worker is allowed afterwards.
    cpus: CpuSet,
    /// Whether the pod has CPUs but none of them is allowed.
    pod_lost: bool,
}

/// Where a worker of `shared` belongs now ([`Home`]).
fn home<T>(shared: &Shared<T>) -> Home {
    let allowed = crate::launch::process_cpus();
    let within = |cpus: &CpuSet| match &allowed {
        Some(allowed) => cpus.intersection(allowed),
        None => cpus.clone(),
    };
    let cpus = within(&shared.cpus);
    let pod = within(&shared.pod.cpus);
    let pod_lost = pod.is_empty() && !shared.pod.cpus.is_empty();
    let first = if pod.is_empty() { cpus.clone() } else { pod };
    Home {
        first,
        cpus,
        pod_lost,
    }
}

/// Puts the calling worker on its pod, within the CPUs the process may use now (its main
/// thread's affinity; a worker inherits the affinity of whatever thread started it, which may be
/// wider or narrower): strict workers stay on the pod's allowed CPUs; non-strict ones move there
/// first (so they start near the queue's data) and are then allowed the workqueue's allowed
/// CPUs, where the OS may move them. A pod with none of its CPUs allowed puts its worker on the
/// workqueue's allowed CPUs, and one with none allowed at all leaves it where it is: each
/// counted once per worker in `pin_failures`, as is a pin that fails (a CPU of a synthetic
/// topology that this machine lacks, a cpuset that changed). A worker is never pinned outside
/// the allowed CPUs.
pub(super) fn place<T>(shared: &Shared<T>) {
    let home = home(shared);
    if home.first.is_empty() {
        shared.pin_failures.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let mut failed = pin(&home.first).is_err() || home.pod_lost;
    if !shared.strict && home.first != home.cpus {
        failed |= pin(&home.cpus).is_err();
    }
    if failed {
        shared.pin_failures.fetch_add(1, Ordering::Relaxed);
    }
}

fn pin(cpus: &CpuSet) -> std::io::Result<()> {
    let ids: Vec<usize> = cpus.iter().collect();
    crate::sys::pin_current_thread(&ids)
}
