//! `upgrade olm --shard I/N` splits a catalog's cases over CI jobs, each case in exactly one
//! shard; `upgrade merge-shards` puts the JUnit reports back together and refuses an
//! incomplete set without writing anything. (The byo test runs two real shards under OLM and
//! merges them; these need no tools.)

mod hostile_support;

use std::path::Path;

use hostile_support::run as olmpack;

#[test]
fn shards_partition_the_cases() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let list = |shard: Option<String>| {
        let mut args = vec!["upgrade", "olm", "--catalog", "catalog", "--list"];
        let shard = shard.map(|s| ["--shard".to_owned(), s]);
        args.extend(shard.iter().flatten().map(String::as_str));
        let out = olmpack(&root, &args);
        out.expect(0, "--list");
        out.stdout.lines().map(str::to_owned).collect::<Vec<_>>()
    };
    let all = list(None);
    assert_eq!(all.len(), 5, "{all:#?}");
    for n in 1..=6 {
        let shards: Vec<Vec<String>> = (1..=n).map(|i| list(Some(format!("{i}/{n}")))).collect();
        let mut back = vec![String::new(); all.len()];
        for (i, shard) in shards.iter().enumerate() {
            for (k, case) in shard.iter().enumerate() {
                back[i + k * n] = case.clone();
            }
        }
        assert_eq!(back, all, "{n} shards: {shards:#?}");
    }
    let out = olmpack(
        &root,
        &["upgrade", "olm", "--catalog", "catalog", "--shard", "0/2"],
    );
    out.expect(2, "shard 0/2")
        .says("shard \"0/2\" is not I/N with 1 <= I <= N");
}

/// A shard's report of one case, failed when `failures` is 1; `attribute` is what its
/// `failures` attribute says.
fn report_saying(shard: &str, failures: u32, attribute: u32) -> String {
    let failure = match failures {
        0 => "",
        _ => "<failure message=\"[OLM v0] refused\" type=\"OLM v0\"/>",
    };
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites><testsuite name=\"olmpack upgrade olm\" tests=\"1\" failures=\"{attribute}\" errors=\"0\" skipped=\"0\" time=\"1.0\">\n<properties><property name=\"olmpack.shard\" value=\"{shard}\"/></properties>\n<testcase classname=\"p\" name=\"p.v1 [s] (AllNamespaces)\" time=\"1.0\">{failure}</testcase>\n</testsuite></testsuites>\n"
    )
}

fn report(shard: &str, failures: u32) -> String {
    report_saying(shard, failures, failures)
}

/// A shard whose `<failure>` its `failures="0"` hides is refused naming the report, nothing
/// written, exit 1: the gate never reads a failed case as a pass.
#[test]
fn merge_shards_counts_the_cases_not_the_attributes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("a.xml"), report_saying("1/1", 1, 0)).unwrap();
    let out = olmpack(d, &["upgrade", "merge-shards", "a.xml", "-o", "all.xml"]);
    out.expect(1, "a hidden failure");
    assert_eq!(
        out.all(),
        "error: nothing was written: a.xml: testsuite \"olmpack upgrade olm\": failures=\"0\", but its test cases count 1; a report whose totals disagree with its cases is not merged\n"
    );
    assert!(!d.join("all.xml").exists());
}

#[test]
fn merge_shards_writes_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (name, shard, failures) in [
        ("a.xml", "1/3", 0),
        ("b.xml", "2/3", 1),
        ("c.xml", "3/3", 0),
    ] {
        std::fs::write(d.join(name), report(shard, failures)).unwrap();
    }
    std::fs::write(d.join("all.xml"), "before").unwrap();
    let out = olmpack(
        d,
        &["upgrade", "merge-shards", "a.xml", "c.xml", "-o", "all.xml"],
    );
    out.expect(1, "a missing shard");
    assert_eq!(
        out.all(),
        "error: nothing was written: no report of shard(s) 2 of 3: their jobs did not finish or their reports were not collected\n"
    );
    assert_eq!(
        std::fs::read_to_string(d.join("all.xml")).unwrap(),
        "before"
    );

    let out = olmpack(
        d,
        &[
            "upgrade",
            "merge-shards",
            "a.xml",
            "gone.xml",
            "-o",
            "all.xml",
        ],
    );
    out.expect(2, "an unreadable report").says("gone.xml");

    // Complete, with a failing case: written, and exit 1 as the gate of the CI run.
    let out = olmpack(
        d,
        &[
            "upgrade",
            "merge-shards",
            "c.xml",
            "b.xml",
            "a.xml",
            "-o",
            "all.xml",
        ],
    );
    out.expect(1, "a failed case");
    assert_eq!(
        out.all(),
        "merged 3 report(s) (all 3 shard(s)) into all.xml: 3 case(s), 1 failed, 0 in error, 0 skipped\n"
    );
    let merged = std::fs::read_to_string(d.join("all.xml")).unwrap();
    let order: Vec<usize> = ["1/3", "2/3", "3/3"]
        .iter()
        .map(|s| merged.find(&format!("value=\"{s}\"")).unwrap())
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{merged}");
}

/// `--cluster-crd NAME` with a name olmpack carries no stand-in for is neither a missing file
/// nor a CRD: it says so and lists the names it knows (cert-manager's among them), before any
/// tool is looked for.
#[test]
fn an_unknown_cluster_crd_name_is_said_so_with_the_known_names() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let args = ["upgrade", "olm", "--catalog", "catalog", "--cluster-crd"];
    let unknown = olmpack(&root, &[&args[..], &["widgets.cert-manager.io"]].concat());
    unknown
        .expect(2, "unknown name")
        .says("--cluster-crd widgets.cert-manager.io: no such file, and not a CRD name olmpack carries a stand-in for (known: issuers.cert-manager.io, clusterissuers.cert-manager.io, certificates.cert-manager.io, servicemonitors.monitoring.coreos.com");
    assert!(
        !unknown.stderr.contains("does not exist"),
        "{}",
        unknown.stderr
    );
}
