//! Tests: `prefixsim scenarios` (the seed table and its exercises, computed by the cache core).

use prefixsim::cache::Policy;
use prefixsim::replay::body::request_from_json;
use prefixsim::scenarios::bodies::{assistant_text, user_text, Request};
use prefixsim::scenarios::compute::{main_next, thinking_fork_requests};
use prefixsim::scenarios::permission::{tool_result, CallOutcome, Permissions};
use prefixsim::scenarios::workload::{ToolCall, Workload, WorkloadError};
use prefixsim::scenarios::{self, render, Report, WorkloadName, SCENARIOS};
use serde_json::{json, Value};
use std::process::Command;
use std::sync::OnceLock;

/// Each (workload, policy) report computed once for the whole test binary.
fn report(w: WorkloadName, p: Policy) -> &'static Report {
    static CELLS: [OnceLock<Report>; 4] =
        [OnceLock::new(), OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let i = 2 * (w as usize) + usize::from(p == Policy::Anthropic);
    CELLS[i].get_or_init(|| scenarios::run(w, p).expect("scenarios run"))
}

fn rate(r: &Report, id: &str) -> f64 {
    r.get(id).unwrap_or_else(|| panic!("no row {id}")).usage.hit_rate()
}

const ALL: [(WorkloadName, Policy); 4] = [
    (WorkloadName::Seed, Policy::EveryBlock),
    (WorkloadName::Seed, Policy::Anthropic),
    (WorkloadName::ClaudeCode, Policy::EveryBlock),
    (WorkloadName::ClaudeCode, Policy::Anthropic),
];

/// The seed chapter's table (docs/background.md): warm-up 0.0%, fork and /btw 99.8% (we need
/// at least 99.5%), Bash removed 0.0%, system edited 0.8-0.9% (we allow 0.3%-2%: only the
/// ~80-token tools block of ~9,100 tokens hits), fresh sub-agent 0.0%.
#[test]
fn seed_table_has_the_seed_shape() {
    let r = report(WorkloadName::Seed, Policy::EveryBlock);
    assert_eq!(rate(r, "warmup"), 0.0);
    assert!(rate(r, "fork") >= 0.995, "fork {}", rate(r, "fork"));
    assert!(rate(r, "btw") >= 0.995, "btw {}", rate(r, "btw"));
    assert_eq!(rate(r, "fork_drop_bash"), 0.0);
    let edit = rate(r, "fork_edit_system");
    assert!((0.003..=0.02).contains(&edit), "fork_edit_system {edit}");
    assert_eq!(rate(r, "fresh_subagent"), 0.0);
    // The demo's proportions: tools about 80 tokens, the whole about 9,100.
    assert!((60..=110).contains(&r.tools_tokens), "tools {}", r.tools_tokens);
    let total = r.get("warmup").unwrap().usage.total();
    assert!((8_600..=9_700).contains(&total), "main session {total} tokens");
    assert_eq!(r.main_turns, 30);
}

#[test]
fn ids_are_the_issue_ids_in_order() {
    let ids: Vec<&str> =
        report(WorkloadName::Seed, Policy::EveryBlock).scenarios.iter().map(|s| s.id).collect();
    let want = [
        "warmup",
        "fork",
        "fork_drop_bash",
        "fork_edit_system",
        "fresh_subagent",
        "btw",
        "fork_reorder_tools",
        "fork_deny_edit",
        "btw_keep_tools",
        "btw_drop_tools",
        "btw_tool_choice_none",
        "fork_thinking",
    ];
    assert_eq!(ids, want);
    assert_eq!(SCENARIOS.map(|s| s.0), want);
}

/// Exercise 1: the tool list is one block, its bytes depend on the order, so a reordered list
/// is a different first block and nothing after it can hit, under either policy.
#[test]
fn reordered_tools_hit_nothing() {
    for (w, p) in ALL {
        let r = report(w, p);
        assert_eq!(r.get("fork_reorder_tools").unwrap().usage.cache_read, 0, "{w:?} {p:?}");
    }
}

