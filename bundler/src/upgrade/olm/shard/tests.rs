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

/// A report as `upgrade olm --shard` writes one: `tests` cases, the first `failures` of them
/// failed and the last one skipped.
fn report(shard: &str, tests: u32, failures: u32) -> String {
    let mut cases = String::new();
    for i in 0..tests {
        let outcome = match i {
            i if i < failures => "<failure message=\"m\" type=\"olm\"/>",
            i if i + 1 == tests => "<skipped message=\"not run\"/>",
            _ => "",
        };
        cases.push_str(&format!(
            "<testcase classname=\"p\" name=\"case &amp; {shard} {i}\">{outcome}</testcase>\n"
        ));
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites><testsuite name=\"olmpack upgrade olm\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"1\" time=\"2.5\"><properties><property name=\"olmpack.shard\" value=\"{shard}\"/></properties>\n{cases}</testsuite></testsuites>\n"
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
    let first = merged.xml.find("case &amp; 1/2 0").unwrap();
    let second = merged.xml.find("case &amp; 2/2 0").unwrap();
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
    let plain =
        "<testsuites><testsuite name=\"p\" tests=\"1\"><testcase name=\"c\"/></testsuite></testsuites>"
            .to_owned();
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
            "r.xml: testsuite \"s\": tests=\"many\" is not a count",
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

/// A suite is counted from its test cases: totals that disagree with them, or that are not
/// counts, are refused naming the report, so a failed case never merges as a pass.
#[test]
fn totals_that_disagree_with_the_test_cases_are_refused() {
    let failed = "<testcase name=\"a\"><failure message=\"m\"/></testcase>";
    let errored = "<testcase name=\"b\"><error/></testcase>";
    let skipped = "<testcase name=\"c\"><skipped/></testcase>";
    let suite = |attributes: &str, cases: &str| {
        format!("<testsuites><testsuite name=\"s\" {attributes}>{cases}</testsuite></testsuites>")
    };
    let cases: Vec<Case> = vec![
        (
            "failure hidden",
            vec![("f.xml", suite("tests=\"1\" failures=\"0\"", failed))],
            "f.xml: testsuite \"s\": failures=\"0\", but its test cases count 1; a report whose totals disagree with its cases is not merged",
        ),
        (
            "error hidden",
            vec![("e.xml", suite("errors=\"0\"", errored))],
            "e.xml: testsuite \"s\": errors=\"0\", but its test cases count 1;",
        ),
        (
            "fewer tests",
            vec![("t.xml", suite("tests=\"1\"", &format!("{failed}{skipped}")))],
            "t.xml: testsuite \"s\": tests=\"1\", but its test cases count 2;",
        ),
        (
            "skips invented",
            vec![("k.xml", suite("skipped=\"3\"", skipped))],
            "k.xml: testsuite \"s\": skipped=\"3\", but its test cases count 1;",
        ),
        (
            "negative",
            vec![("n.xml", suite("failures=\"-5\"", failed))],
            "n.xml: testsuite \"s\": failures=\"-5\" is not a count",
        ),
        (
            "not a number",
            vec![("x.xml", suite("errors=\"x\"", errored))],
            "x.xml: testsuite \"s\": errors=\"x\" is not a count",
        ),
        (
            "negative time",
            vec![("m.xml", suite("time=\"-1\"", failed))],
            "m.xml: testsuite \"s\": time=\"-1\" is not a number of seconds",
        ),
    ];
    assert_refused(cases);
}

#[test]
fn totals_come_from_the_test_cases() {
    let xml = "<testsuites><testsuite name=\"s\">\
        <testcase name=\"a\"><failure/><skipped/></testcase>\
        <testcase name=\"b\"><error/><system-out>x</system-out></testcase>\
        <testcase name=\"c\"><skipped/></testcase>\
        <testcase name=\"d\"/>\
        <testcase name=\"e\"><system-out><failure/></system-out></testcase>\
        </testsuite></testsuites>";
    let merged = merge(&files(&[("r.xml", xml.into())])).unwrap();
    assert_eq!(
        (merged.tests, merged.failures, merged.errors, merged.skipped),
        (5, 1, 1, 1)
    );
    assert!(
        merged
            .xml
            .contains("<testsuites tests=\"5\" failures=\"1\" errors=\"1\" skipped=\"1\""),
        "{}",
        merged.xml
    );
}
