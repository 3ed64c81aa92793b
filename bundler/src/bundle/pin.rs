//! Pinning image references to digests: every image a bundle runs or lists
//! (`spec.relatedImages`, deployment containers and init containers, `RELATED_IMAGE_*` env
//! values, the `containerImage` annotation) is rewritten from `repo:tag` to `repo@sha256:…`.
//!
//! Pure: the caller says what each reference becomes ([`rewrite`]), so generation stays free
//! of network access unless pinning is asked for.
#![warn(missing_docs)]

use olmpack_model::csv::ClusterServiceVersion;

/// What an image reference becomes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rewrite {
    /// Pinned to this digest (`sha256:…`): `repo:tag` becomes `repo@sha256:…`.
    Digest(String),
    /// Replaced by this whole reference: the image as published to another repository
    /// (`olmpack release` with a target registry).
    Image(String),
}

/// Rewrites every image reference of the CSV as `rewrite_of` says (`None`: left as it is),
/// asking once for each place an image stands.
pub fn rewrite(
    csv: &mut ClusterServiceVersion,
    rewrite_of: &mut dyn FnMut(&str) -> Option<Rewrite>,
) {
    visit(csv, &mut |image| match rewrite_of(image) {
        Some(Rewrite::Digest(digest)) => *image = pinned(image, &digest),
        Some(Rewrite::Image(reference)) => *image = reference,
        None => {}
    });
}

/// `host/repo:tag` + `sha256:…` → `host/repo@sha256:…` (a reference that already has a digest
/// keeps its repository and gets the resolved digest).
pub fn pinned(reference: &str, digest: &str) -> String {
    let without_digest = reference.split('@').next().unwrap_or(reference);
    let last_slash = without_digest.rfind('/').map_or(0, |i| i + 1);
    let repository = match without_digest[last_slash..].rfind(':') {
        Some(colon) => &without_digest[..last_slash + colon],
        None => without_digest,
    };
    format!("{repository}@{digest}")
}

fn visit(csv: &mut ClusterServiceVersion, f: &mut dyn FnMut(&mut String)) {
    let mut apply = |image: Option<&mut String>| {
        if let Some(image) = image
            && !image.is_empty()
        {
            f(image);
        }
    };
    let annotations = csv.metadata.as_mut().and_then(|m| m.annotations.as_mut());
    apply(annotations.and_then(|a| a.get_mut("containerImage")));
    let Some(spec) = csv.spec.as_mut() else {
        return;
    };
    for image in spec.related_images.iter_mut().flatten() {
        apply(image.image.as_mut());
    }
    let strategy = spec.install.as_mut().and_then(|i| i.spec.as_mut());
    let deployments = strategy.and_then(|s| s.deployments.as_mut());
    for deployment in deployments.into_iter().flatten() {
        let template = deployment.spec.as_mut().and_then(|s| s.template.as_mut());
        let Some(pod) = template.and_then(|t| t.spec.as_mut()) else {
            continue;
        };
        let init = pod.init_containers.iter_mut().flatten();
        for container in pod.containers.iter_mut().flatten().chain(init) {
            apply(container.image.as_mut());
            for var in container.env.iter_mut().flatten() {
                let related =
                    (var.name.as_deref()).is_some_and(|n| n.starts_with("RELATED_IMAGE_"));
                if related {
                    apply(var.value.as_mut());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pinned_drops_the_tag_and_keeps_registry_ports() {
        let d = "sha256:abc";
        assert_eq!(pinned("quay.io/a/b:v1", d), "quay.io/a/b@sha256:abc");
        assert_eq!(
            pinned("127.0.0.1:5000/a/b:v1", d),
            "127.0.0.1:5000/a/b@sha256:abc"
        );
        assert_eq!(
            pinned("127.0.0.1:5000/a/b", d),
            "127.0.0.1:5000/a/b@sha256:abc"
        );
        assert_eq!(pinned("a/b:v1@sha256:old", d), "a/b@sha256:abc");
    }

    #[test]
    fn every_image_field_is_found_and_rewritten() {
        let given = json!({
            "metadata": {"annotations": {"containerImage": "r/op:v1"}},
            "spec": {
                "relatedImages": [{"name": "op", "image": "r/op:v1"}, {"name": "app", "image": "r/app:v1"}],
                "install": {"spec": {"deployments": [{"spec": {"template": {"spec": {
                    "containers": [{"image": "r/op:v1", "env": [{"name": "RELATED_IMAGE_APP", "value": "r/app:v1"}, {"name": "OTHER", "value": "r/x:v1"}]}],
                    "initContainers": [{"image": "r/init:v1"}],
                }}}}]}},
            },
        });
        let mut typed = ClusterServiceVersion::from_value(&given).expect("a CSV");
        let mut asked = std::collections::BTreeSet::new();
        rewrite(&mut typed, &mut |image| {
            asked.insert(image.to_owned());
            Some(Rewrite::Digest(format!("sha256:{}", image.len())))
        });
        let asked: Vec<String> = asked.into_iter().collect();
        assert_eq!(asked, ["r/app:v1", "r/init:v1", "r/op:v1"]);
        let csv = typed.to_value();
        assert_eq!(
            csv["metadata"]["annotations"]["containerImage"],
            "r/op@sha256:7"
        );
        assert_eq!(csv["spec"]["relatedImages"][1]["image"], "r/app@sha256:8");
        let pod = &csv["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"];
        assert_eq!(pod["containers"][0]["env"][0]["value"], "r/app@sha256:8");
        assert_eq!(
            pod["containers"][0]["env"][1]["value"], "r/x:v1",
            "only RELATED_IMAGE_ vars are images"
        );
        assert_eq!(pod["initContainers"][0]["image"], "r/init@sha256:9");
    }

    #[test]
    fn an_image_rewrite_replaces_the_whole_reference_and_none_leaves_it() {
        let given = json!({"spec": {"relatedImages": [
            {"name": "op", "image": "r/op:v1"}, {"name": "app", "image": "r/app:v1"},
        ]}});
        let mut typed = ClusterServiceVersion::from_value(&given).expect("a CSV");
        rewrite(&mut typed, &mut |image| {
            (image == "r/op:v1").then(|| Rewrite::Image("mirror.io/op@sha256:1".to_owned()))
        });
        let csv = typed.to_value();
        assert_eq!(
            csv["spec"]["relatedImages"][0]["image"],
            "mirror.io/op@sha256:1"
        );
        assert_eq!(csv["spec"]["relatedImages"][1]["image"], "r/app:v1");
    }
}
