//! Fixture trees for tests: copy a directory as it is.

use std::io;
use std::path::Path;

/// Copies the directory tree `from` to `to` (created if missing): directories and regular
/// files; a symlink is followed, so its target's content is copied.
pub fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}
