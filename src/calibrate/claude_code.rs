//! Observations from Claude Code session traces (the kv-cache-tester format, read by
//! `replay::claude_code`): `in`, `out`, `hash_ids`, and the measured `ttft` and `api_time`.
//!
//! The traces do not record the server's usage split, so the cache read is inferred. The
//! ASSUMPTION (named in docs/calibrate.md with its bias): a request read from the cache the
//! longest prefix of its hash ids that a request sent strictly earlier in the same trace file,
//! to the same model (caches are per model), had sent less than the TTL before it;
//! `cached = blocks * block_size` and the rest `in - cached` was prefilled. A prefix's last use
//! is the send time of the latest earlier request carrying it (a read refreshes it, as the
//! server's TTL does); with no TTL nothing expires. Nothing from outside the file is warm.
//! Each file is one bootstrap group (session).

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::path::Path;

use super::{CalibrateError, Observation, Observations};
use crate::cache::KeyHasher;
use crate::replay::{TraceMeta, TraceRequest};
use crate::rng::mix64;

/// The prefix values of one model in one file (already mixed: a multiply-fold hash suffices),
/// each with its last use (send time, microseconds).
type PrefixUses = HashMap<u64, u64, BuildHasherDefault<KeyHasher>>;

/// The default cache TTL of the inference: Anthropic's default cache lifetime, 5 minutes.
pub const DEFAULT_TTL_US: u64 = 5 * 60 * 1_000_000;

/// Prefixes seen in the current file, per model, with their last use; requests of the send
/// time being read wait in `pending` (a request cannot read what one sent at the same
/// microsecond writes). A request carries every prefix of its own, so a shorter prefix was used
/// at least as recently as a longer one: the live prefixes of a chain are a prefix of it, and
/// the longest is found by bisection.
#[derive(Default)]
struct Seen {
    /// `None`: nothing expires.
    ttl_us: Option<u64>,
    conversation: Option<u32>,
    by_model: HashMap<String, PrefixUses>,
    pending: Vec<(String, Vec<u64>)>,
    pending_time_us: u64,
    chain: Vec<u64>,
}

impl Seen {
    fn new(ttl_us: Option<u64>) -> Seen {
        Seen { ttl_us, ..Seen::default() }
    }

    /// Cached blocks of `r` under the assumption, then remember its prefixes as used now.
    fn infer(&mut self, r: &TraceRequest) -> u64 {
        if self.conversation != Some(r.conversation) {
            self.conversation = Some(r.conversation);
            self.by_model.clear();
            self.pending.clear();
        }
        if r.time_us > self.pending_time_us {
            let used_us = self.pending_time_us;
            for (model, chain) in self.pending.drain(..) {
                let uses = self.by_model.entry(model).or_default();
                uses.extend(chain.into_iter().map(|h| (h, used_us)));
            }
            self.pending_time_us = r.time_us;
        }
        prefix_chain(r.block_ids, &mut self.chain);
        let now = r.time_us;
        let live = |last: u64| self.ttl_us.is_none_or(|ttl| now - last.min(now) < ttl);
        let hit = match self.by_model.get(r.model) {
            Some(uses) => self.chain.partition_point(|h| uses.get(h).is_some_and(|&t| live(t))),
            None => 0,
        };
        self.pending.push((r.model.to_string(), self.chain.clone()));
        hit as u64
    }
}

/// `chain[i]` identifies the prefix `ids[..=i]` (a 64-bit running mix: equal prefixes, equal
/// values; a collision between different prefixes is a 2^-64 event).
fn prefix_chain(ids: &[u64], chain: &mut Vec<u64>) {
    chain.clear();
    let mut h = 0x243F_6A88_85A3_08D3u64;
    for &id in ids {
        h = mix64(h ^ mix64(id.wrapping_add(0x9E37_79B9_7F4A_7C15)));
        chain.push(h);
    }
}

