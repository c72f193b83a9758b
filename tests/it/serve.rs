//! `prefixsim serve`: the endpoints over plain HTTP (status codes, messages, the budget, the
//! export that `prefixsim run` reproduces, a streamed sweep and its cancellation), and the page
//! in headless Chromium driven through chromedriver (WebDriver over HTTP).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::common::{bin, scratch};
use super::plot::{chromium, decode_png, ink};

/// A fork fan-out small enough to run in milliseconds: 4 agents, 20 replications, two
/// strategies, the second with the hold cap, whose answer the report asks for.
const FIXTURE: &str = r#"name = "serve-fixture"
question = "4 forks off a 20k-token prefix: a small fork fan-out for the serve tests"
model = "claude-sonnet-4.5"
seed = 7
replications = 20
strategies = ["eager", "wait_first(max_wait=2s)"]

[workload]
kind = "fork"
agents = 4
parent_tokens = 20000
turns = "uniform(2, 6)"

[latency]
preset = "calibrated"

[report]
answer = "hold_cap"
"#;

/// The fixture's question as the page words it at a shared prefix of `prefix` (`80k`), as a
/// `--set` assignment: the page's question follows the prefix, the file's does not.
fn question_at(prefix: &str) -> String {
    question_of(4, prefix)
}

/// The fixture's question as the page words it with `agents` forks and a shared prefix of
/// `prefix`, as a `--set` assignment.
fn question_of(agents: u32, prefix: &str) -> String {
    let q = format!("{agents} forks off a {prefix}-token prefix");
    format!("question=\"{q}: a small fork fan-out for the serve tests\"")
}

fn fixture(name: &str) -> PathBuf {
    let dir = scratch("serve", name);
    let file = dir.join("fixture.toml");
    std::fs::write(&file, FIXTURE).unwrap();
    file
}

/// A running `prefixsim serve`, stopped when dropped.
pub(super) struct Server {
    pub(super) child: Child,
    pub(super) addr: String,
}

impl Server {
    pub(super) fn start(args: &[&str]) -> Server {
        let mut cmd = bin();
        cmd.arg("serve").args(args).args(["--port", "0"]);
        Server::spawn(cmd)
    }

    /// `cmd`, a `prefixsim serve` that prints its address on its first line.
    pub(super) fn spawn(mut cmd: Command) -> Server {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start prefixsim serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        Server { child, addr }
    }

    pub(super) fn get(&self, path: &str) -> Reply {
        http(&self.addr, "GET", path, None)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP response: status, raw headers, body.
pub(super) struct Reply {
    pub(super) status: u16,
    pub(super) headers: String,
    pub(super) body: String,
}

impl Reply {
    pub(super) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

/// One HTTP/1.1 request on a fresh connection (`Connection: close`).
pub(super) fn http(addr: &str, method: &str, path: &str, body: Option<&str>) -> Reply {
    let body = body.unwrap_or("");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    raw_http(addr, &head, body)
}

/// A request of `head` (request line and headers, ending in a blank line) and `body` on a
/// fresh connection to `addr`, and its response.
pub(super) fn raw_http(addr: &str, head: &str, body: &str) -> Reply {
    let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    // chromedriver keeps the connection open: read the body's length when it is given.
    let mut r = BufReader::new(s);
    let mut headers = String::new();
    while !headers.ends_with("\r\n\r\n") {
        assert!(r.read_line(&mut headers).unwrap() > 0, "the connection closed: {headers}");
    }
    let status = headers.split(' ').nth(1).and_then(|c| c.parse().ok()).expect("a status");
    let lower = headers.to_ascii_lowercase();
    let length = lower
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|n| n.trim().parse::<usize>().unwrap());
    let mut raw = Vec::new();
    match length {
        Some(n) => {
            raw.resize(n, 0);
            r.read_exact(&mut raw).unwrap();
        }
        None => {
            r.read_to_end(&mut raw).unwrap();
        }
    }
    let rest = String::from_utf8(raw).expect("UTF-8 response");
    let chunked = lower.contains("transfer-encoding: chunked");
    let body = if chunked { dechunk(&rest) } else { rest };
    Reply { status, headers, body }
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&tail[..n]);
        rest = &tail[n + 2..];
    }
    out
}

