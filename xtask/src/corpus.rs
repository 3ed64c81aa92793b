//! The real-world corpora (`../shared/corpus`, or `$OLMPACK_CORPUS`): archives are unpacked
//! once into the per-user cache (`$OLMPACK_CORPUS_CACHE`, default `~/.cache/olmpack/corpus`),
//! next to a stamp file naming the archive they came from, so reruns cost nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The archives the test suite unpacks (file stem = the directory they contain, or, for an
/// archive of several top-level directories, the directory they are unpacked into).
pub const ARCHIVES: &[&str] = &[
    "community-operators-1591b5e",
    "kubebuilder-project-v4-releases",
];

/// Where the corpus files live: `$OLMPACK_CORPUS`, else `../shared/corpus` from the root.
pub fn source_dir(root: &Path) -> PathBuf {
    match std::env::var_os("OLMPACK_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => root.join("..").join("shared").join("corpus"),
    }
}

/// Where unpacked archives go.
pub fn cache_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("OLMPACK_CORPUS_CACHE") {
        return Ok(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return Ok(PathBuf::from(dir).join("olmpack/corpus"));
    }
    match std::env::var_os("HOME") {
        Some(home) => Ok(PathBuf::from(home).join(".cache/olmpack/corpus")),
        None => bail!("cannot place the corpus cache: set OLMPACK_CORPUS_CACHE or HOME"),
    }
}

/// What identifies an archive's contents cheaply: its name and size.
fn stamp_text(archive: &Path) -> Result<String> {
    let len = std::fs::metadata(archive)
        .with_context(|| format!("reading {}", archive.display()))?
        .len();
    Ok(format!(
        "{} {len}\n",
        archive.file_name().unwrap_or_default().to_string_lossy()
    ))
}

/// Unpacks every archive of [`ARCHIVES`] found in `source` into `cache` unless its stamp
/// says it is already there. Returns the names of the archives that are missing.
pub fn ensure_unpacked(source: &Path, cache: &Path) -> Result<Vec<String>> {
    let mut missing = Vec::new();
    for name in ARCHIVES {
        let archive = source.join(format!("{name}.tar.xz"));
        if !archive.is_file() {
            missing.push(archive.display().to_string());
            continue;
        }
        let want = stamp_text(&archive)?;
        let stamp = cache.join(format!("{name}.stamp"));
        let target = cache.join(name);
        if target.is_dir() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(&*want) {
            continue;
        }
        std::fs::create_dir_all(cache)?;
        let staging = cache.join(format!(".unpack-{name}"));
        for dir in [&staging, &target] {
            if dir.exists() {
                std::fs::remove_dir_all(dir)
                    .with_context(|| format!("clearing {}", dir.display()))?;
            }
        }
        std::fs::create_dir_all(&staging)?;
        eprintln!("conformance: unpacking {} …", archive.display());
        let status = Command::new("tar")
            .arg("-xJf")
            .arg(&archive)
            .arg("-C")
            .arg(&staging)
            .status()
            .context("running tar")?;
        anyhow::ensure!(
            status.success(),
            "tar failed to unpack {}",
            archive.display()
        );
        let unpacked = staging.join(name);
        if unpacked.is_dir() {
            std::fs::rename(&unpacked, &target)?;
            std::fs::remove_dir_all(&staging)?;
        } else {
            std::fs::rename(&staging, &target)?;
        }
        std::fs::write(&stamp, want)?;
    }
    Ok(missing)
}
