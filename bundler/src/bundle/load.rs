//! Reading a registry+v1 bundle directory from disk, whoever made it.
//!
//! Contract:
//! - [`load_dir`] reads `manifests/` (every `*.yaml`, `*.yml`, `*.json`, multi-document
//!   streams allowed), `metadata/annotations.yaml`, and the optional `metadata/properties.yaml`
//!   and `metadata/dependencies.yaml`. It fails only when the directory cannot be read at all;
//!   everything else that is wrong with the bundle (bad YAML, no CSV, two CSVs, unknown kinds)
//!   is kept as data ([`LoadedBundle::problems`]) for the validator to report, so one run
//!   shows every problem.
//! - Objects keep the file they came from and their index in it, so findings can name both.
//! - Files are visited in sorted path order: loading is deterministic.
#![warn(missing_docs)]

use olmpack_oci::input::Limits;
use std::borrow::Cow;

use olmpack_model::objects::{CustomResourceDefinition, Identity};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The bundle's fixed layout.
pub const MANIFESTS_DIR: &str = "manifests";
/// Directory of the bundle metadata files, relative to the bundle directory.
pub const METADATA_DIR: &str = "metadata";
/// The bundle's image labels, relative to the bundle directory.
pub const ANNOTATIONS_FILE: &str = "metadata/annotations.yaml";
/// Bundle properties declared by the author, relative to the bundle directory.
pub const PROPERTIES_FILE: &str = "metadata/properties.yaml";
/// Bundle dependencies declared by the author, relative to the bundle directory.
pub const DEPENDENCIES_FILE: &str = "metadata/dependencies.yaml";

/// Failure to read a bundle directory at all.
#[derive(Debug, thiserror::Error)]
pub enum BundleLoadError {
    /// The bundle path is missing or is a file.
    #[error("bundle directory {path} does not exist or is not a directory")]
    NotADirectory {
        /// The path given.
        path: PathBuf,
    },
    /// Reading the files of the bundle directory failed.
    #[error("failed to read bundle directory {path}")]
    Read {
        /// The bundle directory.
        path: PathBuf,
        /// Why reading failed.
        #[source]
        source: olmpack_oci::input::InputError,
    },
    /// A file opm reads (directly in the bundle, `manifests/` or `metadata/`) cannot be read
    /// at all: a FIFO, a device, a socket, a symlink loop or one leading outside, too large.
    /// Every command that reads bundles refuses it alike ([`load_dir`], `catalog render`,
    /// `image build`): what cannot be read cannot be validated, packaged or
    /// put through opm's render.
    #[error("{0}")]
    Unreadable(Box<UnreadableFile>),
}

/// A bundle file that cannot be read at all (see [`BundleLoadError::Unreadable`]).
#[derive(Debug)]
pub struct UnreadableFile {
    /// The bundle directory, as given.
    pub dir: String,
    /// The first such file, relative to the bundle directory.
    pub file: String,
    /// Why it cannot be read, in our words.
    pub message: String,
    /// The other such files.
    pub more: Vec<String>,
    /// True when olmpack refuses the file (exit 1); false when the system could not read it
    /// (no permission, an I/O failure: exit 2).
    pub refusal: bool,
}

impl std::fmt::Display for UnreadableFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "bundle {}: {}: {}", self.dir, self.file, self.message)?;
        if !self.more.is_empty() {
            write!(
                f,
                " (and {} more unreadable file(s): {})",
                self.more.len(),
                self.more.join(", ")
            )?;
        }
        Ok(())
    }
}

/// A bundle olmpack refuses (exit 1), or one the system cannot read (exit 2).
impl crate::refusal::Refusal for BundleLoadError {
    fn refuses_input(&self) -> bool {
        match self {
            BundleLoadError::NotADirectory { .. } => false,
            BundleLoadError::Read { source, .. } => source.is_refusal(),
            BundleLoadError::Unreadable(u) => u.refusal,
        }
    }
}

