//! Which model to talk to and how: the provider, model, base URL, key and client limits,
//! resolved from flags and the environment, plus a cost estimate. (The client for a
//! configuration is [`crate::client::build_client`]'s.)
//!
//! Invariants:
//! - A flag beats an environment variable, which beats the default.
//! - The API key comes only from the environment (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`),
//!   never from argv, and [`ApiKey`]'s `Debug` prints no part of it, so neither does the
//!   config's.
//! - Anthropic needs a key. An OpenAI-compatible server needs one only at api.openai.com:
//!   local servers usually take none, and then no `Authorization` header is sent.
//! - The scripted provider speaks the Anthropic wire protocol to `swarm model-server`,
//!   needs no key, and never falls back to a default URL: a test or demo must not reach
//!   the real API by accident.
//! - Every error is one line that says what to do.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use crate::rate_gate::{Gate, provider_key};
use crate::retry::{DEFAULT_MAX_RETRIES, DEFAULT_RATE_LIMIT_WAIT, Policy};
use crate::types::LlmError;
use swarm_util::meter::RateGate;
use swarm_util::meter::Usage;
use swarm_util::vars;

pub const DEFAULT_ANTHROPIC_URL: &str = "https://api.anthropic.com";
pub const DEFAULT_OPENAI_URL: &str = "https://api.openai.com";
pub const DEFAULT_ANTHROPIC_VERSION: &str = "2023-06-01";
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4.1-mini";
pub const DEFAULT_SCRIPTED_MODEL: &str = "scripted";
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    /// The Anthropic Messages API.
    Anthropic,
    /// An OpenAI-compatible chat completions server (OpenAI itself or a local server).
    OpenAi,
    /// `swarm model-server`: the Anthropic wire protocol, answered from a script.
    Scripted,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic",
            Provider::OpenAi => "openai",
            Provider::Scripted => "scripted",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Provider {
    type Err = LlmError;

    fn from_str(s: &str) -> Result<Provider, LlmError> {
        match s {
            "anthropic" => Ok(Provider::Anthropic),
            "openai" => Ok(Provider::OpenAi),
            "scripted" => Ok(Provider::Scripted),
            other => Err(LlmError::Config(format!(
                "unknown model provider {other:?}: expected anthropic, openai or scripted"
            ))),
        }
    }
}

/// An API key. Shown nowhere: `Debug` and `Display` are redacted.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> ApiKey {
        ApiKey(key.into())
    }

    /// The key itself, for the one header that carries it.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Everything a client needs. Build it with [`LlmConfig::resolve`] (flags + environment)
/// or [`LlmConfig::scripted`] (tests).
#[derive(Debug, Clone)]
pub struct LlmConfig {
    pub provider: Provider,
    pub model: String,
    /// Without a trailing slash or `/v1`: the clients append `/v1/...`.
    pub base_url: String,
    pub api_key: Option<ApiKey>,
    /// The `anthropic-version` header (Anthropic and scripted providers).
    pub anthropic_version: String,
    /// Retries after the first attempt; 2 means at most 3 attempts.
    pub max_retries: u32,
    /// The longest silence tolerated while waiting for response headers or the next bytes
    /// of a stream. Pings count as traffic.
    pub idle_timeout: Duration,
    pub connect_timeout: Duration,
    /// How long one model call may wait for rate limits in all before failing.
    pub rate_limit_wait: Duration,
    /// The team's rate-limit gate, which its agents share; `None` keeps the gate in this
    /// process.
    pub rate_gate: Option<Arc<dyn RateGate>>,
}

/// The command-line side of the configuration; `None` means "not given".
#[derive(Debug, Clone, Default)]
pub struct LlmFlags {
    /// Default: anthropic.
    pub provider: Option<Provider>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub anthropic_version: Option<String>,
    pub max_retries: Option<u32>,
    pub idle_timeout: Option<Duration>,
    pub rate_limit_wait: Option<Duration>,
}