/// Exercise 2: the denied fork sends the plain fork's request, so its bill is the fork's bill,
/// and the permission check refuses the call to Edit.
#[test]
fn deny_at_call_time_keeps_the_fork_hit_and_refuses_edit() {
    for (w, p) in ALL {
        let r = report(w, p);
        let deny = r.get("fork_deny_edit").unwrap();
        assert_eq!(deny.usage, r.get("fork").unwrap().usage, "{w:?} {p:?}");
        assert_eq!(deny.tool_call_refused, Some(true));
        let note = deny.note.as_deref().unwrap();
        assert!(note.contains("refused") && note.contains("Edit"), "{note}");
    }
}

/// claude-code under every-block: the edited system prompt is block 1, so exactly block 0 (the
/// tools) is read: cache_read = tools tokens, hit rate = tools / total. And the tools block is
/// large (eight-plus tools with full schemas).
#[test]
fn claude_code_edit_system_keeps_the_tools() {
    let r = report(WorkloadName::ClaudeCode, Policy::EveryBlock);
    let u = r.get("fork_edit_system").unwrap().usage;
    assert_eq!(u.cache_read, r.tools_tokens);
    assert_eq!(u.hit_rate(), r.tools_tokens as f64 / u.total() as f64);
    assert!(r.tools_tokens > 5_000, "tools {}", r.tools_tokens);
    assert!((12_000..=17_000).contains(&(r.tools_tokens + r.system_tokens)));
    assert!(u.hit_rate() > 0.2, "a realistic tools block is a large share: {}", u.hit_rate());
}

/// /btw designs: dropping the tools changes block 0 (nothing hits); tool_choice none changes
/// the messages' parameters (exactly tools + system hit under every-block). Neither touches
/// the main session's entries, so with the answer not kept its next turn bills exactly as with
/// no /btw at all. Keeping the tools lets the side request write the main's last reply, so the
/// next turn reads at least as much as the baseline.
#[test]
fn btw_designs_side_and_next_turn() {
    let r = report(WorkloadName::ClaudeCode, Policy::EveryBlock);
    let drop = r.get("btw_drop_tools").unwrap();
    assert_eq!(drop.usage.cache_read, 0);
    let none = r.get("btw_tool_choice_none").unwrap();
    assert_eq!(none.usage.cache_read, r.tools_tokens + r.system_tokens);
    for row in [drop, none] {
        assert_eq!(row.next_turn.unwrap().answer_discarded, r.baseline_next_turn, "{}", row.id);
    }
    let keep = r.get("btw_keep_tools").unwrap();
    assert_eq!(keep.usage, r.get("btw").unwrap().usage);
    let next = keep.next_turn.unwrap().answer_discarded;
    assert!(next.cache_read > r.baseline_next_turn.cache_read);
    // Answer kept: the main conversation grows by the question and answer; with the tools kept
    // the side request wrote the question, so only the answer and the new message are new.
    let written = keep.next_turn.unwrap().answer_written;
    assert!(written.cache_read >= next.cache_read);
}

/// The request a row bills, rebuilt here from the workload as the table describes each row:
/// the fork (and `fork_deny_edit`'s first request) is the history + the fork's task, /btw the
/// history + the question, the variants change one thing of those, and `fork_thinking` bills
/// its fork.
fn row_request(w: &Workload, model: &str, id: &str) -> Request {
    let fork = Request::after_history(w, &[user_text(&w.fork_task)]);
    let btw = Request::after_history(w, &[user_text(&w.btw_question)]);
    let changed = |mut r: Request, change: &dyn Fn(&mut Request)| {
        change(&mut r);
        r
    };
    match id {
        "warmup" => Request::main_turn(w, w.turns()),
        "fork" | "fork_deny_edit" => fork,
        "fork_drop_bash" => fork.without_tool(&w.drop_tool),
        "fork_edit_system" => changed(fork, &|r| r.system.push_str(&w.read_only_note)),
        "fresh_subagent" => Request {
            model: w.model.clone(),
            tools: w.subagent.tools.clone(),
            system: w.subagent.system.clone(),
            messages: vec![user_text(&w.subagent.task)],
            tool_choice: None,
            thinking: None,
            shared_end: None,
        },
        "btw" | "btw_keep_tools" => btw,
        "fork_reorder_tools" => changed(fork, &|r| r.tools.reverse()),
        "btw_drop_tools" => changed(btw, &|r| r.tools.clear()),
        "btw_tool_choice_none" => changed(btw, &|r| r.tool_choice = Some(json!({"type": "none"}))),
        "fork_thinking" => thinking_fork_requests(w, model).1,
        _ => panic!("no request for row {id}"),
    }
}

