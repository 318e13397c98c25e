//! `swarm serve` over HTTP: the access token and the sessions it opens, the attacks a page
//! on the open web can try (each refused with its status, and nothing changed), decisions
//! from two pages at once, messages, the event stream, TLS, and webhook notifications.
//! The browser's side is in `web_browser`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use swarm_store::approvals::{self, State};
use swarm_store::protocol::{PlanApprovalRequest, Protocol};
use swarm_util::names::{AgentName, TeamName};

use crate::harness::{Guarded, TestEnv, wait_until};

const T: Duration = Duration::from_secs(30);

/// A running `swarm serve`, stopped when dropped.
pub struct Serve {
    pub _child: Guarded,
    /// `http://127.0.0.1:PORT/`
    pub base: String,
    pub addr: String,
    pub token: String,
    pub stderr: PathBuf,
}

impl Serve {
    /// `swarm serve --listen 127.0.0.1:0 ARGS`, once it printed its address.
    pub fn start(env: &TestEnv, args: &[&str]) -> Serve {
        let stderr = env
            .dir
            .path()
            .join(format!("serve-{}.err", fastrand::u32(..)));
        let mut cmd = env.swarm(&["serve", "--listen", "127.0.0.1:0"]);
        cmd.args(args)
            .env("SWARM_LOG", "swarm=debug")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap());
        let mut child = cmd.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let child = Guarded(Some(child));
        let line = rx.recv_timeout(T).unwrap_or_default();
        let line = line.trim();
        assert!(
            line.starts_with("http"),
            "swarm serve printed {line:?}; stderr:\n{}",
            std::fs::read_to_string(&stderr).unwrap_or_default()
        );
        let (base, token) = match line.split_once("?token=") {
            Some((base, token)) => (base.to_owned(), token.to_owned()),
            None => (line.to_owned(), String::new()),
        };
        let addr = base
            .trim_start_matches("http://")
            .trim_start_matches("https://")
            .trim_end_matches('/')
            .to_owned();
        Serve {
            _child: child,
            base,
            addr,
            token,
            stderr,
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// A request as a client sends it; the answer, read to the end.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Answer {
        raw(&self.addr, method, path, headers, body)
    }

    /// A new session: its key, which the page sends in `x-swarm-session`.
    pub fn login(&self) -> String {
        let r = self.request("GET", &format!("/?token={}", self.token), &[], b"");
        assert_eq!(r.status, 303, "{r:?}");
        assert!(
            r.header("set-cookie").is_none(),
            "a session in a cookie: {r:?}"
        );
        let key = r.header("location").unwrap();
        let key = key.strip_prefix("/#session=").unwrap().to_owned();
        let session = self.request("GET", "/api/session", &[("x-swarm-session", &key)], b"");
        assert_eq!(session.status, 200, "{session:?}");
        key
    }

    /// Headers of an action from this server's own page, in the session with `key`.
    pub fn page_headers(&self, key: &str) -> Vec<(&'static str, String)> {
        vec![
            ("x-swarm-session", key.to_owned()),
            ("origin", format!("http://{}", self.addr)),
            ("content-type", "application/json".to_owned()),
        ]
    }

    pub fn post_json(&self, path: &str, headers: &[(&str, String)], body: &Value) -> Answer {
        let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        self.request("POST", path, &h, body.to_string().as_bytes())
    }
}

#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {self:?}"))
    }

    /// The error code of an error answer, which has one shape everywhere.
    pub fn error_code(&self) -> String {
        let v = self.json();
        assert_eq!(v["error"]["status"], self.status, "{self:?}");
        assert!(
            v["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{self:?}"
        );
        v["error"]["code"].as_str().unwrap().to_owned()
    }
}

/// One HTTP/1.1 request on its own connection, the path sent exactly as given.
pub fn raw(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Answer {
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(T)).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        req.push_str(&format!("content-length: {}\r\n", body.len()));
    }
    req.push_str("\r\n");
    tcp.write_all(req.as_bytes()).unwrap();
    tcp.write_all(body).unwrap();
    let mut out = Vec::new();
    let _ = tcp.read_to_end(&mut out);
    parse_answer(&String::from_utf8_lossy(&out))
}