/// Refuses a bundle one of whose files opm reads cannot be read at all (see
/// [`BundleLoadError::Unreadable`]); unreadable files deeper down (which opm does not read)
/// stay in `tree` for the validator to report.
pub fn refuse_unreadable(
    dir: &Path,
    tree: &mut olmpack_oci::input::Tree,
) -> Result<(), BundleLoadError> {
    let (read_by_opm, deeper): (Vec<_>, Vec<_>) = std::mem::take(&mut tree.refused)
        .into_iter()
        .partition(|r| r.file.components().count() <= 2);
    tree.refused = deeper;
    let Some((first, rest)) = read_by_opm.split_first() else {
        return Ok(());
    };
    Err(BundleLoadError::Unreadable(Box::new(UnreadableFile {
        dir: dir.display().to_string(),
        file: first.file.display().to_string(),
        message: first.message(),
        more: rest.iter().map(|r| r.file.display().to_string()).collect(),
        refusal: first.error.is_refusal(),
    })))
}

/// One Kubernetes object read from a manifest file.
#[derive(Clone, Debug, PartialEq)]
pub struct Object {
    /// Path relative to the bundle directory, e.g. `manifests/foo.crd.yaml`.
    pub file: PathBuf,
    /// Index of the document within the file (0 for single-document files).
    pub index: usize,
    /// The object as JSON.
    pub value: Value,
}

impl Object {
    /// `kind`, or empty when absent.
    pub fn kind(&self) -> &str {
        Identity::of(&self.value).kind
    }

    /// `apiVersion`, or empty when absent.
    pub fn api_version(&self) -> &str {
        Identity::of(&self.value).api_version
    }

    /// `metadata.name`, or empty when absent.
    pub fn name(&self) -> &str {
        Identity::of(&self.value).name
    }

    /// `Kind/name`, as findings name objects.
    pub fn display_name(&self) -> String {
        format!("{}/{}", self.kind(), self.name())
    }
}

/// A CustomResourceDefinition as read (`object`, for locating findings) and in the v1
/// shape (`v1`, for reading its fields).
#[derive(Clone, Debug)]
pub struct Crd<'a> {
    /// The object as read.
    pub object: &'a Object,
    /// The CRD converted to `apiextensions.k8s.io/v1` (borrowed when it already is).
    pub v1: Cow<'a, Value>,
}

impl<'a> Crd<'a> {
    /// Reads `object` as a CRD of either API version.
    pub fn new(object: &'a Object) -> Self {
        Self {
            object,
            v1: crate::bundle::crd_v1beta1::to_v1(&object.value),
        }
    }

    /// `metadata.name`.
    pub fn name(&self) -> &'a str {
        self.object.name()
    }

    /// The CRD in the v1 shape, typed (leniently, see [`olmpack_model::objects`]).
    pub fn typed(&self) -> CustomResourceDefinition {
        olmpack_model::objects::view(&self.v1)
    }

    /// Whether the file wrote it in the removed v1beta1 API.
    pub fn is_v1beta1(&self) -> bool {
        crate::bundle::crd_v1beta1::is_v1beta1(&self.object.value)
    }
}

/// A file that could not be used, with the reason (reported by the validator).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileProblem {
    /// The file, relative to the bundle directory.
    pub file: PathBuf,
    /// Why it could not be used.
    pub message: String,
}

/// Everything read from a bundle directory.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoadedBundle {
    /// The bundle directory as given.
    pub dir: PathBuf,
    /// Every object from `manifests/`, in file order then document order.
    pub objects: Vec<Object>,
    /// `annotations` from `metadata/annotations.yaml`, if the file parsed.
    pub annotations: Option<BTreeMap<String, String>>,
    /// `properties` from `metadata/properties.yaml`, if present and parsed.
    pub properties: Option<Vec<Value>>,
    /// `dependencies` from `metadata/dependencies.yaml`, if present and parsed.
    pub dependencies: Option<Vec<Value>>,
    /// Files that exist but could not be used.
    pub problems: Vec<FileProblem>,
    /// What was read the lenient way Go's decoders read it (e.g. a key given twice: the last
    /// value wins), reported as warnings.
    pub lenient: Vec<FileProblem>,
    /// Every file of the bundle (relative path → contents), for layout and size checks.
    pub files: BTreeMap<PathBuf, Vec<u8>>,
}

impl LoadedBundle {
    /// The ClusterServiceVersion objects (a valid bundle has exactly one).
    pub fn csvs(&self) -> impl Iterator<Item = &Object> {
        self.objects
            .iter()
            .filter(|o| o.kind() == "ClusterServiceVersion")
    }