/// `prefixsim run FILE --set ... --json`, its stdout.
fn run_json(file: &Path, sets: &[&str]) -> String {
    let mut cmd = bin();
    cmd.arg("run").arg(file).arg("--json");
    for s in sets {
        cmd.args(["--set", s]);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// One answer: `tune --param max_wait` over the hold grid, `run --out`'s hold.json, the
/// report made from it and the page's `/api/hold` give the same cap and interval for the
/// default experiment.
#[test]
fn tune_run_report_and_the_page_give_one_hold_cap() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let file = root.join("experiments/default.toml");
    let dir = scratch("serve", "one-answer");
    let range = prefixsim::sweep::hold::HOLD_RANGE;
    let args = ["--param", "max_wait", "--range", range, "--json"];
    let tune = bin().arg("tune").arg(&file).args(args).output().unwrap();
    assert!(tune.status.success(), "{}", String::from_utf8_lossy(&tune.stderr));
    let tune: Value = serde_json::from_slice(&tune.stdout).unwrap();
    let run = bin().arg("run").arg(&file).arg("--out").arg(&dir).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let held: Value =
        serde_json::from_slice(&std::fs::read(dir.join("hold.json")).unwrap()).unwrap();
    let server = Server::start(&[file.to_str().unwrap()]);
    let page = server.get("/api/hold");
    assert_eq!(page.status, 200, "{}", page.body);
    let page = page.json();
    assert_eq!(tune["hold"], held, "tune and run");
    assert_eq!(page["hold"], held, "the page and run");
    assert!(held["draws"].as_u64().unwrap() > 0, "the default runs at the calibrated preset");
    let [lo, hi] = [0, 1].map(|i| held["cap_range_s"][i].as_f64().unwrap());
    assert!(lo <= hi && held["cap_s"].as_f64().unwrap() > 0.0);
    let printed = String::from_utf8_lossy(&run.stdout).to_string();
    let sentence = held["sentence"].as_str().unwrap();
    assert!(printed.contains(&sentence[1..]), "run prints the answer: {printed}");
    let report = bin().arg("report").arg(&dir).arg("--out").arg(dir.join("R.md")).output().unwrap();
    assert!(report.status.success(), "{}", String::from_utf8_lossy(&report.stderr));
    let md = std::fs::read_to_string(dir.join("R.md")).unwrap();
    assert!(md.contains(&sentence[1..]), "the report leads with the same answer");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let label = held["cap_label"].as_str().unwrap();
    assert!(readme.contains(&format!("`max_wait = {label}`")), "README's tuning section: {label}");
}

#[test]
fn the_page_names_a_latency_fitted_on_another_model() {
    // The page sets one key at a time, so the model and its policy come from the file.
    let file = scratch("serve", "borrowed").join("gpt.toml");
    let text = "model = \"gpt-5.4\"\nstrategies = [\"eager\", \"wait_first(max_wait=5s)\"]\n\
                replications = 2\n[cache]\npolicy = \"openai\"\n[workload]\nagents = 3\n\
                [report]\nanswer = \"hold_cap\"\n";
    std::fs::write(&file, text).unwrap();
    let server = Server::start(&[file.to_str().unwrap()]);
    let b = "claude-sonnet-4.5's calibrated fit (no measurements of gpt-5.4)";
    let run = server.get("/api/run");
    assert_eq!(run.status, 200, "{}", run.body);
    assert_eq!(run.json()["summary"]["latency_borrowed"], b);
    let hold = server.get("/api/hold");
    assert_eq!(hold.status, 200, "{}", hold.body);
    let hold = hold.json();
    assert_eq!(hold["hold"]["latency_borrowed"], b);
    assert!(hold["hold"]["sentence"].as_str().unwrap().contains(b), "{hold}");
}

#[test]
fn a_run_answers_what_prefixsim_run_answers_and_its_export_reproduces_it() {
    let file = fixture("run");
    let server = Server::start(&[file.to_str().unwrap()]);
    let r = server.get("/api/run?workload.parent_tokens=80000&cache.ttl=1h");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.headers.contains("application/json"));
    let page = r.json();
    let q = question_at("80k");
    let cli = run_json(&file, &["workload.parent_tokens=80000", "cache.ttl=1h", &q]);
    let cli: Value = serde_json::from_str(&cli).unwrap();
    assert_eq!(page["summary"], cli, "the page's numbers are `prefixsim run`'s");
    let names: Vec<&str> =
        page["figures"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "cost_by_strategy",
            "launch_wait_percentiles",
            "completion_percentiles",
            "timeline_eager",
            "covered_prefix"
        ]
    );
    assert!(page["figures"][0]["svg"].as_str().unwrap().starts_with("<svg"));
    // The export, run by `prefixsim run`, prints the same bytes as the settings on the file.
    let export = server.get("/api/export?workload.parent_tokens=80000&cache.ttl=1h");
    assert_eq!(export.status, 200);
    assert!(export.headers.contains("attachment; filename=\"experiment.toml\""));
    assert_eq!(export.body, page["toml"].as_str().unwrap());
    let exported = file.with_file_name("exported.toml");
    std::fs::write(&exported, &export.body).unwrap();
    assert_eq!(
        run_json(&exported, &[]),
        run_json(&file, &["workload.parent_tokens=80000", "cache.ttl=1h", &q]),
        "the exported file reproduces the run byte for byte"
    );
    // The timeline of another strategy, on request.
    let r = server.get("/api/run?timeline=wait_first(max_wait%3D2s)").json();
    assert_eq!(r["figures"][3]["name"], "timeline_wait_first_max_wait_2s_");
}

