//! The cost model: named physical parameters, each in nanoseconds of simulated time.
//!
//! Each value's origin is written where the value is: the cache-line latencies are public
//! core-to-core measurements ([`Platform::for_machine`]), the caches' sizes and latencies are
//! published or measured figures ([`Caches::for_machine`]), and the rest belong to a
//! [`Profile`](crate::profile::Profile).

/// How far apart two CPUs are, for moving a cache line between them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Distance {
    /// The same CPU: the line is already in its L1.
    SameCpu,
    /// SMT siblings: one core's private caches.
    SameCore,
    /// Two cores sharing a last-level cache.
    SameCache,
    /// Two cache domains of one node.
    SameNode,
    /// Two nodes (in the published data, two sockets).
    OtherNode,
}

/// One idle state of a CPU, as its cpuidle driver declares it: how long leaving it takes and
/// the shortest idle period it is chosen for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IdleState {
    /// The state's exit latency (`exit_latency`), in ns.
    pub exit_ns: f64,
    /// Its target residency (`target_residency`), in ns.
    pub residency_ns: f64,
}

/// What a machine's hardware costs: the one-way latencies of moving a cache line between two
/// CPUs by [`Distance`] (half the round trip of an uncontended compare-and-swap ping-pong,
/// medians of public core-to-core data), and the idle states a CPU sleeps in between items.
/// Every value is a public figure of the machine or of the nearest documented part of its
/// family ([`Platform::for_machine`]); none is fitted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Platform {
    /// Between SMT siblings.
    pub same_core_ns: f64,
    /// Between two cores of one cache domain.
    pub same_cache_ns: f64,
    /// Between two cache domains of one node.
    pub other_cache_ns: f64,
    /// Between two nodes.
    pub other_node_ns: f64,
    /// The idle states, shallowest first.
    pub idle_states: &'static [IdleState],
    /// What the idle states' exit latencies are multiplied by: 1 for the published figures;
    /// `--uncertainty` moves it.
    pub exit_factor: f64,
    /// How much longer a thread's own instructions take while an SMT sibling of its CPU runs
    /// another thread: two threads sharing a core each get part of it. 1 without SMT.
    pub smt_slowdown: f64,
    /// The part's clock with every core busy, in GHz: its base clock, the operating point its
    /// power limit is defined at ([`Platform::part_clock_ghz`]; a family's figures from
    /// [`Platform::for_machine`] have none, [`SimMachine::at_clock`](crate::SimMachine::at_clock)
    /// sets it). A thread's own instructions
    /// take the time a profile's costs give them at the profile's clock
    /// ([`Profile::clock_ghz`](crate::Profile::clock_ghz)) times that clock over this one;
    /// `None`: unknown, taken as the profile's.
    pub clock_ghz: Option<f64>,
}

/// The generic Arm WFI state of the kernel's Arm cpuidle drivers (`ARM_CPUIDLE_WFI_STATE` in
/// `include/linux/cpuidle.h`): exit latency and target residency 1 us.
const ARM_WFI: [IdleState; 1] = [IdleState {
    exit_ns: 1_000.0,
    residency_ns: 1_000.0,
}];

/// Skylake-SP's states in the kernel's `intel_idle` driver (`skx_cstates`): `C1` (exit 2 us,
/// residency 2 us), `C1E` (10 us, 20 us), C-state 6 (133 us, 600 us).
const SKX_CSTATES: [IdleState; 3] = [
    IdleState {
        exit_ns: 2_000.0,
        residency_ns: 2_000.0,
    },
    IdleState {
        exit_ns: 10_000.0,
        residency_ns: 20_000.0,
    },
    IdleState {
        exit_ns: 133_000.0,
        residency_ns: 600_000.0,
    },
];

