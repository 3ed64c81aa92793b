//! operator-sdk's scorecard `Configuration` (`kustomize build config/manifests` includes
//! config/scorecard). operator-sdk writes it to a bundle's `tests/scorecard/config.yaml`, where
//! `operator-sdk scorecard` looks by default, and its bundle.Dockerfile copies that directory
//! into the bundle image; OLM and opm never read it. olmpack does the same: the Configuration
//! is carried to `<version>/tests/scorecard/config.yaml`, the Dockerfile copies it, and
//! `olmpack image build bundle` adds it to the image.

use super::csv::clean_object;
use super::files::BundleFilesError;
use super::inputs::Sourced;
use crate::output::FileTree;
use olmpack_model::report::Finding;

/// The scorecard configuration's API group.
pub const GROUP: &str = "scorecard.operatorframework.io";

/// Where a bundle carries the configuration.
pub const FILE: &str = "tests/scorecard/config.yaml";

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