fn parse_answer(text: &str) -> Answer {
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Answer {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// A team `t` with bob, whose plan waits for approval (recorded as bob's teammate process
/// records it); the request's id.
pub fn team_with_a_plan(env: &TestEnv) -> String {
    let teams = env.teams();
    let team = TeamName::new("t").unwrap();
    env.run(&["team", "create", "t"]).success();
    env.run(&["--team", "t", "team", "add", "bob"]).success();
    env.run(&["--team", "t", "team", "add", "carol"]).success();
    let id = "plan_approval-1700000000000@bob@t".to_owned();
    let req = PlanApprovalRequest {
        from: "bob".into(),
        timestamp: swarm_util::clock::now_iso(),
        plan_file_path: "/plans/bob.md".into(),
        plan_content: "1. write bob.txt\n2. tell the lead".into(),
        request_id: id.clone(),
    };
    let store = teams.open(&team).unwrap();
    store
        .approvals()
        .record(&approvals::from_plan(&req, None))
        .unwrap();
    store
        .mail()
        .send(
            "team-lead",
            swarm_store::mailbox::Envelope::new(
                "bob",
                Protocol::PlanApprovalRequest(req).to_text(),
            ),
        )
        .unwrap();
    id
}

fn approval(env: &TestEnv, id: &str) -> approvals::Approval {
    env.teams()
        .open(&TeamName::new("t").unwrap())
        .unwrap()
        .approvals()
        .get(id)
        .unwrap()
}

/// Every message `agent` was sent, read or not.
pub fn mail_of(env: &TestEnv, agent: &str) -> Vec<swarm_store::mailbox::Envelope> {
    let store = env.teams().open(&TeamName::new("t").unwrap()).unwrap();
    let agent = AgentName::new(agent).unwrap();
    let mut all: Vec<_> = store
        .mail()
        .read_all(&agent)
        .unwrap()
        .into_iter()
        .map(|d| d.envelope)
        .collect();
    all.extend(store.mail().read_delivered(&agent).unwrap());
    all
}

#[test]
fn nothing_is_served_without_the_token_and_the_token_opens_a_session() {
    let env = TestEnv::new();
    team_with_a_plan(&env);
    let serve = Serve::start(&env, &[]);
    assert_eq!(
        serve.token.len(),
        64,
        "a fresh token is printed with the address"
    );
    // No token: nothing of the team. The page and its script are no secret: they come,
    // and the page says how to get in.
    for path in [
        "/api/teams",
        "/api/teams/t",
        "/api/teams/t/events",
        "/nowhere",
    ] {
        let r = serve.request("GET", path, &[], b"");
        assert_eq!(r.status, 401, "{path}: {r:?}");
        assert!(
            !r.body.contains("bob"),
            "{path} showed the team: {}",
            r.body
        );
    }
    for path in ["/", "/assets/app.js"] {
        let r = serve.request("GET", path, &[], b"");
        assert_eq!(r.status, 200, "{path}: {r:?}");
        assert!(
            !r.body.contains("bob"),
            "{path} showed the team: {}",
            r.body
        );
    }
    // A wrong token, as a query, a bearer or a forged session key.
    let wrong = "0".repeat(64);
    let r = serve.request("GET", &format!("/?token={wrong}"), &[], b"");
    assert_eq!(r.status, 401, "{r:?}");
    assert!(r.body.contains("needs the access token"), "{r:?}");
    assert!(r.header("location").is_none());
    let bearer = format!("Bearer {wrong}");
    let r = serve.request("GET", "/api/teams", &[("authorization", &bearer)], b"");
    assert_eq!((r.status, r.error_code().as_str()), (401, "unauthorized"));
    let r = serve.request("GET", "/api/teams", &[("x-swarm-session", &wrong)], b"");
    assert_eq!(r.status, 401, "{r:?}");
    // The token in a query anywhere but the page's address is not taken either.
    let r = serve.request(
        "GET",
        &format!("/api/teams?token={}", serve.token),
        &[],
        b"",
    );
    assert_eq!(r.status, 401, "{r:?}");
    // The right token: to the page, with a session key in the fragment (which a browser
    // sends nowhere), and no cookie (which a browser sends to every port of the host).
    let r = serve.request("GET", &format!("/?token={}", serve.token), &[], b"");
    assert_eq!(r.status, 303, "{r:?}");
    assert!(r.header("set-cookie").is_none(), "{r:?}");
    let key = r.header("location").unwrap();
    let key = key.strip_prefix("/#session=").unwrap();
    assert_eq!(key.len(), 64, "{key}");
    assert!(!key.contains(&serve.token), "the key is not the token");
    let r = serve.request("GET", "/", &[], b"");
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.body.contains("/assets/app.js"));
    let csp = r.header("content-security-policy").unwrap();
    assert!(
        csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    let session = [("x-swarm-session", key)];
    let r = serve.request("GET", "/api/teams/t/members", &session, b"");
    let members = r.json()["members"].clone();
    let names: Vec<&str> = members
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["team-lead", "bob", "carol"]);
    // The key is no cookie: sent as one, it opens nothing.
    let as_cookie = format!("swarm_session={key}; x-swarm-session={key}");
    let r = serve.request("GET", "/api/teams", &[("cookie", &as_cookie)], b"");
    assert_eq!(r.status, 401, "{r:?}");
    let teams = serve.request(
        "GET",
        "/api/teams",
        &[("authorization", &format!("Bearer {}", serve.token))],
        b"",
    );
    assert_eq!(teams.json()["teams"][0]["name"], "t", "{teams:?}");
    // No secret in the log, even at debug.
    let log = serve.log();
    assert!(!log.contains(&serve.token), "the token reached the log");
    assert!(!log.contains(key), "a session key reached the log");
}

/// Whether the server closed `tcp` (non-blocking): what it sent before, if it did.
fn closed_by_server(tcp: &mut TcpStream) -> Option<Vec<u8>> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tcp.read(&mut buf) {
            Ok(0) => return Some(got),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return None,
            Err(_) => return Some(got), // reset
        }
    }
}