/// AMD EPYC under `acpi_idle`: `C1` by MWAIT, exit 1 us (the latency the firmware's `_CST`
/// declares for it, as in FreeBSD's review D47444 of EPYC's tables), and `C2` by the I/O-port
/// path, about 400 us to wake on an EPYC 7502P (the same review), chosen for idle periods of
/// twice that.
const ZEN_CSTATES: [IdleState; 2] = [
    IdleState {
        exit_ns: 1_000.0,
        residency_ns: 2_000.0,
    },
    IdleState {
        exit_ns: 400_000.0,
        residency_ns: 800_000.0,
    },
];

/// Two threads on one core do up to 1.3 times the work of one, the gain Intel's
/// Hyper-Threading paper reports on server workloads (Marr et al., "Hyper-Threading
/// Technology Architecture and Microarchitecture", Intel Technology Journal, 2002): each
/// thread runs at 0.65 of its speed alone. No figure exists for each part; every SMT part
/// takes this one.
pub const SMT_SLOWDOWN: f64 = 2.0 / 1.3;

impl Platform {
    /// The hardware of the machine called `name` (a preset, or `xeon-8321hc`), with the parts
    /// whose public figures it takes. Line latencies: the medians of the one-way latency, half
    /// an uncontended compare-and-swap round trip, of the KCORES and nviennot
    /// core-to-core-latency results and, for Grace, of Chips and Cheese's for AWS Graviton 4, the
    /// nearest documented part (the same Neoverse V2 cores on one mesh; no public table exists
    /// for Grace itself); any other machine gets the median per column of those rows ("median
    /// of the table"). Idle states: the kernel's cpuidle tables of the part's family.
    pub fn for_machine(name: &str) -> (Platform, &'static str) {
        let row =
            |same_core_ns, same_cache_ns, other_cache_ns, other_node_ns, idle_states| Platform {
                same_core_ns,
                same_cache_ns,
                other_cache_ns,
                other_node_ns,
                idle_states,
                exit_factor: 1.0,
                smt_slowdown: SMT_SLOWDOWN,
                clock_ghz: None,
            };
        match name {
            // Grace: 30-60 ns across Graviton 4's CMN-700 mesh (Chips and Cheese, "Arm's
            // Neoverse V2, in AWS's Graviton 4"), the nearest documented part; the middle.
            // No SMT and one cache domain, so the other columns are never used; they take the
            // table's medians. Neoverse V2 idles in WFI.
            "grace" => (
                row(10.0, 45.0, 110.0, 198.0, &ARM_WFI),
                "NVIDIA Grace; idle: Arm WFI",
            ),
            // The 8321HC (a third-generation Xeon Scalable part, Cooper Lake) has no public
            // core-to-core data; the Xeon 8358 (Ice Lake, the same generation, a mesh as well)
            // stands in: SMT 8 ns, same LLC 51 ns, other socket 108-111 ns. The data sets'
            // Cascade Lake parts (Platinum 8275CL, Gold 6242), Cooper Lake's cores and mesh at
            // other clocks, measure 46.5-47.5 ns in one LLC. Idle: `intel_idle`'s Skylake-SP
            // table, which Cascade and Cooper Lake use.
            "xeon-8321hc" | "skylake-18c" => (
                row(8.0, 51.0, 110.0, 110.0, &SKX_CSTATES),
                "Intel Xeon 8358 (Ice Lake) standing in; idle: intel_idle skx_cstates",
            ),
            // Zen 4 with 8-core CCDs: EPYC 9654 (no SMT figure: the EPYC 9754's 13 ns).
            "epyc-9d64" | "ryzen-7950x" => (
                row(13.0, 27.0, 99.0, 192.0, &ZEN_CSTATES),
                "AMD EPYC 9654 (Zen 4), SMT from the EPYC 9754; idle: EPYC acpi_idle",
            ),
            // Zen 2 with 3-core CCXs: the nearest machine with data, EPYC 7763 (Zen 3).
            "ryzen-3900x" => (
                row(10.0, 26.0, 115.0, 301.0, &ZEN_CSTATES),
                "AMD EPYC 7763 (Zen 3) standing in; idle: EPYC acpi_idle",
            ),
            // The medians of the rows: EPYC 9654, EPYC 9754, EPYC 7763, Xeon w9-3475X (one
            // LLC, 55 ns), Xeon 8358 and Grace; idle as the EPYCs (the table's majority).
            _ => (
                row(10.0, 39.0, 110.0, 198.0, &ZEN_CSTATES),
                "median of the table; idle: EPYC acpi_idle",
            ),
        }
    }

