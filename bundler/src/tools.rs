//! The pinned reference tools as one OCI image, so that `upgrade test` and `upgrade olm` run
//! outside olmpack's checkout: olmpack's release workflow packs the tool cache `cargo xtask setup`
//! built and pushes it; users' jobs install it with `olmpack tools install` (or on first use).
//!
//! Contract:
//! - [`pack`] writes an OCI layout holding one image with no base: one layer per tool
//!   directory of the cache (`<name>/<version>/…` exactly as the cache lays it out, its
//!   `.complete` stamp included), in [`ARTIFACT_TOOLS`] order; files under `bin/` have mode
//!   0755, all others 0644. The same cache gives the same digest. The config carries the label
//!   [`TOOLS_LABEL`] listing the directories, which is how an install knows the image for one.
//! - [`install`] pulls the image (every blob checked against its digest by the registry client,
//!   the manifest against the reference's digest when it has one), refuses an image without the
//!   label or without a directory this olmpack pins, and unpacks only regular files and
//!   directories below the pinned directories (anything else — links, devices, paths that climb
//!   out — is refused). It works under an exclusive lock on the cache directory, unpacks into a
//!   staging directory inside the cache and renames each tool directory into place whole, so a
//!   failed or concurrent install never leaves a half-written tool, and a second install finds
//!   the first one's work and pulls nothing.
//! - **All or nothing.** Every tool directory is staged and checked before the first one moves;
//!   when a move fails, the ones already moved go back and what they replaced is restored, so a
//!   failed install leaves the cache as it was. The staging directory goes with the run.
//! - **Only what olmpack owns.** The install never follows a symbolic link inside the cache (a
//!   symlinked tool directory, or a parent of one, is refused naming it, its target untouched),
//!   and never deletes what it did not install: each tool directory it installs carries the
//!   owner marker [`OWNER`], each staging directory [`STAGING_OWNER`]; an incomplete tool
//!   directory without the marker is refused, a staging leftover without it is left alone.

use crate::refusal::Refusal;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use olmpack_envtest::binaries::{KubeMinor, Tool, ToolData, older_openshift_crds_dirs};

use olmpack_oci::image::base::{self, BaseError, BaseImage, PlatformImage};
use olmpack_oci::image::build::{BuildError, BuildOptions, build_files_image};
use olmpack_oci::image::layer::{self, Entries, Entry, LayerSource};
use olmpack_oci::image::layout::{Descriptor, LayoutError, LayoutWriter, Platform};
use olmpack_oci::image::progress::Progress;
use olmpack_oci::image::registry::RegistryAccess;
use olmpack_oci::image::unpack::{Budget, tar_stream};
use serde_json::Value;

/// The data directories the artifact carries besides the tools' (what `upgrade olm
/// --platform openshift` serves: OpenShift's API kinds; older releases' own, which
/// `tools.toml` pins, come too).
pub const ARTIFACT_DATA: [ToolData; 1] = [ToolData::OpenShiftCrds];

/// The tools the artifact carries: what `upgrade test` and `upgrade olm` run (OLM v1's
/// directory — catalogd, operator-controller and its CRDs — and olareg, the registry OLM v1
/// pulls from, for `--olm v1`).
pub const ARTIFACT_TOOLS: [Tool; 10] = [
    Tool::Etcd,
    Tool::KubeApiserver,
    Tool::KubeControllerManager,
    Tool::KubeScheduler,
    Tool::Kwok,
    Tool::OlmOperator,
    Tool::CatalogOperator,
    Tool::Opm,
    Tool::Catalogd,
    Tool::Olareg,
];

/// The config label that marks an olmpack tools image; its value lists the tool directories.
pub const TOOLS_LABEL: &str = "io.olmpack.tools";

/// The prefix of an install's staging directory inside the cache.
const STAGING_PREFIX: &str = ".tools-install-";

/// The file each installed tool directory holds once it is whole.
const STAMP: &str = ".complete";

/// The owner marker `olmpack tools install` writes into each tool directory it installs: only
/// a directory holding it is ever replaced (never packed into a tools image).
pub const OWNER: &str = ".olmpack-installed";

/// The owner marker of an install's staging directory: only a staging leftover holding it is
/// removed by a later install.
pub const STAGING_OWNER: &str = ".olmpack-staging";

