//! The settings matrix: a setting given where a user gives it reaches every process that
//! needs it, by the way the settings table says, and nothing else does.
//!
//! - Variables (generated from `swarm_util::vars::ALL`): each set to a value only this test
//!   gives, then read where each kind of process gets its environment, through the real
//!   code's dry runs: a swarm teammate and a Claude Code teammate in a pane here
//!   (`swarm spawn --dry-run --json`), the lead and a teammate it starts (`swarm run
//!   --dry-run --json`), a teammate on a host (`swarm spawn --host --dry-run`). Hooks run
//!   with their agent's environment (`swarm_config::hooks`), so a pane's is theirs.
//! - Flags: every flag of `swarm spawn` and `swarm run` a teammate inherits, crossed with the
//!   flags that change a teammate's API (`--provider`, `--base-url`), its definition
//!   (`--agent-type`, `--team-def`), its host (`--host`) and its engine (`--engine claude`):
//!   each combination reaches the teammate's command line, or is refused in one line, or
//!   is by design not the teammate's (each such cell says why).
//!
//! Figures: the variables' part checks each variable in up to five places; the flags' part
//! runs every combination as its own command.

use std::collections::BTreeMap;

use serde_json::Value;
use swarm_util::vars::{self, Travel};

use crate::harness::{FAKE_CLAUDE, Run, TestEnv, run};

/// Where a process swarm starts gets its environment from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// A swarm teammate in a pane here.
    Teammate,
    /// A Claude Code teammate in a pane here.
    Claude,
    /// The lead, in the team window's first pane.
    Lead,
    /// A teammate the lead starts, its settings read back from the lead's command line.
    LeadsTeammate,
}

/// The test's database, reached as `postgres:///` with every `PG*` variable saying where:
/// the setup a user with `psql` already working has.
struct Database {
    port: String,
    dbname: String,
}

impl Database {
    fn new() -> Option<Database> {
        let url = swarm_store_pg::testing::team_database()?;
        let field = |key: &str| crate::harness::url_setting(&url, key);
        Some(Database {
            port: field("port"),
            dbname: field("dbname"),
        })
    }
}

/// A value only this test gives `name`, which the commands still accept; `None` for the
/// variables swarm sets for each process (checked apart) or tmux sets.
fn sample(name: &str, env: &TestEnv, db: &Database) -> Option<String> {
    let fixed = match name {
        vars::ANTHROPIC_VERSION => "2099-01-01",
        vars::SWARM_PROVIDER => "scripted",
        vars::SWARM_BASE_URL => "http://127.0.0.1:9/v-base",
        vars::ANTHROPIC_BASE_URL => "http://127.0.0.1:9/v-anthropic",
        vars::OPENAI_BASE_URL => "http://127.0.0.1:9/v-openai",
        vars::SWARM_RATE_LIMIT_WAIT => "907",
        vars::SWARM_PERMISSION_MODE => "acceptEdits",
        vars::SWARM_PANES_PER_WINDOW => "5",
        vars::SWARM_LOCK_TIMEOUT_MS => "60007",
        vars::SWARM_HEARTBEAT_TIMEOUT_MS => "10007",
        vars::SWARM_DURABLE => "0",
        vars::SWARM_FAULT => "v.never:panic",
        vars::SWARM_LOG => "warn,v_target=debug",
        vars::PGHOST => "127.0.0.1",
        vars::PGUSER => swarm_store_pg::testing::TEAM_ROLE,
        vars::PGPASSWORD => swarm_store_pg::testing::TEAM_PASSWORD,
        vars::PGSSLMODE => "allow",
        vars::PGCONNECT_TIMEOUT => "7",
        vars::NO_COLOR => "1",
        vars::LANG | vars::LC_ALL => "C.UTF-8",
        vars::PGPORT => return Some(db.port.clone()),
        vars::PGDATABASE => return Some(db.dbname.clone()),
        vars::SWARM_TIMINGS => return Some(env.dir.path().join("timings").display().to_string()),
        vars::HOME => return Some(env.home.display().to_string()),
        vars::PATH => return std::env::var("PATH").ok(),
        // The harness's: this test's root, tmux server and database.
        vars::SWARM_ROOT | vars::SWARM_TMUX_SOCKET | vars::SWARM_STORE_URL => return None,
        vars::TMUX | vars::TMUX_PANE => return None,
        vars::SWARM_TEAM | vars::SWARM_AGENT_ID | vars::SWARM_AGENT_NAME => return None,
        _ => return Some(format!("v-{name}")),
    };
    Some(fixed.to_owned())
}