impl LlmConfig {
    /// Resolves flags against the environment (looked up through `env`, which the front end
    /// reads once); empty values count as unset.
    pub fn resolve(
        flags: &LlmFlags,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<LlmConfig, LlmError> {
        let env = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let provider = flags.provider.unwrap_or(Provider::Anthropic);
        let (key_var, url_var, default_url, default_model) = match provider {
            Provider::Anthropic => (
                Some(vars::ANTHROPIC_API_KEY),
                Some(vars::ANTHROPIC_BASE_URL),
                Some(DEFAULT_ANTHROPIC_URL),
                DEFAULT_ANTHROPIC_MODEL,
            ),
            Provider::OpenAi => (
                Some(vars::OPENAI_API_KEY),
                Some(vars::OPENAI_BASE_URL),
                Some(DEFAULT_OPENAI_URL),
                DEFAULT_OPENAI_MODEL,
            ),
            Provider::Scripted => (None, None, None, DEFAULT_SCRIPTED_MODEL),
        };
        let base_url = flags
            .base_url
            .clone()
            .filter(|u| !u.trim().is_empty())
            .or_else(|| url_var.and_then(env))
            .or_else(|| default_url.map(str::to_string))
            .ok_or_else(|| {
                LlmError::Config(
                    "the scripted provider needs the model server's URL: pass --base-url URL, \
                     or start one with `swarm model-server --script FILE`"
                        .into(),
                )
            })?;
        let base_url = normalise_base_url(&base_url)?;
        let api_key = key_var.and_then(env).map(ApiKey::new);
        if api_key.is_none() {
            match provider {
                Provider::Anthropic => {
                    return Err(LlmError::Config(
                        "ANTHROPIC_API_KEY is not set: export it to use the anthropic provider (`swarm demo` runs without a key)"
                            .into(),
                    ));
                }
                // Local servers (llama.cpp, Ollama, vLLM) usually take no key; OpenAI's
                // own API always does, so say so here rather than with a 401 per pane.
                Provider::OpenAi if is_openai_api(&base_url) => {
                    return Err(LlmError::Config(
                        "OPENAI_API_KEY is not set: export it to use api.openai.com, or pass --base-url for a local server that needs no key"
                            .into(),
                    ));
                }
                Provider::OpenAi | Provider::Scripted => {}
            }
        }
        let model = flags
            .model
            .clone()
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(|| default_model.to_string());
        Ok(LlmConfig {
            provider,
            model: match provider {
                Provider::Anthropic => anthropic_alias(&model).unwrap_or(&model).to_owned(),
                _ => model,
            },
            base_url,
            api_key,
            anthropic_version: flags
                .anthropic_version
                .clone()
                .filter(|v| !v.trim().is_empty())
                .unwrap_or_else(|| DEFAULT_ANTHROPIC_VERSION.to_string()),
            max_retries: flags.max_retries.unwrap_or(DEFAULT_MAX_RETRIES),
            idle_timeout: flags.idle_timeout.unwrap_or(DEFAULT_IDLE_TIMEOUT),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            rate_limit_wait: flags.rate_limit_wait.unwrap_or(DEFAULT_RATE_LIMIT_WAIT),
            rate_gate: None,
        })
    }

    /// How a client of this configuration retries, at this provider's rate-limit gate
    /// (the team's too, if set).
    pub(crate) fn retry_policy(&self) -> Policy {
        Policy {
            max_retries: self.max_retries,
            rate_limit_wait: self.rate_limit_wait,
            gate: Gate::new(
                provider_key(self.provider.as_str(), &self.base_url),
                self.rate_gate.clone(),
            ),
        }
    }

    /// The scripted provider at `base_url` with default limits.
    pub fn scripted(base_url: &str) -> Result<LlmConfig, LlmError> {
        LlmConfig::resolve(
            &LlmFlags {
                provider: Some(Provider::Scripted),
                base_url: Some(base_url.to_string()),
                ..LlmFlags::default()
            },
            |_| None,
        )
    }
}

/// `http(s)://host[:port][/prefix]` without a trailing slash. A trailing `/v1` is dropped
/// too, since OpenAI's own SDKs put it in `OPENAI_BASE_URL` and the clients add it back.
fn normalise_base_url(url: &str) -> Result<String, LlmError> {
    let trimmed = url.trim().trim_end_matches('/');
    let parsed = reqwest::Url::parse(trimmed)
        .map_err(|e| LlmError::Config(format!("invalid model base URL {trimmed:?}: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(LlmError::Config(format!(
            "invalid model base URL {trimmed:?}: expected http://HOST[:PORT] or https://HOST"
        )));
    }
    if parsed.query().is_some() || !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(LlmError::Config(format!(
            "invalid model base URL {trimmed:?}: it must not carry credentials or a query"
        )));
    }
    Ok(trimmed.strip_suffix("/v1").unwrap_or(trimmed).to_string())
}