    /// The CustomResourceDefinition objects, each with its v1 form (v1beta1 converted by
    /// [`crate::bundle::crd_v1beta1`]).
    pub fn crds(&self) -> impl Iterator<Item = Crd<'_>> {
        self.objects
            .iter()
            .filter(|o| o.kind() == "CustomResourceDefinition")
            .map(Crd::new)
    }

    /// The one CSV, when there is exactly one.
    pub fn csv(&self) -> Option<&Object> {
        let mut csvs = self.csvs();
        match (csvs.next(), csvs.next()) {
            (Some(csv), None) => Some(csv),
            _ => None,
        }
    }

    /// An annotation from `metadata/annotations.yaml`.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.as_ref()?.get(key).map(String::as_str)
    }
}

/// Reads the bundle at `dir` (see the module contract) under the default [`Limits`].
pub fn load_dir(dir: &Path) -> Result<LoadedBundle, BundleLoadError> {
    load_dir_with(dir, &Limits::default())
}

/// [`load_dir`] under `limits` (the command line's `--max-*` flags).
pub fn load_dir_with(dir: &Path, limits: &Limits) -> Result<LoadedBundle, BundleLoadError> {
    if !dir.is_dir() {
        return Err(BundleLoadError::NotADirectory {
            path: dir.to_path_buf(),
        });
    }
    let mut tree =
        olmpack_oci::input::read_tree(dir, limits).map_err(|source| BundleLoadError::Read {
            path: dir.to_path_buf(),
            source,
        })?;
    refuse_unreadable(dir, &mut tree)?;
    let mut bundle = load_files(
        dir,
        tree.files.iter().map(|(p, c)| (p.as_path(), c.as_slice())),
    );
    bundle
        .problems
        .extend(tree.refused.iter().map(|r| FileProblem {
            file: r.file.clone(),
            message: r.message(),
        }));
    Ok(bundle)
}

/// Reads a bundle from files in memory (relative path → contents), e.g. one just generated;
/// `dir` is only used to label the result.
pub fn load_files<'a>(
    dir: &Path,
    files: impl IntoIterator<Item = (&'a Path, &'a [u8])>,
) -> LoadedBundle {
    let files: BTreeMap<&Path, &[u8]> = files.into_iter().collect();
    let mut bundle = LoadedBundle {
        dir: dir.to_path_buf(),
        ..LoadedBundle::default()
    };
    for (path, contents) in &files {
        bundle.files.insert(path.to_path_buf(), contents.to_vec());
        if path.starts_with(MANIFESTS_DIR) && is_manifest_file(path) {
            read_objects(&mut bundle, path, contents);
        }
    }
    let annotations_path = Path::new(ANNOTATIONS_FILE);
    if let Some(contents) = files.get(annotations_path) {
        bundle.annotations = read_section(&mut bundle, annotations_path, contents, "annotations")
            .and_then(|v| string_map(&mut bundle, annotations_path, v));
    }
    for (file, key) in [
        (PROPERTIES_FILE, "properties"),
        (DEPENDENCIES_FILE, "dependencies"),
    ] {
        let path = Path::new(file);
        if let Some(contents) = files.get(path) {
            let list = read_section(&mut bundle, path, contents, key).and_then(|v| match v {
                Value::Array(items) => Some(items),
                _ => {
                    bundle.problems.push(FileProblem {
                        file: path.to_path_buf(),
                        message: format!("`{key}` must be a list"),
                    });
                    None
                }
            });
            match key {
                "properties" => bundle.properties = list,
                _ => bundle.dependencies = list,
            }
        }
    }
    bundle
}

fn is_manifest_file(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml" | "json")
    )
}

