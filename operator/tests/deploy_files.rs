//! operator/deploy/<release>/manifests.yaml — the input olmpack packages — must be exactly what
//! `webapp-operator manifests --release <release>` prints.

use std::path::Path;

use webapp_operator::manifests;
use webapp_operator::releases::RELEASES;

#[test]
fn deploy_manifests_are_current_for_every_release() {
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy");
    let mut on_disk: Vec<String> = std::fs::read_dir(&deploy)
        .expect("operator/deploy exists (run `cargo xtask regenerate`)")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let releases: Vec<String> = RELEASES.iter().map(|r| r.version.to_owned()).collect();
    assert_eq!(
        on_disk, releases,
        "operator/deploy/ has other releases than the code; run `cargo xtask regenerate`"
    );
    for release in RELEASES {
        let path = deploy.join(release.version).join("manifests.yaml");
        let expected = manifests::to_yaml(release, manifests::DEFAULT_NAMESPACE).unwrap();
        let found = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            found == expected,
            "{} is stale; run `cargo xtask regenerate`",
            path.display()
        );
    }
}