/// A request's tokens, parsed by the cache core from its body.
fn tokens(req: &Request) -> u64 {
    request_from_json(&req.body()).expect("a valid body").0.tokens()
}

/// Every row bills exactly its request's tokens (read + written + uncached), and every /btw
/// row's next turns bill the main conversation's next request, with the side answer discarded
/// or written into it; so does the baseline next turn.
#[test]
fn every_row_bills_its_requests_tokens() {
    for (name, p) in ALL {
        let w = name.load().unwrap();
        let r = report(name, p);
        let next = tokens(&main_next(&w, &[]));
        let qa = [user_text(&w.btw_question), assistant_text(&w.btw_answer)];
        let next_written = tokens(&main_next(&w, &qa));
        assert!(r.scenarios.iter().map(|s| s.id).eq(SCENARIOS.iter().map(|s| s.0)));
        for s in &r.scenarios {
            let want = tokens(&row_request(&w, &r.model, s.id));
            assert_eq!(s.usage.total(), want, "{name:?} {p:?} {}", s.id);
            if let Some(turn) = s.next_turn {
                assert_eq!(turn.answer_discarded.total(), next, "{name:?} {p:?} {}", s.id);
                assert_eq!(turn.answer_written.total(), next_written, "{name:?} {p:?} {}", s.id);
            }
        }
        assert_eq!(r.baseline_next_turn.total(), next, "{name:?} {p:?}");
        assert!(next_written > next, "the written answer lengthens the next turn");
    }
}

/// The warm-up row equals the main session's last request, parsed independently.
#[test]
fn warmup_is_the_main_sessions_last_request() {
    let w = WorkloadName::Seed.load().unwrap();
    let (prompt, _) = request_from_json(&Request::main_turn(&w, w.turns()).body()).unwrap();
    let u = report(WorkloadName::Seed, Policy::EveryBlock).get("warmup").unwrap().usage;
    assert_eq!(u.total(), prompt.tokens());
    assert_eq!(u.cache_read, 0);
}

/// Under anthropic the seed's fresh sub-agent (~50 tokens) is below the 1,024-token minimum of
/// claude-sonnet-4.5: neither read nor written, all uncached.
#[test]
fn anthropic_minimum_length_shows() {
    let r = report(WorkloadName::Seed, Policy::Anthropic);
    let u = r.get("fresh_subagent").unwrap().usage;
    assert_eq!((u.cache_read, u.cache_write()), (0, 0));
    assert!(u.uncached > 0 && u.uncached < r.min_cacheable_tokens);
    // The fork still reads the parent's history (a breakpoint ends there).
    assert!(rate(r, "fork") >= 0.99);
    // claude-code: tools + system are cached only through the system-end breakpoint, so an
    // edited system prompt reads nothing under the API's rules.
    let cc = report(WorkloadName::ClaudeCode, Policy::Anthropic);
    assert_eq!(cc.get("fork_edit_system").unwrap().usage.cache_read, 0);
    assert!(render::table(cc).contains("minimum cacheable length"));
}

