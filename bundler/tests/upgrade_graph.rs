//! One upgrade graph: the CSVs' `replaces`/`skips`/`olm.skipRange` and the catalog's channel
//! entries, both as the release job writes them, agree — for the reproduced bug (policy `none`,
//! `replaces: ""`) and for random plans.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use olmpack::build::{BuildError, Built, build};
use olmpack::bundle::generate::GenerateOptions;
use olmpack::catalog::generate::CatalogGenerateError as CatalogError;
use olmpack_envtest::binaries::Tool;
use olmpack_model::plan::LoadedPlan;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::Value;

const PACKAGE: &str = "guestbook-operator";

/// Edges as a CSV or a channel entry holds them: (replaces, skips, skipRange).
type Edges = (Option<String>, Vec<String>, Option<String>);

/// A plan next to the example's manifests (every release packs `deploy/1.0.0`), so nothing is
/// copied: the plan is parsed from text, its paths resolved against the example directory.
fn plan(header: &str, releases: &[String]) -> LoadedPlan {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("example");
    let text = format!(
        "package: {PACKAGE}\n{header}\nbundleImage: quay.io/olmpack/guestbook-operator-bundle:v{{version}}\ncreatedAt: \"2026-01-15T00:00:00Z\"\ncsv: {{displayName: Guestbook, description: d, provider: {{name: p}}}}\nreleases:\n{}",
        releases
            .iter()
            .map(|r| format!("- {{manifests: deploy/1.0.0, {r}}}\n"))
            .collect::<String>()
    );
    olmpack_model::plan::parse(&example.join("graph-test.yaml"), &text).unwrap()
}

fn bundle(version: &str) -> String {
    format!("{PACKAGE}.v{version}")
}

/// The edges each generated CSV carries, by bundle name.
fn csv_edges(output: &Built) -> BTreeMap<String, Edges> {
    let mut out = BTreeMap::new();
    for (path, contents) in output.bundles.iter() {
        if !path
            .to_string_lossy()
            .ends_with(".clusterserviceversion.yaml")
        {
            continue;
        }
        let csv: Value =
            olmpack_model::yaml::from_str(std::str::from_utf8(contents).unwrap()).unwrap();
        let text = |v: &Value| v.as_str().map(str::to_owned);
        let skips = csv["spec"]["skips"]
            .as_array()
            .map(|s| s.iter().filter_map(text).collect())
            .unwrap_or_default();
        out.insert(
            text(&csv["metadata"]["name"]).unwrap(),
            (
                text(&csv["spec"]["replaces"]),
                skips,
                text(&csv["metadata"]["annotations"]["olm.skipRange"]),
            ),
        );
    }
    out
}

/// The entries of every channel of the generated `catalog.json`: channel → bundle → edges.
fn channel_entries(output: &Built) -> BTreeMap<String, BTreeMap<String, Edges>> {
    let (_, text) = output
        .catalog
        .files
        .iter()
        .find(|(p, _)| p.ends_with("catalog.json"))
        .unwrap();
    let mut out = BTreeMap::new();
    for blob in serde_json::Deserializer::from_slice(text).into_iter::<Value>() {
        let blob = blob.unwrap();
        if blob["schema"] != "olm.channel" {
            continue;
        }
        let text = |v: &Value| v.as_str().map(str::to_owned);
        let entries = blob["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let skips = e["skips"]
                    .as_array()
                    .map(|s| s.iter().filter_map(text).collect())
                    .unwrap_or_default();
                (
                    text(&e["name"]).unwrap(),
                    (text(&e["replaces"]), skips, text(&e["skipRange"])),
                )
            })
            .collect();
        out.insert(text(&blob["name"]).unwrap(), entries);
    }
    out
}

/// Every channel entry carries exactly its release's CSV edges.
fn assert_entries_equal_csvs(output: &Built) {
    let csvs = csv_edges(output);
    let channels = channel_entries(output);
    assert!(!channels.is_empty());
    for (channel, entries) in &channels {
        for (name, edges) in entries {
            assert_eq!(Some(edges), csvs.get(name), "{name} in channel {channel}");
        }
    }
}

