//! `prefixsim serve` under heavy or hostile use: the largest run within the budget is served
//! with a timeline of a few lanes (traced as the run goes), requests that do not name the
//! server or that another page sent are refused, idle and half-sent connections are closed
//! so a new request is served (with 256 file descriptors), and the wait queue is bounded.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use prefixsim::model::{simulate_detailed, simulate_sampled};
use serde_json::Value;

use super::common::bin;
use super::serve::{http, raw_http, Reply, Server};

/// Issue 32's N7: 300,000 agents at once, 4.2e6 simulated requests, under the default budget.
const N7: &str = "/api/run?workload.agents=300000&workload.concurrency=300000&replications=1\
                  &strategies=%5B%22eager%22%5D";

/// Poll `/api/stats` until `done` holds (a safety net of 120 s, not a timing assertion).
fn wait_for_stats(server: &Server, what: &str, done: impl Fn(&Value) -> bool) {
    let start = Instant::now();
    loop {
        let stats = server.get("/api/stats").json();
        if done(&stats) {
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(120), "never {what}: {stats}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_sampled_trace_is_the_full_trace_of_its_lanes() {
    let mut exp = prefixsim::Experiment::default_experiment().config().clone();
    exp.workload.agents = 40;
    for s in &exp.strategies {
        let full = simulate_detailed(&exp, s, 0).unwrap();
        let sampled = simulate_sampled(&exp, s, 0, Some(16)).unwrap();
        // Agents 0..16, the prewarm request (40) and the parent (41) keep their lanes.
        let kept = |agent: u32| !(16..40).contains(&agent);
        let segments: Vec<_> = full.segments.iter().filter(|g| kept(g.agent)).copied().collect();
        assert_eq!(sampled.segments, segments, "{s:?}");
        let requests: Vec<_> = full.requests.iter().filter(|r| kept(r.agent)).copied().collect();
        assert_eq!(sampled.requests, requests, "{s:?}");
        assert!(sampled.segments.len() < full.segments.len(), "{s:?}: nothing was left out");
        assert_eq!(sampled.metrics.requests, full.metrics.requests, "{s:?}");
        assert_eq!(sampled.metrics.cost_usd, full.metrics.cost_usd, "{s:?}");
    }
}

#[test]
fn the_largest_run_within_the_budget_is_served_with_a_bounded_page() {
    let server = Server::start(&[]);
    let r = server.get(N7);
    assert_eq!(r.status, 200, "{}", &r.body[..r.body.len().min(500)]);
    assert!(r.body.len() < 1 << 20, "the page's answer is {} bytes", r.body.len());
    let page = r.json();
    let figures = page["figures"].as_array().unwrap();
    let timeline = figures
        .iter()
        .find(|f| f["name"].as_str().unwrap().starts_with("timeline_"))
        .expect("a timeline");
    let title = timeline["title"].as_str().unwrap();
    assert!(title.ends_with("(agents 0-15 of 300000)"), "{title}");
    let caption = timeline["caption"].as_str().unwrap();
    assert!(caption.starts_with("Lanes: the first 16 of 300000 agents"), "{caption}");
    assert!(timeline["svg"].as_str().unwrap().contains("agents 0-15 of 300000"));
    // The server is still there, and answers.
    assert_eq!(server.get("/api/stats").json()["runs"], 1);
    assert_eq!(server.get("/api/controls").status, 200);
}

/// `GET path` on a fresh connection to `server` with the headers `extra` (each ending in
/// CRLF) and `Host: host`.
fn ask(server: &Server, host: &str, extra: &str) -> Reply {
    let head = format!(
        "GET /api/run?replications=2 HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n{extra}\r\n"
    );
    raw_http(&server.addr, &head, "")
}

#[test]
fn requests_not_naming_the_server_or_sent_by_another_page_are_refused() {
    let server = Server::start(&[]);
    let port = server.addr.rsplit(':').next().unwrap().to_string();
    let own = server.addr.clone();
    let refused = [
        (format!("evil.example:{port}"), String::new(), 421, "does not name this server"),
        ("127.0.0.1:1".to_string(), String::new(), 421, "does not name this server"),
        (
            own.clone(),
            "Origin: http://evil.example\r\n".into(),
            403,
            "Origin `http://evil.example`",
        ),
        (own.clone(), "Origin: null\r\n".into(), 403, "cross-origin request refused"),
        (own.clone(), "Sec-Fetch-Site: cross-site\r\n".into(), 403, "Sec-Fetch-Site `cross-site`"),
        (own.clone(), "Sec-Fetch-Site: same-site\r\n".into(), 403, "Sec-Fetch-Site `same-site`"),
    ];
    for (host, extra, status, says) in &refused {
        let r = ask(&server, host, extra);
        assert_eq!(r.status, *status, "Host {host}, {extra:?}: {}", r.body);
        assert!(r.headers.to_ascii_lowercase().contains("content-type: text/plain"));
        assert!(r.body.contains(says) && r.body.lines().count() == 1, "{}", r.body);
    }
    assert_eq!(server.get("/api/stats").json()["runs"], 0, "a refused request ran");
    // The page's own requests: same origin, by either name of the loopback address.
    let same = format!("Origin: http://{own}\r\nSec-Fetch-Site: same-origin\r\n");
    assert_eq!(ask(&server, &own, &same).status, 200);
    let local = format!("localhost:{port}");
    let same = format!("Origin: http://{local}\r\nSec-Fetch-Site: same-origin\r\n");
    assert_eq!(ask(&server, &local, &same).status, 200);
    assert_eq!(ask(&server, &own, "Sec-Fetch-Site: none\r\n").status, 200);
    assert_eq!(server.get("/api/stats").json()["runs"], 3);
}

#[test]
fn idle_and_half_sent_connections_are_closed_and_a_new_request_is_served() {
    // As the campaign ran it: 256 file descriptors, 300 idle sockets.
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "ulimit -n 256 && exec \"$0\" serve --port 0"])
        .arg(env!("CARGO_BIN_EXE_prefixsim"));
    let server = Server::spawn(cmd);
    let addr: SocketAddr = server.addr.parse().unwrap();
    let mut idle = Vec::new();
    for i in 0..300 {
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(60)).unwrap();
        if i % 3 == 0 {
            s.write_all(b"GET /api/run HTTP/1.1\r\nHost: 127.0.0.1").unwrap();
        }
        idle.push(s);
    }
    let r = http(&server.addr, "GET", "/api/stats", None);
    assert_eq!(r.status, 200, "{}", r.body);
    // The first sockets were closed by the server (end of file), not left open.
    for s in idle.iter_mut().take(6) {
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let mut buf = [0u8; 64];
        match s.read(&mut buf) {
            Ok(0) => {}
            Ok(n) => panic!("an idle socket got {:?}", String::from_utf8_lossy(&buf[..n])),
            Err(e) => assert_ne!(e.kind(), std::io::ErrorKind::WouldBlock, "still open"),
        }
    }
}

