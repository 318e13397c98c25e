fn main() -> std::process::ExitCode {
    swarm::ui::cli::main()
}
