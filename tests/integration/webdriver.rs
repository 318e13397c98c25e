//! A small W3C WebDriver client for the browser tests: headless Chromium driven by
//! chromedriver on loopback (Debian's `chromium` and `chromium-driver`), with only what
//! the tests use. Without the two programs a test says so and returns, or fails under
//! `CI=true`, where `.ci/run` installs them.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::Guarded;

/// The key W3C WebDriver names an element reference by.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
/// The longest a test waits for something to show on the page.
pub const SHOWS: Duration = Duration::from_secs(45);

/// chromedriver and one browser session; both stopped when dropped.
pub struct Browser {
    http: reqwest::Client,
    runtime: tokio::runtime::Runtime,
    base: String,
    session: String,
    _driver: Guarded,
    _profile: tempfile::TempDir,
}

fn find(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    names
        .iter()
        .flat_map(|n| std::env::split_paths(&path).map(move |d| d.join(n)))
        .find(|p| p.is_file())
}

impl Browser {
    /// Starts headless Chromium at `width`×`height`, or `None` (saying why) when Chromium
    /// or chromedriver is missing outside CI.
    pub fn start(width: u32, height: u32) -> Option<Browser> {
        let chromium = find(&["chromium", "chromium-browser", "google-chrome"]);
        let driver = find(&["chromedriver"]);
        let (Some(chromium), Some(driver)) = (chromium, driver) else {
            let why = "SKIPPED: the browser tests need chromium and chromedriver (apt-get install chromium chromium-driver)";
            assert!(
                !swarm_util::environment::in_ci(),
                "{why}; .ci/run installs them"
            );
            eprintln!("{why}");
            return None;
        };
        Some(Browser::launch(&chromium, &driver, width, height))
    }

    fn launch(chromium: &Path, driver: &Path, width: u32, height: u32) -> Browser {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let driver_guard = Guarded(Some(child));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        swarm_llm::install_crypto_provider();
        let _in_runtime = runtime.enter();
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        while runtime
            .block_on(http.get(format!("{base}/status")).send())
            .is_err()
        {
            assert!(Instant::now() < deadline, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        let profile = tempfile::tempdir().unwrap();
        // As root, and with no network but loopback: without these Chromium stalls on
        // connections it cannot make.
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            &format!("--user-data-dir={}", profile.path().display()),
            &format!("--window-size={width},{height}"),
        ];
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
        }}});
        let created: Value = runtime
            .block_on(async {
                http.post(format!("{base}/session"))
                    .json(&caps)
                    .send()
                    .await?
                    .json()
                    .await
            })
            .expect("create a browser session");
        let session = created["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {created}"))
            .to_owned();
        Browser {
            http,
            runtime,
            base,
            session,
            _driver: driver_guard,
            _profile: profile,
        }
    }

    fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        let reply: Value = self
            .runtime
            .block_on(async {
                let mut req = self.http.request(method, url);
                if let Some(b) = body {
                    req = req.json(&b);
                }
                req.send().await?.json().await
            })
            .unwrap_or_else(|e| panic!("webdriver {path}: {e}"));
        reply["value"].clone()
    }

    fn post(&self, path: &str, body: Value) -> Value {
        self.call(reqwest::Method::POST, path, Some(body))
    }

    pub fn open(&self, url: &str) {
        self.post("/url", json!({"url": url}));
    }

    pub fn resize(&self, width: u32, height: u32) {
        self.post("/window/rect", json!({"width": width, "height": height}));
    }

    /// Runs `script` (a function body; `arguments` are `args`) in the page; its result.
    pub fn run(&self, script: &str, args: Value) -> Value {
        self.post("/execute/sync", json!({"script": script, "args": args}))
    }

    /// The text of the elements `css` selects, in order.
    pub fn texts(&self, css: &str) -> Vec<String> {
        let found = self.run(
            "return [...document.querySelectorAll(arguments[0])].map(e => e.innerText);",
            json!([css]),
        );
        found
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|t| t.as_str().unwrap_or("").to_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Waits until `css` selects an element whose text contains `text`; its text.
    #[track_caller]
    pub fn wait_for_text(&self, css: &str, text: &str) -> String {
        let deadline = Instant::now() + SHOWS;
        loop {
            if let Some(t) = self.texts(css).into_iter().find(|t| t.contains(text)) {
                return t;
            }
            if Instant::now() > deadline {
                panic!(
                    "the page never showed {text:?} in {css}; it shows:\n{}",
                    self.texts("body").join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn element(&self, css: &str) -> String {
        let found = self.post("/element", json!({"using": "css selector", "value": css}));
        found[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {found}"))
            .to_owned()
    }

    pub fn click(&self, css: &str) {
        let id = self.element(css);
        self.post(&format!("/element/{id}/click"), json!({}));
    }

    /// Types `text` into the element `css` selects (keys go to it, as a person's would).
    pub fn type_into(&self, css: &str, text: &str) {
        let id = self.element(css);
        self.post(&format!("/element/{id}/value"), json!({"text": text}));
    }

    /// A PNG of the viewport.
    pub fn screenshot(&self) -> Vec<u8> {
        let shot = self.call(reqwest::Method::GET, "/screenshot", None);
        base64_decode(shot.as_str().expect("a screenshot"))
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let url = format!("{}/session/{}", self.base, self.session);
        let _ = self
            .runtime
            .block_on(async { self.http.delete(url).send().await });
        // The client's connections go while the runtime that made them is there.
        let _in_runtime = self.runtime.enter();
        self.http = reqwest::Client::new();
    }
}

/// Standard base64, as WebDriver sends screenshots.
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let digits: Vec<u8> = text
        .bytes()
        .filter(|c| *c != b'=' && !c.is_ascii_whitespace())
        .map(value)
        .collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, d)| n | (u32::from(*d) << (18 - 6 * i)));
        out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    out
}

#[test]
fn base64_decodes_what_webdriver_sends() {
    assert_eq!(base64_decode("aGVsbG8="), b"hello");
    assert_eq!(base64_decode("aGVsbG8hIQ=="), b"hello!!");
    assert_eq!(base64_decode("YWJj"), b"abc");
}
