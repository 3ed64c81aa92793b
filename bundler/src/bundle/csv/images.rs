//! Images: the `containerImage` annotation and `relatedImages`.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::super::manifests::Sourced;
use crate::json::str_at;
use crate::report::Finding;

/// The image of the first container of the first deployment (by name).
pub(super) fn container_image(deployments: &[Sourced]) -> Option<String> {
    let mut sorted: Vec<&Sourced> = deployments.iter().collect();
    sorted.sort_by(|a, b| a.name().cmp(b.name()));
    sorted
        .first()
        .and_then(|d| d.value.pointer("/spec/template/spec/containers/0/image"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Images of every container and init container, and of `RELATED_IMAGE_*` env vars; one entry
/// per image, named after the container (or the env var's suffix), sorted by name.
pub(super) fn related_images(deployments: &[Sourced], notes: &mut Vec<Finding>) -> Vec<Value> {
    let mut by_image = ImageNames::default();
    for deployment in deployments {
        for list in ["initContainers", "containers"] {
            let containers = deployment
                .value
                .pointer(&format!("/spec/template/spec/{list}"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten();
            for container in containers {
                by_image.add(
                    str_at(container, "/name").to_owned(),
                    str_at(container, "/image"),
                );
                by_image.add_env(deployment, list, container, notes);
            }
        }
    }
    let mut images: Vec<Value> = by_image
        .0
        .into_iter()
        .map(|(image, name)| json!({ "image": image, "name": name }))
        .collect();
    images.sort_by(|a, b| {
        (str_at(a, "/name"), str_at(a, "/image")).cmp(&(str_at(b, "/name"), str_at(b, "/image")))
    });
    images
}

/// Image → the least name it was found under.
#[derive(Default)]
struct ImageNames(BTreeMap<String, String>);

impl ImageNames {
    fn add(&mut self, name: String, image: &str) {
        if image.is_empty() {
            return;
        }
        self.0
            .entry(image.to_owned())
            .and_modify(|existing| {
                if name < *existing {
                    *existing = name.clone();
                }
            })
            .or_insert(name);
    }

    /// Adds the literal `RELATED_IMAGE_*` env vars of a container of `list`, named after their
    /// suffix; one set with `valueFrom` cannot be listed, and gets a warning.
    fn add_env(
        &mut self,
        deployment: &Sourced,
        list: &str,
        container: &Value,
        notes: &mut Vec<Finding>,
    ) {
        for var in container
            .get("env")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(suffix) = str_at(var, "/name").strip_prefix("RELATED_IMAGE_") else {
                continue;
            };
            if var.get("valueFrom").is_some() {
                notes.push(deployment.finding(
                    Finding::warning(
                        "input/related-image-value-from",
                        format!("RELATED_IMAGE_{suffix} uses valueFrom; only literal values can be listed in relatedImages"),
                    )
                    .field(format!("spec.template.spec.{list}")),
                ));
                continue;
            }
            self.add(
                suffix.to_lowercase().replace('_', "-"),
                str_at(var, "/value"),
            );
        }
    }
}
