//! The `fanout` workload's senders: a sender run on a worker queues one message to each
//! receiver of its team, then itself again, each through an ordinary queue call from the
//! worker's CPU, while the team has messages left to send.

use super::threads::Role;
use super::Engine;
use crate::scenario::FANOUT_RECEIVERS;

impl Engine<'_> {
    /// Starts the next queue call of the sender round worker `tid` is in: a message while the
    /// round has sent fewer than [`FANOUT_RECEIVERS`], then the sender itself; `false` when the
    /// round is over (or the team has sent every message), and the worker goes back to its
    /// queue.
    pub(super) fn fanout_next(&mut self, tid: u32) -> bool {
        let t = &self.threads[tid as usize];
        let cpu = t.cpu as usize;
        let Role::Worker {
            item: Some(item),
            round: Some(round),
            ..
        } = t.role
        else {
            return false;
        };
        let team = item.producer;
        let left = match self.threads[team as usize].role {
            Role::Producer { left, .. } => left,
            Role::Worker { .. } => 0,
        };
        let over = left == 0 || round > FANOUT_RECEIVERS;
        if let Role::Worker { round: r, .. } = &mut self.threads[tid as usize].role {
            *r = if over { None } else { Some(round + 1) };
        }
        if over {
            return false;
        }
        let pool = self.pod_of[cpu];
        self.start_push(tid, pool, team, round == FANOUT_RECEIVERS);
        true
    }
}
