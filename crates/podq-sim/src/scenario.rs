//! [`Scenario`]: one configuration to simulate (workload, scope, shard size, producers, items).

use podq::AffinityScope;

/// A workload, as `podq bench` runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// The kernel's test_workqueue: each producer keeps one item in flight, queueing it again
    /// once it has run (a closed loop).
    Queue,
    /// Each producer queues all of its items as fast as it can (an open loop).
    Flood,
    /// The open loop of `Flood` from one producer on the first CPU, whatever
    /// [`Scenario::threads`] says: work that arrives unevenly, all of it on one pod (run with
    /// CPU-bound items, [`CPU_BOUND_WORK_NS`], so that pull matters).
    Skew,
    /// Request/response: one pair per producer, whose producer queues the first request; each
    /// hop (a request or a response) queues the other side from the worker it ran on, until
    /// the pair has made [`Scenario::items`] round trips. One hop of a pair is in flight at a
    /// time: the case where pulling costs and rarely finds.
    Rpc,
    /// The hackbench analogue: one team per producer, whose producer queues its
    /// [`FANOUT_SENDERS`] senders; a sender run queues one message to each of
    /// [`FANOUT_RECEIVERS`] receivers, from the worker it runs on, then itself again, until the
    /// team has sent [`Scenario::items`] messages. Messages are the CPU-bound items
    /// ([`CPU_BOUND_WORK_NS`]); senders only queue.
    Fanout,
    /// Related work whose data is hot where it last ran: items of random groups
    /// ([`Locality::groups`]), each group with a working set of [`Locality::set_kb`] KiB that
    /// its items walk, queued at a steady pace from every producer so that the items keep the
    /// machine about [`Locality::load`] percent busy, as `podq bench --workload locality`
    /// does. An item's run time is its work plus fetching its group's set from where it sits
    /// ([`Caches`](crate::Caches)); with [`Scenario::steer`] the groups' items are steered as
    /// `podq::policy::steer` decides.
    Locality,
    /// Chains of items, each queueing the next from the worker it runs on: each producer runs
    /// [`Scenario::items`] chains of `depth` links one after the other, waiting for a chain's
    /// last link before it queues the next chain's first (`podq bench --workload chain`).
    Chain {
        /// Links per chain (at least 1).
        depth: u64,
    },
    /// Items that queue their own continuation `yields` times from the worker they run on:
    /// each producer queues [`Scenario::items`] of them at once (`podq bench --workload
    /// yield`).
    Yield {
        /// Continuations per item.
        yields: u64,
    },
    /// One item per producer that queues [`Scenario::items`] items from its worker, then does
    /// its own work and returns (`podq bench --workload spawn-local`).
    SpawnLocal,
}

/// Groups per pod of the scope when [`Locality::groups`] (`--groups` of `podq bench` and `podq
/// sim`) is not given: enough that a pod serves several groups, few enough that each group's
/// items come often.
pub const GROUPS_PER_POD: usize = 4;

/// KiB of working set per group when `--set-kb` is not given: a core's L2 on today's servers
/// (1-2 MiB) holds several groups, its L1 (32-64 KiB) none.
pub const DEFAULT_SET_KB: u64 = 256;

/// Percent of the CPUs the locality workload's items keep busy when `--load` is not given: a
/// machine with room, where steering is meant to help.
pub const DEFAULT_LOAD: u64 = 40;

/// The largest `--groups`.
pub const MAX_GROUPS: u64 = 65_536;

/// The largest `--set-kb`: 64 MiB per group, beyond any cache domain's share a group could
/// keep hot.
pub const MAX_SET_KB: u64 = 64 * 1024;

/// The `locality` workload's groups, working sets and load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Locality {
    /// Groups of related items; `None`: [`GROUPS_PER_POD`] per pod of the scope.
    pub groups: Option<usize>,
    /// KiB of working set per group.
    pub set_kb: u64,
    /// Percent of the CPUs the items keep busy when nothing steers them (1 to 100): the pace
    /// is one unsteered item's expected run time on the machine (`engine/pace.rs`).
    pub load: u64,
}

impl Default for Locality {
    /// [`GROUPS_PER_POD`] per pod, [`DEFAULT_SET_KB`], [`DEFAULT_LOAD`].
    fn default() -> Locality {
        Locality {
            groups: None,
            set_kb: DEFAULT_SET_KB,
            load: DEFAULT_LOAD,
        }
    }
}

/// Sender items per `fanout` team, as `podq bench`'s.
pub const FANOUT_SENDERS: u64 = 4;

/// Receivers per `fanout` team: a sender's round queues one message to each.
pub const FANOUT_RECEIVERS: u64 = 4;

/// Work per item, in nanoseconds, of the CPU-bound workloads (`skew`) when none is given:
/// 10 us, as `podq bench` uses (long enough that running the items, not queueing them,
/// decides the rate, so that an idle CPU shows).
pub const CPU_BOUND_WORK_NS: u64 = 10_000;