/// Every variable of the table with its sample, as the environment of every command here.
fn samples(env: &TestEnv, db: &Database) -> BTreeMap<&'static str, String> {
    vars::ALL
        .iter()
        .filter_map(|v| Some((v.name, sample(v.name, env, db)?)))
        .collect()
}

/// `swarm ARGS` with every sample in its environment.
fn swarm(env: &TestEnv, given: &BTreeMap<&'static str, String>, args: &[&str]) -> Run {
    let mut cmd = env.swarm(args);
    cmd.envs(given.iter().map(|(k, v)| (*k, v.as_str())));
    run(&mut cmd)
}

/// What a command's dry run says its environment is: name to value, a secret's value
/// `<redacted>`.
fn env_of(command: &Value) -> BTreeMap<String, String> {
    command["env"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
        .collect()
}

/// The environment (and, for a host, the database URL it is given) each place gets, from
/// the dry runs.
struct Seen {
    here: BTreeMap<Place, BTreeMap<String, String>>,
    /// The host's: the `-e NAME=VALUE` words of its tmux command, its database URL.
    host_env: BTreeMap<String, String>,
    host_url: String,
}

impl PartialOrd for Place {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Place {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (*self as u8).cmp(&(*other as u8))
    }
}

/// Makes team `t` at `postgres:///` (the `PG*` samples say where), registers a host, and
/// reads every place's environment from the dry runs.
fn see(env: &TestEnv, given: &BTreeMap<&'static str, String>) -> Seen {
    swarm(
        env,
        given,
        &["team", "create", "t", "--store", "postgres:///"],
    )
    .success();
    swarm(
        env,
        given,
        &["host", "add", "h1", "root@10.255.0.9", "--dir", "/srv/p"],
    )
    .success();
    let json = |args: &[&str]| -> Value {
        serde_json::from_str(&swarm(env, given, args).success().stdout).unwrap()
    };
    let mut here = BTreeMap::new();
    let spawned = json(&["--json", "--team", "t", "spawn", "w1", "--dry-run"]);
    here.insert(Place::Teammate, env_of(&spawned));
    let claude = json(&[
        "--json",
        "--team",
        "t",
        "spawn",
        "w2",
        "--dry-run",
        "--engine",
        "claude",
        "--claude-bin",
        FAKE_CLAUDE,
    ]);
    here.insert(Place::Claude, env_of(&claude));
    let planned = json(&[
        "--json",
        "run",
        "a goal",
        "--dry-run",
        "--store",
        "postgres:///",
    ]);
    here.insert(Place::Lead, env_of(&planned["lead"]));
    here.insert(Place::LeadsTeammate, env_of(&planned["teammate"]));
    let lines = swarm(
        env,
        given,
        &["--team", "t", "spawn", "w3", "--host", "h1", "--dry-run"],
    )
    .success()
    .stdout;
    let host_url = lines
        .lines()
        .find(|l| l.contains(" team link "))
        .expect("the dry run links the host")
        .to_owned();
    let tmux = lines
        .lines()
        .find(|l| l.contains(" new-session "))
        .expect("the dry run starts a session on the host");
    // ssh's argv, whose last word is the command the host's shell reads.
    let remote = shell_words(tmux).pop().unwrap();
    let words = shell_words(&remote);
    let host_env = words
        .iter()
        .zip(words.iter().skip(1))
        .filter(|(flag, _)| *flag == "-e")
        .filter_map(|(_, kv)| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    Seen {
        here,
        host_env,
        host_url,
    }
}

/// The words a POSIX shell reads in `line` (single quotes, backslashes, blanks): how the
/// dry run's lines are meant to be pasted.
fn shell_words(line: &str) -> Vec<String> {
    let (mut words, mut word, mut quoted, mut any) = (Vec::new(), String::new(), false, false);
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            '\\' if !quoted => word.extend(chars.next()),
            c if c.is_whitespace() && !quoted => {
                if any || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                any = false;
            }
            c => word.push(c),
        }
    }
    if any || !word.is_empty() {
        words.push(word);
    }
    words
}