/// Read a trace file or a directory of them into `out`; a prefix last used `ttl_us` or more
/// before a request has expired for it (`None`: never).
pub fn read(
    path: &Path,
    ttl_us: Option<u64>,
    out: &mut Observations,
) -> Result<(), CalibrateError> {
    let mut meta = TraceMeta::default();
    let mut seen = Seen::new(ttl_us);
    // (conversation, model id, observation with model and group still unset)
    let mut raw: Vec<(u32, String, Observation)> = Vec::new();
    crate::replay::claude_code::read(path, false, &mut meta, &mut |r: &TraceRequest| {
        let cached_blocks = seen.infer(r);
        let cached = cached_blocks * r.block_tokens;
        let obs = Observation {
            model: 0,
            group: 0,
            prefill_tokens: r.input_tokens - cached,
            cached_tokens: cached,
            output_tokens: r.output_tokens,
            ttft_s: r.ttft_us.map(|us| us as f64 / 1e6),
            duration_s: r.api_time_us.map(|us| us as f64 / 1e6),
        };
        raw.push((r.conversation, r.model.to_string(), obs));
    })?;
    for (conversation, model, mut obs) in raw {
        obs.model = out.model(&model);
        obs.group = out.group(&meta.conversations[conversation as usize]);
        out.obs.push(obs);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req<'a>(
        time_us: u64,
        conversation: u32,
        model: &'a str,
        ids: &'a [u64],
    ) -> TraceRequest<'a> {
        TraceRequest {
            time_us,
            conversation,
            namespace: 0,
            model,
            input_tokens: ids.len() as u64 * 64 + 10,
            output_tokens: 1,
            block_tokens: 64,
            block_ids: ids,
            ttft_us: None,
            api_time_us: None,
        }
    }

    #[test]
    fn reads_are_earlier_same_file_same_model_longest_prefixes() {
        let mut s = Seen::new(None);
        assert_eq!(s.infer(&req(0, 0, "a", &[1, 2, 3])), 0, "nothing seen yet");
        assert_eq!(s.infer(&req(0, 0, "a", &[1, 2, 3])), 0, "same send time: not yet readable");
        assert_eq!(s.infer(&req(5, 0, "a", &[1, 2, 3, 4])), 3);
        assert_eq!(s.infer(&req(6, 0, "a", &[1, 9, 3, 4])), 1, "a prefix, not a set of blocks");
        assert_eq!(s.infer(&req(7, 0, "b", &[1, 2, 3, 4])), 0, "caches are per model");
        assert_eq!(s.infer(&req(8, 0, "a", &[2, 3])), 0, "block 2 after block 1 is another prefix");
        assert_eq!(s.infer(&req(9, 1, "a", &[1, 2, 3])), 0, "another file starts cold");
    }

    const MINUTE_US: u64 = 60_000_000;

    #[test]
    fn a_prefix_expires_after_the_ttl_and_a_read_refreshes_it() {
        for (ttl, cached_after_6m) in
            [(Some(5 * MINUTE_US), 0), (Some(60 * MINUTE_US), 3), (None, 3)]
        {
            let mut s = Seen::new(ttl);
            assert_eq!(s.infer(&req(0, 0, "a", &[1, 2, 3])), 0);
            assert_eq!(
                s.infer(&req(6 * MINUTE_US, 0, "a", &[1, 2, 3, 4])),
                cached_after_6m,
                "{ttl:?}"
            );
        }
        let mut s = Seen::new(Some(5 * MINUTE_US));
        assert_eq!(s.infer(&req(0, 0, "a", &[1, 2, 3])), 0);
        assert_eq!(s.infer(&req(4 * MINUTE_US, 0, "a", &[1, 2])), 2, "used 4 minutes ago");
        // Blocks 1-2 were refreshed at 4 min, block 3 last used at 0.
        assert_eq!(s.infer(&req(8 * MINUTE_US, 0, "a", &[1, 2, 3])), 2, "3 expired, 1-2 refreshed");
        assert_eq!(
            s.infer(&req(13 * MINUTE_US, 0, "a", &[1, 2, 3])),
            0,
            "exactly 5 minutes: expired"
        );
    }
}