/// opm, the consumer that builds catalog images from it, accepts the catalog.
fn assert_opm_accepts(output: &Built) {
    let dir = tempfile::tempdir().unwrap();
    output
        .catalog
        .files
        .write_to(&dir.path().join("catalog"))
        .unwrap();
    let opm: PathBuf = Tool::Opm
        .path()
        .expect("opm is installed by cargo xtask setup");
    let run = Command::new(opm)
        .arg("validate")
        .arg(dir.path().join("catalog"))
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn policy_none_and_empty_replaces_leave_the_catalog_channels_unchained_too() {
    // Policy none: 1.1.0 says only that it skips 1.0.0; 1.2.0 replaces 1.1.0.
    let none = plan(
        "defaultChannel: stable\nchannels: [stable]\nupgrades: {policy: none}",
        &[
            "version: 1.0.0".into(),
            format!("version: 1.1.0, skips: [{}]", bundle("1.0.0")),
            format!("version: 1.2.0, replaces: {}", bundle("1.1.0")),
        ],
    );
    // The default policy, but 1.1.0 says it replaces nothing (and skips 1.0.0 instead).
    let empty = plan(
        "defaultChannel: stable\nchannels: [stable]",
        &[
            "version: 1.0.0".into(),
            format!("version: 1.1.0, replaces: '', skips: [{}]", bundle("1.0.0")),
            "version: 1.2.0".into(),
        ],
    );
    for plan in [none, empty] {
        let output = build(&plan, &GenerateOptions::default()).unwrap();
        let entries = &channel_entries(&output)["stable"];
        let expected: Edges = (None, vec![bundle("1.0.0")], None);
        assert_eq!(csv_edges(&output)[&bundle("1.1.0")], expected);
        assert_eq!(
            entries[&bundle("1.1.0")],
            expected,
            "the catalog chains 1.1.0"
        );
        assert_eq!(entries[&bundle("1.2.0")].0, Some(bundle("1.1.0")));
        assert_entries_equal_csvs(&output);
        assert_opm_accepts(&output);
    }
}

/// One release of a random plan.
#[derive(Clone, Debug)]
struct RandomRelease {
    /// Channels out of [`CHANNELS`], as a bit set; 0: the plan's channels.
    channels: u8,
    /// 0: computed, 1: `""`, 2+: the release `n - 2` places older (when there is one).
    replaces: usize,
    /// Older releases skipped explicitly, as a bit set over their indices.
    skips: u8,
    broken: bool,
    deprecated: bool,
    skip_range: bool,
}

const CHANNELS: [&str; 3] = ["alpha", "beta", "stable"];

fn channel_set(bits: u8) -> Vec<&'static str> {
    CHANNELS
        .iter()
        .enumerate()
        .filter(|(i, _)| bits & (1 << i) != 0)
        .map(|(_, c)| *c)
        .collect()
}

/// The plan text of a random plan: release `i` is version `1.i.0`.
fn random_plan(none: bool, plan_channels: u8, releases: &[RandomRelease]) -> LoadedPlan {
    let default = channel_set(plan_channels)[0];
    let mut lines = Vec::new();
    for (i, r) in releases.iter().enumerate() {
        let mut line = format!("version: 1.{i}.0");
        if r.channels != 0 {
            line += &format!(", channels: [{}]", channel_set(r.channels).join(", "));
        }
        match r.replaces {
            0 => {}
            1 => line += ", replaces: ''",
            n if n - 2 < i => {
                line += &format!(
                    ", replaces: {}",
                    bundle(&format!("1.{}.0", i - 1 - (n - 2)))
                )
            }
            _ => {}
        }
        let skips: Vec<String> = (0..i)
            .filter(|j| r.skips & (1 << j) != 0)
            .map(|j| bundle(&format!("1.{j}.0")))
            .collect();
        if !skips.is_empty() {
            line += &format!(", skips: [{}]", skips.join(", "));
        }
        if r.broken {
            line += ", broken: true";
        }
        if r.deprecated {
            line += ", deprecated: true";
        }
        if r.skip_range && i > 0 {
            line += &format!(", skipRange: '>=1.0.0 <1.{i}.0'");
        }
        lines.push(line);
    }
    // The default channel must have a release: the first one is always in it.
    let default_bit = 1 << CHANNELS.iter().position(|c| *c == default).unwrap();
    if releases[0].channels != 0 && (releases[0].channels & default_bit) == 0 {
        lines[0] = lines[0].replace("channels: [", &format!("channels: [{default}, "));
    }
    let header = format!(
        "defaultChannel: {default}\nchannels: [{}]\nupgrades: {{policy: {}}}",
        channel_set(plan_channels).join(", "),
        if none { "none" } else { "replaces-chain" }
    );
    plan(&header, &lines)
}

