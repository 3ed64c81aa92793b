//! Images: the `containerImage` annotation and `relatedImages`.

use std::collections::BTreeMap;

use super::super::inputs::Sourced;
use olmpack_model::csv::RelatedImage;
use olmpack_model::decode;
use olmpack_model::objects::Container;
use olmpack_model::report::Finding;

/// The image of the first container of the first deployment (by name).
pub(super) fn container_image(deployments: &[Sourced]) -> Option<String> {
    let mut sorted: Vec<&Sourced> = deployments.iter().collect();
    sorted.sort_by(|a, b| a.name().cmp(b.name()));
    let deployment = sorted.first()?.deployment();
    let first = deployment.pod()?.containers.as_ref()?.first()?;
    first.image.clone()
}

/// Images of every container and init container, and of `RELATED_IMAGE_*` env vars; one entry
/// per image, named after the container (or the env var's suffix), sorted by name.
pub(super) fn related_images(
    deployments: &[Sourced],
    notes: &mut Vec<Finding>,
) -> Vec<RelatedImage> {
    let mut by_image = ImageNames::default();
    for deployment in deployments {
        let view = deployment.deployment();
        let Some(pod) = view.pod() else {
            continue;
        };
        // Init containers first, so that notes come in the order the pod starts them.
        for (list, containers) in pod.container_lists().into_iter().rev() {
            for container in containers {
                let name = container.name();
                by_image.add(
                    name.to_owned(),
                    format!("{}-{name}", deployment.name()),
                    decode::text(&container.image),
                );
                by_image.add_env(deployment, list, container, notes);
            }
        }
    }
    // A name several images share (Kyverno's controllers all name their container
    // `controller`) gives way to the deployment-qualified one for each of them.
    let mut uses: BTreeMap<&str, usize> = BTreeMap::new();
    for (name, _) in by_image.0.values() {
        *uses.entry(name.as_str()).or_default() += 1;
    }
    let mut images: Vec<RelatedImage> = by_image
        .0
        .iter()
        .map(|(image, (name, qualified))| {
            let name = if uses[name.as_str()] > 1 {
                qualified
            } else {
                name
            };
            RelatedImage {
                name: Some(name.clone()),
                image: Some(image.clone()),
                ..RelatedImage::default()
            }
        })
        .collect();
    images.sort_by(|a, b| (&a.name, &a.image).cmp(&(&b.name, &b.image)));
    images
}

/// Image → the least name it was found under, with that name qualified by its deployment
/// (`<deployment>-<name>`, used when another image has the same name).
#[derive(Default)]
struct ImageNames(BTreeMap<String, (String, String)>);

impl ImageNames {
    fn add(&mut self, name: String, qualified: String, image: &str) {
        if image.is_empty() {
            return;
        }
        self.0
            .entry(image.to_owned())
            .and_modify(|existing| {
                if (&name, &qualified) < (&existing.0, &existing.1) {
                    *existing = (name.clone(), qualified.clone());
                }
            })
            .or_insert((name, qualified));
    }

    /// Adds the literal `RELATED_IMAGE_*` env vars of a container of `list`, named after their
    /// suffix; one set with `valueFrom` cannot be listed, and gets a warning.
    fn add_env(
        &mut self,
        deployment: &Sourced,
        list: &str,
        container: &Container,
        notes: &mut Vec<Finding>,
    ) {
        for var in container.env.iter().flatten() {
            let Some(suffix) = decode::text(&var.name).strip_prefix("RELATED_IMAGE_") else {
                continue;
            };
            if var.value_from.is_some() {
                notes.push(deployment.finding(
                    Finding::warning(
                        "input/related-image-value-from",
                        format!("RELATED_IMAGE_{suffix} uses valueFrom; only literal values can be listed in relatedImages"),
                    )
                    .field(format!("spec.template.spec.{list}")),
                ));
                continue;
            }
            let name = suffix.to_lowercase().replace('_', "-");
            let qualified = format!("{}-{name}", deployment.name());
            self.add(name, qualified, decode::text(&var.value));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::{Value, json};

    use super::*;

    fn deployment(name: &str, containers: Value) -> Sourced {
        Sourced {
            file: PathBuf::from("m.yaml"),
            index: 0,
            value: json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                "spec": {"template": {"spec": {"containers": containers}}}}),
        }
    }

    #[test]
    fn a_name_several_images_share_is_qualified_by_the_deployment() {
        let deployments = [
            deployment(
                "kyverno-admission-controller",
                json!([{"name": "kyverno", "image": "r/kyverno:1"}]),
            ),
            deployment(
                "kyverno-background-controller",
                json!([{"name": "controller", "image": "r/background:1"}]),
            ),
            deployment(
                "kyverno-cleanup-controller",
                json!([{"name": "controller", "image": "r/cleanup:1"}]),
            ),
            // The same image under the same name stays one unqualified entry.
            deployment("a", json!([{"name": "proxy", "image": "r/proxy:1"}])),
            deployment("b", json!([{"name": "proxy", "image": "r/proxy:1"}])),
        ];
        let mut notes = Vec::new();
        let images = related_images(&deployments, &mut notes);
        assert_eq!(
            serde_json::to_value(images).unwrap(),
            json!([
                {"image": "r/kyverno:1", "name": "kyverno"},
                {"image": "r/background:1", "name": "kyverno-background-controller-controller"},
                {"image": "r/cleanup:1", "name": "kyverno-cleanup-controller-controller"},
                {"image": "r/proxy:1", "name": "proxy"},
            ])
        );
        assert!(notes.is_empty());
    }
}
