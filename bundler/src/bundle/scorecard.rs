//! operator-sdk's scorecard `Configuration` (`kustomize build config/manifests` includes
//! config/scorecard; `make bundle` writes it to `bundle/tests/scorecard/config.yaml`, next to
//! the `bundle/manifests/` a plan may name). operator-sdk writes it to a bundle's
//! `tests/scorecard/config.yaml`, where `operator-sdk scorecard` looks by default, names it in
//! two annotations (`operators.operatorframework.io.test.mediatype.v1: scorecard+v1`,
//! `operators.operatorframework.io.test.config.v1: tests/scorecard/`, in
//! metadata/annotations.yaml and as bundle.Dockerfile labels), and its bundle.Dockerfile copies
//! that directory into the bundle image; OLM and opm never read it. olmpack does the same: the
//! Configuration is carried to `<version>/tests/scorecard/config.yaml` with both annotations,
//! the Dockerfile copies it, and `olmpack image build bundle` adds it to the image.

use std::collections::BTreeMap;
use std::path::Path;

use super::csv::clean_object;
use super::files::BundleFilesError;
use super::inputs::{Inputs, Sourced};
use olmpack_model::report::Finding;
use olmpack_oci::input::Limits;
use olmpack_oci::output::FileTree;

/// The scorecard configuration's API group.
pub const GROUP: &str = "scorecard.operatorframework.io";

/// Where a bundle carries the configuration.
pub const FILE: &str = "tests/scorecard/config.yaml";

/// The annotation (and image label) naming the tests' format, and its value.
pub const MEDIATYPE: (&str, &str) = (
    "operators.operatorframework.io.test.mediatype.v1",
    "scorecard+v1",
);

/// The annotation (and image label) naming the tests' directory in the image, and its value.
pub const CONFIG: (&str, &str) = (
    "operators.operatorframework.io.test.config.v1",
    "tests/scorecard/",
);

/// The bundle labels of a bundle carrying a configuration: `labels` (the plan's) with the two
/// test annotations operator-sdk writes, unless the plan sets them itself (the plan wins).
pub fn labels(
    labels: &BTreeMap<String, String>,
    config: Option<&Sourced>,
) -> BTreeMap<String, String> {
    let mut labels = labels.clone();
    if config.is_some() {
        for (key, value) in [MEDIATYPE, CONFIG] {
            labels
                .entry(key.to_owned())
                .or_insert_with(|| value.to_owned());
        }
    }
    labels
}

/// Reads the Configuration of the bundle whose `manifests/` is `dir` from `../tests/scorecard/
/// config.yaml`, where `make bundle` writes it (when a CSV was imported and the file is there,
/// inside `root`): kept as one read among the manifests. A file that is not one Configuration
/// is left out with a warning naming it (only `operator-sdk scorecard` reads it).
pub fn read_beside_bundle(dir: &Path, root: Option<&Path>, inputs: &mut Inputs, limits: &Limits) {
    let bundle = match dir.parent() {
        Some(parent) if dir.file_name().is_some() => parent.to_path_buf(),
        _ => dir.join(".."),
    };
    let file = bundle.join(FILE);
    if inputs.imported.is_none() || !file.is_file() {
        return;
    }
    let policy = olmpack_oci::input::Policy {
        limits: *limits,
        allow_outside_paths: false,
    };
    if let Some(root) = root
        && let Ok(relative) = file.strip_prefix(root)
        && olmpack_oci::input::inside(root, relative, &policy).is_err()
    {
        return;
    }
    let value = olmpack_oci::input::text(&file, limits)
        .map_err(|e| e.to_string())
        .and_then(|text| olmpack_model::yaml::from_str(&text).map_err(|e| e.to_string()));
    let object = match value {
        Ok(value) => Sourced {
            file: file.clone(),
            index: 0,
            value,
        },
        Err(problem) => return left_out(inputs, &file, &problem),
    };
    let group = object.api_version().split('/').next().unwrap_or_default();
    if object.kind() != "Configuration" || group != GROUP {
        let problem = format!(
            "it holds {} {:?}, not a {GROUP} Configuration",
            object.kind(),
            object.api_version()
        );
        return left_out(inputs, &file, &problem);
    }
    keep(&mut inputs.scorecard, object, &mut inputs.notes);
}

fn left_out(inputs: &mut Inputs, file: &Path, problem: &str) {
    inputs.notes.push(
        Finding::warning(
            "input/scorecard-unreadable",
            format!("the bundle's scorecard configuration is not carried: {problem}"),
        )
        .file(file.display().to_string()),
    );
}

/// Keeps the first Configuration (info), drops any other (warning).
pub fn keep(kept: &mut Option<Sourced>, object: Sourced, notes: &mut Vec<Finding>) {
    if let Some(first) = kept {
        notes.push(object.finding(Finding::warning(
            "input/scorecard-second",
            format!(
                "a second scorecard Configuration is left out: a bundle carries one, and {} is in {}",
                first.display(),
                first.location()
            ),
        )));
        return;
    }
    notes.push(object.finding(Finding::info(
        "input/scorecard-kept",
        format!("the scorecard Configuration goes to the bundle's {FILE}, where operator-sdk puts it (OLM and opm never read it)"),
    )));
    *kept = Some(object);
}

/// Adds the configuration to a laid-out bundle, and the COPY line to its Dockerfile.
pub fn carry(tree: &mut FileTree, config: Option<&Sourced>) -> Result<(), BundleFilesError> {
    let Some(config) = config else {
        return Ok(());
    };
    let text = olmpack_model::yaml::to_string(&clean_object(&config.value)).map_err(|source| {
        BundleFilesError::Yaml {
            file: FILE.to_owned(),
            source,
        }
    })?;
    tree.insert(FILE, text)?;
    let dockerfile = tree
        .get(std::path::Path::new("bundle.Dockerfile"))
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default();
    tree.insert(
        "bundle.Dockerfile",
        format!("{dockerfile}COPY tests/scorecard /tests/scorecard/\n"),
    )?;
    Ok(())
}
