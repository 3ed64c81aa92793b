//! The image names of a release: the plan's references, moved to another registry on request,
//! and pinned by digest.

use olmpack_model::plan::LoadedPlan;

use super::{ReleaseError, step};

/// `reference` moved under `registry` (`host/namespace`): its last path component is kept.
pub fn retarget(reference: &str, registry: &str) -> String {
    let name = reference.rsplit('/').next().unwrap_or(reference);
    format!("{}/{name}", registry.trim_end_matches('/'))
}

/// `host/repo:tag` → `host/repo` (and the tag).
pub(super) fn split_tag(reference: &str) -> (&str, Option<&str>) {
    let last_slash = reference.rfind('/').map_or(0, |i| i + 1);
    match reference[last_slash..].rfind(':') {
        Some(colon) => (
            &reference[..last_slash + colon],
            Some(&reference[last_slash + colon + 1..]),
        ),
        None => (reference, None),
    }
}

pub(super) fn pinned(reference: &str, digest: &str) -> String {
    format!("{}@{digest}", split_tag(reference).0)
}

/// The image names of a plan, after the registry override.
#[derive(Clone, Debug)]
pub(super) struct Names {
    pub(super) operator: Option<String>,
    pub(super) bundle: String,
    pub(super) catalog: String,
}

pub(super) fn names(plan: &LoadedPlan, registry: Option<&str>) -> Result<Names, ReleaseError> {
    let missing = |field: &str| {
        ReleaseError::Step {
        step: step::PLAN,
        refused: false,
        source: format!(
            "{}: the plan names no {field}; `olmpack release` publishes every image under the name the plan gives it",
            plan.path.display()
        )
        .into(),
    }
    };
    let bundle = plan
        .plan
        .bundle_image
        .clone()
        .ok_or_else(|| missing("bundleImage"))?;
    let catalog = plan
        .plan
        .catalog_image
        .clone()
        .ok_or_else(|| missing("catalogImage"))?;
    let move_to = |r: String| match registry {
        Some(registry) => retarget(&r, registry),
        None => r,
    };
    Ok(Names {
        operator: plan.plan.operator_image.clone().map(move_to),
        bundle: move_to(bundle),
        catalog: move_to(catalog),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_move_to_the_target_registry_keeping_name_and_tag() {
        let cases = [
            (
                "quay.io/acme/op-bundle:v{version}",
                "ghcr.io/me",
                "ghcr.io/me/op-bundle:v{version}",
            ),
            (
                "quay.io/acme/op:v1",
                "127.0.0.1:5000/x/",
                "127.0.0.1:5000/x/op:v1",
            ),
            ("op:latest", "localhost:5000", "localhost:5000/op:latest"),
        ];
        for (reference, registry, expected) in cases {
            assert_eq!(retarget(reference, registry), expected);
        }
        assert_eq!(
            split_tag("127.0.0.1:5000/a/b:v1"),
            ("127.0.0.1:5000/a/b", Some("v1"))
        );
        assert_eq!(
            split_tag("127.0.0.1:5000/a/b"),
            ("127.0.0.1:5000/a/b", None)
        );
        assert_eq!(pinned("r.io/a:v1", "sha256:1"), "r.io/a@sha256:1");
    }
}