/// Failure to pack or install the tools.
#[derive(Debug, thiserror::Error)]
pub enum ToolsError {
    /// There is no tool cache to read or write (no `HOME`, no `OLMPACK_TOOLS_DIR`).
    #[error("no tool cache: set OLMPACK_TOOLS_DIR (or HOME)")]
    NoCache,
    /// A tool directory the artifact must carry is missing or incomplete in the cache packed.
    #[error(
        "{dir}: not a complete tool directory (no {lacks}); run `cargo xtask setup` in olmpack's checkout first"
    )]
    Incomplete {
        /// The tool directory.
        dir: PathBuf,
        /// The first thing it lacks: its stamp, a binary (`bin/<binary>`) or a data directory.
        lacks: String,
    },
    /// Building the image failed.
    #[error("failed to build the tools image")]
    Build(#[source] BuildError),
    /// Pulling the image failed (unreachable, unknown, or a blob that does not match its digest).
    #[error("failed to pull the tools image {reference}")]
    Pull {
        /// The reference as given.
        reference: String,
        /// Why.
        #[source]
        source: Box<BaseError>,
    },
    /// The image is not an olmpack tools image for this platform.
    #[error("{reference} is not an olmpack tools image for {platform} (no {TOOLS_LABEL} label)")]
    NotTools {
        /// The reference as given.
        reference: String,
        /// The platform looked for.
        platform: String,
    },
    /// The image does not hold a tool directory this olmpack pins.
    #[error(
        "{reference} does not hold {dir} whole (the version this olmpack pins; it lacks {lacks}): it was built for another olmpack version, or is incomplete; nothing was installed"
    )]
    Missing {
        /// The reference as given.
        reference: String,
        /// The missing or incomplete tool directory.
        dir: PathBuf,
        /// The first thing the image's directory lacks (see [`ToolsError::Incomplete`]).
        lacks: String,
    },
    /// A layer holds something the install refuses to write.
    #[error("{reference}: layer {digest} holds {path:?}, {why}; nothing was installed")]
    Refused {
        /// The reference as given.
        reference: String,
        /// The layer.
        digest: String,
        /// The entry's path in the layer.
        path: String,
        /// Why it is refused.
        why: &'static str,
    },
    /// Reading a layer failed (it is not a tar, or is cut short).
    #[error("{reference}: layer {digest} cannot be unpacked: {problem}; nothing was installed")]
    Unpack {
        /// The reference as given.
        reference: String,
        /// The layer.
        digest: String,
        /// What went wrong, in our words.
        problem: String,
    },
    /// The layout the image is pulled into, inside the cache's staging directory, failed.
    #[error("failed to stage the tools image in the tool cache")]
    Stage(#[from] LayoutError),
    /// A path where a tool directory goes holds something the install must not follow or
    /// replace (a symbolic link, a file, a directory olmpack did not install).
    #[error("{path}: {why}; nothing was installed")]
    InTheWay {
        /// The path in the cache.
        path: PathBuf,
        /// What it is, and why the install leaves it alone.
        why: String,
    },
    /// Reading or writing the cache failed.
    #[error("{path}: {problem}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What went wrong, in our words.
        problem: String,
    },
}

/// What the image or a layout olmpack reads answers; the rest is a failure to pack or install
/// the tools (exit 2).
impl Refusal for ToolsError {
    fn refuses_input(&self) -> bool {
        match self {
            ToolsError::Build(build) => build.refuses_input(),
            ToolsError::Pull { source, .. } => source.refuses_input(),
            ToolsError::Stage(layout) => layout.refuses_input(),
            _ => false,
        }
    }
}

fn io_err(path: &Path) -> impl Fn(io::Error) -> ToolsError + '_ {
    move |e| ToolsError::Io {
        path: path.to_owned(),
        problem: olmpack_oci::input::describe_io(&e),
    }
}

/// Creates the cache directory. `create_dir_all` says "already exists" when something other
/// than a directory is there: say what is there instead.
fn make_cache_dir(cache: &Path) -> Result<(), ToolsError> {
    fs::create_dir_all(cache).map_err(|e| match e.kind() {
        io::ErrorKind::AlreadyExists => ToolsError::Io {
            path: cache.to_owned(),
            problem: match fs::symlink_metadata(cache) {
                Ok(m) if m.is_file() => "is a file, not a directory".to_owned(),
                _ => "is there, but is not a directory".to_owned(),
            },
        },
        _ => io_err(cache)(e),
    })
}

