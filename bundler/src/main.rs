//! The `olmpack` command line: parses arguments and orchestrates library calls, nothing more.

mod cli;

fn main() -> std::process::ExitCode {
    olmpack::install_crypto_provider();
    cli::main()
}
