//! The launch strategies as one small state machine: it gates each agent's first request
//! and says, at each event a strategy listens to, which held agents go now.
//!
//! Released agents are appended to a buffer kept across runs (no allocation per event); each
//! `on_*` method returns a `Released` mark, and the caller sends `released(mark, i)` for
//! i = 0, 1, .. then calls `done(mark)`. Sending one released agent may release others (under
//! `sequential`, an agent that gives up lets the next one go): those are appended after the
//! outer ones and sent (and dropped) first, as a recursive release would.
//!
//! Gemini explicit caching (`start_create`): the client's `cachedContents.create` call goes
//! first, whatever the strategy; an agent taking its slot while it is in flight waits for it
//! (`on_slot` says `Wait`), and the strategy gates the agents once it returns
//! (`take_awaiting`, then `on_slot` again).

use crate::config::{Release, Strategy};
use crate::time::{SimDuration, SimTime};

/// What happens when an agent takes its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OnSlot {
    /// Its first request goes now.
    Send,
    /// Held: a later event releases it.
    Wait,
    /// `stagger`: its first request goes at this instant (`Ev::Gate`).
    GateAt(SimTime),
    /// `wait_first`'s first writer: the hold opens (the cap comes after `cap`), and the
    /// first writer's request goes now.
    OpenHold { cap: SimDuration },
    /// `wait_first` with a zero cap, first writer: its request goes now and the hold reaches
    /// its cap at once.
    SendAtCap,
}

/// Where the released agents of one event start in the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "released agents must be sent"]
pub(super) struct Released(usize);

/// The state of the run's launch strategy.
#[derive(Debug, Default)]
pub(super) struct Launch {
    strategy: Option<Strategy>,
    /// Asked after every response: the strategy's kind, fixed per run.
    sequential: bool,
    on_ready: bool,
    t0: SimTime,
    /// `wait_first`: held agents are waiting for the release.
    hold_open: bool,
    /// `prewarm`: the warming entry is readable.
    prewarm_ready: bool,
    /// Agents held by `wait_first` or `prewarm`, in slot order.
    held: Vec<u32>,
    /// `sequential`: the agent's first response has ended (or it gave up).
    first_done: Vec<bool>,
    /// `sequential`: the agent has a slot and waits for the previous agent's first response.
    waiting_prev: Vec<bool>,
    /// Agents released and not yet sent (see the module doc).
    out: Vec<u32>,
    /// Gemini explicit: the create call is in flight.
    creating: bool,
    /// Agents that took their slot while the create call was in flight, in slot order.
    awaiting: Vec<u32>,
}

impl Launch {
    /// A new run of `strategy` over `n` agents from `t0` (buffers kept).
    pub(super) fn reset(&mut self, strategy: &Strategy, t0: SimTime, n: u32) {
        self.strategy = Some(strategy.clone());
        self.sequential = *strategy == Strategy::Sequential;
        self.on_ready = matches!(strategy, Strategy::WaitFirst { release: Release::OnReady, .. });
        self.t0 = t0;
        self.hold_open = false;
        self.prewarm_ready = false;
        self.held.clear();
        self.out.clear();
        self.creating = false;
        self.awaiting.clear();
        for flags in [&mut self.first_done, &mut self.waiting_prev] {
            flags.clear();
            flags.resize(n as usize, false);
        }
    }

    /// Room for `n` agents' flags, reserved without aborting (`Buffers::reserve`); on failure
    /// the bytes asked for.
    pub(super) fn try_reserve(&mut self, n: usize) -> Result<(), usize> {
        for flags in [&mut self.first_done, &mut self.waiting_prev] {
            let more = n.saturating_sub(flags.len());
            flags.try_reserve_exact(more).map_err(|_| n.saturating_mul(2))?;
        }
        Ok(())
    }

    fn strategy(&self) -> &Strategy {
        self.strategy.as_ref().expect("Launch::reset before use")
    }

