//! Certificates for test control planes and test servers.
//!
//! A [`CertificateAuthority`] is generated per environment (ECDSA P-256, valid from one day ago
//! for ten years, so clock skew between processes never matters). It issues serving
//! certificates (for the apiserver, webhooks, registries) and client certificates (for the
//! admin user). Keys are PKCS#8 PEM, which kube-apiserver, etcd and rustls all read.

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use time::{Duration, OffsetDateTime};

/// Failure to generate a key or certificate.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("failed to generate the certificate for {subject}")]
    Generate {
        subject: String,
        #[source]
        source: rcgen::Error,
    },
}

/// A certificate and its private key, both PEM.
#[derive(Clone, Debug)]
pub struct CertifiedKey {
    pub cert_pem: String,
    pub key_pem: String,
}

/// A self-signed CA that issues the certificates of one test environment.
pub struct CertificateAuthority {
    issuer: Issuer<'static, KeyPair>,
    cert_pem: String,
}

impl std::fmt::Debug for CertificateAuthority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificateAuthority")
            .finish_non_exhaustive()
    }
}

fn validity(params: &mut CertificateParams) {
    let now = OffsetDateTime::now_utc();
    params.not_before = now - Duration::days(1);
    params.not_after = now + Duration::days(3650);
}

impl CertificateAuthority {
    /// A new CA whose subject common name is `name`.
    pub fn new(name: &str) -> Result<Self, PkiError> {
        let wrap = |source| PkiError::Generate {
            subject: name.to_owned(),
            source,
        };
        let key = KeyPair::generate().map_err(wrap)?;
        let mut params = CertificateParams::default();
        params.distinguished_name = dn(name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        validity(&mut params);
        let cert = params.self_signed(&key).map_err(wrap)?;
        Ok(Self {
            cert_pem: cert.pem(),
            issuer: Issuer::new(params, key),
        })
    }

    /// The CA certificate (PEM): what clients trust, and what goes into a `caBundle`.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// A serving certificate for `hosts` (IP addresses become IP SANs, the rest DNS SANs).
    pub fn issue_server(&self, hosts: &[&str]) -> Result<CertifiedKey, PkiError> {
        let subject = hosts.first().copied().unwrap_or("server");
        let wrap = |source| PkiError::Generate {
            subject: subject.to_owned(),
            source,
        };
        let mut params =
            CertificateParams::new(hosts.iter().map(|h| (*h).to_owned()).collect::<Vec<_>>())
                .map_err(wrap)?;
        params.distinguished_name = dn(subject);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        self.sign(params, subject)
    }

    /// A client certificate for user `common_name` in the groups `organizations`
    /// (Kubernetes reads the user from CN and the groups from O).
    pub fn issue_client(
        &self,
        common_name: &str,
        organizations: &[&str],
    ) -> Result<CertifiedKey, PkiError> {
        let mut params = CertificateParams::default();
        let mut name = dn(common_name);
        for org in organizations {
            name.push(DnType::OrganizationName, *org);
        }
        params.distinguished_name = name;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        self.sign(params, common_name)
    }

    fn sign(&self, mut params: CertificateParams, subject: &str) -> Result<CertifiedKey, PkiError> {
        let wrap = |source| PkiError::Generate {
            subject: subject.to_owned(),
            source,
        };
        validity(&mut params);
        let key = KeyPair::generate().map_err(wrap)?;
        let cert = params.signed_by(&key, &self.issuer).map_err(wrap)?;
        Ok(CertifiedKey {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// A fresh key pair as `(private PKCS#8 PEM, public SPKI PEM)`, e.g. for signing
/// service-account tokens.
pub fn key_pair_pem() -> Result<(String, String), PkiError> {
    KeyPair::generate()
        .map(|k| (k.serialize_pem(), k.public_key_pem()))
        .map_err(|source| PkiError::Generate {
            subject: "service-account signing key".to_owned(),
            source,
        })
}

fn dn(common_name: &str) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, common_name);
    name
}
