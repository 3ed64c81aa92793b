//! `webapp-operator`: `run` the operator, or print a release's `manifests`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use webapp_operator::manifests;
use webapp_operator::releases::{RELEASES, Release};

#[derive(Debug, Parser)]
#[command(
    name = "webapp-operator",
    version,
    about = "The WebApp reference operator"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print a release's deploy manifests as a multi-document YAML stream.
    Manifests {
        /// Release to render (default: the newest).
        #[arg(long)]
        release: Option<String>,
        /// Namespace the operator is deployed to.
        #[arg(long, default_value = manifests::DEFAULT_NAMESPACE)]
        namespace: String,
        /// Print every release version, oldest first, one per line, and exit.
        #[arg(long, conflicts_with = "release")]
        list_releases: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Manifests {
            release,
            namespace,
            list_releases,
        } => {
            if list_releases {
                for release in RELEASES {
                    println!("{}", release.version);
                }
                return ExitCode::SUCCESS;
            }
            let release = match release.as_deref() {
                None => Release::latest(),
                Some(name) => match Release::find(name) {
                    Some(r) => r,
                    None => {
                        eprintln!("error: unknown release {name}; known: {}", known());
                        return ExitCode::from(2);
                    }
                },
            };
            match manifests::render(release, &namespace) {
                Ok(yaml) => {
                    print!("{yaml}");
                    ExitCode::SUCCESS
                }
                Err(err) => report(&err),
            }
        }
    }
}

fn known() -> String {
    RELEASES
        .iter()
        .map(|r| r.version)
        .collect::<Vec<_>>()
        .join(", ")
}

fn report(err: &dyn std::error::Error) -> ExitCode {
    let mut message = format!("error: {err}");
    let mut source = err.source();
    while let Some(cause) = source {
        message.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    eprintln!("{message}");
    ExitCode::FAILURE
}