#[test]
fn bad_settings_are_refused_with_a_message_and_the_status_that_fits() {
    let server = Server::start(&[fixture("bad").to_str().unwrap()]);
    let cases = [
        ("/api/run?workload.agents=many", 400, "`workload.agents` = \"many\""),
        ("/api/run?cache.ttl=7m", 400, "cache.ttl"),
        ("/api/run?latency.from=/etc/passwd", 400, "`latency.from` cannot be set from the page"),
        ("/api/run?workload.agentz=3", 400, "unknown setting `workload.agentz`"),
        ("/api/run?latency_file=0", 400, "the server has 0 calibration files"),
        ("/api/run?timeline=prewarm", 400, "timeline = `prewarm`"),
        ("/api/run?strategies=%5B%22hover%22%5D", 400, "hover"),
        ("/api/run?workload.agents=", 400, "the value is empty"),
        ("/api/sweep?sweep_key=latency.from&sweep_values=a,b", 400, "sweep_key = `latency.from`"),
        ("/api/sweep?sweep_key=workload.agents", 400, "give 1 to 32 values"),
        ("/api/nothing", 404, "no such page"),
    ];
    for (path, status, says) in cases {
        let r = server.get(path);
        assert_eq!(r.status, status, "{path}: {}", r.body);
        assert!(r.body.contains(says), "{path}: {}", r.body);
        assert!(r.headers.contains("text/plain"), "{path}: a message, not a page");
    }
    let long = format!("/api/run?seed={}", "1".repeat(9000));
    assert_eq!(server.get(&long).status, 414, "the query string is size-limited");
    assert_eq!(http(&server.addr, "POST", "/api/run", Some("{}")).status, 405);
}