    /// The base clock of the part the machine called `name` is, where a public figure gives
    /// it; families and descriptions have none.
    pub fn part_clock_ghz(name: &str) -> Option<f64> {
        match name {
            // NVIDIA gives the Grace CPU Superchip 7.1 TFLOPS of FP64 peak over its 144
            // Neoverse V2 cores, each with four 128-bit SVE2 pipes (16 FP64 operations per
            // cycle by fused multiply-add): 3.08 GHz on every core at once.
            "grace" => Some(7.1e3 / (144.0 * 16.0)),
            // The part's brand string, "Intel(R) Xeon(R) Platinum 8321HC CPU @ 1.40GHz" (as
            // Meta's DCPerf documentation prints it from such machines): Intel's base
            // frequency, the operating point its TDP is defined at. Turbo is not modelled.
            "xeon-8321hc" => Some(1.40),
            // AMD's specifications: base clocks 4.5 GHz (Ryzen 9 7950X), 3.8 GHz (3900X).
            "ryzen-7950x" => Some(4.5),
            "ryzen-3900x" => Some(3.8),
            _ => None,
        }
    }

    /// How much longer a thread's own instructions take here than at `costs_ghz`, the clock a
    /// profile's costs are at: `costs_ghz` over this part's clock; 1 when either is unknown.
    pub fn work_factor(&self, costs_ghz: Option<f64>) -> f64 {
        match (costs_ghz, self.clock_ghz) {
            (Some(at), Some(here)) if here > 0.0 => at / here,
            _ => 1.0,
        }
    }

    /// The exit latency of the state an idle CPU is in when its recent idle periods average
    /// `predicted_ns`: the deepest state whose target residency that reaches, as the cpuidle
    /// governors choose (the shallowest when none does).
    pub fn idle_exit_ns(&self, predicted_ns: f64) -> f64 {
        self.idle_states
            .iter()
            .take_while(|s| s.residency_ns <= predicted_ns)
            .last()
            .or(self.idle_states.first())
            .map_or(0.0, |s| s.exit_ns * self.exit_factor)
    }

    /// This platform with every line latency, the idle exits, the SMT slowdown and the clock
    /// multiplied by their own `factor()` (for `--uncertainty`), in the order of the fields.
    pub fn moved(&self, mut factor: impl FnMut() -> f64) -> Platform {
        Platform {
            same_core_ns: self.same_core_ns * factor(),
            same_cache_ns: self.same_cache_ns * factor(),
            other_cache_ns: self.other_cache_ns * factor(),
            other_node_ns: self.other_node_ns * factor(),
            exit_factor: self.exit_factor * factor(),
            smt_slowdown: 1.0 + (self.smt_slowdown - 1.0) * factor(),
            clock_ghz: {
                let f = factor();
                self.clock_ghz.map(|c| c * f)
            },
            ..*self
        }
    }

    /// The latency for `distance`; 0 on the same CPU.
    #[inline]
    pub fn at(&self, distance: Distance) -> f64 {
        match distance {
            Distance::SameCpu => 0.0,
            Distance::SameCore => self.same_core_ns,
            Distance::SameCache => self.same_cache_ns,
            Distance::SameNode => self.other_cache_ns,
            Distance::OtherNode => self.other_node_ns,
        }
    }
}