#[test]
fn requests_beyond_the_queue_are_refused_with_retry_after() {
    // Two of these runs do not fit the budget together: the second waits, a third is refused.
    let server = Server::start(&["--budget", "1500000", "--queue", "1"]);
    let big = "/api/run?workload.agents=60000&workload.concurrency=60000&replications=1\
               &strategies=%5B%22eager%22%5D";
    let start = |addr: String| std::thread::spawn(move || http(&addr, "GET", big, None));
    let first = start(server.addr.clone());
    wait_for_stats(&server, "running", |s| s["running"] == 1);
    let second = start(server.addr.clone());
    wait_for_stats(&server, "waiting", |s| s["waiting"] == 1);
    let third = server.get(big);
    assert_eq!(third.status, 503, "{}", third.body);
    assert!(third.headers.to_ascii_lowercase().contains("retry-after: 5"), "{}", third.headers);
    assert!(third.body.starts_with("the server is busy") && third.body.contains("--queue"));
    for r in [first.join().unwrap(), second.join().unwrap()] {
        assert_eq!(r.status, 200, "{}", r.body);
        assert!(r.json()["work"].as_f64().unwrap() * 2.0 > 1.5e6, "the runs fit together");
    }
    let stats = server.get("/api/stats").json();
    assert_eq!((stats["runs"].clone(), stats["refused"].clone()), (2.into(), 1.into()));
}

#[test]
fn binding_beyond_localhost_warns_checks_hosts_and_a_bad_start_exits_2() {
    let mut server = Server::start(&["--bind", "0.0.0.0"]);
    assert!(server.addr.starts_with("0.0.0.0:"), "{}", server.addr);
    // On every address, a Host is an IP address with the port, never a name that could be
    // rebound to this machine.
    let local = server.addr.replace("0.0.0.0", "127.0.0.1");
    let port = local.rsplit(':').next().unwrap();
    for (host, status) in [(local.clone(), 200), (format!("rebound.example:{port}"), 421)] {
        let head = format!("GET /api/stats HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        assert_eq!(raw_http(&local, &head, "").status, status, "{host}");
    }
    let _ = server.child.kill();
    let mut err = String::new();
    server.child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(err.contains("warning: listening on 0.0.0.0:") && err.contains("no login"), "{err}");
    let o = bin().args(["serve", "--latency", "/nonexistent/latency.toml"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--latency /nonexistent/latency.toml"));
}

#[test]
fn the_answer_stays_small_however_many_strategies_are_compared() {
    let server = Server::start(&[]);
    let list = |n: u32| {
        let names: Vec<String> =
            (1..=n).map(|ms| format!("%22wait_first(max_wait={ms}ms)%22")).collect();
        format!("/api/run?replications=1&strategies=%5B{}%5D", names.join(","))
    };
    let r = server.get(&list(32));
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.len() < 2 << 20, "32 strategies: {} bytes", r.body.len());
    let r = server.get(&list(33));
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("33 are listed; the page compares at most 32"), "{}", r.body);
}