/// The binaries of a Kubernetes minor's directory (`kubernetes/<version>/bin/`).
const MINOR_TOOLS: [Tool; 3] = [
    Tool::KubeApiserver,
    Tool::KubeControllerManager,
    Tool::KubeScheduler,
];

/// The tool directories the artifact carries (relative to the cache), each with what marks
/// it whole besides its stamp (every binary the tools built together install there,
/// `bin/<name>`, or the data directory it holds), in order and without repeats: the tools'
/// directories, the data directories', then each other Kubernetes minor `tools.toml` pins
/// (`kubernetes/<version>`, the control plane of `--platform kubernetes-1.N`).
pub fn artifact_dirs() -> Vec<(PathBuf, Vec<String>)> {
    dirs_for(&KubeMinor::pinned())
}

/// The directories an install puts in place for a run on the Kubernetes minors `minors`:
/// every tool and data directory, and of the other minors only those asked for (the
/// default minor is among the tools'), in [`artifact_dirs`] order.
pub fn dirs_for(minors: &[KubeMinor]) -> Vec<(PathBuf, Vec<String>)> {
    let mut dirs = base_dirs();
    for minor in KubeMinor::pinned().into_iter().filter(|m| !m.is_default()) {
        if minors.contains(&minor) {
            dirs.push(minor_dir(minor));
        }
    }
    dirs
}

/// Kubernetes `minor`'s directory and its binaries.
fn minor_dir(minor: KubeMinor) -> (PathBuf, Vec<String>) {
    let markers = MINOR_TOOLS
        .iter()
        .map(|tool| format!("bin/{}", tool.file_name()))
        .collect();
    (minor.cache_dir(), markers)
}

/// The tools' and data directories ([`artifact_dirs`] without the other minors).
fn base_dirs() -> Vec<(PathBuf, Vec<String>)> {
    let mut dirs: Vec<(PathBuf, Vec<String>)> = Vec::new();
    let mut add = |dir: PathBuf, marker: String| match dirs.iter_mut().find(|(d, _)| *d == dir) {
        Some((_, markers)) if !markers.contains(&marker) => markers.push(marker),
        Some(_) => {}
        None => dirs.push((dir, vec![marker])),
    };
    for tool in ARTIFACT_TOOLS {
        let (Some(dir), Some(binary)) = (tool.cache_dir(), tool.cache_binary()) else {
            continue;
        };
        let name = binary.file_name().unwrap_or_default();
        add(dir, format!("bin/{}", name.to_string_lossy()));
    }
    let data = ARTIFACT_DATA.iter().filter_map(|data| data.cache_dir());
    for path in data.chain(older_openshift_crds_dirs()) {
        if let (Some(dir), Some(name)) = (path.parent(), path.file_name()) {
            add(dir.to_owned(), name.to_string_lossy().into_owned());
        }
    }
    dirs
}

/// What `dir` (absolute) lacks to be a whole tool directory: its stamp, or the first of its
/// `markers` absent (a binary `bin/<name>` must be a file, anything else a directory);
/// `None` when it is whole.
fn lacks(dir: &Path, markers: &[String]) -> Option<String> {
    if !dir.join(STAMP).is_file() {
        return Some(format!("{STAMP} stamp"));
    }
    markers
        .iter()
        .find(|marker| {
            let marked = dir.join(marker);
            match marker.starts_with("bin/") {
                true => !marked.is_file(),
                false => !marked.is_dir(),
            }
        })
        .cloned()
}

/// Whether `dir` (absolute) is a whole tool directory ([`lacks`] nothing).
fn is_whole(dir: &Path, markers: &[String]) -> bool {
    lacks(dir, markers).is_none()
}

/// The tool directories a run on `minors` needs ([`dirs_for`]) that `cache` lacks or holds
/// incomplete (relative).
pub fn missing_in(cache: &Path, minors: &[KubeMinor]) -> Vec<PathBuf> {
    dirs_for(minors)
        .into_iter()
        .filter(|(dir, markers)| !is_whole(&cache.join(dir), markers))
        .map(|(dir, _)| dir)
        .collect()
}

/// The directory `OLMPACK_TOOLS_DIR`, `XDG_CACHE_HOME` or `HOME` gives.
pub fn cache_dir() -> Result<PathBuf, ToolsError> {
    olmpack_envtest::binaries::tools_cache_dir().ok_or(ToolsError::NoCache)
}