impl Workload {
    /// The name on the command line and in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Queue => "queue",
            Workload::Flood => "flood",
            Workload::Skew => "skew",
            Workload::Rpc => "rpc",
            Workload::Fanout => "fanout",
            Workload::Locality => "locality",
            Workload::Chain { .. } => "chain",
            Workload::Yield { .. } => "yield",
            Workload::SpawnLocal => "spawn-local",
        }
    }

    /// Whether each item's wait from its queue call to its start is reported (`flood`,
    /// `skew`, and `rpc`'s per-hop latency): every workload but the closed loop and those of
    /// [`Workload::is_spawned`].
    pub fn is_open(self) -> bool {
        !matches!(self, Workload::Queue) && !self.is_spawned()
    }

    /// Whether running items queue the items of the workload (`chain`, `yield`,
    /// `spawn-local`), which a podq worker holds (`engine/held.rs`).
    pub fn is_spawned(self) -> bool {
        matches!(
            self,
            Workload::Chain { .. } | Workload::Yield { .. } | Workload::SpawnLocal
        )
    }

    /// Items run per producer when each queues `items` ([`Scenario::items`]): two per round
    /// trip for `rpc` (a request and a response), `depth` per chain, `yields + 1` per
    /// yielding item, `items + 1` for `spawn-local` (the one item and those it queues), else
    /// `items`.
    pub fn runs_per_producer(self, items: u64) -> u64 {
        match self {
            Workload::Chain { depth } => items.saturating_mul(depth),
            Workload::Yield { yields } => items.saturating_mul(yields.saturating_add(1)),
            Workload::SpawnLocal => items.saturating_add(1),
            _ => items.saturating_mul(self.items_per_item()),
        }
    }

    /// Items run per item of [`Scenario::items`] and producer: 2 for `rpc` (a request and a
    /// response per round trip), else 1 (see [`Workload::runs_per_producer`] for the
    /// workloads whose items queue items).
    pub fn items_per_item(self) -> u64 {
        match self {
            Workload::Rpc => 2,
            Workload::Chain { .. } | Workload::Yield { .. } | Workload::SpawnLocal => 1,
            Workload::Queue
            | Workload::Flood
            | Workload::Skew
            | Workload::Fanout
            | Workload::Locality => 1,
        }
    }

    /// Work per item when none is given: [`CPU_BOUND_WORK_NS`] for `skew` and `fanout`, none
    /// for the others (a `locality` item's walk is its work).
    pub fn default_work_ns(self) -> u64 {
        match self {
            Workload::Skew | Workload::Fanout => CPU_BOUND_WORK_NS,
            Workload::Queue
            | Workload::Flood
            | Workload::Rpc
            | Workload::Locality
            | Workload::Chain { .. }
            | Workload::Yield { .. }
            | Workload::SpawnLocal => 0,
        }
    }
}

/// How `cache_shard` pods are cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ShardRule {
    /// On core boundaries, as podq and today's kernel do ([`podq::Pods::new`]).
    #[default]
    Cores,
    /// On CPU boundaries, as the kernel did before ([`podq::Pods::cache_shards_by_cpu`]).
    Cpus,
}

impl ShardRule {
    /// Every rule, in the order `podq sim --shard-by` lists them.
    pub const ALL: [ShardRule; 2] = [ShardRule::Cores, ShardRule::Cpus];

    /// The rule's name in `podq sim --shard-by` and its JSON: `core` or `cpu`.
    ///
    /// ```
    /// use podq_sim::ShardRule;
    /// assert_eq!(ShardRule::Cpus.name(), "cpu");
    /// assert_eq!(ShardRule::by_name("core"), Some(ShardRule::Cores));
    /// assert_eq!(ShardRule::by_name("die"), None);
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            ShardRule::Cores => "core",
            ShardRule::Cpus => "cpu",
        }
    }

    /// The rule named `name` ([`ShardRule::name`]), if any.
    pub fn by_name(name: &str) -> Option<ShardRule> {
        ShardRule::ALL.into_iter().find(|r| r.name() == name)
    }
}

/// One configuration to simulate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scenario {
    /// The workload.
    pub workload: Workload,
    /// The scope of the workqueue.
    pub scope: AffinityScope,
    /// Cores (or CPUs, with [`ShardRule::Cpus`]) per `cache_shard` pod.
    pub shard_size: usize,
    /// How `cache_shard` pods are cut.
    pub shard_rule: ShardRule,
    /// Producer threads, one pinned to each of the lowest CPUs ([`Workload::Skew`] runs one,
    /// [`Scenario::producers`]).
    pub threads: usize,
    /// Items per producer (rpc: round trips per pair; chain: chains; spawn-local: the items
    /// its one item queues).
    pub items: u64,
    /// Work per item, in nanoseconds.
    pub work_ns: u64,
    /// The seed of the jitter, and of the pull gate's coins.
    pub seed: u64,
    /// Whether idle workers pull waiting items from sibling pools (podq's pull, modelled
    /// with `podq::policy::pull`); only a profile whose [`Mechanism::pulls`] may.
    ///
    /// [`Mechanism::pulls`]: crate::Mechanism::pulls
    pub pull: bool,
    /// Whether a group's items are steered to its home pod (`podq::policy::steer`); only the
    /// [`Workload::Locality`] items belong to groups.
    pub steer: bool,
    /// The `locality` workload's groups, working sets and load.
    pub locality: Locality,
}

impl Scenario {
    /// The kernel's test: the `queue` workload, one producer per CPU of a `cpus`-CPU machine,
    /// 50,000 items each, no work per item, `scope` at the default shard size, seed 1, no pull
    /// (the kernel's workqueue has none), no steering, the default locality settings.
    pub fn kernel_test(scope: AffinityScope, cpus: usize) -> Scenario {
        Scenario {
            workload: Workload::Queue,
            scope,
            shard_size: podq::scope::DEFAULT_SHARD_SIZE,
            shard_rule: ShardRule::Cores,
            threads: cpus,
            items: 50_000,
            work_ns: 0,
            seed: 1,
            pull: false,
            steer: false,
            locality: Locality::default(),
        }
    }

    /// Producer threads: [`Scenario::threads`], or 1 for [`Workload::Skew`].
    pub fn producers(&self) -> usize {
        match self.workload {
            Workload::Skew => 1,
            Workload::Queue
            | Workload::Flood
            | Workload::Rpc
            | Workload::Fanout
            | Workload::Locality
            | Workload::Chain { .. }
            | Workload::Yield { .. }
            | Workload::SpawnLocal => self.threads,
        }
    }
}