/// The database URL's key a variable is written into for a host.
fn url_key(name: &str) -> &'static str {
    match name {
        vars::PGHOST => "host",
        vars::PGPORT => "port",
        vars::PGUSER => "user",
        vars::PGDATABASE => "dbname",
        vars::PGSSLMODE => "sslmode",
        vars::PGCONNECT_TIMEOUT => "connect_timeout",
        other => panic!("{other} is not written into a URL"),
    }
}

/// What `place` was given of `var` (given the sample `value`), against what the table
/// says; a line saying what is wrong.
fn check_here(var: &vars::Var, place: Place, got: Option<&String>, value: &str) -> Option<String> {
    // A Claude Code teammate's root and API address are the team's, set for the client.
    let claudes_own = place == Place::Claude
        && [vars::CLAUDE_CONFIG_DIR, vars::ANTHROPIC_BASE_URL].contains(&var.name);
    let wrong = match var.panes {
        _ if claudes_own => got.is_some_and(|g| g == value),
        Travel::Env => got.map(String::as_str) != Some(value),
        Travel::Secret => got.map(String::as_str) != Some("<redacted>"),
        Travel::Here | Travel::Swarm | Travel::HostOwn | Travel::InUrl => {
            got.is_some_and(|g| g == value)
        }
    };
    wrong.then(|| {
        format!(
            "{place:?}: {} is {got:?}; the table says {:?}",
            var.name, var.panes
        )
    })
}

/// What the host was given of `var`, against what the table says.
fn check_host(var: &vars::Var, seen: &Seen, value: &str) -> Option<String> {
    let got = seen.host_env.get(var.name);
    let wrong = match var.hosts {
        Travel::Env => got.map(String::as_str) != Some(value),
        Travel::Secret => got.map(String::as_str) != Some("<from stdin>"),
        Travel::InUrl => {
            got.is_some()
                || !seen
                    .host_url
                    .contains(&format!("{}={value}", url_key(var.name)))
        }
        Travel::Here | Travel::Swarm | Travel::HostOwn => got.is_some_and(|g| g == value),
    };
    wrong.then(|| {
        format!(
            "Host: {} is {got:?} (its URL: {}); the table says {:?}",
            var.name, seen.host_url, var.hosts
        )
    })
}

#[test]
fn every_variable_reaches_what_the_table_says_here_and_on_hosts() {
    let env = TestEnv::new();
    let Some(db) = Database::new() else {
        return;
    };
    let given = samples(&env, &db);
    let seen = see(&env, &given);
    let mut wrong = Vec::new();
    let mut checked = 0;
    for var in vars::ALL {
        let Some(value) = given.get(var.name) else {
            continue;
        };
        for (place, got) in &seen.here {
            checked += 1;
            wrong.extend(check_here(var, *place, got.get(var.name), value));
        }
        checked += 1;
        wrong.extend(check_host(var, &seen, value));
    }
    assert!(
        wrong.is_empty(),
        "{} of {checked} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    eprintln!("settings matrix: {checked} variable cells");
}

/// What a flag given with a modifier should come to in the teammate's command.
#[derive(Debug, Clone)]
enum Outcome {
    /// These words, one after another, are in its argv.
    Reaches(Vec<String>),
    /// The command is refused in one line, exit 2 (the flag cannot apply to it).
    Refused,
    /// By design not the teammate's: the flag's value is in none of its words.
    NotFor(&'static str),
}

/// One inheritable flag: its words on the command line, the words a swarm teammate is
/// started with, and those a Claude Code teammate is (`None`: not the client's to take).
struct Flag {
    given: &'static [&'static str],
    swarm: &'static [&'static str],
    claude: Claude,
}