/// Packs the tool directories of `cache` into an OCI layout at `out` (module docs);
/// `progress` is told what is packed, once before and once per tool as its layer is written
/// (compressing a tool takes up to minutes).
pub fn pack(
    cache: &Path,
    out: &Path,
    options: &BuildOptions,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Descriptor, ToolsError> {
    let mut layers = Vec::new();
    let mut names = Vec::new();
    for (dir, markers) in artifact_dirs() {
        let abs = cache.join(&dir);
        if let Some(lacks) = lacks(&abs, &markers) {
            return Err(ToolsError::Incomplete { dir: abs, lacks });
        }
        let dest = olmpack_oci::input::slash_path(&dir);
        let source = LayerSource {
            dir: abs,
            dest: dest.clone(),
        };
        let mut entries = layer::collect(std::slice::from_ref(&source)).map_err(|source| {
            ToolsError::Build(BuildError::Layer {
                dest: dest.clone(),
                source,
            })
        })?;
        mark_executables(&mut entries, &dest);
        entries.retain(|path, _| !path.ends_with(&format!("/{OWNER}")));
        layers.push((entries, format!("COPY {dest}/ /{dest}/")));
        names.push(dest);
    }
    let labels = BTreeMap::from([(TOOLS_LABEL.to_owned(), names.join(","))]);
    progress(&format!(
        "packing {} tool directories, one layer each, at once: {}",
        names.len(),
        names.join(", ")
    ));
    let started = std::time::Instant::now();
    let written = |history: &str, layer: &Descriptor| {
        let dest = history
            .rsplit(' ')
            .next()
            .unwrap_or(history)
            .trim_matches('/');
        progress(&format!(
            "packed {dest} ({:.1} MB compressed, {:.0} s)",
            layer.size as f64 / 1e6,
            started.elapsed().as_secs_f64()
        ));
    };
    build_files_image(&layers, labels, out, options, &written).map_err(ToolsError::Build)
}

/// Files directly under `<dest>/bin/` become executable.
fn mark_executables(entries: &mut Entries, dest: &str) {
    let bin = format!("{dest}/bin/");
    for (path, entry) in entries.iter_mut() {
        if let Entry::File { mode, .. } = entry
            && path
                .strip_prefix(&bin)
                .is_some_and(|name| !name.contains('/'))
        {
            *mode = 0o755;
        }
    }
}

/// What [`install`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Installed {
    /// Every pinned tool directory was already there; nothing was pulled.
    AlreadyThere,
    /// These directories were installed (relative to the cache).
    Dirs(Vec<PathBuf>),
}

/// The platform of the machine running olmpack, in Go's spelling.
pub fn host_platform() -> Platform {
    let architecture = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "powerpc64" => "ppc64le",
        other => other,
    };
    Platform {
        os: std::env::consts::OS.to_owned(),
        architecture: architecture.to_owned(),
        ..Platform::linux_amd64()
    }
}

/// Installs the tools image `reference` into `cache` (module docs): the directories a run on
/// the Kubernetes minors `minors` needs ([`dirs_for`]; the default minor's are always among
/// them), pulling only their layers.
pub async fn install(
    reference: &str,
    cache: &Path,
    access: &RegistryAccess,
    progress: &Progress,
    minors: &[KubeMinor],
) -> Result<Installed, ToolsError> {
    let wanted = dirs_for(minors);
    make_cache_dir(cache)?;
    let lock = File::open(cache).map_err(io_err(cache))?;
    if lock.try_lock().is_err() {
        progress.step(&format!(
            "waiting for another tools install into {}",
            cache.display()
        ));
        lock.lock().map_err(io_err(cache))?;
    }
    check_targets(cache, &wanted)?;
    if missing_in(cache, minors).is_empty() {
        return Ok(Installed::AlreadyThere);
    }
    remove_leftovers(cache)?;
    let staging = tempfile::Builder::new()
        .prefix(STAGING_PREFIX)
        .tempdir_in(cache)
        .map_err(io_err(cache))?;
    let marker = staging.path().join(STAGING_OWNER);
    fs::write(
        &marker,
        format!("staging of olmpack tools install from {reference}\n"),
    )
    .map_err(io_err(&marker))?;
    let writer = LayoutWriter::create(&staging.path().join("layout"))?;
    let keep = |config: &Value, index: usize| wanted_layer(config, index, &wanted);
    let pulled = base::fetch_selected(reference, access, &writer, progress, &keep)
        .await
        .map_err(|source| ToolsError::Pull {
            reference: reference.to_owned(),
            source: Box::new(source),
        })?;
    let image = tools_image(reference, &pulled)?;
    let tree = staging.path().join("tree");
    // The tools are input like any other: the default input limits bound what they unpack to.
    let mut budget = Budget::new(&olmpack_oci::input::Limits::default());
    for (index, blob) in image.layers.iter().enumerate() {
        if !wanted_layer(&image.config, index, &wanted) {
            continue;
        }
        let file = io::BufReader::new(writer.open_staged_blob(&blob.digest)?);
        unpack(reference, blob, file, &tree, &mut budget, &wanted)?;
    }
    let installed = move_into_place(reference, &tree, cache, staging.path(), &wanted)?;
    drop(lock);
    Ok(Installed::Dirs(installed))
}

