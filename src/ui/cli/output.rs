//! Printing results: JSON for scripts, short aligned text for people. Text others wrote
//! (messages, tasks) reaches a person's terminal only through [`printable`].

use serde::Serialize;

use swarm_store::mailbox::Envelope;
use swarm_store::tasks::Task;
use swarm_util::text::printable;

pub fn print_json<T: Serialize + ?Sized>(value: &T) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).expect("plain data")
    );
}

pub fn task_line(t: &Task) -> String {
    let mut s = format!("#{} [{}] {}", t.id, t.status.as_str(), t.subject);
    if let Some(o) = &t.owner {
        s.push_str(&format!(" (owner: {o})"));
    }
    if !t.blocked_by.is_empty() {
        s.push_str(&format!(
            " blocked by {}",
            t.blocked_by
                .iter()
                .map(|b| format!("#{b}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    printable(&s).into_owned()
}

pub fn task_detail(t: &Task) -> String {
    let mut s = task_line(t);
    if let Some(a) = &t.active_form {
        s.push_str(&format!("\n  active form: {}", printable(a)));
    }
    if !t.blocks.is_empty() {
        s.push_str(&format!(
            "\n  blocks: {}",
            t.blocks
                .iter()
                .map(|b| format!("#{b}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let files = t.files();
    if !files.is_empty() {
        s.push_str(&format!("\n  files: {}", printable(&files.join(", "))));
    }
    if !t.description.is_empty() {
        s.push_str("\n\n");
        s.push_str(&printable(&t.description));
    }
    s
}

pub fn message_line(e: &Envelope) -> String {
    // A protocol message naming another sender is shown as the text it is, not described
    // as what it claims.
    let body = match e.protocol() {
        Some(p) if p.signed_by(&e.from) => format!("<{}> {}", p.kind(), p.describe()),
        _ => e.text.clone(),
    };
    let read = if e.is_read() { " (read)" } else { "" };
    printable(&format!("[{}] {}{}: {}", e.timestamp, e.from, read, body)).into_owned()
}