#[test]
fn permission_check_refuses_only_denied_tools() {
    let edit = ToolCall { name: "Edit".into(), input: json!({}) };
    let read = ToolCall { name: "Read".into(), input: json!({}) };
    let rules = Permissions::deny(&["Edit"]);
    assert!(matches!(rules.check(&edit), CallOutcome::Refused { ref rule, .. } if rule == "Edit"));
    assert_eq!(rules.check(&read), CallOutcome::Allowed);
    let result = tool_result("toolu_1", &rules.check(&edit));
    assert_eq!(result["is_error"], json!(true));
    assert_eq!(result["tool_use_id"], json!("toolu_1"));
}

/// Bodies are real Messages-API shapes: breakpoints on the system prompt, the end of the shared
/// history and the last message; markers do not change the bytes the cache sees.
#[test]
fn bodies_carry_claude_code_like_breakpoints() {
    let w = WorkloadName::Seed.load().unwrap();
    let fork = Request::after_history(&w, &[user_text(&w.fork_task)]);
    let (prompt, bps) = request_from_json(&fork.body()).unwrap();
    let idx: Vec<usize> = bps.iter().map(|b| b.index).collect();
    let n = prompt.len();
    assert_eq!(idx, vec![1, n - 2, n - 1]);
    let mut unmarked = fork.clone();
    unmarked.shared_end = None;
    let (p2, _) = request_from_json(&unmarked.body()).unwrap();
    assert_eq!(p2.prefix_digest(n - 1), prompt.prefix_digest(n - 1));
}

#[test]
fn workload_errors_name_the_key() {
    let mut v: Value = serde_json::from_str(WorkloadName::Seed.json()).unwrap();
    v["drop_tool"] = json!("Nope");
    let e = Workload::parse(&v.to_string(), "test.json").unwrap_err();
    assert!(matches!(e, WorkloadError::Invalid { ref key, .. } if key == "drop_tool"), "{e}");
    assert!(e.to_string().contains("test.json") && e.to_string().contains("Nope"));
    v["drop_tool"] = json!("Bash");
    v["conversation"][1]["role"] = json!("user");
    let e = Workload::parse(&v.to_string(), "test.json").unwrap_err();
    assert!(e.to_string().contains("conversation[1].role"), "{e}");
}

/// `--json` shape: parse it back and check every issue field and that it matches the report.
#[test]
fn json_shape_parses_back() {
    for (w, p) in ALL {
        let r = report(w, p);
        let text = serde_json::to_string(&render::to_json(r)).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["workload"], json!(w.as_str()));
        assert_eq!(v["policy"], json!(p.name()));
        let rows = v["scenarios"].as_array().unwrap();
        assert_eq!(rows.len(), r.scenarios.len());
        for (row, s) in rows.iter().zip(&r.scenarios) {
            assert_eq!(row["id"], json!(s.id));
            for (k, n) in [
                ("cache_read", s.usage.cache_read),
                ("cache_write", s.usage.cache_write()),
                ("uncached", s.usage.uncached),
            ] {
                assert_eq!(row[k].as_u64(), Some(n), "{} {k}", s.id);
            }
            let hr = row["hit_rate"].as_f64().unwrap();
            assert!((hr - s.usage.hit_rate()).abs() < 1e-6);
            assert_eq!(row.get("next_turn_hit_rate").is_some(), s.id.starts_with("btw_"));
        }
    }
}

#[test]
fn same_input_same_bytes() {
    let a = scenarios::run(WorkloadName::Seed, Policy::Anthropic).unwrap();
    assert_eq!(render::table(&a), render::table(report(WorkloadName::Seed, Policy::Anthropic)));
}

#[test]
fn seed_table_snapshot() {
    insta::assert_snapshot!(render::table(report(WorkloadName::Seed, Policy::EveryBlock)));
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_prefixsim"))
}