/// Whether layer `index` of a tools image with `config` holds one of the `wanted`
/// directories: its [`TOOLS_LABEL`] names each layer's directory, in layer order. A layer
/// the label does not name is pulled (and refused by [`unpack`] if it holds anything).
fn wanted_layer(config: &Value, index: usize, wanted: &[(PathBuf, Vec<String>)]) -> bool {
    let Some(label) = config["config"]["Labels"][TOOLS_LABEL].as_str() else {
        return true;
    };
    match label.split(',').nth(index) {
        Some(name) => wanted.iter().any(|(dir, _)| Path::new(name) == dir),
        None => true,
    }
}

/// Removes the staging directories of installs that were killed (the lock is held, so no
/// running install owns them): directories, not links, holding olmpack's [`STAGING_OWNER`]
/// marker — a name alone proves nothing.
fn remove_leftovers(cache: &Path) -> Result<(), ToolsError> {
    for item in fs::read_dir(cache).map_err(io_err(cache))? {
        let path = item.map_err(io_err(cache))?.path();
        let named = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(STAGING_PREFIX));
        let is_dir = fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
        let owned = fs::symlink_metadata(path.join(STAGING_OWNER)).is_ok_and(|m| m.is_file());
        if named && is_dir && owned {
            fs::remove_dir_all(&path).map_err(io_err(&path))?;
        }
    }
    Ok(())
}

/// Refuses, before anything is pulled, a tool directory path the install must not touch: a
/// symbolic link at any level below the cache (followed, it would write or delete outside
/// the cache), something that is not a directory, or an incomplete tool directory olmpack did
/// not install (replacing it would delete someone else's files).
fn check_targets(cache: &Path, wanted: &[(PathBuf, Vec<String>)]) -> Result<(), ToolsError> {
    let in_the_way = |path: &Path, why: String| ToolsError::InTheWay {
        path: path.to_owned(),
        why,
    };
    for (dir, markers) in wanted {
        let mut path = cache.to_owned();
        for component in dir.components() {
            path.push(component);
            let Ok(meta) = fs::symlink_metadata(&path) else {
                break;
            };
            if meta.file_type().is_symlink() {
                let target = fs::read_link(&path).unwrap_or_default();
                return Err(in_the_way(
                    &path,
                    format!(
                        "is a symbolic link (to {}); olmpack does not follow symbolic links in the tool cache",
                        target.display()
                    ),
                ));
            }
            if !meta.is_dir() {
                return Err(in_the_way(&path, "is not a directory".into()));
            }
        }
        let target = cache.join(dir);
        let owned = fs::symlink_metadata(target.join(OWNER)).is_ok_and(|m| m.is_file());
        if target.is_dir() && !is_whole(&target, markers) && !owned {
            return Err(in_the_way(
                &target,
                format!(
                    "is an incomplete tool directory olmpack did not install (no {OWNER} marker); remove it, or install into another cache (OLMPACK_TOOLS_DIR)"
                ),
            ));
        }
    }
    Ok(())
}