fn random_release() -> impl Strategy<Value = RandomRelease> {
    (
        prop_oneof![3 => Just(0u8), 1 => 1u8..8],
        prop_oneof![4 => Just(0usize), 1 => Just(1usize), 1 => 2usize..5],
        prop_oneof![3 => Just(0u8), 1 => 0u8..16],
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.3),
    )
        .prop_map(
            |(channels, replaces, skips, broken, deprecated, skip_range)| RandomRelease {
                channels,
                replaces,
                skips,
                broken,
                deprecated,
                skip_range,
            },
        )
}

/// Checks one random plan; returns whether the catalog was valid (else opm's rules refused
/// the graph the plan asks for, which the release job reports).
fn check_random_plan(plan: &LoadedPlan) -> Result<bool, TestCaseError> {
    let output = match build(plan, &GenerateOptions::default()) {
        Ok(output) => output,
        Err(BuildError::Catalog(CatalogError::Invalid { findings, .. })) => {
            prop_assert!(findings.contains("[catalog/"), "{findings}");
            return Ok(false);
        }
        Err(other) => return Err(TestCaseError::fail(format!("{other:?}"))),
    };
    let csvs = csv_edges(&output);
    let channels = channel_entries(&output);
    let default = &plan.plan.default_channel;
    for (i, release) in plan.plan.releases.iter().enumerate() {
        let name = bundle(&release.version);
        let listed = plan.channels_of(release);
        let home = if listed.contains(default) {
            default
        } else {
            &listed[0]
        };
        let in_channels: BTreeMap<&str, &Edges> = channels
            .iter()
            .filter_map(|(c, entries)| Some((c.as_str(), entries.get(&name)?)))
            .collect();
        let mut expected_channels: Vec<&str> = listed.iter().map(String::as_str).collect();
        expected_channels.sort();
        expected_channels.dedup();
        prop_assert_eq!(
            in_channels.keys().copied().collect::<Vec<_>>(),
            expected_channels
        );
        // The CSV carries the home channel's entry.
        prop_assert_eq!(
            in_channels.get(home.as_str()).copied(),
            csvs.get(&name),
            "{}",
            name
        );
        // Any other channel agrees, or the job warns that it does not.
        let differs = in_channels
            .values()
            .any(|e| *e != in_channels[home.as_str()]);
        let warned = output.reports.iter().flat_map(|r| &r.findings).any(|f| {
            f.rule == "plan/channel-edges-differ"
                && f.field.as_deref() == Some(&format!("releases[{i}]"))
        });
        prop_assert_eq!(differs, warned, "{}", name);
    }
    Ok(true)
}

#[test]
fn csv_edges_equal_catalog_channel_entries_for_random_plans() {
    let strategy = (
        prop::bool::weighted(0.25),
        1u8..8,
        prop::collection::vec(random_release(), 1..6),
    );
    let mut runner = TestRunner::new(Config {
        cases: 96,
        failure_persistence: None,
        ..Config::default()
    });
    let valid = std::cell::Cell::new(0usize);
    let total = std::cell::Cell::new(0usize);
    runner
        .run(&strategy, |(none, plan_channels, releases)| {
            let plan = random_plan(none, plan_channels, &releases);
            total.set(total.get() + 1);
            if check_random_plan(&plan)? {
                valid.set(valid.get() + 1);
            }
            Ok(())
        })
        .unwrap();
    eprintln!(
        "{} of {} random plans made a valid catalog",
        valid.get(),
        total.get()
    );
    // The property must have been checked on real catalogs, not only on refused graphs.
    assert!(
        valid.get() * 5 >= total.get(),
        "only {} of {} random plans made a valid catalog",
        valid.get(),
        total.get()
    );
}