/// What becomes of a flag for a Claude Code teammate.
enum Claude {
    Words(&'static [&'static str]),
    Refused,
    NotFor(&'static str),
}

/// `swarm spawn`'s flags that reach the teammate it starts.
const SPAWN_FLAGS: &[Flag] = &[
    Flag {
        given: &["--model", "m-given"],
        swarm: &["--model=m-given"],
        claude: Claude::Words(&["--model", "m-given"]),
    },
    Flag {
        given: &["--permission-mode", "acceptEdits"],
        swarm: &["--permission-mode=acceptEdits"],
        claude: Claude::Words(&["--permission-mode", "acceptEdits"]),
    },
    Flag {
        given: &["--plan-mode-required"],
        swarm: &["--plan-mode-required"],
        claude: Claude::Words(&["--plan-mode-required"]),
    },
    Flag {
        given: &["--color", "red"],
        swarm: &["--agent-color=red"],
        claude: Claude::Words(&["--agent-color", "red"]),
    },
    Flag {
        given: &["--allow", "Bash(ls:*)"],
        swarm: &["--allow=Bash(ls:*)"],
        claude: Claude::Refused,
    },
    Flag {
        given: &["--max-turns", "9"],
        swarm: &["--max-turns=9"],
        claude: Claude::Refused,
    },
    Flag {
        given: &["--context-window", "4000"],
        swarm: &["--context-window=4000"],
        claude: Claude::Refused,
    },
    Flag {
        given: &["--budget-usd", "1.5"],
        swarm: &["--budget-usd=1.5"],
        claude: Claude::Refused,
    },
    Flag {
        given: &["--budget-tokens", "5000"],
        swarm: &["--budget-tokens=5000"],
        claude: Claude::Refused,
    },
    Flag {
        given: &["--anthropic-version", "2099-02-02"],
        swarm: &["--anthropic-version=2099-02-02"],
        claude: Claude::NotFor("the client speaks its own API version"),
    },
    Flag {
        given: &["--rate-limit-wait", "33"],
        swarm: &["--rate-limit-wait=33"],
        claude: Claude::NotFor("the client waits out rate limits itself"),
    },
];

/// What a spawn is given besides a flag: something that changes the teammate's API, its
/// definition, its host or its engine.
const SPAWN_MODIFIERS: &[(&str, &[&str])] = &[
    ("alone", &[]),
    ("its own provider", &["--provider", "openai"]),
    (
        "its own base URL",
        &["--base-url", "http://127.0.0.1:9/own"],
    ),
    (
        "another API at its own URL",
        &[
            "--provider",
            "openai",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ],
    ),
    ("a definition", &["--agent-type", "tester"]),
    ("a host", &["--host", "h1"]),
    (
        "Claude Code",
        &["--engine", "claude", "--claude-bin", FAKE_CLAUDE],
    ),
];

/// What `flag` given with `modifier` comes to (see [`SPAWN_FLAGS`]).
fn spawn_outcome(flag: &Flag, modifier: &str) -> Outcome {
    let words = |w: &[&str]| w.iter().map(|s| (*s).to_owned()).collect();
    match (modifier, &flag.claude) {
        ("Claude Code", Claude::Words(w)) => Outcome::Reaches(words(w)),
        ("Claude Code", Claude::Refused) => Outcome::Refused,
        ("Claude Code", Claude::NotFor(why)) => Outcome::NotFor(why),
        ("its own provider" | "another API at its own URL", _)
            if flag.given[0] == "--anthropic-version" =>
        {
            Outcome::NotFor("the OpenAI API has no version header")
        }
        // A spawn's own flags are its teammate's, whatever its API, definition or host.
        _ => Outcome::Reaches(words(flag.swarm)),
    }
}

