//! `alm-examples`: the sample custom resources an owned CRD serves.

use std::collections::BTreeSet;

use serde_json::Value;

use super::super::inputs::{Inputs, Sourced};
use super::ReleaseSpec;
use super::objects::clean_object;
use olmpack_model::csv::CrdDescription;
use olmpack_model::decode::text;
use olmpack_model::objects::Identity;
use olmpack_model::report::Finding;

/// `alm-examples`: a JSON array of sample objects whose kind and version an owned CRD serves.
///
/// Plan-wide samples and custom resources among the manifests apply where their version is
/// served and are quietly left out elsewhere; a sample listed for this release alone that no
/// owned CRD serves is an error.
pub(super) fn alm_examples(
    spec: &ReleaseSpec<'_>,
    inputs: &Inputs,
    owned: &[CrdDescription],
    problems: &mut Vec<Finding>,
) -> String {
    let served = served_kinds(owned);
    let gvk = |s: &Sourced| (s.api_version().to_owned(), s.kind().to_owned());
    let mut samples: Vec<Value> = Vec::new();
    // Plan-wide samples apply where their version is served; the others are quietly left
    // out (a v1alpha1 sample after v1alpha1 stopped being served).
    for sample in spec.samples.iter().chain(&inputs.custom_resources) {
        if served.contains(&gvk(sample)) {
            samples.push(clean_object(&sample.value));
        }
    }
    for sample in spec.release_samples {
        if served.contains(&gvk(sample)) {
            samples.push(clean_object(&sample.value));
        } else {
            problems.push(not_owned(sample));
        }
    }
    samples.sort_by(|a, b| Identity::of(a).cmp(&Identity::of(b)));
    samples.dedup();
    serde_json::to_string_pretty(&samples).expect("JSON values always serialize")
}

/// `(apiVersion, kind)` of every owned entry.
fn served_kinds(owned: &[CrdDescription]) -> BTreeSet<(String, String)> {
    owned
        .iter()
        .map(|o| {
            let group = text(&o.name).split_once('.').map_or("", |(_, g)| g);
            (
                format!("{group}/{}", text(&o.version)),
                text(&o.kind).to_owned(),
            )
        })
        .collect()
}

fn not_owned(sample: &Sourced) -> Finding {
    sample.finding(
        Finding::error(
            "plan/sample-not-owned",
            format!(
                "no owned CRD of this release serves {} {}",
                sample.api_version(),
                sample.kind()
            ),
        )
        .field("apiVersion"),
    )
}
