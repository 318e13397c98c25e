//! The Rust builder for scripts, for tests and demos that write their script in code rather
//! than in JSON: constructors and chainable setters on [`Script`], [`Rule`], [`Reply`],
//! [`Raw`] and [`Fault`].
//!
//! Invariants:
//! - Building only sets fields, exactly as the JSON would: a built script serialises to
//!   the JSON that describes it, and parsing that JSON gives the same script back.
//! - Building never validates: a built script is checked where a parsed one is, when a
//!   [`Matcher`](super::matcher::Matcher) (so a server) is made from it.

use serde_json::Value;

use crate::script::{
    Delay, Fault, FixedUsage, Raw, RawEnd, Reply, Rule, Script, Thinking, ToolCall,
};

impl Fault {
    /// An HTTP error status.
    pub fn status(status: u16) -> Fault {
        Fault {
            status: Some(status),
            ..Fault::default()
        }
    }

    pub fn retry_after(mut self, value: impl Into<String>) -> Fault {
        self.retry_after = Some(value.into());
        self
    }

    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Fault {
        self.headers.insert(name.into(), value.into());
        self
    }

    pub fn body(mut self, body: Value) -> Fault {
        self.body = Some(body);
        self
    }

    /// HTTP 200, `after_frames` frames, then an `error` event of `error_type`.
    pub fn error_event(after_frames: usize, error_type: impl Into<String>) -> Fault {
        Fault {
            error_event_after_frames: Some(after_frames),
            error_type: Some(error_type.into()),
            ..Fault::default()
        }
    }

    pub fn stall(after_frames: usize, stall_ms: u64) -> Fault {
        Fault {
            stall_after_frames: Some(after_frames),
            stall_ms: Some(stall_ms),
            ..Fault::default()
        }
    }

    pub fn drop_after(frames: usize) -> Fault {
        Fault {
            drop_after_frames: Some(frames),
            ..Fault::default()
        }
    }

    pub fn pings(every_ms: u64, for_ms: u64) -> Fault {
        Fault {
            pings_every_ms: Some(every_ms),
            ping_for_ms: Some(for_ms),
            ..Fault::default()
        }
    }
}

impl Script {
    pub fn new() -> Script {
        Script::default()
    }

    pub fn rule(mut self, rule: Rule) -> Script {
        self.rules.push(rule);
        self
    }

    pub fn default_reply(mut self, reply: Reply) -> Script {
        self.default = Some(reply);
        self
    }

    /// Seeds the random draws (`chance`, delay ranges).
    pub fn seed(mut self, seed: u64) -> Script {
        self.seed = Some(seed);
        self
    }
}

impl Rule {
    pub fn new(name: impl Into<String>) -> Rule {
        Rule {
            name: Some(name.into()),
            ..Rule::default()
        }
    }

    pub fn agent(mut self, agent: impl Into<String>) -> Rule {
        self.agent = Some(agent.into());
        self
    }

    pub fn system_contains(mut self, s: impl Into<String>) -> Rule {
        self.system_contains = Some(s.into());
        self
    }

    pub fn user_contains(mut self, s: impl Into<String>) -> Rule {
        self.user_contains = Some(s.into());
        self
    }

    pub fn user_regex(mut self, re: impl Into<String>) -> Rule {
        self.user_regex = Some(re.into());
        self
    }

    pub fn tool_result_contains(mut self, s: impl Into<String>) -> Rule {
        self.tool_result_contains = Some(s.into());
        self
    }

    pub fn no_tool_result(mut self, fresh: bool) -> Rule {
        self.no_tool_result = Some(fresh);
        self
    }

    pub fn times(mut self, n: u32) -> Rule {
        self.times = Some(n);
        self
    }

    pub fn delay_ms(mut self, ms: u64) -> Rule {
        self.delay_ms = Some(Delay::Fixed(ms));
        self
    }

    /// A delay drawn for each request from `min..=max` milliseconds.
    pub fn delay_between_ms(mut self, min: u64, max: u64) -> Rule {
        self.delay_ms = Some(Delay::Range([min, max]));
        self
    }

    /// Fires only with this probability when its conditions hold.
    pub fn chance(mut self, p: f64) -> Rule {
        self.chance = Some(p);
        self
    }

    /// Once fired, keeps firing for this many milliseconds.
    pub fn burst_ms(mut self, ms: u64) -> Rule {
        self.burst_ms = Some(ms);
        self
    }

    pub fn reply(mut self, reply: Reply) -> Rule {
        self.reply = Some(reply);
        self
    }

    pub fn fault(mut self, fault: Fault) -> Rule {
        self.fault = Some(fault);
        self
    }
}

impl Reply {
    /// A reply of one text block.
    pub fn text(text: impl Into<String>) -> Reply {
        Reply {
            text: Some(text.into()),
            ..Reply::default()
        }
    }

    /// A reply of one tool call.
    pub fn tool(name: impl Into<String>, input: Value) -> Reply {
        Reply::default().tool_call(name, input)
    }

    pub fn tool_call(mut self, name: impl Into<String>, input: Value) -> Reply {
        self.tool_calls.push(ToolCall {
            name: name.into(),
            input,
            id: None,
        });
        self
    }

    /// A tool call with a fixed id instead of a generated one.
    pub fn tool_call_with_id(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        input: Value,
    ) -> Reply {
        self.tool_calls.push(ToolCall {
            name: name.into(),
            input,
            id: Some(id.into()),
        });
        self
    }

    pub fn with_text(mut self, text: impl Into<String>) -> Reply {
        self.text = Some(text.into());
        self
    }

    pub fn thinking(mut self, thinking: impl Into<String>, signature: impl Into<String>) -> Reply {
        self.thinking = Some(Thinking {
            thinking: thinking.into(),
            signature: signature.into(),
        });
        self
    }

    pub fn stop_reason(mut self, reason: impl Into<String>) -> Reply {
        self.stop_reason = Some(reason.into());
        self
    }

    /// Reports these token counts instead of the estimate.
    pub fn usage(mut self, input_tokens: u64, output_tokens: u64) -> Reply {
        self.usage = Some(FixedUsage {
            input_tokens,
            output_tokens,
        });
        self
    }

    /// A raw response body.
    pub fn raw(raw: Raw) -> Reply {
        Reply {
            raw: Some(raw),
            ..Reply::default()
        }
    }
}

impl Raw {
    pub fn new(body: impl Into<String>) -> Raw {
        Raw {
            body: body.into(),
            ..Raw::default()
        }
    }

    pub fn chunk_bytes(mut self, min: usize, max: usize) -> Raw {
        self.chunk_bytes = Some([min, max]);
        self
    }

    pub fn chunk_delay_ms(mut self, ms: u64) -> Raw {
        self.chunk_delay_ms = Some(ms);
        self
    }

    pub fn seed(mut self, seed: u64) -> Raw {
        self.seed = Some(seed);
        self
    }

    pub fn end(mut self, end: RawEnd) -> Raw {
        self.end = Some(end);
        self
    }

    pub fn status(mut self, status: u16) -> Raw {
        self.status = Some(status);
        self
    }

    pub fn content_type(mut self, ct: impl Into<String>) -> Raw {
        self.content_type = Some(ct.into());
        self
    }
}