fn is_openai_api(base_url: &str) -> bool {
    reqwest::Url::parse(base_url).is_ok_and(|u| {
        u.host_str()
            .is_some_and(|h| h.eq_ignore_ascii_case("api.openai.com"))
    })
}

/// Dollars per million tokens, as (input, output), for the Claude model families.
fn price_per_mtok(model: &str) -> Option<(f64, f64)> {
    let m = model.to_ascii_lowercase();
    if !m.contains("claude") {
        return None;
    }
    if let Some(version) = family_version(&m, "opus") {
        // Opus 4.5 cut the price to a third of earlier Opus models.
        return Some(if version >= (4, 5) {
            (5.0, 25.0)
        } else {
            (15.0, 75.0)
        });
    }
    if family_version(&m, "sonnet").is_some() {
        return Some((3.0, 15.0));
    }
    if let Some(version) = family_version(&m, "haiku") {
        return Some(match version {
            (4, _) | (5.., _) => (1.0, 5.0),
            (3, 5) => (0.8, 4.0),
            _ => (0.25, 1.25),
        });
    }
    None
}

/// The (major, minor) version of a model family in either naming scheme:
/// `claude-opus-4-1-20250805` (family first) or `claude-3-5-haiku-20241022` (family last).
/// Eight-digit parts are dates, not versions.
fn family_version(model: &str, family: &str) -> Option<(u32, u32)> {
    let parts: Vec<&str> = model.split(['-', '/', '@', '.', ':']).collect();
    let at = parts.iter().position(|p| *p == family)?;
    let num = |p: Option<&&str>| {
        p.filter(|s| !s.is_empty() && s.len() <= 2)
            .and_then(|s| s.parse::<u32>().ok())
    };
    if let Some(major) = num(parts.get(at + 1)) {
        return Some((major, num(parts.get(at + 2)).unwrap_or(0)));
    }
    let before: Vec<u32> = parts[..at]
        .iter()
        .rev()
        .map_while(|p| num(Some(p)))
        .collect();
    Some(match before.as_slice() {
        [minor, major, ..] => (*major, *minor),
        [major] => (*major, 0),
        _ => (0, 0),
    })
}

/// The model id behind one of Claude Code's aliases (`sonnet`, `opus`, `haiku`), which
/// agent definitions use and the Messages API does not accept as written.
pub fn anthropic_alias(model: &str) -> Option<&'static str> {
    match model.trim().to_ascii_lowercase().as_str() {
        "sonnet" => Some(DEFAULT_ANTHROPIC_MODEL),
        "opus" => Some("claude-opus-4-1"),
        "haiku" => Some("claude-haiku-4-5"),
        _ => None,
    }
}

