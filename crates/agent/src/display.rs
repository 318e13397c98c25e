//! What a person watching an agent's pane sees: streamed text, tool calls and their
//! results, messages in and out, retries. Plain ANSI on stdout; logs go to files.

use std::io::Write;

use crate::engine::Event;
use swarm_llm::StreamEvent;
use swarm_util::text::printable;

pub struct Display {
    colour: &'static str,
    mid_line: bool,
    plain: bool,
    pub enabled: bool,
}

const RESET: &str = "\x1b[0m";
const DIM: &str = "\x1b[2m";
const RED: &str = "\x1b[31m";

/// Drops ANSI sequences, for output that is not a terminal.
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn ansi(color: Option<&str>) -> &'static str {
    match color {
        Some("red") => "\x1b[31m",
        Some("blue") => "\x1b[34m",
        Some("green") => "\x1b[32m",
        Some("yellow") => "\x1b[33m",
        Some("purple") => "\x1b[35m",
        Some("orange") => "\x1b[38;5;208m",
        Some("pink") => "\x1b[38;5;205m",
        Some("cyan") => "\x1b[36m",
        _ => "\x1b[1m",
    }
}

/// The first non-blank line of someone else's text, shortened, with control characters
/// spelled out.
fn first_line(s: &str, max: usize) -> String {
    let s = printable(s);
    let line = s
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let mut out: String = line.chars().take(max).collect();
    if line.chars().count() > max || s.lines().filter(|l| !l.trim().is_empty()).count() > 1 {
        out.push('…');
    }
    out
}

impl Display {
    pub fn new(color: Option<&str>) -> Display {
        use std::io::IsTerminal;
        Display {
            colour: ansi(color),
            mid_line: false,
            plain: !std::io::stdout().is_terminal(),
            enabled: true,
        }
    }

    fn out(&mut self, s: &str) {
        if !self.enabled {
            return;
        }
        let mut stdout = std::io::stdout().lock();
        let text = if self.plain {
            strip_ansi(s)
        } else {
            s.to_owned()
        };
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
    }

    fn line(&mut self, s: &str) {
        let prefix = if self.mid_line { "\n" } else { "" };
        self.mid_line = false;
        self.out(&format!("{prefix}{s}\n"));
    }

    pub fn status(&mut self, s: &str) {
        self.line(&format!("{DIM}· {s}{RESET}"));
    }

    pub fn incoming(&mut self, from: &str, text: &str) {
        self.line(&format!(
            "{}← {}{RESET}: {}",
            self.colour,
            printable(from),
            first_line(text, 200)
        ));
    }

    pub fn outgoing(&mut self, to: &str, text: &str) {
        self.line(&format!(
            "{}→ {to}{RESET}: {}",
            self.colour,
            first_line(text, 200)
        ));
    }

    pub fn error(&mut self, s: &str) {
        self.line(&format!("{RED}✗ {s}{RESET}"));
    }

    pub fn event(&mut self, event: &Event) {
        match event {
            Event::Stream(StreamEvent::TextDelta(t)) => {
                self.out(t);
                self.mid_line = !t.ends_with('\n');
            }
            Event::Stream(StreamEvent::Retry {
                attempt,
                delay,
                reason,
            }) => {
                self.status(&format!(
                    "model API: {reason}; retry {attempt} in {:.1} s",
                    delay.as_secs_f64()
                ));
            }
            Event::Stream(StreamEvent::RateLimited { until_ms, reason }) => {
                self.status(&format!(
                    "waiting for rate limit until {} ({})",
                    swarm_util::clock::local_hms(*until_ms),
                    first_line(reason, 120)
                ));
            }
            Event::Response { .. } => {
                if self.mid_line {
                    self.mid_line = false;
                    self.out("\n");
                }
            }
            Event::Stream(_) => {}
            Event::ToolStart { description, .. } => {
                self.line(&format!("{}⏺ {description}{RESET}", self.colour));
            }
            Event::Compacted {
                before_tokens,
                after_tokens,
                summarized,
            } => {
                self.status(&format!(
                    "compacted: {before_tokens} → {after_tokens} tokens{}",
                    if *summarized {
                        ""
                    } else {
                        " (earlier turns dropped)"
                    }
                ));
            }
            Event::ToolEnd { outcome, .. } => {
                let shown = first_line(&outcome.content, 160);
                if outcome.is_error {
                    self.line(&format!("  {RED}⎿ {shown}{RESET}"));
                } else {
                    self.line(&format!("  {DIM}⎿ {shown}{RESET}"));
                }
            }
        }
    }
}
