//! Checks on a user's kubeconfig that the kube client library would report in its own
//! words: a client certificate of X.509 version 1 (which `openssl x509 -req` still issues
//! by default) is refused by rustls, olmpack's TLS library, while kube-apiserver and kubectl
//! accept it; the library says "invalid private key".

use std::path::Path;

use base64::Engine as _;
use kube::config::Kubeconfig;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// A kubeconfig olmpack cannot use.
#[derive(Debug, thiserror::Error)]
pub enum KubeconfigCheckError {
    /// The current user's client certificate is X.509 version 1.
    #[error(
        "{path}: user {user}: the client certificate is X.509 version 1, which olmpack's TLS \
         library (rustls) does not accept (kube-apiserver and kubectl do); issue it as version 3, \
         e.g. `openssl x509 -req … -extfile <(printf 'extendedKeyUsage=clientAuth')`"
    )]
    VersionOne {
        /// The kubeconfig file.
        path: String,
        /// The kubeconfig's user (`users[].name`).
        user: String,
    },
}

/// Fails when the current context's user authenticates with an X.509 version 1 client
/// certificate. Anything this check cannot read is left to the client library.
pub fn check(path: &Path, config: &Kubeconfig) -> Result<(), KubeconfigCheckError> {
    let Some(user) = current_user(config) else {
        return Ok(());
    };
    let Some(auth) = config
        .auth_infos
        .iter()
        .find(|a| a.name == user)
        .and_then(|a| a.auth_info.as_ref())
    else {
        return Ok(());
    };
    let pem = match (&auth.client_certificate_data, &auth.client_certificate) {
        (Some(data), _) => base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .ok(),
        (None, Some(file)) => olmpack_oci::input::read_secret(std::path::Path::new(file)).ok(),
        (None, None) => None,
    };
    let Some(first) = pem.and_then(|pem| CertificateDer::pem_slice_iter(&pem).next()?.ok()) else {
        return Ok(());
    };
    if certificate_version(&first) == Some(1) {
        return Err(KubeconfigCheckError::VersionOne {
            path: path.display().to_string(),
            user,
        });
    }
    Ok(())
}

fn current_user(config: &Kubeconfig) -> Option<String> {
    let current = config.current_context.as_deref()?;
    config
        .contexts
        .iter()
        .find(|c| c.name == current)?
        .context
        .as_ref()?
        .user
        .clone()
}

/// The X.509 version (1, 2 or 3) of a DER certificate: `tbsCertificate` starts with an
/// explicit `[0]` version field unless it is version 1. `None` when the DER is malformed.
pub fn certificate_version(der: &[u8]) -> Option<u8> {
    let (tag, certificate) = der_item(der)?;
    if tag != 0x30 {
        return None;
    }
    let (tag, tbs) = der_item(certificate)?;
    if tag != 0x30 {
        return None;
    }
    match der_item(tbs)? {
        (0xA0, version) => match der_item(version)? {
            (0x02, [value]) => value.checked_add(1),
            _ => None,
        },
        _ => Some(1),
    }
}

/// The tag and contents of the DER item at the start of `der`.
fn der_item(der: &[u8]) -> Option<(u8, &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 || rest.len() < count {
            return None;
        }
        let len = rest[..count]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, &rest[count..])
    };
    Some((tag, rest.get(..len)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client certificate as `openssl x509 -req` issues it without extensions.
    const V1_PEM: &str = include_str!("../../../tests/fixtures/kubeconfig/v1-client.crt");

    fn der(pem: &str) -> Vec<u8> {
        CertificateDer::pem_slice_iter(pem.as_bytes())
            .next()
            .unwrap()
            .unwrap()
            .to_vec()
    }

    #[test]
    fn versions_are_read_from_the_der() {
        assert_eq!(certificate_version(&der(V1_PEM)), Some(1));
        let ca = olmpack_envtest::pki::CertificateAuthority::new("test").unwrap();
        let client = ca.issue_client("u", &[]).unwrap();
        assert_eq!(certificate_version(&der(&client.cert_pem)), Some(3));
        assert_eq!(certificate_version(&[0x30, 0x05, 0x30]), None);
    }

    #[test]
    fn a_version_one_client_certificate_is_named() {
        let b64 = base64::engine::general_purpose::STANDARD.encode(V1_PEM);
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:1'}}}}]\nusers: [{{name: alice, user: {{client-certificate-data: {b64}, client-key-data: eA==}}}}]\ncontexts: [{{name: x, context: {{cluster: c, user: alice}}}}]\ncurrent-context: x\n"
        );
        let config = Kubeconfig::from_yaml(&text).unwrap();
        let err = check(Path::new("kc.yaml"), &config).unwrap_err();
        assert_eq!(
            err.to_string(),
            "kc.yaml: user alice: the client certificate is X.509 version 1, which olmpack's TLS library (rustls) does not accept (kube-apiserver and kubectl do); issue it as version 3, e.g. `openssl x509 -req … -extfile <(printf 'extendedKeyUsage=clientAuth')`"
        );
    }
}