#[test]
fn work_above_the_budget_is_refused_before_it_starts() {
    let file = fixture("budget");
    let server = Server::start(&[file.to_str().unwrap(), "--budget", "50000"]);
    // 4 agents x 4 turns x 20 replications x 2 strategies: about 660 requests.
    assert_eq!(server.get("/api/run").status, 200);
    let r = server.get("/api/run?workload.agents=2000&replications=1000");
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(
        r.body.contains("2000 agents x 4.0 turns x 1000 replications x 2 strategies"),
        "{}",
        r.body
    );
    assert!(r.body.contains("the server's budget is 50000"), "{}", r.body);
    let r = server.get("/api/sweep?sweep_key=replications&sweep_values=1000,2000,3000");
    assert_eq!(r.status, 422, "a sweep counts all its points: {}", r.body);
    let stats = server.get("/api/stats").json();
    assert_eq!(stats["refused"], 2);
    assert_eq!(stats["runs"], 1);
}

#[test]
fn a_sweep_streams_its_points_and_stops_when_the_page_goes_away() {
    let file = fixture("sweep");
    let server = Server::start(&[file.to_str().unwrap()]);
    let r = server.get(
        "/api/sweep?sweep_key=workload.agents&sweep_values=1,2,4&sweep_metric=launch_wait_p99_s",
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.headers.contains("text/event-stream"));
    let events: Vec<(&str, &str)> = r
        .body
        .split("\n\n")
        .filter_map(|block| {
            let event = block.lines().find_map(|l| l.strip_prefix("event: "))?;
            let data = block.lines().find_map(|l| l.strip_prefix("data: "))?;
            Some((event, data))
        })
        .collect();
    let kinds: Vec<&str> = events.iter().map(|e| e.0).collect();
    assert_eq!(kinds, ["point", "point", "point", "done"]);
    // Each point is `prefixsim run` at that value.
    let p: Value = serde_json::from_str(events[1].1).unwrap();
    assert_eq!(p["value"], "2");
    let cli: Value = serde_json::from_str(&run_json(&file, &["workload.agents=2"])).unwrap();
    assert_eq!(p["results"][1]["value"], cli["results"][1]["launch_wait_pooled_s"]["p99"]);
    assert!(p["svg"].as_str().unwrap().contains("(2 of 3 points)"));
    // A page that drops the stream after the first point stops the sweep.
    let mut s = TcpStream::connect(&server.addr).unwrap();
    let values: Vec<String> = (1..=32).map(|i| (i * 100).to_string()).collect();
    let path = format!("/api/sweep?sweep_key=replications&sweep_values={}", values.join(","));
    write!(s, "GET {path} HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr).unwrap();
    let mut first = BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    while !line.starts_with("event: point") {
        line.clear();
        first.read_line(&mut line).unwrap();
    }
    drop(first);
    s.shutdown(std::net::Shutdown::Both).unwrap();
    let start = Instant::now(); // a test's timeout, not a measurement
    loop {
        let stats = server.get("/api/stats").json();
        if stats["sweeps_cancelled"] == 1 {
            assert!(stats["sweep_points"].as_u64().unwrap() < 3 + 32, "{stats}");
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "the sweep never stopped: {stats}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn concurrent_users_each_get_their_own_answer() {
    let file = fixture("concurrent");
    let server = Server::start(&[file.to_str().unwrap()]);
    let addr = server.addr.clone();
    let asks: Vec<(String, String)> =
        (1..=4).map(|a| (format!("workload.agents={a}"), question_of(a, "20k"))).collect();
    let handles: Vec<_> = asks
        .iter()
        .map(|(q, _)| {
            let (addr, q) = (addr.clone(), q.clone());
            std::thread::spawn(move || http(&addr, "GET", &format!("/api/run?{q}"), None).json())
        })
        .collect();
    for ((q, question), h) in asks.iter().zip(handles) {
        let page = h.join().unwrap();
        // The page's question counts the agents it was asked for.
        let cli: Value = serde_json::from_str(&run_json(&file, &[q, question])).unwrap();
        assert_eq!(page["summary"], cli, "{q}");
    }
}

// ---------------------------------------------------------------- the page in a browser

/// Debian's chromedriver, or $PREFIXSIM_CHROMEDRIVER.
fn chromedriver() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PREFIXSIM_CHROMEDRIVER") {
        return Some(PathBuf::from(p)).filter(|p| p.exists());
    }
    Some(PathBuf::from("/usr/bin/chromedriver")).filter(|p| p.exists())
}

/// A chromedriver process and one browser session in it, both ended when dropped.
pub(super) struct Browser {
    driver: Child,
    addr: String,
    session: String,
}

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

impl Browser {
    fn start(chromium: &Path, driver: &Path, profile: &Path) -> Browser {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let driver = Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let addr = format!("127.0.0.1:{port}");
        let start = Instant::now(); // a test's timeout
        while TcpStream::connect(&addr).is_err() {
            assert!(start.elapsed() < Duration::from_secs(30), "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        let caps = serde_json::json!({"capabilities": {"alwaysMatch": {"goog:chromeOptions": {
            "binary": chromium,
            "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1400,2200", "--hide-scrollbars",
                     format!("--user-data-dir={}", profile.display())],
        }}}});
        let mut b = Browser { driver, addr, session: String::new() };
        let r = b.call("POST", "/session", Some(caps));
        b.session =
            r["sessionId"].as_str().unwrap_or_else(|| panic!("no session: {r}")).to_string();
        b
    }

    /// A WebDriver command (a GET has no body); its `value`.
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let text = body.filter(|_| method != "GET").map(|b| b.to_string());
        let r = http(&self.addr, method, path, text.as_deref());
        let v = r.json();
        assert_eq!(r.status, 200, "{method} {path}: {v}");
        v["value"].clone()
    }

    fn session(&self, method: &str, path: &str, body: Value) -> Value {
        self.call(method, &format!("/session/{}{path}", self.session), Some(body))
    }

    pub(super) fn script(&self, js: &str) -> Value {
        self.session("POST", "/execute/sync", serde_json::json!({"script": js, "args": []}))
    }

    /// Poll `js` until it returns true.
    pub(super) fn wait_for(&self, js: &str, what: &str) {
        let start = Instant::now(); // a test's timeout
        while self.script(js) != Value::Bool(true) {
            let status = self.script("return document.getElementById('status').textContent");
            assert!(start.elapsed() < Duration::from_secs(60), "{what}: page says {status}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn element(&self, css: &str) -> String {
        let v = self.session(
            "POST",
            "/element",
            serde_json::json!({"using": "css selector", "value": css}),
        );
        v[ELEMENT].as_str().unwrap().to_string()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = http(&self.addr, "DELETE", &format!("/session/{}", self.session), None);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// The table's numbers as the page holds them: strategy, cost, launch-wait p99, makespan.
const TABLE_JS: &str = "return [...document.querySelectorAll('#results tbody tr')].map(tr => {
  const v = k => Number(tr.querySelector(`td[data-key=${k}]`).dataset.value);
  return [tr.dataset.strategy, v('cost_usd'), v('launch_wait_p99_s'), v('makespan_s'), v('hit_rate')];
})";

/// Rows of `[label, numbers...]` as (label, f64s): JavaScript writes 2 where Rust writes 2.0.
fn numbers(rows: &Value) -> Vec<(String, Vec<f64>)> {
    let rows = rows.as_array().unwrap_or_else(|| panic!("rows: {rows}"));
    rows.iter()
        .map(|r| {
            let r = r.as_array().unwrap();
            let label = r[0].as_str().unwrap().to_string();
            (label, r[1..].iter().map(|x| x.as_f64().unwrap()).collect())
        })
        .collect()
}

#[test]
fn the_page_updates_in_headless_chromium_to_what_prefixsim_run_prints() {
    let (Some(browser), Some(driver)) = (chromium(), chromedriver()) else {
        // Straight to the process's stderr (the harness captures `eprintln!`).
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED the_page_updates_in_headless_chromium_to_what_prefixsim_run_prints: no \
             chromium and chromedriver (apt-get install -y chromium chromium-driver, or set \
             PREFIXSIM_CHROMIUM and PREFIXSIM_CHROMEDRIVER)"
        );
        return;
    };
    let file = fixture("browser");
    let dir = file.parent().unwrap().to_path_buf();
    let server = Server::start(&[file.to_str().unwrap()]);
    let b = Browser::start(&browser, &driver, &dir.join("profile"));
    b.session("POST", "/url", serde_json::json!({"url": format!("http://{}/", server.addr)}));
    b.wait_for("return document.getElementById('status').dataset.state === 'ready'", "first run");
    let label = b.script("return document.getElementById('prefix').closest('label').textContent");
    assert!(label.as_str().unwrap().contains("Shared prefix"), "the control names it: {label}");
    let before = b.script(FIGURE_AND_EXPORT_JS);
    let prefix = b.element("#prefix");
    b.session("POST", &format!("/element/{prefix}/clear"), serde_json::json!({}));
    b.session("POST", &format!("/element/{prefix}/value"), serde_json::json!({"text": "80000"}));
    b.wait_for(
        "return document.getElementById('status').dataset.state === 'ready' && \
         document.getElementById('results').dataset.query === 'prefix_tokens=80000'",
        "the table after changing the prefix",
    );
    let shown = numbers(&b.script(TABLE_JS));
    let q = question_at("80k");
    let cli: Value =
        serde_json::from_str(&run_json(&file, &["workload.parent_tokens=80000", &q])).unwrap();
    let expected: Vec<Value> = cli["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            serde_json::json!([
                r["strategy"],
                r["cost_usd"],
                r["launch_wait_pooled_s"]["p99"],
                r["makespan_s"],
                r["hit_rate"]
            ])
        })
        .collect();
    assert_eq!(shown, numbers(&Value::Array(expected)), "the page's table is `prefixsim run`'s");
    // The cost figure is redrawn, and the question and the export say the new prefix.
    let after = b.script(FIGURE_AND_EXPORT_JS);
    assert_ne!(after[0], before[0], "the cost figure follows the prefix");
    let question = b.script("return document.getElementById('question').textContent");
    assert!(question.as_str().unwrap().starts_with("4 forks off a 80k-token prefix"), "{question}");
    let [was, now] = [&before[1], &after[1]].map(|t| t.as_str().unwrap().to_string());
    assert!(was.contains("parent_tokens = 20000") && was.contains("a 20k-token prefix"), "{was}");
    assert!(now.contains("parent_tokens = 80000") && now.contains("a 80k-token prefix"), "{now}");
    assert_eq!(after[2], after[1], "the export link downloads the file the page shows");
    // The hold answer the page shows is `tune --param max_wait`'s for the same settings.
    b.wait_for("return document.getElementById('hold').dataset.cap !== ''", "the hold answer");
    let cap = b.script("return document.getElementById('hold').dataset.cap");
    let args = ["--param", "max_wait", "--json", "--set", "workload.parent_tokens=80000"];
    let tune = bin().arg("tune").arg(&file).args(args).output().unwrap();
    assert!(tune.status.success(), "{}", String::from_utf8_lossy(&tune.stderr));
    let tune: Value = serde_json::from_slice(&tune.stdout).unwrap();
    let tuned = tune["hold"]["cap_s"].as_f64().unwrap();
    assert_eq!(cap.as_str().unwrap().parse::<f64>().unwrap(), tuned, "the page's cap is tune's");
    let text = b.script("return document.getElementById('hold').textContent");
    assert!(text.as_str().unwrap().starts_with("The cap to use: max_wait = "), "{text}");
    // The URL now holds the settings: loading it again shows the same control value.
    let url = b.session("GET", "/url", Value::Null);
    assert!(url.as_str().unwrap().ends_with("/?prefix_tokens=80000"), "{url}");
    let figures = b.script("return document.querySelectorAll('#figures svg').length");
    assert_eq!(figures, 5, "cost, two percentile figures, a timeline, the covered prefix");
    let shot = b.session("GET", "/screenshot", Value::Null);
    use base64::Engine;
    let png = base64::engine::general_purpose::STANDARD.decode(shot.as_str().unwrap()).unwrap();
    std::fs::write(dir.join("page.png"), &png).unwrap();
    let (w, h, rgb, channels) = decode_png(&png);
    let (share, colours) = ink(&rgb, channels);
    println!("serve page screenshot {w}x{h}: {:.1}% ink, {colours} colours", share * 100.0);
    assert!(share > 0.03 && colours > 20, "the page looks blank: {share} ink, {colours} colours");
    sweeps_draw_as_they_stream_and_stop_when_a_control_changes(&b, &server);
    // A shared link sets the controls.
    let url = format!("http://{}/?workload.agents=2&cache.ttl=1h", server.addr);
    b.session("POST", "/url", serde_json::json!({ "url": url }));
    b.wait_for(
        "return document.getElementById('status').dataset.state === 'ready' && \
         document.getElementById('results').dataset.query === 'workload.agents=2&cache.ttl=1h'",
        "the shared link's run",
    );
    let controls = b.script(
        "return [document.getElementById('agents').value, document.getElementById('ttl').value]",
    );
    assert_eq!(controls, serde_json::json!(["2", "1h"]));
    super::page_keys::every_key_has_a_control_and_a_refusal_shows_beside_it(&b);
}