#[test]
fn idle_connections_make_way_for_a_logged_in_request() {
    let env = TestEnv::new();
    team_with_a_plan(&env);
    // A long client timeout: if idle sockets held their places until it, the request
    // below would not be answered within the test's timeout.
    let serve = Serve::start(&env, &["--client-timeout", "120s"]);
    let session = serve.login();
    let mut idle: Vec<TcpStream> = (0..256)
        .map(|_| TcpStream::connect(&serve.addr).unwrap())
        .collect();
    let r = serve.request(
        "GET",
        "/api/teams/t/members",
        &[("x-swarm-session", &session)],
        b"",
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.json()["members"][1]["name"], "bob", "{r:?}");
    // The server closed the excess at once, unanswered: all but the newest 32 at most.
    for tcp in &idle {
        tcp.set_nonblocking(true).unwrap();
    }
    let mut closed = vec![None; idle.len()];
    assert!(
        wait_until(T, || {
            for (tcp, seen) in idle.iter_mut().zip(closed.iter_mut()) {
                if seen.is_none() {
                    *seen = closed_by_server(tcp);
                }
            }
            closed.iter().filter(|c| c.is_some()).count() >= 256 - 32
        }),
        "only {} of 256 idle connections were closed",
        closed.iter().filter(|c| c.is_some()).count()
    );
    assert!(
        closed.iter().flatten().all(|sent| sent.is_empty()),
        "an evicted connection was answered"
    );
    // A kept-alive connection left idle after its answer is closed well before the
    // client timeout.
    let mut kept = TcpStream::connect(&serve.addr).unwrap();
    kept.set_read_timeout(Some(T)).unwrap();
    let req = format!(
        "GET /api/teams HTTP/1.1\r\nhost: {}\r\nx-swarm-session: {session}\r\n\r\n",
        serve.addr
    );
    kept.write_all(req.as_bytes()).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = kept
            .read(&mut buf)
            .expect("the idle kept-alive connection stayed open");
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert_eq!(text.matches("HTTP/1.1").count(), 1, "{text}");
}