/// The operating system's and the runtime's costs, in nanoseconds (or plain factors).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Costs {
    /// Cache lines that move with a pool lock to its next holder: the lock word and the pool's
    /// fields (work list, idle list, counts) touched in the critical section.
    pub lines_per_handover: f64,
    /// How much dearer a line moves when the lock is handed to a waiter (contended) than in an
    /// uncontended ping-pong: the waiters' spinning competes for the line and the mesh.
    pub contended_factor: f64,
    /// Work inside the pool lock per critical section (list and count updates).
    pub critical_section_ns: f64,
    /// Cache lines of an item's own data (the item, its closure, the completion it signals)
    /// that move from the CPU that queued it to the CPU that runs it, and, when its producer
    /// queues it again (the closed loop), back to the producer's CPU; each at the two CPUs'
    /// [`Distance`].
    pub item_lines: f64,
    /// What waking a sleeping thread costs the waker (`try_to_wake_up`).
    pub wake_call_ns: f64,
    /// From a wake-up to the woken thread running on an idle CPU (the interrupt and the
    /// schedule), besides the platform's idle exit ([`Platform::idle_exit_ns`]).
    pub wake_idle_ns: f64,
    /// A context switch on a busy CPU, from the blocking (or preempted) thread to the next.
    pub switch_ns: f64,
    /// The producer's own work per item outside the queue call (timestamps, the completion,
    /// the latency record, the wait's bookkeeping).
    pub producer_item_ns: f64,
    /// The worker's own work per item outside the lock (dequeue bookkeeping, the call).
    pub worker_item_ns: f64,
    /// Cache lines one change of the workqueue's count of active items per node moves to the
    /// CPU that makes it (`wq_node_nr_active`: a queue's `tryinc_node_nr_active`, a
    /// completion's `pwq_dec_nr_active`, both under the pool lock); 0: no such count.
    pub active_lines: f64,
    /// The scheduler's base time slice before it is scaled by the machine's CPU count
    /// ([`Costs::slice_for`]).
    pub slice_ns: f64,
    /// Starting a new worker thread.
    pub spawn_ns: f64,
    /// How long an idle worker spins for new work before it parks (0: it parks at once).
    pub spin_ns: f64,
    /// Every delay is multiplied by `1 + jitter * u`, `u` uniform in `[-1, 1)`, so that
    /// threads do not move in lockstep.
    pub jitter: f64,
}

/// A cost parameter by name, for fitting ([`crate::fit`]) and `--uncertainty`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    /// [`Costs::lines_per_handover`].
    LinesPerHandover,
    /// [`Costs::contended_factor`].
    ContendedFactor,
    /// [`Costs::critical_section_ns`].
    CriticalSection,
    /// [`Costs::item_lines`].
    ItemLines,
    /// [`Costs::wake_call_ns`].
    WakeCall,
    /// [`Costs::wake_idle_ns`].
    WakeIdle,
    /// [`Costs::switch_ns`].
    Switch,
    /// [`Costs::producer_item_ns`].
    ProducerItem,
    /// [`Costs::worker_item_ns`].
    WorkerItem,
    /// [`Costs::active_lines`].
    ActiveLines,
    /// [`Costs::spin_ns`].
    Spin,
}

impl Param {
    /// The parameters moved by `--uncertainty` and offered to the fits. The time slice, the
    /// worker start and the jitter are left out: they barely touch the workloads' throughput.
    pub const ALL: [Param; 11] = [
        Param::LinesPerHandover,
        Param::ContendedFactor,
        Param::CriticalSection,
        Param::ItemLines,
        Param::WakeCall,
        Param::WakeIdle,
        Param::Switch,
        Param::ProducerItem,
        Param::WorkerItem,
        Param::ActiveLines,
        Param::Spin,
    ];