fn read_objects(bundle: &mut LoadedBundle, path: &Path, contents: &[u8]) {
    let Ok(text) = std::str::from_utf8(contents) else {
        bundle.problems.push(FileProblem {
            file: path.to_path_buf(),
            message: "not UTF-8 text".to_owned(),
        });
        return;
    };
    match olmpack_model::yaml::from_multi_str_go(text) {
        Ok((docs, notes)) => {
            bundle
                .lenient
                .extend(notes.into_iter().map(|note| FileProblem {
                    file: path.to_path_buf(),
                    message: format!(
                        "document {}, line {}: {}",
                        note.document, note.line, note.message
                    ),
                }));
            for (index, value) in docs.into_iter().enumerate() {
                if !value.is_object() {
                    bundle.problems.push(FileProblem {
                        file: path.to_path_buf(),
                        message: format!("document {index} is not a Kubernetes object (a mapping)"),
                    });
                    continue;
                }
                bundle.objects.push(Object {
                    file: path.to_path_buf(),
                    index,
                    value,
                });
            }
        }
        Err(err) => bundle.problems.push(FileProblem {
            file: path.to_path_buf(),
            message: err.to_string(),
        }),
    }
}

/// Parses a metadata file and returns its top-level `key`.
fn read_section(
    bundle: &mut LoadedBundle,
    path: &Path,
    contents: &[u8],
    key: &str,
) -> Option<Value> {
    let text = match std::str::from_utf8(contents) {
        Ok(text) => text,
        Err(_) => {
            bundle.problems.push(FileProblem {
                file: path.to_path_buf(),
                message: "not UTF-8 text".to_owned(),
            });
            return None;
        }
    };
    let parsed = olmpack_model::yaml::from_str_go(text).map(|(value, notes)| {
        bundle
            .lenient
            .extend(notes.into_iter().map(|note| FileProblem {
                file: path.to_path_buf(),
                message: format!("line {}: {}", note.line, note.message),
            }));
        value
    });
    match parsed {
        Ok(Value::Object(mut map)) => match map.remove(key) {
            Some(value) => Some(value),
            None => {
                bundle.problems.push(FileProblem {
                    file: path.to_path_buf(),
                    message: format!("has no top-level `{key}` key"),
                });
                None
            }
        },
        Ok(_) => {
            bundle.problems.push(FileProblem {
                file: path.to_path_buf(),
                message: "is not a YAML mapping".to_owned(),
            });
            None
        }
        Err(err) => {
            bundle.problems.push(FileProblem {
                file: path.to_path_buf(),
                message: err.to_string(),
            });
            None
        }
    }
}

fn string_map(
    bundle: &mut LoadedBundle,
    path: &Path,
    value: Value,
) -> Option<BTreeMap<String, String>> {
    let Value::Object(map) = value else {
        bundle.problems.push(FileProblem {
            file: path.to_path_buf(),
            message: "`annotations` must be a mapping of strings".to_owned(),
        });
        return None;
    };
    let mut out = BTreeMap::new();
    for (k, v) in map {
        match v {
            Value::String(s) => {
                out.insert(k, s);
            }
            other => {
                bundle.problems.push(FileProblem {
                    file: path.to_path_buf(),
                    message: format!("annotation `{k}` must be a string, found {other}"),
                });
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn write(dir: &Path, rel: &str, text: &str) {
        let path = dir.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    #[test]
    fn reads_objects_annotations_and_keeps_problems() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(
            d,
            "manifests/a.yaml",
            "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
        );
        write(d, "manifests/broken.yaml", "a: [1\n");
        write(d, "manifests/README.md", "not a manifest");
        write(
            d,
            "metadata/annotations.yaml",
            "annotations:\n  operators.operatorframework.io.bundle.package.v1: p\n  bad: 3\n",
        );
        let b = load_dir(d).unwrap();
        assert_eq!(
            b.objects
                .iter()
                .map(Object::display_name)
                .collect::<Vec<_>>(),
            vec!["Service/s", "ConfigMap/c"]
        );
        assert_eq!(b.objects[1].index, 1);
        assert_eq!(
            b.annotation("operators.operatorframework.io.bundle.package.v1"),
            Some("p")
        );
        let problems: Vec<_> = b
            .problems
            .iter()
            .map(|p| p.file.display().to_string())
            .collect();
        assert_eq!(
            problems,
            vec!["manifests/broken.yaml", "metadata/annotations.yaml"]
        );
        assert!(b.files.contains_key(Path::new("manifests/README.md")));
    }

    #[test]
    fn a_missing_directory_is_an_error() {
        let err = load_dir(Path::new("/nonexistent/bundle")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "bundle directory /nonexistent/bundle does not exist or is not a directory"
        );
    }
}