/// What an attack is, the headers and body it sends, and the status it must get.
type Attack<'a> = (&'a str, Vec<(&'a str, String)>, Vec<u8>, u16);

#[test]
fn actions_from_another_site_or_port_or_without_the_session_are_refused_and_change_nothing() {
    let env = TestEnv::new();
    let id = team_with_a_plan(&env);
    let serve = Serve::start(&env, &[]);
    let session = serve.login();
    let path = format!("/api/teams/t/approvals/{id}");
    let before = env.tree();
    let origin = format!("http://{}", serve.addr);
    let approve = br#"{"approve":true}"#;
    let attacks: Vec<Attack> = vec![
        (
            "no token at all",
            vec![
                ("origin", origin.clone()),
                ("content-type", "application/json".into()),
            ],
            approve.to_vec(),
            401,
        ),
        (
            "a wrong token",
            vec![
                ("authorization", format!("Bearer {}", "0".repeat(64))),
                ("content-type", "application/json".into()),
            ],
            approve.to_vec(),
            401,
        ),
        (
            "a cross-site form post carrying the token",
            vec![
                ("content-type", "application/x-www-form-urlencoded".into()),
                ("origin", "http://evil.example".into()),
            ],
            format!("approve=true&token={}", serve.token).into_bytes(),
            401,
        ),
        (
            "a cross-site form post in the session's key as a cookie",
            vec![
                ("cookie", format!("x-swarm-session={session}")),
                ("content-type", "application/x-www-form-urlencoded".into()),
                ("origin", "http://evil.example".into()),
            ],
            format!("approve=true&token={}", serve.token).into_bytes(),
            401,
        ),
        (
            "a forged Origin with the session's key",
            vec![
                ("x-swarm-session", session.clone()),
                ("origin", "http://evil.example".into()),
                ("content-type", "application/json".into()),
            ],
            approve.to_vec(),
            403,
        ),
        (
            "the session from a page on another port",
            vec![
                ("x-swarm-session", session.clone()),
                ("origin", "http://127.0.0.1:1".into()),
                ("content-type", "application/json".into()),
            ],
            approve.to_vec(),
            403,
        ),
        (
            "the session with no Origin or Referer",
            vec![
                ("x-swarm-session", session.clone()),
                ("content-type", "application/json".into()),
            ],
            approve.to_vec(),
            403,
        ),
        (
            "the bearer token from a foreign page",
            vec![
                ("authorization", format!("Bearer {}", serve.token)),
                ("origin", "http://evil.example".into()),
                ("content-type", "application/json".into()),
            ],
            approve.to_vec(),
            403,
        ),
        (
            "a form body from this very page",
            vec![
                ("x-swarm-session", session.clone()),
                ("origin", origin.clone()),
                ("content-type", "application/x-www-form-urlencoded".into()),
            ],
            b"approve=true".to_vec(),
            415,
        ),
    ];
    for (what, headers, body, status) in &attacks {
        let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let r = serve.request("POST", &path, &h, body);
        assert_eq!(r.status, *status, "{what}: {r:?}");
        r.error_code();
    }
    let token_path = format!("{path}?token={}", serve.token);
    let r = serve.request(
        "POST",
        &token_path,
        &[("content-type", "application/json")],
        approve,
    );
    assert_eq!(r.status, 401, "the token in a POST's query: {r:?}");
    // Nothing changed: the request waits, bob got no answer, no file was written.
    assert_eq!(approval(&env, &id).state, State::Pending);
    assert!(mail_of(&env, "bob").is_empty());
    assert_eq!(env.tree(), before);
    // From the page itself, it goes through: by a human, in this web session.
    let r = serve.post_json(
        &path,
        &serve.page_headers(&session),
        &json!({"approve": true, "mode": "acceptEdits"}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let a = approval(&env, &id);
    assert_eq!(
        (a.state, a.resolved_by.as_deref()),
        (State::Approved, Some("human"))
    );
    let via = a.resolved_via.unwrap();
    assert!(via.starts_with("web session web-"), "{via}");
    assert!(
        !via.contains(&session),
        "the record holds the session's secret"
    );
    let answer = mail_of(&env, "bob");
    assert_eq!(answer.len(), 1, "{answer:?}");
    assert!(answer[0].text.contains("acceptEdits"), "{}", answer[0].text);
}

#[test]
fn path_traversal_in_asset_and_api_paths_is_refused() {
    let env = TestEnv::new();
    let id = team_with_a_plan(&env);
    std::fs::write(env.root.join("secret.txt"), "do not serve me").unwrap();
    let serve = Serve::start(&env, &[]);
    let session = serve.login();
    let headers = serve.page_headers(&session);
    let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let before = env.tree();
    for (method, path, status) in [
        ("GET", "/assets/../../../../etc/passwd", 404),
        ("GET", "/assets/..%2f..%2f..%2fetc%2fpasswd", 404),
        ("GET", "/assets/%2e%2e/Cargo.toml", 404),
        ("GET", "/assets/app.js/../../secret.txt", 404),
        ("GET", "/../secret.txt", 404),
        ("GET", "/api/teams/..%2fsecret.txt", 400),
        ("GET", "/api/teams/..%2f..%2fetc/members", 400),
        ("GET", "/api/teams/%2e%2e/events", 400),
        ("POST", "/api/teams/t/approvals/..%2f..%2fconfig.json", 400),
        (
            "POST",
            "/api/teams/t/approvals/..%2fplan_approval-1@bob@t",
            400,
        ),
        ("POST", "/api/teams/t/members/..%2fteam-lead/shutdown", 400),
        ("POST", "/api/teams/..%2ft/messages", 400),
    ] {
        let r = serve.request(
            method,
            path,
            &h,
            br#"{"approve":true,"to":"bob","text":"x"}"#,
        );
        assert_eq!(r.status, status, "{method} {path}: {r:?}");
        assert!(
            !r.body.contains("do not serve me") && !r.body.contains("root:"),
            "{path}: {}",
            r.body
        );
        r.error_code();
    }
    assert_eq!(env.tree(), before, "a request wrote something");
    assert_eq!(approval(&env, &id).state, State::Pending);
    assert!(mail_of(&env, "bob").is_empty());
}

#[test]
fn an_oversized_body_and_slow_clients_are_refused() {
    let env = TestEnv::new();
    team_with_a_plan(&env);
    let serve = Serve::start(&env, &["--client-timeout", "1s"]);
    let session = serve.login();
    let headers = serve.page_headers(&session);
    let before = env.tree();
    // Too big: refused before it is read, and when it lies about its length.
    let big = json!({"to": "bob", "text": "x".repeat(100_000)});
    let r = serve.post_json("/api/teams/t/messages", &headers, &big);
    assert_eq!(
        (r.status, r.error_code().as_str()),
        (413, "payload_too_large")
    );
    let mut tcp = TcpStream::connect(&serve.addr).unwrap();
    tcp.set_read_timeout(Some(T)).unwrap();
    let mut head = format!(
        "POST /api/teams/t/messages HTTP/1.1\r\nhost: {}\r\nconnection: close\r\ntransfer-encoding: chunked\r\n",
        serve.addr
    );
    for (k, v) in &headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    tcp.write_all(head.as_bytes()).unwrap();
    for _ in 0..20 {
        let chunk = "y".repeat(8192);
        if tcp
            .write_all(format!("{:x}\r\n{chunk}\r\n", chunk.len()).as_bytes())
            .is_err()
        {
            break;
        }
    }
    let _ = tcp.write_all(b"0\r\n\r\n");
    let mut out = String::new();
    let _ = tcp.read_to_string(&mut out);
    assert_eq!(parse_answer(&out).status, 413, "{out}");
    // A client that never finishes its request's head gets 408 and is closed.
    let started = Instant::now();
    let mut slow = TcpStream::connect(&serve.addr).unwrap();
    slow.set_read_timeout(Some(T)).unwrap();
    slow.write_all(b"GET /api/teams HTTP/1.1\r\nhost: x\r\n")
        .unwrap();
    let mut out = String::new();
    let _ = slow.read_to_string(&mut out);
    assert_eq!(parse_answer(&out).status, 408, "{out:?}");
    assert!(started.elapsed() < T, "the slow client was held");
    // One that sends its head but trickles its body: 408 too, and nothing is sent.
    let mut slow = TcpStream::connect(&serve.addr).unwrap();
    slow.set_read_timeout(Some(T)).unwrap();
    let mut head = format!(
        "POST /api/teams/t/messages HTTP/1.1\r\nhost: {}\r\nconnection: close\r\ncontent-length: 200\r\n",
        serve.addr
    );
    for (k, v) in &headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n{\"to\": \"bob\", ");
    slow.write_all(head.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = slow.read_to_string(&mut out);
    let r = parse_answer(&out);
    assert_eq!(
        (r.status, r.error_code().as_str()),
        (408, "request_timeout"),
        "{out}"
    );
    // Meanwhile the server serves others, and nothing was delivered.
    let r = serve.request("GET", "/api/teams", &[("x-swarm-session", &session)], b"");
    assert_eq!(r.status, 200);
    assert!(mail_of(&env, "bob").is_empty());
    assert_eq!(env.tree(), before);
}

#[test]
fn two_pages_deciding_at_once_decide_once_and_the_second_is_told() {
    let env = TestEnv::new();
    let id = team_with_a_plan(&env);
    let serve = Arc::new(Serve::start(&env, &[]));
    let sessions = [serve.login(), serve.login()];
    let path = format!("/api/teams/t/approvals/{id}");
    let start = Arc::new(std::sync::Barrier::new(2));
    let answers: Vec<(bool, Answer)> = std::thread::scope(|s| {
        let handles: Vec<_> = sessions
            .iter()
            .enumerate()
            .map(|(i, session)| {
                let (serve, start, path) = (Arc::clone(&serve), Arc::clone(&start), path.clone());
                s.spawn(move || {
                    let approve = i == 0;
                    let body = json!({"approve": approve, "feedback": "split step 2"});
                    start.wait();
                    (
                        approve,
                        serve.post_json(&path, &serve.page_headers(session), &body),
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let won: Vec<&(bool, Answer)> = answers.iter().filter(|(_, a)| a.status == 200).collect();
    let lost: Vec<&(bool, Answer)> = answers.iter().filter(|(_, a)| a.status == 409).collect();
    assert_eq!((won.len(), lost.len()), (1, 1), "{answers:?}");
    let loser = &lost[0].1;
    assert_eq!(loser.error_code(), "conflict");
    let message = loser.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.contains("was already") && message.contains("by human"),
        "{message}"
    );
    let a = approval(&env, &id);
    let expected = if won[0].0 {
        State::Approved
    } else {
        State::Rejected
    };
    assert_eq!(a.state, expected);
    assert_eq!(mail_of(&env, "bob").len(), 1, "bob was answered once");
}

#[test]
fn messages_and_broadcasts_go_through_the_mailboxes_and_errors_have_one_shape() {
    let env = TestEnv::new();
    team_with_a_plan(&env);
    let serve = Serve::start(&env, &[]);
    let session = serve.login();
    let headers = serve.page_headers(&session);
    let r = serve.post_json(
        "/api/teams/t/messages",
        &headers,
        &json!({"to": "bob", "text": "hello bob"}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.json()["sent"][0]["to"], "bob");
    let bob = mail_of(&env, "bob");
    assert_eq!(
        (bob[0].from.as_str(), bob[0].text.as_str()),
        ("team-lead", "hello bob")
    );
    let r = serve.post_json(
        "/api/teams/t/messages",
        &headers,
        &json!({"to": "*", "text": "hello all"}),
    );
    assert_eq!(r.json()["sent"].as_array().unwrap().len(), 2, "{r:?}");
    assert!(mail_of(&env, "carol").iter().any(|e| e.text == "hello all"));
    for (path, body, status, code) in [
        (
            "/api/teams/t/messages",
            json!({"to": "dave", "text": "x"}),
            404,
            "not_found",
        ),
        (
            "/api/teams/nope/messages",
            json!({"to": "bob", "text": "x"}),
            404,
            "not_found",
        ),
        (
            "/api/teams/t/messages",
            json!({"to": "bob"}),
            400,
            "bad_request",
        ),
        (
            "/api/teams/t/messages",
            json!({"to": "bob", "text": "x", "extra": 1}),
            400,
            "bad_request",
        ),
        (
            "/api/teams/t/approvals/plan_approval-9@bob@t",
            json!({"approve": true}),
            404,
            "not_found",
        ),
        (
            "/api/teams/t/approvals/plan_approval-9@bob@t",
            json!({"approve": true, "mode": "yolo"}),
            400,
            "bad_request",
        ),
        (
            "/api/teams/t/members/team-lead/shutdown",
            json!({}),
            400,
            "bad_request",
        ),
        (
            "/api/teams/t/members/dave/shutdown",
            json!({}),
            404,
            "not_found",
        ),
        (
            "/api/teams/t/merge-queue/retry",
            json!({"branch": "swarm/t/bob"}),
            400,
            "bad_request",
        ),
    ] {
        let r = serve.post_json(path, &headers, &body);
        assert_eq!(
            (r.status, r.error_code().as_str()),
            (status, code),
            "{path} {body}: {r:?}"
        );
    }
}

/// Reads server-sent events from `serve`'s stream of team `t` until `until` says stop.
fn read_events(serve: &Serve, session: &str, mut until: impl FnMut(&str, &Value) -> bool) {
    let mut tcp = TcpStream::connect(&serve.addr).unwrap();
    tcp.set_read_timeout(Some(T)).unwrap();
    let req = format!(
        "GET /api/teams/t/events HTTP/1.1\r\nhost: {}\r\nx-swarm-session: {session}\r\naccept: text/event-stream\r\n\r\n",
        serve.addr
    );
    tcp.write_all(req.as_bytes()).unwrap();
    let mut reader = BufReader::new(tcp);
    let (mut event, mut data) = (String::new(), String::new());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0, "the stream ended");
        let l = line.trim_end_matches(['\r', '\n']);
        if let Some(e) = l
            .strip_prefix("event: ")
            .or_else(|| l.strip_prefix("event:"))
        {
            event = e.trim().to_owned();
        } else if let Some(d) = l.strip_prefix("data: ").or_else(|| l.strip_prefix("data:")) {
            data.push_str(d);
        } else if l.is_empty() && !event.is_empty() {
            if let Ok(v) = serde_json::from_str::<Value>(&data)
                && until(&event, &v)
            {
                return;
            }
            event.clear();
            data.clear();
        }
    }
}

#[test]
fn the_event_stream_sends_every_part_then_each_change() {
    let env = TestEnv::new();
    team_with_a_plan(&env);
    let serve = Serve::start(&env, &[]);
    let session = serve.login();
    let mut first = Vec::new();
    let mut sent = false;
    read_events(&serve, &session, |event, v| {
        first.push(event.to_owned());
        if event == "approvals" {
            assert_eq!(v[0]["agent"], "bob", "{v}");
        }
        if [
            "team",
            "members",
            "tasks",
            "feed",
            "approvals",
            "mergeQueue",
        ]
        .iter()
        .all(|p| first.iter().any(|f| f == p))
            && !sent
        {
            // Every part came; now a change on disk, made by someone else.
            sent = true;
            env.run(&[
                "--team",
                "t",
                "send",
                "carol",
                "pushed to the page",
                "--from",
                "bob",
            ])
            .success();
        }
        sent && event == "feed"
            && v.as_array()
                .unwrap()
                .iter()
                .any(|e| e["line"] == "pushed to the page" && e["from"] == "bob")
    });
}

#[test]
fn over_tls_the_page_is_served_and_a_session_opens() {
    let env = TestEnv::new();
    team_with_a_plan(&env);
    let (cert, key) = (
        env.dir.path().join("cert.pem"),
        env.dir.path().join("key.pem"),
    );
    let made = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-addext",
            "basicConstraints=critical,CA:FALSE",
            "-keyout",
        ])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output();
    if !made.as_ref().is_ok_and(|o| o.status.success()) {
        assert!(
            !swarm_util::environment::in_ci(),
            "openssl is needed to make a test certificate: {made:?}"
        );
        eprintln!("SKIPPED: openssl is needed to make a test certificate");
        return;
    }
    let serve = Serve::start(
        &env,
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
    );
    assert!(
        serve.base.starts_with("https://127.0.0.1:"),
        "{}",
        serve.base
    );
    swarm_llm::install_crypto_provider();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = reqwest::Client::builder()
        .add_root_certificate(
            reqwest::Certificate::from_pem(&std::fs::read(&cert).unwrap()).unwrap(),
        )
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .unwrap();
    let (status, to) = rt.block_on(async {
        let r = client
            .get(format!("{}?token={}", serve.base, serve.token))
            .send()
            .await
            .unwrap();
        assert!(r.headers().get("set-cookie").is_none(), "{r:?}");
        (
            r.status().as_u16(),
            r.headers()["location"].to_str().unwrap().to_owned(),
        )
    });
    assert_eq!(status, 303);
    assert!(to.starts_with("/#session="), "{to}");
    let teams: Value = rt.block_on(async {
        client
            .get(format!("{}api/teams", serve.base))
            .bearer_auth(&serve.token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    });
    assert_eq!(teams["teams"][0]["name"], "t");
    // Plain HTTP to the TLS port gets nothing.
    let r = serve.request("GET", "/api/teams", &[], b"");
    assert_ne!(r.status, 200, "{r:?}");
}

#[test]
fn beyond_loopback_without_a_token_file_it_warns_and_with_one_prints_no_token() {
    let env = TestEnv::new();
    team_with_a_plan(&env);
    let mut cmd = env.swarm(&["serve", "--listen", "0.0.0.0:0"]);
    let err = env.dir.path().join("wide.err");
    cmd.stdout(Stdio::piped())
        .stderr(std::fs::File::create(&err).unwrap());
    let mut child = cmd.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _guard = Guarded(Some(child));
    assert!(line.contains("?token="), "{line}");
    let warned = std::fs::read_to_string(&err).unwrap();
    assert!(
        warned.contains("warning: listening on 0.0.0.0:0") && warned.contains("--token-file"),
        "{warned}"
    );
    let token = env.dir.path().join("token");
    let secret = "a-long-enough-secret-token-0123456789";
    write_private(&token, &format!("{secret}\n"));
    let serve = Serve::start(&env, &["--token-file", token.to_str().unwrap()]);
    assert!(
        serve.token.is_empty(),
        "printed a token it was given: {}",
        serve.base
    );
    let bearer = format!("Bearer {secret}");
    let r = serve.request("GET", "/api/teams", &[("authorization", &bearer)], b"");
    assert_eq!(r.status, 200, "{r:?}");
}

/// Writes `text` to `path`, readable by its owner alone.
fn write_private(path: &std::path::Path, text: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

#[test]
fn a_weak_or_world_readable_token_file_is_refused_in_one_line() {
    use std::os::unix::fs::PermissionsExt as _;
    let env = TestEnv::new();
    let token = env.dir.path().join("token");
    let serve_with = |env: &TestEnv| {
        env.run(&[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--token-file",
            token.to_str().unwrap(),
        ])
        .failure(2)
    };
    // The review's token: short, one character, and world-readable.
    std::fs::write(&token, "aaaaaaaaaaaaaaaa").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = serve_with(&env);
    assert!(
        out.stderr.contains("readable by others (mode 644)"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("chmod 600"), "{}", out.stderr);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    write_private(&token, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    let out = serve_with(&env);
    assert!(out.stderr.contains("is weak"), "{}", out.stderr);
    assert!(
        out.stderr.contains("openssl rand -hex 32"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("aaaaaaaa"),
        "the token shown: {}",
        out.stderr
    );
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
}

/// A webhook on loopback: answers 500 to its first post and 200 after; keeps every body.
struct Hook {
    url: String,
    bodies: Arc<Mutex<Vec<Value>>>,
}

impl Hook {
    fn start() -> Hook {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!(
            "http://{}/hooks/s3cr3t-path-part",
            listener.local_addr().unwrap()
        );
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&bodies);
        std::thread::spawn(move || {
            for (n, tcp) in listener.incoming().enumerate() {
                let Ok(mut tcp) = tcp else { continue };
                let mut reader = BufReader::new(tcp.try_clone().unwrap());
                let mut len = 0;
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                    line.clear();
                }
                let mut body = vec![0; len];
                let _ = reader.read_exact(&mut body);
                let status = if n == 0 {
                    "500 Internal Server Error"
                } else {
                    "200 OK"
                };
                if n > 0 {
                    kept.lock()
                        .unwrap()
                        .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
                }
                let _ = tcp.write_all(
                    format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                        .as_bytes(),
                );
            }
        });
        Hook { url, bodies }
    }

    fn events(&self) -> Vec<Value> {
        self.bodies.lock().unwrap().clone()
    }
}

#[test]
fn notifications_go_out_once_per_event_and_a_failed_post_is_retried() {
    let env = TestEnv::new();
    let id = team_with_a_plan(&env);
    // carol runs (a stand-in process with her state), so her death is news.
    let mut carol = Guarded(Some(
        std::process::Command::new("sleep")
            .arg("600")
            .spawn()
            .unwrap(),
    ));
    let pid = carol.child().id() as i32;
    let store = env.teams().open(&TeamName::new("t").unwrap()).unwrap();
    let mut state = swarm_store::state::AgentState::new(swarm_store::state::Activity::Working);
    state.pid = pid;
    state.start_ticks = swarm_util::process::start_ticks(pid);
    store
        .agents()
        .write_state(&AgentName::new("carol").unwrap(), &state)
        .unwrap();
    let hook = Hook::start();
    let serve = Serve::start(&env, &["--notify", &hook.url]);
    // The waiting plan: posted once, after the first post failed.
    assert!(
        wait_until(T, || hook
            .events()
            .iter()
            .any(|e| e["event"] == "approval_waiting")),
        "no approval_waiting; log:\n{}",
        serve.log()
    );
    let e = hook
        .events()
        .into_iter()
        .find(|e| e["event"] == "approval_waiting")
        .unwrap();
    assert_eq!(e["detail"]["requestId"], id.as_str());
    assert!(
        e["text"]
            .as_str()
            .unwrap()
            .starts_with("[t] bob asks to approve a plan"),
        "{e}"
    );
    assert!(
        !e["link"].as_str().unwrap().contains(&serve.token),
        "the token went out"
    );
    // carol dies: news once, however often the team is looked at after.
    carol.child().kill().unwrap();
    carol.wait(T);
    assert!(
        wait_until(T, || hook
            .events()
            .iter()
            .any(|e| e["event"] == "teammate_died")),
        "no teammate_died: {:?}\n{}",
        hook.events(),
        serve.log()
    );
    for i in 0..5 {
        env.run(&["--team", "t", "send", "bob", &format!("poke {i}")])
            .success();
    }
    // The sign that the server looked at the team after the pokes: news made after them
    // (bob asks to approve another plan) reached the webhook. Nothing of the team runs
    // now (carol is dead), so the server looks at it only every 30 s: a minute and more.
    let later = "plan_approval-1700000000001@bob@t";
    let req = PlanApprovalRequest {
        from: "bob".into(),
        timestamp: swarm_util::clock::now_iso(),
        plan_file_path: "/plans/bob-2.md".into(),
        plan_content: "1. write bob2.txt".into(),
        request_id: later.to_owned(),
    };
    store
        .approvals()
        .record(&approvals::from_plan(&req, None))
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(75), || hook
            .events()
            .iter()
            .any(|e| e["detail"]["requestId"] == later)),
        "no notification for the later request: {:?}\n{}",
        hook.events(),
        serve.log()
    );
    let kinds: Vec<String> = hook
        .events()
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| *k == "approval_waiting").count(),
        2,
        "each of bob's two requests once: {kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| *k == "teammate_died").count(),
        1,
        "{kinds:?}"
    );
    // The webhook's URL may hold a secret: only its host is logged.
    let log = serve.log();
    assert!(
        log.contains("failed to notify the webhook at 127.0.0.1"),
        "{log}"
    );
    assert!(
        !log.contains("s3cr3t"),
        "the webhook's path reached the log"
    );
}

#[test]
fn the_page_shuts_a_teammate_down_through_the_ladder() {
    let env = TestEnv::with_team("t", &[]);
    let model = crate::harness::ScriptedModel::start(
        swarm_model_server::Script::new().default_reply(swarm_model_server::Reply::text("ok")),
    );
    let work = env.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut spawn = env.swarm(&["--team", "t", "spawn", "bob", "--cwd"]);
    spawn
        .arg(&work)
        .env("SWARM_PROVIDER", "scripted")
        .env("SWARM_BASE_URL", model.url());
    crate::harness::run(&mut spawn).success();
    let store = env.teams().open(&TeamName::new("t").unwrap()).unwrap();
    let bob = AgentName::new("bob").unwrap();
    assert!(wait_until(T, || store
        .agents()
        .read_state(&bob)
        .is_some_and(
            |s| s.activity == swarm_store::state::Activity::Idle
        )));
    let pid = store.agents().read_state(&bob).unwrap().pid;
    let serve = Serve::start(&env, &[]);
    let session = serve.login();
    let r = serve.post_json(
        "/api/teams/t/members/bob/shutdown",
        &serve.page_headers(&session),
        &json!({}),
    );
    assert_eq!(
        (r.status, &r.json()["member"]),
        (202, &json!("bob")),
        "{r:?}"
    );
    assert!(
        wait_until(T, || !env.on_roster("t", "bob")),
        "bob is still on the roster"
    );
    assert!(
        wait_until(T, || !swarm_util::process::is_alive(pid)),
        "bob's process lives on"
    );
    // Asked and agreed: the shutdown went through bob's own inbox, as `swarm shutdown`'s does.
    assert!(
        mail_of(&env, "bob")
            .iter()
            .any(|e| e.text.contains("shutdown_request"))
    );
}

#[test]
fn a_held_merge_is_queued_again_from_the_page() {
    let env = TestEnv::new();
    team_with_a_plan(&env);
    let store = env.teams().open(&TeamName::new("t").unwrap()).unwrap();
    store
        .merge_queue()
        .update(|q| {
            q.entries.push(swarm_store::merge_queue::Entry {
                agent: "bob".into(),
                branch: "swarm/t/bob".into(),
                task: None,
                base: "0".repeat(40),
                head: "1".repeat(40),
                state: swarm_store::merge_queue::EntryState::Conflict,
                queued_at: 1,
                updated_at: 1,
                conflicts: vec!["src/lib.rs".into()],
                check_output: None,
                merged_commit: None,
                handed_back: Some("waits for a person".into()),
            })
        })
        .unwrap();
    let serve = Serve::start(&env, &[]);
    let session = serve.login();
    let r = serve.post_json(
        "/api/teams/t/merge-queue/retry",
        &serve.page_headers(&session),
        &json!({"branch": "swarm/t/bob"}),
    );
    assert_eq!(r.status, 202, "{r:?}");
    assert_eq!(r.json()["entry"]["state"], "queued");
    let entry = &store.merge_queue().load().unwrap().entries[0];
    assert!(
        !entry.state.held() && entry.conflicts.is_empty() && entry.handed_back.is_none(),
        "{entry:?}"
    );
    // The run that follows says what it came to, on the team's pages.
    read_events(&serve, &session, |event, v| {
        event == "notices"
            && v.as_array()
                .unwrap()
                .iter()
                .any(|n| n["text"].as_str().unwrap().contains("nothing to merge"))
    });
    // Not held any more: a second retry is refused.
    let r = serve.post_json(
        "/api/teams/t/merge-queue/retry",
        &serve.page_headers(&session),
        &json!({"branch": "swarm/t/bob"}),
    );
    assert_eq!((r.status, r.error_code().as_str()), (400, "bad_request"));
}

/// `GET /metrics` (issue 35 item 7): the served teams in Prometheus' text format, behind
/// the same gate as every other read; its figures are the team's.
#[test]
fn metrics_are_served_to_a_bearer_in_prometheus_text_format() {
    let env = TestEnv::new();
    team_with_a_plan(&env);
    env.run(&["--team", "t", "task", "add", "one"]).success();
    env.run(&["--team", "t", "task", "add", "two"]).success();
    env.run(&["--team", "t", "send", "bob", "hello"]).success();
    let serve = Serve::start(&env, &[]);
    let refused = serve.request("GET", "/metrics", &[], b"");
    assert_eq!(refused.status, 401, "{refused:?}");
    assert!(!refused.body.contains("swarm_"), "{}", refused.body);
    let bearer = format!("Bearer {}", serve.token);
    let r = serve.request("GET", "/metrics", &[("authorization", &bearer)], b"");
    assert_eq!(r.status, 200, "{r:?}");
    let text = &r.body;
    for line in [
        "# TYPE swarm_agents gauge",
        r#"swarm_tasks{team="t",status="pending"} 2"#,
        r#"swarm_tasks{team="t",status="completed"} 0"#,
        r#"swarm_approvals_pending{team="t"} 1"#,
        r#"swarm_messages_unread{team="t",agent="bob"} 1"#,
        r#"swarm_messages_unread{team="t",agent="team-lead"} 1"#,
        "# TYPE swarm_tokens counter",
        "# EOF",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "no line {line:?} in:\n{text}"
        );
    }
    let agents: u32 = text
        .lines()
        .filter(|l| l.starts_with("swarm_agents{team=\"t\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u32>().ok())
        .sum();
    assert_eq!(agents, 3, "the lead, bob and carol:\n{text}");
}