    /// The field's name in [`Costs`].
    pub fn name(self) -> &'static str {
        match self {
            Param::LinesPerHandover => "lines_per_handover",
            Param::ContendedFactor => "contended_factor",
            Param::CriticalSection => "critical_section_ns",
            Param::ItemLines => "item_lines",
            Param::WakeCall => "wake_call_ns",
            Param::WakeIdle => "wake_idle_ns",
            Param::Switch => "switch_ns",
            Param::ProducerItem => "producer_item_ns",
            Param::WorkerItem => "worker_item_ns",
            Param::ActiveLines => "active_lines",
            Param::Spin => "spin_ns",
        }
    }
}

impl Costs {
    /// These costs on a core whose own instructions take `factor` times as long
    /// ([`Platform::work_factor`]): every software cost scaled, the lines and the scheduler's
    /// slice (a time) kept.
    pub fn at_work_factor(&self, factor: f64) -> Costs {
        Costs {
            critical_section_ns: self.critical_section_ns * factor,
            wake_call_ns: self.wake_call_ns * factor,
            wake_idle_ns: self.wake_idle_ns * factor,
            switch_ns: self.switch_ns * factor,
            producer_item_ns: self.producer_item_ns * factor,
            worker_item_ns: self.worker_item_ns * factor,
            spawn_ns: self.spawn_ns * factor,
            spin_ns: self.spin_ns * factor,
            ..*self
        }
    }

    /// How long a thread runs before the scheduler gives its CPU to a waiting one, on a
    /// machine of `cpus` CPUs: [`Costs::slice_ns`] x (1 + log2(min(`cpus`, 8))), rounded down,
    /// the default logarithmic scaling of Linux's `sysctl_sched_base_slice` (3 ms from 8 CPUs
    /// on, 1.5 ms on 2).
    pub fn slice_for(&self, cpus: usize) -> f64 {
        let factor = 1 + cpus.clamp(1, 8).ilog2();
        self.slice_ns * f64::from(factor)
    }

    /// The value of `param`.
    pub fn get(&self, param: Param) -> f64 {
        match param {
            Param::LinesPerHandover => self.lines_per_handover,
            Param::ContendedFactor => self.contended_factor,
            Param::CriticalSection => self.critical_section_ns,
            Param::ItemLines => self.item_lines,
            Param::WakeCall => self.wake_call_ns,
            Param::WakeIdle => self.wake_idle_ns,
            Param::Switch => self.switch_ns,
            Param::ProducerItem => self.producer_item_ns,
            Param::WorkerItem => self.worker_item_ns,
            Param::ActiveLines => self.active_lines,
            Param::Spin => self.spin_ns,
        }
    }

    /// Sets `param` to `value`.
    pub fn set(&mut self, param: Param, value: f64) {
        let slot = match param {
            Param::LinesPerHandover => &mut self.lines_per_handover,
            Param::ContendedFactor => &mut self.contended_factor,
            Param::CriticalSection => &mut self.critical_section_ns,
            Param::ItemLines => &mut self.item_lines,
            Param::WakeCall => &mut self.wake_call_ns,
            Param::WakeIdle => &mut self.wake_idle_ns,
            Param::Switch => &mut self.switch_ns,
            Param::ProducerItem => &mut self.producer_item_ns,
            Param::WorkerItem => &mut self.worker_item_ns,
            Param::ActiveLines => &mut self.active_lines,
            Param::Spin => &mut self.spin_ns,
        };
        *slot = value;
    }
}

/// What fetching a group's working set costs on a machine (the `locality` workload): the
/// caches' sizes, and the latency of one dependent load of a line by where the line sits. A
/// set's lines are fetched one after the other (each access depends on the one before, as
/// `podq bench`'s walk does), so a walk costs its lines times one of these latencies. Where
/// each value comes from is written at [`Caches::for_machine`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Caches {
    /// A line in the running core's private cache (an L2 hit): the set is hot.
    pub private_hit_ns: f64,
    /// A line dirty in the private cache of another core of the running core's cache domain
    /// (the set's last item ran there): moved from core to core.
    pub peer_hit_ns: f64,
    /// A line in the running core's cache domain's last-level cache only (the set was evicted
    /// from the private cache it was in).
    pub llc_hit_ns: f64,
    /// A line in no cache: from memory.
    pub memory_ns: f64,
    /// KiB of private cache (L2) per core.
    pub private_kb: u64,
    /// KiB of last-level cache per cache domain.
    pub llc_kb: u64,
    /// The share of a cache that holds working sets: the rest holds code, stacks and the
    /// queues' lines, and a random cycle's lines conflict in a set-associative cache before the
    /// cache is full. Fitted to one measurement on a 2-CPU AMD EPYC (Zen 4) VM: two 256 KiB
    /// sets walked in turn stay hot in its 1 MiB L2, four do not; 0.75 lets it hold three.
    pub usable_share: f64,
}