#[test]
fn cli_json_runs() {
    let out = bin().args(["scenarios", "--workload", "claude-code", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["workload"], json!("claude-code"));
    assert_eq!(v["policy"], json!("every-block"));
    assert_eq!(v["scenarios"].as_array().unwrap().len(), 12);
}

#[test]
fn cli_bad_policy_exits_2() {
    let out = bin().args(["scenarios", "--policy", "lru"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("lru"));
}

/// Self-hosted servers read whole KV blocks: the fork shares the main session's 9,210-token
/// prefix (tools, system, 30 turns); vLLM reads it in 16-token blocks (575 blocks = 9,200
/// tokens), SGLang's radix tree token by token (all 9,210).
#[test]
fn a_fork_reads_whole_kv_blocks_on_a_self_hosted_server() {
    let run = |p| scenarios::run(WorkloadName::Seed, p).expect("scenarios run");
    let shared = run(Policy::EveryBlock).get("fork").unwrap().usage.cache_read;
    assert_eq!(shared, 9_210);
    let vllm = run(Policy::Vllm).get("fork").unwrap().usage;
    assert_eq!(vllm.cache_read, shared / 16 * 16);
    assert_eq!(vllm.cache_write_1h, 0);
    let sglang = run(Policy::Sglang).get("fork").unwrap().usage;
    assert_eq!(sglang.cache_read, shared);
    let out = bin().args(["scenarios", "--policy", "vllm", "--json"]).output().unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["policy"], json!("vllm"));
}

/// The cost column: docs/cache.md's cost formula with output 0, relative to all input at base
/// price: (0.1 read + 1.25 write_5m + uncached) / total. A cold write costs 1.25x, a miss below
/// the minimum 1x.
#[test]
fn input_cost_ratio_closed_form() {
    let r = report(WorkloadName::Seed, Policy::Anthropic);
    let u = r.get("fork").unwrap().usage;
    let want = (0.1 * u.cache_read as f64 + 1.25 * u.cache_write_5m as f64 + u.uncached as f64)
        / u.total() as f64;
    assert!((render::input_cost_ratio(&r.model_params, &u) - want).abs() < 1e-12);
    let warm = r.get("warmup").unwrap().usage;
    assert!((render::input_cost_ratio(&r.model_params, &warm) - 1.25).abs() < 1e-12);
    let fresh = r.get("fresh_subagent").unwrap().usage;
    assert!((render::input_cost_ratio(&r.model_params, &fresh) - 1.0).abs() < 1e-12);
}

/// `fork_thinking` under the API's rules. M (the main session's tool-loop request: history,
/// the next user message, assistant [thinking, tool_use], user [tool_result]) writes entries
/// at the system prompt, the history's end (block 1 + conversation length: tools and system
/// are blocks 0 and 1) and its last message. The fork appends assistant [thinking, text] and
/// its task. On claude-sonnet-4.5, which strips earlier turns' thinking, the fork's loop
/// message differs from M's (its thinking block is dropped): it reads exactly M's prefix up to
/// the history's end. On claude-sonnet-4.6, which keeps it, it reads all of M. The stripped
/// fork also sends fewer tokens (both thinking blocks are gone).
#[test]
fn thinking_fork_reads_to_the_loop_on_a_model_that_strips() {
    use prefixsim::scenarios::compute::thinking_fork_requests;
    for w in [WorkloadName::Seed, WorkloadName::ClaudeCode] {
        let r = report(w, Policy::Anthropic);
        let wl = w.load().unwrap();
        let (main, fork) = thinking_fork_requests(&wl, "claude-sonnet-4.5");
        let (m, _) = request_from_json(&main.body()).unwrap();
        let history_end = 1 + wl.conversation.len();
        let row = r.get("fork_thinking").unwrap();
        assert_eq!(row.usage.cache_read, m.prefix_tokens(history_end), "{w:?}");
        let (f, _) = request_from_json(&fork.body()).unwrap();
        assert_eq!(row.usage.total(), f.tokens());
        let (main46, fork46) = thinking_fork_requests(&wl, "claude-sonnet-4.6");
        let (m46, _) = request_from_json(&main46.body()).unwrap();
        let (f46, _) = request_from_json(&fork46.body()).unwrap();
        assert!(f46.tokens() > f.tokens(), "the kept thinking blocks are sent");
        let note = row.note.as_deref().unwrap();
        assert!(note.contains(&format!("reads {}", m46.tokens())), "{note}");
    }
}
