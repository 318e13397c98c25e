//! `swarm send`, `swarm broadcast`, `swarm inbox`: mail by hand.

use std::collections::HashSet;
use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc;

use clap::Args;

use crate::ui::cli::context::Ctx;
use crate::ui::cli::input::{Limit, Source, read_text};
use crate::ui::cli::output::{message_line, print_json};
use swarm::error::{Error, Result};
use swarm_store::Topic;
use swarm_store::mailbox::{self, Delivery, Envelope};
use swarm_util::error::Base as _;
use swarm_util::names::AgentName;
use swarm_util::watcher::RESCAN_EVERY;

#[derive(Debug, Args)]
pub struct SendArgs {
    /// A member's name, or '*' for everyone but the sender
    pub to: String,
    #[command(flatten)]
    pub body: MessageBody,
}

#[derive(Debug, Args)]
pub struct BroadcastArgs {
    #[command(flatten)]
    pub body: MessageBody,
}

/// A message and who sends it: what `send` and `broadcast` share.
#[derive(Debug, Args)]
pub struct MessageBody {
    /// The message; '-' reads it from stdin
    #[arg(required_unless_present = "file")]
    pub text: Option<String>,
    /// Read the message from a file
    #[arg(long, value_name = "FILE", conflicts_with = "text")]
    pub file: Option<PathBuf>,
    /// Sender name [default: the agent whose environment this is (SWARM_AGENT_NAME), which
    /// may send only as itself; else team-lead]
    #[arg(long)]
    pub from: Option<String>,
    /// A 5-10 word preview shown in feeds
    #[arg(long)]
    pub summary: Option<String>,
}

#[derive(Debug, Args)]
pub struct InboxArgs {
    /// Whose inbox: a member's name, e.g. team-lead
    pub agent: String,
    /// Only messages not yet delivered
    #[arg(long)]
    pub unread: bool,
    /// Acknowledge the messages printed: they move to the delivered log
    #[arg(long)]
    pub ack: bool,
    /// Keep printing messages as they arrive, until interrupted
    #[arg(long, short)]
    pub follow: bool,
}

pub fn send(ctx: &Ctx, args: SendArgs) -> Result<()> {
    deliver(ctx, &args.to, args.body)
}

pub fn broadcast(ctx: &Ctx, args: BroadcastArgs) -> Result<()> {
    deliver(ctx, "*", args.body)
}

/// How much of a message a file or stdin may hold: what a mailbox takes.
pub const MESSAGE: Limit = Limit {
    what: "the message",
    bytes: mailbox::envelope::MAX_MESSAGE_BYTES,
    fix: "write the content to a file and send its path",
};

/// The message from the argument, stdin (`-`) or a file, checked as a mailbox checks it.
fn message_text(text: Option<String>, file: Option<PathBuf>) -> Result<String> {
    let text = match (text, file) {
        (_, Some(path)) => read_text(Source::File(&path), MESSAGE)?,
        (Some(t), None) if t == "-" => without_final_newline(read_text(Source::Stdin, MESSAGE)?),
        (Some(t), None) => t,
        (None, None) => {
            return Err(Error::usage(
                "give the message text, '-' for stdin, or --file FILE",
            ));
        }
    };
    mailbox::check_text(&text)?;
    Ok(text)
}

/// `echo hi | swarm send bob -` sends "hi": the newline that ends the piped text is the
/// shell's, not the message's. Only one goes, so a message that ends in blank lines keeps
/// them.
fn without_final_newline(mut text: String) -> String {
    if text.ends_with('\n') {
        text.pop();
        if text.ends_with('\r') {
            text.pop();
        }
    }
    text
}

fn deliver(ctx: &Ctx, to: &str, body: MessageBody) -> Result<()> {
    let text = message_text(body.text, body.file)?;
    let from = body.from.as_deref().unwrap_or(ctx.actor.sender());
    let summary = body.summary;
    let store = ctx.team()?;
    let team = store.team();
    let color = store
        .roster()
        .load()?
        .member(from)
        .and_then(|m| m.color.clone());
    let envelope = Envelope::new(from, text)
        .with_summary(summary)
        .with_color(color);
    let sent = store.mail().send(to, envelope)?;
    if ctx.json() {
        print_json(&sent);
    } else if sent.is_empty() {
        println!("nobody to send to: {from} is the only member of team {team}");
    } else {
        for s in &sent {
            println!("sent to {} ({})", s.to, s.msg_id);
        }
    }
    Ok(())
}

pub fn inbox(ctx: &Ctx, args: InboxArgs) -> Result<()> {
    let store = ctx.team()?;
    let _team = store.team();
    store.roster().load()?.require(&args.agent)?;
    let agent = AgentName::parse_any(&args.agent)?;
    let read = |unread: bool| -> Result<Vec<Delivery>> {
        if unread {
            Ok(store.mail().read_unread(&agent)?)
        } else {
            Ok(store.mail().read_all(&agent)?)
        }
    };
    if !args.follow {
        let messages = read(args.unread)?;
        if ctx.json() {
            let envelopes: Vec<&Envelope> = messages.iter().map(|d| &d.envelope).collect();
            print_json(&envelopes);
        } else if messages.is_empty() {
            println!("no messages for {agent}");
        } else {
            for d in &messages {
                println!("{}", message_line(&d.envelope));
            }
        }
        if args.ack {
            let keys: Vec<String> = messages.into_iter().map(|d| d.key).collect();
            store.mail().ack(&agent, &keys)?;
        }
        return Ok(());
    }
    // --follow: everything unread now, then each new message as it lands.
    let (tx, landed) = mpsc::channel();
    let _watch = store.watch(
        Topic::Inbox(agent.clone()),
        Box::new(move || {
            let _ = tx.send(());
        }),
    );
    let mut seen: HashSet<String> = HashSet::new();
    let mut out = std::io::stdout().lock();
    loop {
        let fresh: Vec<Delivery> = read(true)?
            .into_iter()
            .filter(|d| !seen.contains(&d.key))
            .collect();
        for d in &fresh {
            let line = if ctx.json() {
                serde_json::to_string(&d.envelope).expect("plain data")
            } else {
                message_line(&d.envelope)
            };
            if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
                return Ok(()); // the reader went away (a closed pipe)
            }
        }
        let keys: Vec<String> = fresh.into_iter().map(|d| d.key).collect();
        if args.ack {
            store.mail().ack(&agent, &keys)?;
        }
        seen.extend(keys);
        // A notice is a hint that may be lost: look again after a while without one.
        if landed.recv_timeout(RESCAN_EVERY).is_ok() {
            while landed.try_recv().is_ok() {}
        }
    }
}
