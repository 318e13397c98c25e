//! `swarm serve` in a real browser (headless Chromium through WebDriver): a scripted team
//! appears live, bob's plan is approved from the page and bob goes on, a message typed in
//! the page reaches the teammate's inbox, and the page without the token shows nothing.
//! The session stays in its tab: a listener on another port the browser visits gets
//! nothing of it, and a page whose session is over says to open the printed address.
//! With `SWARM_WEB_SCREENSHOTS=DIR`, the main views are saved there at desktop and phone
//! widths (the README's come from `SWARM_WEB_SCREENSHOTS=docs`).

use std::io::{Read, Write};
use std::time::Duration;

use serde_json::json;
use swarm_model_server::{Reply, Rule, Script};

use crate::harness::{Guarded, ScriptedModel, TestEnv, wait_until};
use crate::web::{Serve, mail_of};
use crate::webdriver::{Browser, SHOWS};

const T: Duration = Duration::from_secs(60);

/// The lead makes two tasks and two teammates; bob must have his plan approved before he
/// writes bob.txt, carol takes what is ready.
fn script() -> Script {
    Script::new()
        .rule(
            Rule::new("lead plans")
                .agent("team-lead")
                .user_contains("Goal:")
                .no_tool_result(true)
                .reply(Reply::tool(
                    "TaskCreate",
                    json!({"subject": "Write the release notes", "description": "Write NOTES.md", "activeForm": "Writing the notes"}),
                )),
        )
        .rule(
            Rule::new("lead adds a task that waits")
                .agent("team-lead")
                .tool_result_contains("Task #1 created")
                .reply(Reply::tool(
                    "TaskCreate",
                    json!({"subject": "Check the release notes", "description": "Read NOTES.md", "blockedBy": ["1"]}),
                )),
        )
        .rule(
            Rule::new("lead spawns bob in plan mode")
                .agent("team-lead")
                .tool_result_contains("Task #2 created")
                .reply(Reply::tool(
                    "Agent",
                    json!({"name": "bob", "prompt": "please write bob.txt", "mode": "plan"}),
                )),
        )
        .rule(
            Rule::new("lead spawns carol")
                .agent("team-lead")
                .tool_result_contains("bob")
                .times(1)
                .reply(Reply::tool(
                    "Agent",
                    json!({"name": "carol", "prompt": "help with the notes"}),
                )),
        )
        .rule(Rule::new("lead waits").agent("team-lead").reply(Reply::text("Waiting.")))
        .rule(
            Rule::new("bob plans")
                .agent("bob")
                .user_contains("please write bob.txt")
                .no_tool_result(true)
                .reply(Reply::tool(
                    "ExitPlanMode",
                    json!({"plan": "1. write bob.txt\n2. tell the lead it is done"}),
                )),
        )
        .rule(
            Rule::new("bob writes once approved")
                .agent("bob")
                .tool_result_contains("approved your plan")
                .reply(Reply::tool(
                    "Write",
                    json!({"file_path": "bob.txt", "content": "approved from the page"}),
                )),
        )
        .default_reply(Reply::text("ok"))
}

fn start_team(env: &TestEnv, model: &ScriptedModel) -> Guarded {
    let job = env.dir.path().join("job");
    std::fs::create_dir_all(&job).unwrap();
    let mut cmd = env.swarm(&[
        "run",
        "write the release notes",
        "--team",
        "t",
        "--no-attach",
        "--provider",
        "scripted",
        "--approver",
        "human",
        "--permission-mode",
        "default",
        "--base-url",
    ]);
    cmd.arg(model.url())
        .arg("--cwd")
        .arg(&job)
        .stdout(std::fs::File::create(env.dir.path().join("run.out")).unwrap())
        .stderr(std::fs::File::create(env.dir.path().join("run.err")).unwrap());
    let run = Guarded(Some(cmd.spawn().unwrap()));
    assert!(
        wait_until(T, || env.root.join("teams/t/config.json").is_file()),
        "the team never started"
    );
    run
}

fn save_screenshot(browser: &Browser, env: &TestEnv, name: &str) {
    let png = browser.screenshot();
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    std::fs::write(env.dir.path().join(name), &png).unwrap();
    if let Some(dir) = std::env::var_os("SWARM_WEB_SCREENSHOTS") {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), &png).unwrap();
    }
}