/// The cost figure's SVG, the export the page shows, and the file its export link downloads.
const FIGURE_AND_EXPORT_JS: &str = "
  const svg = document.querySelector('#figures figure[data-name=cost_by_strategy] svg').outerHTML;
  const xhr = new XMLHttpRequest();
  xhr.open('GET', document.getElementById('export').href, false);
  xhr.send();
  return [svg, document.getElementById('toml').textContent, xhr.responseText];";

fn sweeps_draw_as_they_stream_and_stop_when_a_control_changes(b: &Browser, server: &Server) {
    let sweep = |key: &str, values: &str| {
        b.script(&format!(
            "document.getElementById('sweep-key').value = '{key}';
             document.getElementById('sweep-values').value = '{values}';
             document.getElementById('sweep-start').click(); return true"
        ))
    };
    sweep("workload.parent_tokens", "5000, 20000, 80000");
    b.wait_for(
        "return document.getElementById('sweep-status').dataset.state === 'done' && \
         document.querySelectorAll('#sweep-table tbody tr').length === 3",
        "the sweep's three points",
    );
    let svg = b.script("return document.getElementById('sweep-figure').innerHTML");
    assert!(svg.as_str().unwrap().contains("(3 of 3 points)"));
    // A long sweep; a control changes after its first point: the server stops it.
    let values: Vec<String> = (1..=32).map(|i| (i * 200).to_string()).collect();
    sweep("replications", &values.join(","));
    b.wait_for("return document.querySelectorAll('#sweep-table tbody tr').length >= 1", "a point");
    let agents = b.element("#agents");
    b.session("POST", &format!("/element/{agents}/clear"), serde_json::json!({}));
    b.session("POST", &format!("/element/{agents}/value"), serde_json::json!({"text": "3"}));
    let start = Instant::now(); // a test's timeout
    while server.get("/api/stats").json()["sweeps_cancelled"] == 0 {
        assert!(start.elapsed() < Duration::from_secs(60), "the sweep went on");
        std::thread::sleep(Duration::from_millis(50));
    }
    b.script("document.getElementById('sweep-stop').click(); return true");
}
