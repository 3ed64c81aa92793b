//! The typed ClusterServiceVersion (`olmpack_model::csv`) over every CSV of the
//! community-operators corpus: each file named `*.clusterserviceversion.yaml`, and each YAML
//! document elsewhere whose `kind` is `ClusterServiceVersion`, is read with olmpack's YAML
//! reader (the way Go's decoders read it), decoded into the typed model and turned back into
//! a value.
//!
//! Asserted: every CSV decodes (all 1,905 at 1591b5e) and comes back equal to what was read
//! (nothing lost, nothing added); a CSV that does not decode must fail with a field path and a
//! type OLM v0's Go decoder refuses as well; and the corpus holds as many CSVs as expected.
//! The counts and every failure are printed.
//!
//! Run: `cargo xtask conformance realworld_csv` (unpacks the corpus once).

use std::path::Path;

use olmpack_model::csv::ClusterServiceVersion;

fn is_csv(doc: &serde_json::Value) -> bool {
    doc.get("kind").and_then(serde_json::Value::as_str) == Some("ClusterServiceVersion")
}

#[derive(Default)]
struct Tally {
    csvs: usize,
    round_trips: usize,
    /// CSVs the typed model refuses, with the reason.
    refused: Vec<String>,
    /// CSVs that decode but do not come back equal (a bug of the model).
    lost: Vec<String>,
    /// `*.clusterserviceversion.yaml` files that are not YAML or hold no CSV.
    unreadable: Vec<String>,
}

fn check_file(corpus: &Path, path: &Path, tally: &mut Tally) {
    let rel = path.strip_prefix(corpus).unwrap().display().to_string();
    let named = rel.ends_with(".clusterserviceversion.yaml");
    let text = std::fs::read_to_string(path).unwrap_or_default();
    if !named && !text.contains("ClusterServiceVersion") {
        return;
    }
    let docs = match olmpack_model::yaml::from_multi_str_go(&text) {
        Ok((docs, _)) => docs,
        Err(e) => {
            if named {
                tally.unreadable.push(format!("{rel}: {e}"));
            }
            return;
        }
    };
    let csvs: Vec<_> = docs.iter().filter(|d| is_csv(d)).collect();
    if named && csvs.is_empty() {
        tally
            .unreadable
            .push(format!("{rel}: no ClusterServiceVersion document"));
    }
    for value in csvs {
        tally.csvs += 1;
        match ClusterServiceVersion::from_value(value) {
            Ok(csv) if csv.to_value() == *value => tally.round_trips += 1,
            Ok(_) => tally.lost.push(rel.clone()),
            Err(e) => tally.refused.push(format!("{rel}: {e}")),
        }
    }
}

#[test]
fn realworld_csv_round_trips_through_the_typed_model() {
    let Some(corpus) = olmpack_testkit::corpus::require(
        olmpack_testkit::corpus::COMMUNITY_OPERATORS,
        "realworld_csv_round_trips_through_the_typed_model",
    ) else {
        return;
    };
    let files = olmpack_testkit::corpus::files(&corpus, &["yaml", "yml"]);
    let mut tally = Tally::default();
    for path in &files {
        check_file(&corpus, path, &mut tally);
    }
    println!(
        "{} YAML files, {} CSVs: {} round-trip, {} refused by the typed model, {} lost data, {} unreadable",
        files.len(),
        tally.csvs,
        tally.round_trips,
        tally.refused.len(),
        tally.lost.len(),
        tally.unreadable.len()
    );
    for line in tally.refused.iter().chain(&tally.unreadable) {
        println!("  {line}");
    }
    assert!(
        tally.lost.is_empty(),
        "CSVs that decode but do not come back equal: {:#?}",
        tally.lost
    );
    for line in &tally.refused {
        assert!(
            line.contains(": field ") && line.contains("OLM v0's decoder refuses it too"),
            "refused without a field and OLM's reason: {line}"
        );
    }
    assert!(
        tally.csvs >= 1_900,
        "only {} CSVs found: the corpus walk misses files",
        tally.csvs
    );
    assert_eq!(tally.round_trips + tally.refused.len(), tally.csvs);
    // At 1591b5e every CSV of the corpus decodes (1,905 of 1,905).
    assert!(tally.refused.is_empty(), "refused: {:#?}", tally.refused);
}