    /// Agent `a` takes its slot at `now` (or the create call it waited for returned).
    pub(super) fn on_slot(&mut self, a: u32, now: SimTime) -> OnSlot {
        if self.creating {
            self.awaiting.push(a);
            return OnSlot::Wait;
        }
        match *self.strategy() {
            Strategy::Eager => OnSlot::Send,
            Strategy::WaitFirst { max_wait_us: 0, .. } if a == 0 => OnSlot::SendAtCap,
            Strategy::WaitFirst { max_wait_us: 0, .. } => OnSlot::Send,
            Strategy::WaitFirst { max_wait_us, .. } if a == 0 => {
                self.hold_open = true;
                OnSlot::OpenHold { cap: SimDuration::from_us(max_wait_us) }
            }
            Strategy::WaitFirst { .. } => self.hold_if(self.hold_open, a),
            Strategy::Stagger { interval_us } => {
                let interval = SimDuration::from_us(interval_us);
                let at = self.t0.saturating_add(interval.saturating_mul(a as u64));
                if at <= now {
                    OnSlot::Send
                } else {
                    OnSlot::GateAt(at)
                }
            }
            Strategy::Sequential => {
                if a == 0 || self.first_done[a as usize - 1] {
                    OnSlot::Send
                } else {
                    self.waiting_prev[a as usize] = true;
                    OnSlot::Wait
                }
            }
            Strategy::Prewarm => self.hold_if(!self.prewarm_ready, a),
        }
    }

    fn hold_if(&mut self, hold: bool, a: u32) -> OnSlot {
        if !hold {
            return OnSlot::Send;
        }
        self.held.push(a);
        OnSlot::Wait
    }

    /// Whether agent `a`'s request `request`, just served, must report its first token
    /// (`Ev::FirstToken`): the first writer's first request while a `release = on_ready`
    /// hold is open.
    #[inline]
    pub(super) fn listens_to_first_token(&self, a: u32, request: u32) -> bool {
        a == 0 && request == 0 && self.hold_open && self.on_ready
    }

    /// Agent `a`'s response began.
    pub(super) fn on_first_token(&mut self, a: u32) -> Released {
        if a == 0 && self.hold_open {
            return self.release_held();
        }
        self.none()
    }

    /// Whether someone waits for the end of agent `a`'s current response besides the agent
    /// itself: under `sequential`, until its first response ends.
    #[inline]
    pub(super) fn listens_to_end(&self, a: u32) -> bool {
        self.sequential && !self.first_done[a as usize]
    }

    /// Agent `a`'s response ended (or it gave up): after its first, under `sequential`, the
    /// next agent goes if it waits.
    pub(super) fn on_response_end(&mut self, a: u32) -> Released {
        let from = self.none();
        let ai = a as usize;
        if self.first_done[ai] {
            return from;
        }
        self.first_done[ai] = true;
        let next = ai + 1;
        if self.sequential && next < self.waiting_prev.len() && self.waiting_prev[next] {
            self.waiting_prev[next] = false;
            self.out.push(next as u32);
        }
        from
    }

    /// `wait_first`'s cap is reached: `None` if the hold was already released, else every
    /// held agent goes.
    pub(super) fn on_hold_cap(&mut self) -> Option<Released> {
        self.hold_open.then(|| self.release_held())
    }

    /// The prewarm request's entries are readable (or it gave up): under `prewarm` every
    /// held agent goes; the create call (if it was one) has returned.
    pub(super) fn on_prewarm_ready(&mut self) -> Released {
        self.prewarm_ready = true;
        self.creating = false;
        match self.strategy() {
            Strategy::Prewarm => self.release_held(),
            _ => self.none(),
        }
    }

    /// Gemini explicit: the prewarm request is sent, and it is a create call when `creates`.
    pub(super) fn start_create(&mut self, creates: bool) {
        self.creating = creates;
    }