/// The platform image of `pulled` that is an olmpack tools image for this machine.
fn tools_image<'a>(
    reference: &str,
    pulled: &'a BaseImage,
) -> Result<&'a PlatformImage, ToolsError> {
    let host = host_platform();
    pulled
        .images
        .iter()
        .filter(|image| {
            image
                .platform
                .as_ref()
                .is_none_or(|p| p.os == host.os && p.architecture == host.architecture)
        })
        .find(|image| image.config["config"]["Labels"][TOOLS_LABEL].is_string())
        .ok_or_else(|| ToolsError::NotTools {
            reference: reference.to_owned(),
            platform: format!("{}/{}", host.os, host.architecture),
        })
}

/// Unpacks one gzip tar layer into `tree`, refusing anything but regular files and
/// directories below the pinned tool directories.
fn unpack(
    reference: &str,
    blob: &Descriptor,
    layer: impl Read,
    tree: &Path,
    budget: &mut Budget,
    wanted: &[(PathBuf, Vec<String>)],
) -> Result<(), ToolsError> {
    let allowed: BTreeSet<&PathBuf> = wanted.iter().map(|(d, _)| d).collect();
    let refused = |path: &Path, why| ToolsError::Refused {
        reference: reference.to_owned(),
        digest: blob.digest.clone(),
        path: path.display().to_string(),
        why,
    };
    let broken = |e: io::Error| ToolsError::Unpack {
        reference: reference.to_owned(),
        digest: blob.digest.clone(),
        problem: olmpack_oci::input::describe_io(&e),
    };
    let mut archive = tar::Archive::new(tar_stream(layer, true));
    for entry in archive.entries().map_err(broken)? {
        let mut entry = entry.map_err(broken)?;
        let path = entry.path().map_err(broken)?.into_owned();
        if !path.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(refused(&path, "a path that is not plain and relative"));
        }
        let kind = entry.header().entry_type();
        let inside = allowed
            .iter()
            .any(|dir| path.starts_with(dir) && path != **dir);
        if !inside {
            // The parents of a tool directory (`etcd/`) are the only other entries allowed.
            if kind.is_dir() && allowed.iter().any(|dir| dir.starts_with(&path)) {
                continue;
            }
            return Err(refused(
                &path,
                "which is outside the pinned tool directories",
            ));
        }
        let target = tree.join(&path);
        if kind.is_dir() {
            fs::create_dir_all(&target).map_err(io_err(&target))?;
        } else if kind.is_file() {
            budget.admit(&path, entry.size()).map_err(broken)?;
            let mode = entry.header().mode().map_err(broken)? & 0o755;
            write_file(&mut entry, &target, mode).map_err(|e| match e.kind() {
                io::ErrorKind::UnexpectedEof | io::ErrorKind::InvalidData => broken(e),
                _ => io_err(&target)(e),
            })?;
        } else {
            return Err(refused(&path, "which is not a regular file or directory"));
        }
    }
    Ok(())
}

fn write_file(content: &mut impl Read, target: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(parent) = target.parent() {
        fs::create_dir_all(parent)?;
    }
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(target)?;
    io::copy(content, &mut file)?;
    file.sync_all()
}

/// Moves each pinned tool directory the cache lacks from `tree` into `cache`, all or nothing
/// (module docs): every directory must be in the image and whole; an incomplete one in the
/// cache (olmpack's, [`check_targets`]) is moved aside into `staging` and restored when a
/// later move fails.
fn move_into_place(
    reference: &str,
    tree: &Path,
    cache: &Path,
    staging: &Path,
    dirs: &[(PathBuf, Vec<String>)],
) -> Result<Vec<PathBuf>, ToolsError> {
    for (dir, markers) in dirs {
        if let Some(lacks) = lacks(&tree.join(dir), markers) {
            return Err(ToolsError::Missing {
                reference: reference.to_owned(),
                dir: dir.clone(),
                lacks,
            });
        }
    }
    let mut moves = Moves::default();
    let mut installed = Vec::new();
    for (dir, markers) in dirs {
        if is_whole(&cache.join(dir), markers) {
            continue;
        }
        let owner = tree.join(dir).join(OWNER);
        let moved = fs::write(
            &owner,
            format!("installed by olmpack tools install from {reference}\n"),
        )
        .map_err(io_err(&owner))
        .and_then(|()| {
            moves.install(
                &tree.join(dir),
                &cache.join(dir),
                &staging.join("replaced").join(dir),
            )
        });
        if let Err(err) = moved {
            moves.undo();
            return Err(err);
        }
        installed.push(dir.clone());
    }
    Ok(installed)
}

