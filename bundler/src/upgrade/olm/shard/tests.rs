use super::*;

fn shard(text: &str) -> Shard {
    text.parse().unwrap()
}

#[test]
fn shards_parse_and_refuse() {
    assert_eq!(shard("2/3"), Shard { index: 2, count: 3 });
    assert_eq!(shard("1/1").to_string(), "1/1");
    for bad in [
        "0/3", "4/3", "3", "a/b", "1/", "/2", "-1/2", "+1/2", "1/2/3", " 1/2", "1/0",
    ] {
        assert_eq!(
            bad.parse::<Shard>().unwrap_err().to_string(),
            format!("shard {bad:?} is not I/N with 1 <= I <= N (e.g. 2/3: the second of three)"),
        );
    }
}

#[test]
fn every_item_is_in_exactly_one_shard() {
    let items: Vec<usize> = (0..10).collect();
    assert_eq!(shard("1/3").select(items.clone()), [0, 3, 6, 9]);
    assert_eq!(shard("2/3").select(items.clone()), [1, 4, 7]);
    assert_eq!(shard("3/3").select(items.clone()), [2, 5, 8]);
    assert_eq!(shard("4/12").select(items.clone()), [3]);
    assert!(shard("12/12").select(items.clone()).is_empty());
    assert_eq!(shard("1/1").select(items.clone()), items);
}

/// A report as `upgrade olm --shard` writes one.
fn report(shard: &str, tests: u32, failures: u32) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites><testsuite name=\"olmpack upgrade olm\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"1\" time=\"2.5\"><properties><property name=\"olmpack.shard\" value=\"{shard}\"/></properties>\n<testcase classname=\"p\" name=\"case &amp; {shard}\"/>\n</testsuite></testsuites>\n"
    )
}

fn files(reports: &[(&str, String)]) -> Vec<(String, String)> {
    reports
        .iter()
        .map(|(n, t)| (n.to_string(), t.clone()))
        .collect()
}

#[test]
fn shards_merge_in_shard_order_with_totals() {
    let merged = merge(&files(&[
        ("b.xml", report("2/2", 3, 1)),
        ("a.xml", report("1/2", 4, 0)),
    ]))
    .unwrap();
    assert_eq!(
        (
            merged.tests,
            merged.failures,
            merged.errors,
            merged.skipped,
            merged.shards
        ),
        (7, 1, 0, 2, Some(2))
    );
    let first = merged.xml.find("case &amp; 1/2").unwrap();
    let second = merged.xml.find("case &amp; 2/2").unwrap();
    assert!(first < second, "{}", merged.xml);
    assert!(
        merged.xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites tests=\"7\" failures=\"1\" errors=\"0\" skipped=\"2\" time=\"5.0\">\n<testsuite name=\"olmpack upgrade olm\""),
        "{}",
        merged.xml
    );
    // The merge is itself a report merge reads.
    let again = merge(&files(&[("all.xml", merged.xml.clone())])).unwrap();
    assert_eq!((again.tests, again.shards), (7, Some(2)));
}

#[test]
fn unsharded_reports_merge_in_the_order_given() {
    let other = "<testsuite name=\"check\" tests=\"2\" failures=\"0\"><testcase name=\"x\"/><testcase name=\"y\"/></testsuite>";
    let empty = "<testsuites><properties/><testsuite name=\"none\" tests=\"0\"/></testsuites>";
    let merged = merge(&files(&[("o.xml", other.into()), ("e.xml", empty.into())])).unwrap();
    assert_eq!((merged.tests, merged.shards), (2, None));
    assert!(
        merged.xml.contains(&format!(
            "{other}\n<testsuite name=\"none\" tests=\"0\"/>\n</testsuites>"
        )),
        "{}",
        merged.xml
    );
}

#[test]
fn shard_sets_that_do_not_merge_say_why() {
    let plain = "<testsuites><testsuite name=\"p\" tests=\"1\"/></testsuites>".to_owned();
    let cases: Vec<Case> = vec![
        ("nothing", vec![], "no JUnit report to merge"),
        (
            "missing shard",
            vec![
                ("a.xml", report("1/3", 1, 0)),
                ("c.xml", report("3/3", 1, 0)),
            ],
            "no report of shard(s) 2 of 3: their jobs did not finish or their reports were not collected",
        ),
        (
            "shard twice",
            vec![
                ("a.xml", report("1/2", 1, 0)),
                ("a2.xml", report("1/2", 1, 0)),
            ],
            "a2.xml: shard 1/2 is also a.xml",
        ),
        (
            "different counts",
            vec![
                ("a.xml", report("1/2", 1, 0)),
                ("b.xml", report("2/3", 1, 0)),
            ],
            "b.xml: shard 2/3 is one of 3, but a.xml is shard 1/2",
        ),
        (
            "sharded and not",
            vec![("a.xml", report("1/1", 1, 0)), ("p.xml", plain.clone())],
            "p.xml: is not from a sharded run, but a.xml is shard 1/1",
        ),
        (
            "bad shard property",
            vec![("a.xml", report("0/2", 1, 0))],
            "a.xml: testsuite \"olmpack upgrade olm\": property olmpack.shard: shard \"0/2\" is not I/N with 1 <= I <= N (e.g. 2/3: the second of three)",
        ),
    ];
    assert_refused(cases);
}

type Case<'a> = (&'a str, Vec<(&'a str, String)>, &'a str);

/// Each set of reports refused with a message starting with its expected prefix.
fn assert_refused(cases: Vec<Case>) {
    for (name, reports, want) in cases {
        let got = merge(&files(&reports)).expect_err(name).to_string();
        assert!(got.starts_with(want), "{name}: got {got:?}, want {want:?}");
    }
}

#[test]
fn reports_that_are_not_junit_say_why() {
    let cases: Vec<Case> = vec![
        (
            "not junit",
            vec![("r.xml", "<results/>".into())],
            "r.xml: the root element is <results>; a JUnit report's is <testsuites> or <testsuite>",
        ),
        (
            "no element",
            vec![("r.xml", "<?xml version=\"1.0\"?>\n".into())],
            "r.xml: the root element is <(none)>; a JUnit report's is <testsuites> or <testsuite>",
        ),
        (
            "cut short",
            vec![("r.xml", report("1/1", 1, 0)[..150].to_owned())],
            "r.xml: not well-formed XML at byte ",
        ),
        (
            "root never closed",
            vec![("r.xml", "<testsuites><testsuite name=\"s\"/>".into())],
            "r.xml: not well-formed XML at byte 33: it ends before </testsuites>",
        ),
        (
            "count not a number",
            vec![("r.xml", "<testsuite name=\"s\" tests=\"many\"/>".into())],
            "r.xml: testsuite \"s\": tests=\"many\" is not a number",
        ),
        (
            "two roots",
            vec![(
                "r.xml",
                "<testsuite name=\"s\"/><testsuite name=\"t\"/>".into(),
            )],
            "r.xml: not well-formed XML at byte ",
        ),
        (
            "doctype",
            vec![(
                "r.xml",
                "<!DOCTYPE t [<!ENTITY x \"y\">]><testsuite name=\"s\"/>".into(),
            )],
            "r.xml: has a document type declaration, which JUnit reports do not use",
        ),
    ];
    assert_refused(cases);
}
