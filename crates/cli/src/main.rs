//! The `ragprobe` binary (the commands are in the crate's library).

fn main() -> std::process::ExitCode {
    ragprobe_cli::main()
}
