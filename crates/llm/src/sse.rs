//! A server-sent events parser (the WHATWG EventSource rules), fed raw bytes in whatever
//! pieces the network delivers.
//!
//! Invariants:
//! - Chunk boundaries do not matter: feeding a stream in one piece or split at any byte
//!   offsets (inside a UTF-8 code point, inside a field name, between CR and LF) yields the
//!   same events. Bytes are decoded only once a whole line has been assembled.
//! - Lines end with LF, CR or CRLF. Lines starting with `:` are comments (keep-alives).
//! - `field: value` loses exactly one space after the colon. Several `data:` lines join
//!   with `\n`. A blank line dispatches the event; an event with no `data` is not
//!   dispatched, and neither is a final event that the stream ends before its blank line.
//! - Invalid UTF-8 inside a line is replaced (U+FFFD), never an error: the JSON layer above
//!   decides whether the data makes sense.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, or `"message"` when the event did not name itself.
    pub event: String,
    pub data: String,
}

#[derive(Debug, Default)]
pub struct SseParser {
    /// The bytes of the line being assembled.
    line: Vec<u8>,
    /// The previous chunk ended with CR, so an LF starting this one belongs to that line end.
    after_cr: bool,
    /// At the very start of the stream, where a UTF-8 BOM is skipped.
    started: bool,
    event: String,
    data: String,
    has_data: bool,
}

impl SseParser {
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Consumes a chunk and returns the events it completed, in order.
    pub fn feed(&mut self, mut chunk: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        if self.after_cr && !chunk.is_empty() {
            self.after_cr = false;
            if chunk[0] == b'\n' {
                chunk = &chunk[1..];
            }
        }
        while let Some(pos) = chunk.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.line.extend_from_slice(&chunk[..pos]);
            let was_cr = chunk[pos] == b'\r';
            chunk = &chunk[pos + 1..];
            if was_cr {
                match chunk.first() {
                    Some(b'\n') => chunk = &chunk[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, &mut out);
        }
        self.line.extend_from_slice(chunk);
        out
    }

    fn process_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        let mut line = line;
        if !self.started {
            self.started = true;
            line = line.strip_prefix("\u{feff}".as_bytes()).unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match name {
            b"event" => self.event = String::from_utf8_lossy(value).into_owned(),
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
            }
            // `id` and `retry` only matter to reconnecting EventSources, which an LLM
            // client must not be: a reconnect would re-send the request.
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = std::mem::take(&mut self.event);
        if !std::mem::take(&mut self.has_data) {
            return;
        }
        out.push(SseEvent {
            event: if event.is_empty() {
                "message".to_string()
            } else {
                event
            },
            data: std::mem::take(&mut self.data),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        chunks.iter().flat_map(|c| p.feed(c)).collect()
    }

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn fields_comments_multiline_data_and_line_endings() {
        let stream = b"\xEF\xBB\xBFevent: a\ndata: 1\n\n: keep-alive\r\nevent:b\r\ndata:x\r\ndata:  y\r\n\r\ndata\rdata: z\r\rid: 7\nretry: 10\nevent: nodata\n\ndata: tail-without-blank-line\n";
        assert_eq!(
            parse_all(&[stream]),
            vec![ev("a", "1"), ev("b", "x\n y"), ev("message", "\nz")]
        );
    }

    #[test]
    fn cr_at_a_chunk_end_and_lf_at_the_next_start_are_one_line_end() {
        assert_eq!(
            parse_all(&[b"data: 1\r", b"\n\r", b"\ndata: 2\r", b"\r"]),
            vec![ev("message", "1"), ev("message", "2")]
        );
    }

    #[test]
    fn a_code_point_split_across_chunks_survives() {
        let s = "data: caf\u{e9} \u{1f600}\n\n".as_bytes();
        let chunks: Vec<&[u8]> = s.chunks(1).collect();
        assert_eq!(
            parse_all(&chunks),
            vec![ev("message", "caf\u{e9} \u{1f600}")]
        );
    }

    fn arb_stream() -> impl Strategy<Value = Vec<u8>> {
        let field = prop_oneof![
            "[a-z_]{1,12}".prop_map(|s| format!("event: {s}")),
            "[ -~é日😀]{0,20}".prop_map(|s| format!("data: {s}")),
            "[ -~]{0,8}".prop_map(|s| format!("data:{s}")),
            "[ -~]{0,8}".prop_map(|s| format!(":{s}")),
            Just(String::new()),
        ];
        let eol = prop_oneof![Just("\n"), Just("\r"), Just("\r\n")];
        proptest::collection::vec((field, eol), 0..40).prop_map(|lines| {
            lines
                .into_iter()
                .flat_map(|(l, e)| [l, e.to_string()])
                .collect::<String>()
                .into_bytes()
        })
    }

    proptest! {
        #[test]
        fn rechunking_at_any_offsets_gives_identical_events(
            stream in arb_stream(),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..20),
        ) {
            let whole = parse_all(&[&stream]);
            let mut offsets: Vec<usize> = cuts.iter().map(|c| c.index(stream.len() + 1)).collect();
            offsets.sort_unstable();
            let mut chunks = Vec::new();
            let mut start = 0;
            for off in offsets {
                chunks.push(&stream[start..off]);
                start = off;
            }
            chunks.push(&stream[start..]);
            prop_assert_eq!(parse_all(&chunks), whole);
        }
    }
}
