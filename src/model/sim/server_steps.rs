//! The self-hosted server's side of a run (`vllm`, `sglang`): sending a request to a replica,
//! a replica's step ending, and a request it served going on as any served request does.

use super::{index_of, Run};
use crate::cache::Breakpoint;
use crate::model::agent::Requester;
use crate::model::recorder::Served;
use crate::model::server::Reply;
use crate::model::world::Ev;
use crate::model::SimError;

impl Run<'_> {
    /// Send `who`'s request `request` (`out` output tokens) to the self-hosted server now.
    /// Out of line: the API's requests, the common case, skip it.
    #[inline(never)]
    pub(super) fn server_send(&mut self, who: Requester, request: u32, out: u64) {
        let Some((p, server)) = &mut self.server else { return };
        let now = self.world.engine.now();
        let prompt = &self.agents[index_of(who, self.world.n)].chain.prompt;
        let r = server.route(p, prompt, now);
        if let Some(at) = server.arrive(r, (who, request, out), prompt, now) {
            self.world.engine.schedule_at(at, Ev::Step(r as u32));
        }
    }

    /// A step of replica `r` ends now: the next one is scheduled, and every request whose
    /// prefill or (`vllm`) decode it finished goes on (first token, response, next turn).
    pub(super) fn server_step(&mut self, r: usize) -> Result<(), SimError> {
        let (p, server) = self.server.as_mut().expect("steps are scheduled only on a server");
        let (now, n, agents) = (self.world.engine.now(), self.world.n, &self.agents);
        let prompts = |who: Requester| &agents[index_of(who, n)].chain.prompt;
        if let Some(end) = server.step(p, r, now, &prompts) {
            self.world.engine.schedule_at(end, Ev::Step(r as u32));
        }
        let mut k = 0;
        while let Some((d, part)) = self.server.as_ref().and_then(|(_, s)| s.done.get(k).copied()) {
            k += 1;
            self.server_served(d, part)?;
        }
        if let Some((_, server)) = &mut self.server {
            server.done.clear();
        }
        Ok(())
    }

    /// Record one served request (once whole) and go on as after any served request.
    fn server_served(&mut self, d: Served, part: Reply) -> Result<(), SimError> {
        let ag = &self.agents[index_of(d.who, self.world.n)];
        let mut bps = [Breakpoint { index: 0, ttl: self.agent_ttl }; 3];
        let bps = ag.breakpoints(self.agent_ttl, &mut bps);
        let first = matches!((d.who, d.request), (Requester::Agent(_), 0));
        let wait = first.then(|| d.send_us - ag.slot);
        if part != Reply::FirstToken {
            self.world.rec.request(&d, (0.0, wait), &ag.chain.prompt, bps);
        }
        let (request, send_us, timing) = (d.request, d.send_us, d.timing);
        match d.who {
            Requester::Agent(a) => self.served(a, request, send_us, timing, part),
            _ if part == Reply::End => Ok(()),
            _ => {
                self.prewarm_served(send_us, timing);
                Ok(())
            }
        }
    }
}
