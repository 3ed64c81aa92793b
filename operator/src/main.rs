//! The reference operator (issue: "The reference operator"). Not built yet: this binary
//! only says so, so that nobody mistakes the placeholder for the operator.

fn main() -> std::process::ExitCode {
    eprintln!("webapp-operator: not implemented yet");
    std::process::ExitCode::FAILURE
}
