//! The settings table (`swarm_util::vars`) is the one place an environment variable is
//! named: the README's environment section is that table, and no source file outside it
//! spells a variable's name in a string.

use std::path::{Path, PathBuf};

use swarm_util::vars;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_readme_environment_section_is_the_settings_table() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let section = readme
        .split("\n## Environment\n")
        .nth(1)
        .expect("README.md has an `## Environment` section")
        .split("\n## ")
        .next()
        .unwrap();
    let table = vars::markdown_table();
    assert!(
        section.contains(&table),
        "README.md's environment section must hold the table of crates/util/src/vars.rs; \
         paste this:\n\n{table}"
    );
}

#[test]
fn no_source_file_spells_a_variable_name_of_its_own() {
    let names: Vec<&str> = vars::ALL.iter().map(|v| v.name).collect();
    let mut found = Vec::new();
    for dir in ["src", "crates"] {
        scan(&repo().join(dir), &names, &mut found);
    }
    assert!(
        found.is_empty(),
        "name these through swarm_util::vars instead:\n{}",
        found.join("\n")
    );
}

/// Every `"NAME"` string literal of a table variable in non-test Rust source.
fn scan(dir: &Path, names: &[&str], found: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if file != "tests" && file != "target" {
                scan(&path, names, found);
            }
            continue;
        }
        if !file.ends_with(".rs") || file.ends_with("_test.rs") || file == "vars.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        // Unit tests at the end of a file may name variables to set them.
        let code = text.split("#[cfg(test)]").next().unwrap();
        for (i, line) in code.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for name in names {
                if line.contains(&format!("\"{name}\"")) {
                    found.push(format!("{}:{}: {name}", path.display(), i + 1));
                }
            }
        }
    }
}

/// The table's defaults are what the code does when a variable is unset.
#[test]
fn the_tables_defaults_are_the_codes() {
    let default = |name: &str| {
        vars::ALL
            .iter()
            .find(|v| v.name == name)
            .map(|v| v.default)
            .unwrap()
    };
    assert_eq!(
        default(vars::SWARM_LOCK_TIMEOUT_MS),
        swarm_util::lock::DEFAULT_TIMEOUT.as_millis().to_string()
    );
    assert_eq!(
        default(vars::SWARM_PANES_PER_WINDOW),
        swarm_team::spawn::window::DEFAULT_PANES_PER_WINDOW.to_string()
    );
    assert_eq!(
        default(vars::SWARM_RATE_LIMIT_WAIT),
        swarm_llm::retry::DEFAULT_RATE_LIMIT_WAIT
            .as_secs()
            .to_string()
    );
    assert_eq!(
        default(vars::ANTHROPIC_VERSION),
        swarm_llm::config::DEFAULT_ANTHROPIC_VERSION
    );
}