/// The approximate price of a call, from list prices: cache writes cost 1.25× input (the
/// 5-minute TTL), cache reads 0.1×. `None` for models not in the table.
pub fn estimate_cost_usd(model: &str, usage: &Usage) -> Option<f64> {
    let (input, output) = price_per_mtok(model)?;
    let dollars = usage.input_tokens as f64 * input
        + usage.output_tokens as f64 * output
        + usage.cache_creation_input_tokens as f64 * input * 1.25
        + usage.cache_read_input_tokens as f64 * input * 0.1;
    Some(dollars / 1_000_000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    fn flags(provider: Provider) -> LlmFlags {
        LlmFlags {
            provider: Some(provider),
            ..LlmFlags::default()
        }
    }

    #[test]
    fn claude_code_aliases_resolve_for_anthropic_only() {
        let env = env_of(&[("ANTHROPIC_API_KEY", "k"), ("OPENAI_API_KEY", "k")]);
        let with = |provider, model: &str| {
            let mut f = flags(provider);
            f.model = Some(model.to_owned());
            LlmConfig::resolve(&f, &env).unwrap().model
        };
        assert_eq!(with(Provider::Anthropic, "sonnet"), DEFAULT_ANTHROPIC_MODEL);
        assert_eq!(with(Provider::Anthropic, "Opus"), "claude-opus-4-1");
        assert_eq!(with(Provider::Anthropic, "claude-x-1"), "claude-x-1");
        assert_eq!(with(Provider::OpenAi, "sonnet"), "sonnet");
    }

    #[test]
    fn providers_parse_and_print() {
        for p in [Provider::Anthropic, Provider::OpenAi, Provider::Scripted] {
            assert_eq!(p.to_string().parse::<Provider>().unwrap(), p);
        }
        let err = "claude".parse::<Provider>().unwrap_err().to_string();
        assert_eq!(
            err,
            "unknown model provider \"claude\": expected anthropic, openai or scripted"
        );
    }

    #[test]
    fn anthropic_defaults_and_env() {
        let c = LlmConfig::resolve(
            &LlmFlags::default(),
            env_of(&[("ANTHROPIC_API_KEY", "sk-ant-secret")]),
        )
        .unwrap();
        assert_eq!(c.provider, Provider::Anthropic);
        assert_eq!(c.base_url, "https://api.anthropic.com");
        assert_eq!(c.model, DEFAULT_ANTHROPIC_MODEL);
        assert_eq!(c.anthropic_version, "2023-06-01");
        assert_eq!(c.max_retries, 2);
        assert_eq!(c.idle_timeout, Duration::from_secs(120));
        assert_eq!(c.api_key.as_ref().unwrap().expose(), "sk-ant-secret");
        let debug = format!("{c:?}");
        assert!(!debug.contains("secret"), "{debug}");
        assert!(debug.contains("<redacted>"), "{debug}");
    }

    #[test]
    fn a_flag_beats_the_environment_which_beats_the_default() {
        let env = env_of(&[
            ("OPENAI_API_KEY", "k"),
            ("OPENAI_BASE_URL", "http://localhost:8080/v1/"),
        ]);
        let c = LlmConfig::resolve(&flags(Provider::OpenAi), &env).unwrap();
        assert_eq!(c.base_url, "http://localhost:8080");
        assert_eq!(c.model, DEFAULT_OPENAI_MODEL);
        let c = LlmConfig::resolve(
            &LlmFlags {
                base_url: Some("http://127.0.0.1:9/".into()),
                model: Some("qwen".into()),
                ..flags(Provider::OpenAi)
            },
            &env,
        )
        .unwrap();
        assert_eq!(c.base_url, "http://127.0.0.1:9");
        assert_eq!(c.model, "qwen");
    }

    #[test]
    fn missing_keys_and_urls_are_one_line_errors() {
        let err = LlmConfig::resolve(&flags(Provider::Anthropic), env_of(&[]))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "ANTHROPIC_API_KEY is not set: export it to use the anthropic provider (`swarm demo` runs without a key)"
        );
        // OpenAI's own API needs a key; a blank one counts as none.
        let err = LlmConfig::resolve(&flags(Provider::OpenAi), env_of(&[("OPENAI_API_KEY", " ")]))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "OPENAI_API_KEY is not set: export it to use api.openai.com, or pass --base-url for a local server that needs no key"
        );
        // The scripted provider never borrows the real API's URL or key.
        let err = LlmConfig::resolve(
            &flags(Provider::Scripted),
            env_of(&[("ANTHROPIC_BASE_URL", "https://api.anthropic.com")]),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("--base-url") && err.contains("swarm model-server"),
            "{err}"
        );
        assert!(!err.contains('\n'));
        let c = LlmConfig::scripted("http://127.0.0.1:4000").unwrap();
        assert!(c.api_key.is_none());
        assert_eq!(c.model, "scripted");
    }

    #[test]
    fn the_anthropic_version_is_configurable_and_blank_means_the_default() {
        let env = env_of(&[("ANTHROPIC_API_KEY", "k")]);
        let version = |v: &str| {
            LlmConfig::resolve(
                &LlmFlags {
                    anthropic_version: Some(v.to_owned()),
                    ..LlmFlags::default()
                },
                &env,
            )
            .unwrap()
            .anthropic_version
        };
        assert_eq!(version("2099-01-01"), "2099-01-01");
        assert_eq!(version(" "), DEFAULT_ANTHROPIC_VERSION);
    }

    #[test]
    fn a_local_openai_compatible_server_needs_no_key() {
        let c = LlmConfig::resolve(
            &LlmFlags {
                base_url: Some("http://127.0.0.1:9/v1".into()),
                ..flags(Provider::OpenAi)
            },
            env_of(&[]),
        )
        .unwrap();
        assert!(c.api_key.is_none());
        assert_eq!(c.base_url, "http://127.0.0.1:9");
        let c = LlmConfig::resolve(
            &flags(Provider::OpenAi),
            env_of(&[("OPENAI_BASE_URL", "http://localhost:11434/v1")]),
        )
        .unwrap();
        assert!(c.api_key.is_none());
        let c = LlmConfig::resolve(
            &LlmFlags {
                base_url: Some("http://127.0.0.1:9/v1".into()),
                ..flags(Provider::OpenAi)
            },
            env_of(&[("OPENAI_API_KEY", "sk-local")]),
        )
        .unwrap();
        assert_eq!(c.api_key.unwrap().expose(), "sk-local");
        // The Anthropic API always needs one, whatever the URL.
        let err = LlmConfig::resolve(
            &LlmFlags {
                base_url: Some("http://127.0.0.1:9".into()),
                ..flags(Provider::Anthropic)
            },
            env_of(&[]),
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("ANTHROPIC_API_KEY is not set"), "{err}");
    }

    #[test]
    fn bad_base_urls_are_refused() {
        for bad in [
            "ftp://x",
            "127.0.0.1:80",
            "http://u:p@host",
            "http://h/?q=1",
            "nope",
        ] {
            let err = LlmConfig::scripted(bad).unwrap_err().to_string();
            assert!(err.starts_with("invalid model base URL"), "{bad}: {err}");
        }
    }

    #[test]
    fn family_versions_in_both_naming_schemes() {
        assert_eq!(
            family_version("claude-opus-4-1-20250805", "opus"),
            Some((4, 1))
        );
        assert_eq!(
            family_version("claude-opus-4-20250514", "opus"),
            Some((4, 0))
        );
        assert_eq!(family_version("claude-opus-4-5", "opus"), Some((4, 5)));
        assert_eq!(
            family_version("claude-3-5-haiku-20241022", "haiku"),
            Some((3, 5))
        );
        assert_eq!(
            family_version("claude-3-haiku-20240307", "haiku"),
            Some((3, 0))
        );
        assert_eq!(family_version("claude-haiku-4-5", "haiku"), Some((4, 5)));
        assert_eq!(family_version("claude-sonnet-4-5", "opus"), None);
    }

    #[test]
    fn costs_follow_the_price_table() {
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
            cache_creation_input_tokens: 1_000_000,
            cache_read_input_tokens: 1_000_000,
        };
        let cost = |m| estimate_cost_usd(m, &usage);
        // input + output + 1.25 × input + 0.1 × input
        let total = |i: f64, o: f64| Some(i + o + 1.25 * i + 0.1 * i);
        assert_eq!(cost("claude-sonnet-4-5-20250929"), total(3.0, 15.0));
        assert_eq!(cost("claude-opus-4-1"), total(15.0, 75.0));
        assert_eq!(cost("claude-opus-4-5"), total(5.0, 25.0));
        assert_eq!(cost("claude-haiku-4-5"), total(1.0, 5.0));
        assert_eq!(cost("claude-3-5-haiku-latest"), total(0.8, 4.0));
        assert_eq!(cost("claude-3-haiku-20240307"), total(0.25, 1.25));
        assert_eq!(cost("gpt-4.1-mini"), None);
        assert_eq!(cost("scripted"), None);
        let small = Usage {
            input_tokens: 1000,
            output_tokens: 100,
            ..Usage::default()
        };
        let c = estimate_cost_usd("claude-sonnet-4-5", &small).unwrap();
        assert!((c - 0.0045).abs() < 1e-12, "{c}");
    }
}