/// The argv a spawn's dry run shows, or its failure.
fn spawned_argv(out: &Run) -> Result<Vec<String>, String> {
    if !out.status.success() {
        return Err(out.stderr.clone());
    }
    if let Ok(json) = serde_json::from_str::<Value>(&out.stdout) {
        let argv = json["argv"].as_array().unwrap();
        return Ok(argv
            .iter()
            .map(|a| a.as_str().unwrap().to_owned())
            .collect());
    }
    // A host's: the words after `--` in the command its shell reads.
    let tmux = out
        .stdout
        .lines()
        .find(|l| l.contains(" new-session "))
        .expect("the dry run starts a session on the host");
    let words = shell_words(&shell_words(tmux).pop().unwrap());
    let start = words.iter().position(|w| w == "--").unwrap() + 1;
    Ok(words[start..].to_vec())
}

/// Whether `argv` gives `value` to some flag, as a word of its own or after `=` (a
/// substring would find it in a random id).
fn carries(argv: &[String], value: &str) -> bool {
    argv.iter()
        .any(|a| a == value || a.ends_with(&format!("={value}")))
}

/// Whether `words` come one after another in `argv`.
fn has_run_of(argv: &[String], words: &[String]) -> bool {
    argv.windows(words.len()).any(|w| w == words)
}

/// A cell of the matrix judged: `None` when it is as `outcome` says, else what is wrong.
/// `value` is the flag's value, which a command it is not for must not carry.
fn judge(
    cell: &str,
    outcome: &Outcome,
    out: &Run,
    argv: Result<Vec<String>, String>,
    value: &str,
) -> Option<String> {
    match (outcome, argv) {
        (Outcome::Reaches(words), Ok(argv)) if has_run_of(&argv, words) => None,
        (Outcome::Reaches(words), got) => Some(format!("{cell}: {words:?} not in {got:?}")),
        (Outcome::Refused, Err(e))
            if out.status.code() == Some(2) && e.trim().lines().count() == 1 =>
        {
            None
        }
        (Outcome::Refused, got) => Some(format!("{cell}: not refused in one line: {got:?}")),
        (Outcome::NotFor(_), Ok(argv)) if carries(&argv, value) => {
            Some(format!("{cell}: {value} reached {argv:?}"))
        }
        (Outcome::NotFor(_), Ok(_)) => None,
        (Outcome::NotFor(why), Err(e)) => {
            Some(format!("{cell}: failed ({e}), expected only ({why})"))
        }
    }
}

/// A team on PostgreSQL with a host recorded and an agent definition in its project.
fn spawn_setup() -> Option<TestEnv> {
    let env = TestEnv::with_team_on(crate::harness::Backend::Postgres, "t", &[])?;
    env.run(&["host", "add", "h1", "root@10.255.0.9", "--dir", "/srv/p"])
        .success();
    let agents = env.dir.path().join(".claude/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("tester.md"),
        "---\nname: tester\ndescription: Tests\nmodel: def-model\n---\nTest.\n",
    )
    .unwrap();
    Some(env)
}

