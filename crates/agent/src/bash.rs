//! The Bash tool: one command in a shell, in the working directory, with a timeout and an
//! output cap. The command runs in its own process group so a timeout or a shutdown kills
//! everything it started, not just the shell.

use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::Value;
use tokio::io::AsyncReadExt;

use crate::tool_context::{ToolContext, ToolOutcome, required_str, truncation_marker};

const MAX_TIMEOUT: Duration = Duration::from_secs(600);

pub async fn run(input: Value, ctx: &ToolContext) -> ToolOutcome {
    let command = match required_str(&input, "command") {
        Ok(c) => c.to_owned(),
        Err(e) => return e,
    };
    let timeout = input
        .get("timeout")
        .and_then(Value::as_f64)
        .map(|ms| Duration::from_millis(ms.max(1.0) as u64).min(MAX_TIMEOUT))
        .unwrap_or(ctx.bash_timeout);
    let mut child = match tokio::process::Command::new("bash")
        .arg("-c")
        .arg(&command)
        .current_dir(&ctx.cwd)
        .envs(&ctx.env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return ToolOutcome::err(format!("failed to start bash: {e}")),
    };
    let pgid = child.id().map(|p| p as i32);
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    // Read both streams as they come, so a chatty command never blocks on a full pipe, and
    // keep only what fits under the cap (the rest is counted).
    let cap = ctx.output_cap;
    let collect = async {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let (mut buf_o, mut buf_e) = ([0u8; 8192], [0u8; 8192]);
        let (mut open_o, mut open_e) = (true, true);
        let mut dropped = 0usize;
        while open_o || open_e {
            tokio::select! {
                r = stdout.read(&mut buf_o), if open_o => match r {
                    Ok(0) | Err(_) => open_o = false,
                    Ok(n) => keep(&mut out, &buf_o[..n], cap, &mut dropped),
                },
                r = stderr.read(&mut buf_e), if open_e => match r {
                    Ok(0) | Err(_) => open_e = false,
                    Ok(n) => keep(&mut err, &buf_e[..n], cap, &mut dropped),
                },
            }
        }
        (out, err, dropped)
    };
    let outcome = tokio::select! {
        (out, err, dropped) = collect => {
            let status = child.wait().await;
            Some((out, err, dropped, status))
        }
        _ = tokio::time::sleep(timeout) => None,
        _ = ctx.cancel.cancelled() => None,
    };
    let Some((out, err, dropped, status)) = outcome else {
        if let Some(pgid) = pgid {
            swarm_util::process::signal_group(pgid, Signal::SIGKILL);
        }
        let _ = child.wait().await;
        let why = if ctx.cancel.is_cancelled() {
            "the agent is shutting down".to_owned()
        } else {
            format!("it ran past its {} ms timeout", timeout.as_millis())
        };
        return ToolOutcome::err(format!("command killed: {why}"));
    };
    let mut text = String::from_utf8_lossy(&out).into_owned();
    if !err.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&String::from_utf8_lossy(&err));
    }
    // Both streams together stay under the cap.
    let over = text.len().saturating_sub(cap);
    if over > 0 {
        let cut = text.floor_char_boundary(cap);
        text.truncate(cut);
    }
    if dropped + over > 0 {
        text.push_str(&truncation_marker(dropped + over));
    }
    match status {
        Ok(s) if s.success() => ToolOutcome::ok(if text.is_empty() {
            "(no output)".to_owned()
        } else {
            text
        }),
        Ok(s) => {
            let code = s
                .code()
                .map(|c| format!("exit code {c}"))
                .unwrap_or_else(|| "killed by a signal".to_owned());
            ToolOutcome::err(format!("{text}\n[{code}]").trim_start().to_owned())
        }
        Err(e) => ToolOutcome::err(format!("failed to wait for bash: {e}")),
    }
}

fn keep(buf: &mut Vec<u8>, chunk: &[u8], cap: usize, dropped: &mut usize) {
    let room = cap.saturating_sub(buf.len());
    let take = room.min(chunk.len());
    buf.extend_from_slice(&chunk[..take]);
    *dropped += chunk.len() - take;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use swarm_config::permissions::PermissionMode;
    use swarm_util::names::AgentName;

    fn ctx() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        let c = ToolContext::new(
            dir.path().to_path_buf(),
            AgentName::new("bob").unwrap(),
            PermissionMode::BypassPermissions,
        );
        (dir, c)
    }

    #[tokio::test]
    async fn runs_reports_failure_and_times_out() {
        let (_d, c) = ctx();
        let out = run(json!({"command": "echo hi; echo oops >&2"}), &c).await;
        assert_eq!(out, ToolOutcome::ok("hi\noops\n"));
        let out = run(json!({"command": "exit 3"}), &c).await;
        assert!(
            out.is_error && out.content.contains("exit code 3"),
            "{}",
            out.content
        );
        let started = std::time::Instant::now();
        let out = run(
            json!({"command": "sleep 30 & sleep 30", "timeout": 200}),
            &c,
        )
        .await;
        assert!(
            out.is_error && out.content.contains("timeout"),
            "{}",
            out.content
        );
        assert!(started.elapsed() < Duration::from_secs(20));
    }

    #[tokio::test]
    async fn output_is_capped() {
        let (_d, mut c) = ctx();
        c.output_cap = 1000;
        let out = run(
            json!({"command": "head -c 5000000 /dev/zero | tr '\\0' x"}),
            &c,
        )
        .await;
        assert!(out.content.starts_with(&"x".repeat(1000)));
        assert!(
            out.content.contains("output truncated: 4999000 more bytes"),
            "{}",
            &out.content[1000..]
        );
    }
}