/// The renames of an install so far, to undo when a later one fails.
#[derive(Default)]
struct Moves {
    /// (from, to) in the order done.
    done: Vec<(PathBuf, PathBuf)>,
    /// Parent directories created for a tool directory, outermost first.
    created: Vec<PathBuf>,
}

impl Moves {
    /// Moves the staged tool directory `from` to `to`, an incomplete one there aside to `aside`.
    fn install(&mut self, from: &Path, to: &Path, aside: &Path) -> Result<(), ToolsError> {
        if fs::symlink_metadata(to).is_ok() {
            self.create_parents(aside)?;
            self.rename(to, aside)?;
        }
        self.create_parents(to)?;
        self.rename(from, to)
    }

    fn create_parents(&mut self, path: &Path) -> Result<(), ToolsError> {
        let Some(parent) = path.parent() else {
            return Ok(());
        };
        let mut missing = Vec::new();
        let mut at = parent;
        while fs::symlink_metadata(at).is_err() {
            missing.push(at.to_owned());
            match at.parent() {
                Some(up) => at = up,
                None => break,
            }
        }
        for dir in missing.into_iter().rev() {
            fs::create_dir(&dir).map_err(io_err(&dir))?;
            self.created.push(dir);
        }
        Ok(())
    }

    fn rename(&mut self, from: &Path, to: &Path) -> Result<(), ToolsError> {
        fs::rename(from, to).map_err(io_err(to))?;
        self.done.push((from.to_owned(), to.to_owned()));
        Ok(())
    }

