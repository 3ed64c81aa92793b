//! The `olmpack` command line: parses arguments and orchestrates library calls, nothing more.

#![forbid(unsafe_code)]

mod cli;

fn main() -> std::process::ExitCode {
    olmpack::install_crypto_provider();
    cli::main()
}