#[test]
fn every_spawn_flag_reaches_its_teammate_whatever_else_is_given() {
    let Some(env) = spawn_setup() else {
        return;
    };
    let mut wrong = Vec::new();
    let mut cells = 0;
    for flag in SPAWN_FLAGS {
        for (modifier, extra) in SPAWN_MODIFIERS {
            cells += 1;
            let mut args = vec!["--json", "--team", "t", "spawn", "w", "--dry-run"];
            args.extend_from_slice(flag.given);
            args.extend_from_slice(extra);
            let out = run(env
                .swarm(&args)
                .env("ANTHROPIC_API_KEY", "sk-matrix")
                .env("OPENAI_API_KEY", "sk-matrix"));
            let outcome = spawn_outcome(flag, modifier);
            let cell = format!("{:?} with {modifier}", flag.given);
            let value = flag.given.last().unwrap();
            wrong.extend(judge(&cell, &outcome, &out, spawned_argv(&out), value));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {cells} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    eprintln!("settings matrix: {cells} spawn cells");
}

/// `swarm run`'s flags that reach the teammates of the team it starts. The lead is a swarm
/// agent whatever the teammates' engine, so each reaches the lead as `swarm` says.
const RUN_FLAGS: &[Flag] = &[
    Flag {
        given: &["--model", "m-run"],
        swarm: &["--model=m-run"],
        claude: Claude::Words(&["--model", "m-run"]),
    },
    Flag {
        given: &["--permission-mode", "acceptEdits"],
        swarm: &["--permission-mode=acceptEdits"],
        claude: Claude::Words(&["--permission-mode", "acceptEdits"]),
    },
    Flag {
        given: &["--allow", "Bash(ls:*)"],
        swarm: &["--allow=Bash(ls:*)"],
        claude: Claude::NotFor("Claude Code keeps its own permission rules"),
    },
    Flag {
        given: &["--max-turns", "9"],
        swarm: &["--max-turns=9"],
        claude: Claude::NotFor("Claude Code has no turn limit to give"),
    },
    Flag {
        given: &["--context-window", "4000"],
        swarm: &["--context-window=4000"],
        claude: Claude::NotFor("Claude Code compacts by its own model's window"),
    },
    Flag {
        given: &["--anthropic-version", "2099-02-02"],
        swarm: &["--anthropic-version=2099-02-02"],
        claude: Claude::NotFor("the client speaks its own API version"),
    },
    Flag {
        given: &["--rate-limit-wait", "33"],
        swarm: &["--rate-limit-wait=33"],
        claude: Claude::NotFor("the client waits out rate limits itself"),
    },
    Flag {
        given: &["--permission-timeout", "90s"],
        swarm: &["--permission-timeout=1m 30s"],
        claude: Claude::NotFor("Claude Code waits for its answers itself"),
    },
];

/// What a run is given besides a flag.
const RUN_MODIFIERS: &[(&str, &[&str])] = &[
    ("alone", &[]),
    ("another API", &["--provider", "openai"]),
    (
        "its own base URL",
        &["--base-url", "http://127.0.0.1:9/run"],
    ),
    ("a team definition", &["--team-def", "pair"]),
    (
        "Claude Code teammates",
        &["--engine", "claude", "--claude-bin", FAKE_CLAUDE],
    ),
];

/// The team definition the runs use: one member who takes the lead's model and API, one
/// with its own.
const PAIR: &str = "[[member]]\nname = \"plain\"\n\n[[member]]\nname = \"own\"\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:9/own\"\nmodel = \"own-model\"\n";

/// What `flag`, given to a run with `modifier`, comes to for `who`: the lead, the
/// teammate the lead would start, or a member of the team definition.
fn run_outcome(flag: &Flag, modifier: &str, who: &str) -> Outcome {
    let words = |w: &[&str]| w.iter().map(|s| (*s).to_owned()).collect();
    let name = flag.given[0];
    let openai = modifier == "another API" || who == "own";
    match (who, modifier, &flag.claude) {
        ("lead", _, _) if openai && name == "--anthropic-version" => {
            Outcome::NotFor("the OpenAI API has no version header")
        }
        ("lead", _, _) => Outcome::Reaches(words(flag.swarm)),
        (_, "Claude Code teammates", Claude::Words(w)) => Outcome::Reaches(words(w)),
        (_, "Claude Code teammates", Claude::NotFor(why)) => Outcome::NotFor(why),
        (_, "Claude Code teammates", Claude::Refused) => Outcome::Refused,
        _ if openai && name == "--anthropic-version" => {
            Outcome::NotFor("the OpenAI API has no version header")
        }
        ("own", _, _) if ["--model", "--context-window"].contains(&name) => {
            Outcome::NotFor("a member with its own model keeps its own model and window")
        }
        _ => Outcome::Reaches(words(flag.swarm)),
    }
}

/// The argv of each process a run's dry run shows, by who it is.
fn run_argvs(out: &Run) -> Result<Vec<(String, Vec<String>)>, String> {
    if !out.status.success() {
        return Err(out.stderr.clone());
    }
    let json: Value = serde_json::from_str(&out.stdout).map_err(|e| e.to_string())?;
    let argv = |v: &Value| -> Vec<String> {
        v["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_owned())
            .collect()
    };
    let mut all = vec![
        ("lead".to_owned(), argv(&json["lead"])),
        ("teammate".to_owned(), argv(&json["teammate"])),
    ];
    for member in json["members"].as_array().unwrap() {
        let name = member["name"].as_str().unwrap().to_owned();
        all.push((name, argv(&member["command"])));
    }
    Ok(all)
}

#[test]
fn every_run_flag_reaches_the_lead_and_its_teammates_whatever_else_is_given() {
    let env = TestEnv::new();
    let defs = env.dir.path().join(".swarm/teams");
    std::fs::create_dir_all(&defs).unwrap();
    std::fs::write(defs.join("pair.toml"), PAIR).unwrap();
    let mut wrong = Vec::new();
    let mut cells = 0;
    for flag in RUN_FLAGS {
        for (modifier, extra) in RUN_MODIFIERS {
            let mut args = vec!["--json", "run", "a goal", "--dry-run"];
            args.extend_from_slice(extra);
            args.extend_from_slice(flag.given);
            let out = run(env
                .swarm(&args)
                .env("ANTHROPIC_API_KEY", "sk-matrix")
                .env("OPENAI_API_KEY", "sk-matrix"));
            let processes = match run_argvs(&out) {
                Ok(p) => p,
                Err(e) => {
                    cells += 1;
                    wrong.push(format!("{:?} with {modifier}: failed: {e}", flag.given));
                    continue;
                }
            };
            let expected = if *modifier == "a team definition" {
                4
            } else {
                2
            };
            assert_eq!(processes.len(), expected, "{}", out.stdout);
            for (who, argv) in processes {
                cells += 1;
                let cell = format!("{:?} with {modifier}, for {who}", flag.given);
                let outcome = run_outcome(flag, modifier, &who);
                let value = flag.given.last().unwrap();
                wrong.extend(judge(&cell, &outcome, &out, Ok(argv), value));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {cells} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    eprintln!("settings matrix: {cells} run cells");
}

/// A team whose database is reached through a Unix socket cannot have teammates on other
/// hosts (the socket is this machine's): a spawn there and a host check say so in one
/// line, exit 2, before any ssh, rather than start a teammate that never connects.
#[test]
fn a_database_reached_through_a_unix_socket_is_refused_for_hosts_in_one_line() {
    let Some(url) = swarm_store_pg::testing::database() else {
        return;
    };
    let env = TestEnv::new();
    env.run(&["team", "create", "t", "--store", &url]).success();
    env.run(&["host", "add", "h1", "root@10.255.0.9", "--dir", "/srv/p"])
        .success();
    for args in [
        &["--team", "t", "spawn", "w", "--host", "h1"][..],
        &["host", "check", "h1", "--store", &url],
    ] {
        let out = env.run(args).failure(2);
        assert!(
            out.stderr.contains("Unix socket") && out.stderr.trim().lines().count() == 1,
            "{args:?}: {}",
            out.stderr
        );
    }
    // Nothing was reserved for the refused teammate.
    let status = env.run(&["--team", "t", "status", "--json"]).success();
    assert!(!status.stdout.contains("\"w\""), "{}", status.stdout);
}