    /// Undoes every rename, newest first, and removes the directories created (when empty).
    fn undo(self) {
        for (from, to) in self.done.into_iter().rev() {
            if let Err(err) = fs::rename(&to, &from) {
                tracing::warn!(path = %to.display(), error = %olmpack_oci::input::describe_io(&err), "could not move back after a failed install");
            }
        }
        for dir in self.created.into_iter().rev() {
            let _ = fs::remove_dir(&dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every path under `dir` with its contents (`dir` for directories).
    fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
        let mut out = BTreeMap::new();
        let mut stack = vec![dir.to_owned()];
        while let Some(d) = stack.pop() {
            for entry in fs::read_dir(&d).unwrap() {
                let path = entry.unwrap().path();
                let rel = path.strip_prefix(dir).unwrap().to_owned();
                if path.is_dir() {
                    stack.push(path);
                    out.insert(rel, "dir".to_owned());
                } else {
                    out.insert(rel, fs::read_to_string(&path).unwrap());
                }
            }
        }
        out
    }

    /// A staged tree with every pinned tool directory whole.
    fn staged(tree: &Path) {
        for (dir, markers) in artifact_dirs() {
            for marker in markers {
                let marked = tree.join(&dir).join(&marker);
                if marker.starts_with("bin/") {
                    fs::create_dir_all(marked.parent().unwrap()).unwrap();
                    fs::write(marked, "#!/bin/sh\n").unwrap();
                } else {
                    fs::create_dir_all(marked).unwrap();
                }
            }
            fs::write(tree.join(&dir).join(STAMP), "stamp\n").unwrap();
        }
    }

    /// A tool directory holding one of the binaries built together but not another (the
    /// Kubernetes directory without kube-scheduler, OLM's without the catalog operator) is
    /// not whole: an image that holds it so installs nothing, and a cache that holds it so
    /// is not "already installed".
    #[test]
    fn a_tool_directory_lacking_one_of_its_binaries_is_incomplete() {
        use olmpack_envtest::binaries::Tool;
        for tool in [Tool::KubeScheduler, Tool::CatalogOperator] {
            let work = tempfile::tempdir().unwrap();
            let (tree, cache, staging) = (
                work.path().join("tree"),
                work.path().join("cache"),
                work.path().join("staging"),
            );
            staged(&tree);
            let binary = tool.cache_binary().unwrap();
            fs::remove_file(tree.join(&binary)).unwrap();
            let dir = tool.cache_dir().unwrap();
            assert_eq!(missing_in(&tree, &[]), vec![dir.clone()], "{tool:?}");
            let dirs = artifact_dirs();
            let err =
                move_into_place("r/tools@sha256:1", &tree, &cache, &staging, &dirs).unwrap_err();
            let lacks = format!("bin/{}", binary.file_name().unwrap().to_string_lossy());
            assert_eq!(
                err.to_string(),
                format!(
                    "r/tools@sha256:1 does not hold {} whole (the version this olmpack pins; it lacks {lacks}): it was built for another olmpack version, or is incomplete; nothing was installed",
                    dir.display()
                )
            );
            assert!(!cache.exists(), "{tool:?}: something was installed");
        }
    }

    #[test]
    fn a_move_that_fails_puts_back_every_tool_directory_moved_before_it() {
        let work = tempfile::tempdir().unwrap();
        let (tree, cache, staging) = (
            work.path().join("tree"),
            work.path().join("cache"),
            work.path().join("staging"),
        );
        staged(&tree);
        // The tool directories up to the last one whose parent no other shares (several
        // versions of one tool share theirs: a file there would fail the first of them).
        let mut dirs = dirs_for(&[]);
        let shares = |d: &Path, dirs: &[(PathBuf, Vec<String>)]| {
            dirs.iter()
                .filter(|(o, _)| o.parent() == d.parent())
                .count()
                > 1
        };
        let unique = (0..dirs.len())
            .rev()
            .find(|i| i > &0 && !shares(&dirs[*i].0, &dirs))
            .expect("a tool directory whose parent is its own");
        dirs.truncate(unique + 1);
        // An incomplete tool directory of an earlier install (moved aside, then restored),
        // and, for the last tool, a file where its parent directory goes: that move fails.
        let first = cache.join(&dirs[0].0);
        fs::create_dir_all(&first).unwrap();
        fs::write(first.join(OWNER), "installed by olmpack\n").unwrap();
        let last = cache.join(&dirs[dirs.len() - 1].0);
        let blocker = last.parent().unwrap();
        fs::create_dir_all(blocker.parent().unwrap()).unwrap();
        fs::write(blocker, "in the way\n").unwrap();
        let before = (snapshot(&cache), snapshot(&tree));
        let err = move_into_place("r/tools@sha256:1", &tree, &cache, &staging, &dirs).unwrap_err();
        assert!(
            matches!(&err, ToolsError::Io { path, .. } if *path == last),
            "{err:?}"
        );
        assert_eq!(snapshot(&cache), before.0, "the cache changed");
        let mut tree_after = snapshot(&tree);
        tree_after.retain(|p, _| !p.ends_with(OWNER));
        assert_eq!(tree_after, before.1, "a staged directory is lost");
    }

    /// The image carries every pinned minor; a run needs the default one and those it asks
    /// for, and pulls only their layers.
    #[test]
    fn only_the_kubernetes_minors_asked_for_are_needed_and_pulled() {
        let others: Vec<KubeMinor> = KubeMinor::pinned()
            .into_iter()
            .filter(|m| !m.is_default())
            .collect();
        assert!(!others.is_empty(), "tools.toml pins more than one minor");
        let work = tempfile::tempdir().unwrap();
        let tree = work.path().join("tree");
        staged(&tree);
        for minor in &others {
            fs::remove_dir_all(tree.join(minor.cache_dir())).unwrap();
        }
        assert_eq!(missing_in(&tree, &[]), Vec::<PathBuf>::new());
        assert_eq!(
            missing_in(&tree, &[KubeMinor::default()]),
            Vec::<PathBuf>::new()
        );
        assert_eq!(missing_in(&tree, &others[..1]), vec![others[0].cache_dir()]);
        let all = artifact_dirs();
        let names: Vec<String> = all
            .iter()
            .map(|(d, _)| olmpack_oci::input::slash_path(d))
            .collect();
        let config = serde_json::json!({"config": {"Labels": {TOOLS_LABEL: names.join(",")}}});
        let wanted = dirs_for(&others[..1]);
        let pulled: Vec<&str> = (0..names.len())
            .filter(|i| wanted_layer(&config, *i, &wanted))
            .map(|i| names[i].as_str())
            .collect();
        assert_eq!(pulled.len(), all.len() - others.len() + 1, "{pulled:?}");
        let first = olmpack_oci::input::slash_path(&others[0].cache_dir());
        assert!(pulled.contains(&first.as_str()), "{pulled:?}");
        for minor in &others[1..] {
            let name = olmpack_oci::input::slash_path(&minor.cache_dir());
            assert!(
                !pulled.contains(&name.as_str()),
                "{name} pulled: {pulled:?}"
            );
        }
    }
}
