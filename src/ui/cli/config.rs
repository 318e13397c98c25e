//! `swarm config`: the settings swarm runs with here, and where each came from: the
//! environment, one of Claude Code's settings files, or swarm's default.

use serde_json::{Value, json};

use crate::ui::cli::context::Ctx;
use crate::ui::cli::output::print_json;
use swarm::error::Result;
use swarm_config::claude_settings::Sourced;
use swarm_util::environment::is_secret;
use swarm_util::vars;

/// One resolved value and where it came from.
struct Line {
    key: String,
    value: String,
    from: String,
}

pub fn run(ctx: &Ctx) -> Result<()> {
    ctx.profile.warn_settings();
    let c = &ctx.profile.claude;
    let file = |s: &Sourced<String>| s.from.display().to_string();
    let mut lines = Vec::new();
    let (model, from) = match (ctx.env().get(vars::SWARM_MODEL), &c.model) {
        (Some(m), _) => (m.to_owned(), "environment SWARM_MODEL".to_owned()),
        (None, Some(m)) => (m.value.clone(), file(m)),
        (None, None) => ("the provider's default".to_owned(), "default".to_owned()),
    };
    lines.push(Line {
        key: "model".into(),
        value: model,
        from,
    });
    let (mode, from) = match (ctx.env().get(vars::SWARM_PERMISSION_MODE), &c.default_mode) {
        (Some(m), _) => (m.to_owned(), "environment SWARM_PERMISSION_MODE".to_owned()),
        (None, Some(m)) => (m.value.to_string(), m.from.display().to_string()),
        (None, None) => ("default".to_owned(), "default".to_owned()),
    };
    lines.push(Line {
        key: "permissions.defaultMode".into(),
        value: mode,
        from,
    });
    for (key, rules) in [
        ("permissions.allow", &c.allow),
        ("permissions.deny", &c.deny),
    ] {
        for r in rules {
            lines.push(Line {
                key: key.into(),
                value: r.value.to_string(),
                from: r.from.display().to_string(),
            });
        }
    }
    for (name, v) in &c.env {
        // The process's own value wins over the file's.
        let own = ctx.env().get(name).filter(|e| *e != v.value).is_some();
        let value = if is_secret(name) {
            "(hidden)".to_owned()
        } else if own {
            ctx.env().get(name).unwrap_or_default().to_owned()
        } else {
            v.value.clone()
        };
        lines.push(Line {
            key: format!("env.{name}"),
            value,
            from: if own {
                format!("environment {name}")
            } else {
                file(v)
            },
        });
    }
    if ctx.json() {
        let values: Vec<Value> = lines
            .iter()
            .map(|l| json!({"key": l.key, "value": l.value, "from": l.from}))
            .collect();
        print_json(&json!({
            "settings": values,
            "files": c.files,
            "warnings": c.warnings,
        }));
        return Ok(());
    }
    let width = lines.iter().map(|l| l.key.len()).max().unwrap_or(0);
    let vwidth = lines.iter().map(|l| l.value.len()).max().unwrap_or(0);
    for l in &lines {
        println!(
            "{:<width$}  {:<vwidth$}  ({})",
            l.key,
            l.value,
            l.from,
            width = width,
            vwidth = vwidth
        );
    }
    if c.files.is_empty() {
        println!("no Claude Code settings file was found for this directory");
    } else {
        println!("read: {}", {
            let f: Vec<String> = c.files.iter().map(|f| f.display().to_string()).collect();
            f.join(", ")
        });
    }
    Ok(())
}