#[test]
fn a_team_shows_live_in_the_browser_and_the_page_approves_sends_and_needs_the_token() {
    let Some(browser) = Browser::start(1400, 1000) else {
        return;
    };
    let env = TestEnv::new();
    let model = ScriptedModel::start(script());
    let _run = start_team(&env, &model);
    let serve = Serve::start(&env, &[]);
    // Without the token the page shows nothing of the team.
    browser.open(&serve.base);
    let body = browser.texts("body").join("\n");
    assert!(body.contains("needs the access token"), "{body}");
    assert!(
        !body.contains("team-lead") && !body.contains("bob"),
        "{body}"
    );
    // With it: the team, live, as it grows.
    browser.open(&format!("{}?token={}", serve.base, serve.token));
    let url = browser.run("return location.href;", json!([]));
    assert!(
        !url.as_str().unwrap().contains("token"),
        "the token stayed in the address bar: {url}"
    );
    browser.wait_for_text("#link", "live");
    browser.wait_for_text("#members .member", "team-lead");
    browser.wait_for_text("#tasks .task", "Write the release notes");
    browser.wait_for_text(
        "#tasks .column[data-board=blocked] .task",
        "Check the release notes",
    );
    browser.wait_for_text("#members .member[data-name=bob]", "bob");
    // bob's plan waits for the person: approve it from the page, with the keyboard.
    let card = browser.wait_for_text(
        "#approvals .approval[data-agent=bob]",
        "asks to approve a plan",
    );
    assert!(card.contains("1. write bob.txt"), "{card}");
    browser.wait_for_text(
        "#members .member[data-name=bob] .state",
        "awaiting-approval",
    );
    // Each teammate's pane, as it changes.
    browser.wait_for_text("#panes .pane[data-name=bob] pre", "plan sent for approval");
    browser.wait_for_text("#panes .pane[data-name=team-lead] pre", "Agent(bob)");
    save_screenshot(&browser, &env, "web-desktop.png");
    browser.resize(390, 844);
    browser.wait_for_text(
        "#approvals .approval[data-agent=bob]",
        "asks to approve a plan",
    );
    save_screenshot(&browser, &env, "web-phone.png");
    browser.resize(1400, 1000);
    browser.click(".approval[data-agent=bob] select.mode option[value=acceptEdits]");
    browser.type_into("body", "a");
    let plan = || {
        let out = env.run(&["--team", "t", "--json", "approvals"]).success();
        let all: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        all.as_array()
            .unwrap()
            .iter()
            .find(|a| a["kind"] == "plan")
            .cloned()
            .unwrap()
    };
    assert!(
        wait_until(T, || plan()["state"] == "approved"),
        "the page did not approve: {}",
        plan()
    );
    let plan = plan();
    assert_eq!(
        (plan["resolvedBy"].as_str(), plan["mode"].as_str()),
        (Some("human"), Some("acceptEdits")),
        "{plan}"
    );
    assert!(
        plan["resolvedVia"]
            .as_str()
            .unwrap()
            .starts_with("web session web-"),
        "{plan}"
    );
    let written = env.dir.path().join("job/bob.txt");
    assert!(
        wait_until(T, || std::fs::read_to_string(&written)
            .is_ok_and(|c| c == "approved from the page")),
        "bob did not go on after the page approved his plan"
    );
    let deadline = std::time::Instant::now() + SHOWS;
    while !browser.texts("#approvals .approval").is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the approval stayed on the page"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // A message typed in the page reaches the teammate's inbox.
    browser.click("#send-to option[value=bob]");
    browser.type_into("#send-text", "hello bob, from the browser");
    browser.click("#send");
    assert!(
        wait_until(T, || mail_of(&env, "bob").iter().any(|e| e.text
            == "hello bob, from the browser"
            && e.from == "team-lead")),
        "the message never reached bob"
    );
    browser.wait_for_text("#feed .entry", "hello bob, from the browser");
    the_session_stays_in_its_tab(&browser, &serve);
}

/// The session's key is in the tab's sessionStorage, in no cookie: a listener on another
/// port of the same address, visited by the same browser, gets nothing of it; a page
/// whose session is over says to open the printed address again.
fn the_session_stays_in_its_tab(browser: &Browser, serve: &Serve) {
    let key = browser.run("return sessionStorage.getItem('swarm-session');", json!([]));
    let key = key.as_str().expect("the page keeps its session").to_owned();
    assert_eq!(key.len(), 64, "{key}");
    let cookies = browser.run("return document.cookie;", json!([]));
    assert_eq!(cookies, "", "the page has cookies");
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other_url = format!("http://{}/", other.local_addr().unwrap());
    let seen = std::thread::spawn(move || {
        let (mut tcp, _) = other.accept().unwrap();
        tcp.set_read_timeout(Some(T)).unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && tcp.read(&mut byte).unwrap_or(0) == 1 {
            head.push(byte[0]);
        }
        let page = "<!doctype html><title>another listener</title><p>another listener";
        let answer = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
            page.len()
        );
        let _ = tcp.write_all(answer.as_bytes());
        String::from_utf8_lossy(&head).into_owned()
    });
    browser.open(&other_url);
    browser.wait_for_text("body", "another listener");
    let head = seen.join().unwrap();
    assert!(head.starts_with("GET / "), "{head}");
    assert!(!head.contains(&key), "another port got the session: {head}");
    assert!(!head.to_ascii_lowercase().contains("cookie"), "{head}");
    // Back on the server's page in a tab whose session the server does not know (as after
    // it expired or the server restarted): the page says what to do.
    browser.open(&format!("{}#session={}", serve.base, "0".repeat(64)));
    browser.wait_for_text("#shut-out", "open the address swarm serve printed again");
    let left = browser.run("return sessionStorage.getItem('swarm-session');", json!([]));
    assert_eq!(
        left,
        serde_json::Value::Null,
        "the page kept a dead session"
    );
}