/// Bytes of a cache line: a working set is `KiB x 1024 / 64` lines.
pub const LINE_BYTES: u64 = 64;

impl Caches {
    /// The caches of the machine called `name` (as [`Platform::for_machine`]), with where
    /// their figures come from; any other machine gets the sizes and measured latencies of a
    /// 2-CPU AMD EPYC (Zen 4) VM, or sizes read from sysfs by the caller
    /// ([`Caches::with_sizes`]).
    ///
    /// The Zen 4 latencies: `WorkingSet::walk` of `podq bench` over 256 KiB (4,096 lines),
    /// pinned to one CPU, p50 of 40 walks: one set walked again and again 16 us (3.9 ns a line,
    /// the private hit); four sets in turn 47 us (11.5 ns, the L2 holds fewer than four: the
    /// last-level hit); one set walked alternately on the two CPUs 71-73 us (17.5 ns, the peer
    /// hit). `memory_ns` 90 is lmbench's figure on a Xeon 8176 (AnandTech, "Intel Skylake-EP
    /// vs AMD EPYC 7000"), standing in everywhere but Zen 2.
    pub fn for_machine(name: &str) -> (Caches, &'static str) {
        let caches = |private_hit_ns, peer_hit_ns, llc_hit_ns, private_kb, llc_kb| Caches {
            private_hit_ns,
            peer_hit_ns,
            llc_hit_ns,
            memory_ns: 90.0,
            private_kb,
            llc_kb,
            usable_share: 0.75,
        };
        match name {
            // Neoverse V2: 1 MiB L2 per core, 117 MB L3 (Chips and Cheese, "Hot Chips 2023:
            // Arm's Neoverse V2"); no published L2 latency (the Zen 4 figure stands in); a line
            // from a peer core at the middle of Grace's core-to-core 30-60 ns (Chips and
            // Cheese), from the L3 at its low end.
            "grace" => (
                caches(3.9, 45.0, 30.0, 1024, 117 * 1024),
                "Grace: L2 1 MiB, L3 117 MB (Chips and Cheese); L2 hit from Zen 4, L3 30 ns",
            ),
            // Skylake-SP / Cascade Lake: L2 1 MiB 11-13 cycles (4.5 ns is 12 cycles at about
            // 2.7 GHz), L3 1.375 MiB per core (AnandTech, "The Intel Skylake-X Review");
            // lmbench's L3 25-27 ns and memory 89-91 ns on a Xeon 8176 (AnandTech, "Intel
            // Skylake-EP vs AMD EPYC 7000"); a peer core's line at the Xeon 8358's core-to-core
            // 51 ns.
            "xeon-8321hc" => (
                caches(4.5, 51.0, 26.0, 1024, 26 * 1408),
                "Skylake-SP (AnandTech): L2 1 MiB 11-13 cycles, L3 1.375 MiB/core 26 ns",
            ),
            "skylake-18c" => (
                caches(4.5, 51.0, 26.0, 1024, 18 * 1408),
                "Skylake-SP (AnandTech): L2 1 MiB 11-13 cycles, L3 1.375 MiB/core 26 ns",
            ),
            // Zen 2: L2 512 KiB, L3 16 MiB per CCX (AnandTech, Ryzen 3000 review); AMD's
            // Zen+ latencies stand in: L2 3.0 ns, L3 9.2 ns, memory 66-74 ns (AnandTech,
            // 2nd-generation Ryzen review); a peer core's line at the EPYC 7763's (Zen 3)
            // core-to-core 26 ns.
            "ryzen-3900x" => (
                Caches {
                    memory_ns: 70.0,
                    ..caches(3.0, 26.0, 9.2, 512, 16 * 1024)
                },
                "Zen 2: L2 512 KiB, L3 16 MiB/CCX; latencies of AMD's Zen+ figures",
            ),
            // Zen 4: L2 1 MiB, L3 32 MiB per CCD; the latencies measured on a Zen 4 VM (above).
            "epyc-9d64" | "ryzen-7950x" => (
                caches(3.9, 17.5, 11.5, 1024, 32 * 1024),
                "Zen 4: L2 1 MiB, L3 32 MiB/CCD; latencies measured on a Zen 4 VM",
            ),
            _ => (
                caches(3.9, 17.5, 11.5, 1024, 32 * 1024),
                "a Zen 4 VM: L2 1 MiB, L3 32 MiB, measured latencies",
            ),
        }
    }

