//! The JSON Schema of the release plan, generated from the Rust types.
//!
//! Published as `olmpack.schema.json` at the repository root (a test keeps it current) so that
//! editors validate `olmpack.yaml` with `# yaml-language-server: $schema=...`.

/// The schema as pretty JSON with a trailing newline (deterministic).
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(super::Plan);
    let mut text = serde_json::to_string_pretty(&schema).expect("a schema always serializes");
    text.push('\n');
    text
}