    /// The agents that waited for the create call, in slot order, to gate now (`on_slot`).
    pub(super) fn take_awaiting(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.awaiting)
    }

    fn release_held(&mut self) -> Released {
        self.hold_open = false;
        let from = self.none();
        self.out.extend_from_slice(&self.held);
        self.held.clear();
        from
    }

    /// A mark with nothing released yet.
    fn none(&self) -> Released {
        Released(self.out.len())
    }

    /// The `i`th agent released at `mark`, if there are that many.
    pub(super) fn released(&self, mark: Released, i: usize) -> Option<u32> {
        self.out.get(mark.0 + i).copied()
    }

    /// The agents released at `mark` were all sent.
    pub(super) fn done(&mut self, mark: Released) {
        self.out.truncate(mark.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: SimTime = SimTime::ZERO;

    fn drain(l: &mut Launch, mark: Released) -> Vec<u32> {
        let v = (0..).map_while(|i| l.released(mark, i)).collect();
        l.done(mark);
        v
    }

    #[test]
    fn wait_first_holds_until_the_first_token_or_the_cap() {
        let mut l = Launch::default();
        let s = Strategy::WaitFirst { max_wait_us: 5, release: Release::OnReady };
        l.reset(&s, T0, 3);
        let cap = SimDuration::from_us(5);
        assert_eq!(l.on_slot(0, T0), OnSlot::OpenHold { cap });
        assert!(l.listens_to_first_token(0, 0));
        assert_eq!((l.on_slot(1, T0), l.on_slot(2, T0)), (OnSlot::Wait, OnSlot::Wait));
        let mark = l.on_first_token(0);
        assert_eq!(drain(&mut l, mark), [1, 2]);
        assert_eq!(l.on_hold_cap(), None, "released already: the cap does nothing");
        assert_eq!(l.on_slot(1, T0), OnSlot::Send);
    }

    #[test]
    fn sequential_lets_the_next_agent_go_after_the_first_response_only() {
        let mut l = Launch::default();
        l.reset(&Strategy::Sequential, T0, 3);
        assert_eq!(l.on_slot(0, T0), OnSlot::Send);
        assert_eq!(l.on_slot(1, T0), OnSlot::Wait);
        assert!(l.listens_to_end(0));
        let mark = l.on_response_end(0);
        assert_eq!(drain(&mut l, mark), [1]);
        assert!(!l.listens_to_end(0));
        let mark = l.on_response_end(0);
        assert_eq!(drain(&mut l, mark), [] as [u32; 0]);
        assert_eq!(l.on_slot(2, T0), OnSlot::Wait, "agent 1's first response has not ended");
    }

    #[test]
    fn nested_releases_are_sent_before_the_outer_ones_go_on() {
        let mut l = Launch::default();
        l.reset(&Strategy::Sequential, T0, 4);
        let _ = (l.on_slot(0, T0), l.on_slot(1, T0), l.on_slot(2, T0));
        let outer = l.on_response_end(0);
        assert_eq!(l.released(outer, 0), Some(1));
        let inner = l.on_response_end(1);
        assert_eq!(drain(&mut l, inner), [2]);
        assert_eq!((l.released(outer, 0), l.released(outer, 1)), (Some(1), None));
        l.done(outer);
    }

    #[test]
    fn prewarm_and_stagger_gate_the_first_request() {
        let mut l = Launch::default();
        l.reset(&Strategy::Prewarm, T0, 2);
        assert_eq!(l.on_slot(0, T0), OnSlot::Wait);
        let mark = l.on_prewarm_ready();
        assert_eq!(drain(&mut l, mark), [0]);
        assert_eq!(l.on_slot(1, T0), OnSlot::Send);
        let t = SimTime::from_us;
        l.reset(&Strategy::Stagger { interval_us: 10 }, t(100), 3);
        assert_eq!(l.on_slot(0, t(100)), OnSlot::Send);
        assert_eq!(l.on_slot(2, t(100)), OnSlot::GateAt(t(120)));
    }

    /// The create call's return releases no `wait_first` hold: only the agents that waited
    /// for it, which the strategy then gates.
    #[test]
    fn the_create_call_keeps_agents_until_it_returns_and_leaves_holds_alone() {
        let mut l = Launch::default();
        let s = Strategy::WaitFirst { max_wait_us: 5, release: Release::OnReady };
        l.reset(&s, T0, 3);
        l.start_create(true);
        assert_eq!((l.on_slot(0, T0), l.on_slot(1, T0)), (OnSlot::Wait, OnSlot::Wait));
        let mark = l.on_prewarm_ready();
        assert_eq!(drain(&mut l, mark), [] as [u32; 0]);
        assert_eq!(l.take_awaiting(), [0, 1]);
        assert!(matches!(l.on_slot(0, T0), OnSlot::OpenHold { .. }), "by the strategy now");
        assert_eq!(l.on_slot(1, T0), OnSlot::Wait);
    }
}