    /// These caches with `private_kb` of private cache per core and `llc_kb` of last-level
    /// cache per domain (as sysfs gives them), where known.
    pub fn with_sizes(self, private_kb: Option<u64>, llc_kb: Option<u64>) -> Caches {
        Caches {
            private_kb: private_kb.unwrap_or(self.private_kb),
            llc_kb: llc_kb.unwrap_or(self.llc_kb),
            ..self
        }
    }

    /// These caches with each parameter `--uncertainty` moves multiplied by its own `factor()`:
    /// the four latencies and [`Caches::usable_share`] (at most 1), in that order; the sizes
    /// are published figures and stay.
    pub fn moved(&self, mut factor: impl FnMut() -> f64) -> Caches {
        Caches {
            private_hit_ns: self.private_hit_ns * factor(),
            peer_hit_ns: self.peer_hit_ns * factor(),
            llc_hit_ns: self.llc_hit_ns * factor(),
            memory_ns: self.memory_ns * factor(),
            usable_share: (self.usable_share * factor()).min(1.0),
            ..*self
        }
    }

    /// Lines of a `set_kb` KiB working set (at least one).
    pub fn lines(set_kb: u64) -> u64 {
        (set_kb.saturating_mul(1024) / LINE_BYTES).max(1)
    }

    /// Working sets of `set_kb` KiB that a cache of `cache_kb` KiB keeps
    /// ([`Caches::usable_share`] of it).
    pub fn sets_held(&self, cache_kb: u64, set_kb: u64) -> usize {
        (cache_kb as f64 * self.usable_share / set_kb.max(1) as f64) as usize
    }

    /// The hot walk of `podq bench`'s locality workload (`bench::locality::pace::walk_cost`,
    /// the first pace of its warm-up): a walk of a `set_kb` KiB set when each of a domain's
    /// `domain_cpus` CPUs walks `groups` sets of its own in turn (at most
    /// [`GROUPS_PER_POD`](crate::scenario::GROUPS_PER_POD)), plus `work_ns`: hot when they fit
    /// its private cache, from the last-level cache when all of the domain's fit there, else
    /// from memory. The pace itself is an unsteered item's run time (`engine/pace.rs`).
    pub fn walk_ns(&self, set_kb: u64, groups: usize, domain_cpus: usize, work_ns: u64) -> f64 {
        let own = groups.clamp(1, crate::scenario::GROUPS_PER_POD);
        let line = if own <= self.sets_held(self.private_kb, set_kb) {
            self.private_hit_ns
        } else if own * domain_cpus.max(1) <= self.sets_held(self.llc_kb, set_kb) {
            self.llc_hit_ns
        } else {
            self.memory_ns
        };
        Caches::lines(set_kb) as f64 * line + work_ns as f64
    }
}
