//! What one measurement runs on: podq at one scope, shard size and pull setting, or one peer.

use podq::AffinityScope;

use super::peers::Peer;

/// The scopes in the order the kernel's test_workqueue runs them.
pub(crate) const KERNEL_ORDER: [AffinityScope; 6] = [
    AffinityScope::Cpu,
    AffinityScope::Smt,
    AffinityScope::CacheShard,
    AffinityScope::Cache,
    AffinityScope::Numa,
    AffinityScope::System,
];

/// One system under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum System {
    /// A podq workqueue with this scope; `shard_size` only matters for `cache_shard`.
    Podq {
        /// How CPUs are grouped into pods.
        scope: AffinityScope,
        /// Cores per cache shard.
        shard_size: usize,
        /// Whether idle workers pull work from other pods (`WorkqueueBuilder::pull`).
        pull: bool,
        /// Whether groups steer their items to their home pods (`WorkqueueBuilder::steer`).
        steer: bool,
    },
    /// One of the runtimes a user would pick instead.
    Peer(Peer),
}

impl System {
    /// The `system` field of the JSON output: `podq` or the peer's name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            System::Podq { .. } => "podq",
            System::Peer(peer) => peer.name(),
        }
    }

    /// The podq scope, `None` for peers.
    pub(crate) fn scope(self) -> Option<AffinityScope> {
        match self {
            System::Podq { scope, .. } => Some(scope),
            System::Peer(_) => None,
        }
    }

    /// The shard size, for `cache_shard` only.
    pub(crate) fn shard_size(self) -> Option<usize> {
        match self {
            System::Podq {
                scope: AffinityScope::CacheShard,
                shard_size,
                ..
            } => Some(shard_size),
            _ => None,
        }
    }

    /// Whether podq's idle workers pull; `None` for peers.
    pub(crate) fn pull(self) -> Option<bool> {
        match self {
            System::Podq { pull, .. } => Some(pull),
            System::Peer(_) => None,
        }
    }

    /// Whether podq's groups steer; `None` for peers.
    pub(crate) fn steer(self) -> Option<bool> {
        match self {
            System::Podq { steer, .. } => Some(steer),
            System::Peer(_) => None,
        }
    }

    /// The name in the kernel lines and the table: the scope (with `/S` when several shard sizes
    /// are measured, and ` pull=on` or ` pull=off` when asked) or the peer.
    pub(crate) fn label(self, show_shard_size: bool, show_pull: bool) -> String {
        self.label_with(show_shard_size, show_pull, false)
    }

    /// [`System::label`], with ` steer=on` or ` steer=off` when `show_steer`.
    pub(crate) fn label_with(
        self,
        show_shard_size: bool,
        show_pull: bool,
        show_steer: bool,
    ) -> String {
        let System::Podq {
            scope, pull, steer, ..
        } = self
        else {
            return self.name().to_owned();
        };
        let mut label = match self.shard_size() {
            Some(size) if show_shard_size => format!("{scope}/{size}"),
            _ => scope.name().to_owned(),
        };
        if show_pull {
            label.push_str(" pull=");
            label.push_str(on_off(pull));
        }
        if show_steer {
            label.push_str(" steer=");
            label.push_str(on_off(steer));
        }
        label
    }
}

/// `on` or `off`: how `--pull` and `--steer`, the labels and the JSON write a setting.
pub(crate) fn on_off(pull: bool) -> &'static str {
    if pull {
        "on"
    } else {
        "off"
    }
}
