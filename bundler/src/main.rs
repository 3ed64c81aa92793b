//! The `olmpack` CLI. Not built yet: it says so and exits non-zero.

fn main() -> std::process::ExitCode {
    eprintln!("olmpack: the bundle, catalog and image commands are not built yet (see README.md)");
    std::process::ExitCode::from(2)
}
