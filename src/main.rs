//! The `swarm` command: parses the command line and runs it (see `ui::cli`).

mod ui;

fn main() -> std::process::ExitCode {
    ui::cli::main()
}
