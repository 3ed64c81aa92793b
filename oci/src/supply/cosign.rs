//! Signatures in cosign's key-based format: the private key (cosign's encrypted key file, or
//! a plain PKCS#8 / SEC1 EC P-256 PEM), the simple-signing payload, and the signature image
//! at tag `sha256-<hex>.sig` that `cosign verify --key` reads.
//!
//! Contract:
//! - **Keys.** `ENCRYPTED SIGSTORE PRIVATE KEY` (and the older `ENCRYPTED COSIGN PRIVATE
//!   KEY`) PEM blocks hold a JSON envelope: scrypt (`N`, `r`, `p`, salt) derives a 32-byte key
//!   from the password, NaCl secretbox (XSalsa20-Poly1305, nonce) opens the ciphertext, which
//!   is the PKCS#8 DER of an EC P-256 key. `PRIVATE KEY` (PKCS#8) and `EC PRIVATE KEY` (SEC1)
//!   PEM blocks are read as they are. Only P-256 is accepted. The password is a [`Secret`]:
//!   never printed, never logged.
//! - **Payload.** The simple-signing JSON cosign signs: `critical.identity.docker-reference` =
//!   `host/repo`, `critical.image.docker-manifest-digest` = the image digest, `critical.type`
//!   = `cosign container image signature`, `optional` = null.
//! - **Signature.** ECDSA P-256 with SHA-256 over the payload, ASN.1 DER, base64 (standard);
//!   the nonce is RFC 6979's, so the same key, image and payload give the same signature and
//!   a re-run pushes nothing new.
//! - **Signature image.** One layer per signature: the payload as the blob (media type
//!   `application/vnd.dev.cosign.simplesigning.v1+json`), the signature in the layer annotation
//!   `dev.cosignproject.cosign/signature`; an image config listing the layers as `diff_ids`.
//!   Signatures already at the tag are kept; a signature already there is not added twice.
#![warn(missing_docs)]

use crate::RefusesInput;
use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use crypto_secretbox::aead::{Aead, KeyInit};
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::{Signature, SigningKey};
use p256::pkcs8::{DecodePrivateKey, EncodePublicKey};
use serde::{Deserialize, Serialize};

use super::oci::{Repo, RepoError};
use crate::image::auth::Secret;
use crate::image::digest::{sha256_digest, sha256_hex};
use crate::image::layout::ImageManifest;
use crate::image::media_type;

/// The layer media type of a cosign signature.
pub const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding the base64 signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";

/// Failure to read a signing key.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The key file cannot be read.
    #[error("cannot read the signing key")]
    Read {
        /// Why, naming the key file.
        #[source]
        source: crate::input::InputError,
    },
    /// The key file holds no PEM block.
    #[error("{path}: not a PEM private key")]
    NotPem {
        /// The key file.
        path: String,
    },
    /// The PEM block is of a type that is not a private key olmpack can sign with.
    #[error(
        "{path}: PEM type {label:?} is not a signing key (expected ENCRYPTED SIGSTORE PRIVATE KEY, PRIVATE KEY or EC PRIVATE KEY)"
    )]
    Label {
        /// The key file.
        path: String,
        /// The PEM type as written.
        label: String,
    },
    /// An encrypted cosign key whose envelope does not decode (unknown KDF or cipher, bad JSON).
    #[error(
        "{path}: the encrypted key's envelope is not cosign's (scrypt + nacl/secretbox): {reason}"
    )]
    Envelope {
        /// The key file.
        path: String,
        /// What does not fit.
        reason: String,
    },
    /// The key is encrypted and `COSIGN_PASSWORD` is not set.
    #[error("{path}: the key is encrypted; set its password in COSIGN_PASSWORD")]
    NoPassword {
        /// The key file.
        path: String,
    },
    /// The key is encrypted and `COSIGN_PASSWORD` does not decrypt it.
    #[error("{path}: the password does not open the key (wrong COSIGN_PASSWORD, or a damaged key)")]
    WrongPassword {
        /// The key file.
        path: String,
    },
    /// The key is not for the P-256 curve that cosign signatures use.
    #[error("{path}: not an EC P-256 private key (cosign signs with ECDSA P-256)")]
    NotP256 {
        /// The key file.
        path: String,
    },
}

/// A key file olmpack refuses to read (exit 1); a key it cannot use is a bad argument (exit 2).
impl RefusesInput for KeyError {
    fn refuses_input(&self) -> bool {
        match self {
            KeyError::Read { source } => source.is_refusal(),
            _ => false,
        }
    }
}

/// Failure to sign an image.
#[derive(Debug, thiserror::Error)]
pub enum SignError {
    /// A registry operation on the image's repository failed.
    #[error(transparent)]
    Repo(#[from] RepoError),
    /// The digest of the image to sign is malformed.
    #[error("{image}: {digest:?} is not a sha256 digest")]
    Digest {
        /// The image reference.
        image: String,
        /// The digest as given.
        digest: String,
    },
    /// The signature tag (`sha256-<hex>.sig`) holds something that is not an image manifest, so it cannot be extended.
    #[error("the signature image at {reference} is not an image manifest")]
    BadSignatureImage {
        /// The signature image reference.
        reference: String,
        /// The JSON parser's complaint.
        #[source]
        source: serde_json::Error,
    },
}

/// Never about the input olmpack reads: a failure to do the job (exit 2).
impl crate::RefusesInput for SignError {
    fn refuses_input(&self) -> bool {
        false
    }
}

/// A loaded signing key. `Debug` shows only its public key's id.
#[derive(Clone)]
pub struct Signer {
    key: SigningKey,
    key_id: String,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct Envelope {
    kdf: Kdf,
    cipher: Cipher,
    ciphertext: String,
}

#[derive(Deserialize)]
struct Kdf {
    name: String,
    params: KdfParams,
    salt: String,
}

#[derive(Deserialize)]
#[allow(non_snake_case)]
struct KdfParams {
    N: u64,
    r: u32,
    p: u32,
}

#[derive(Deserialize)]
struct Cipher {
    name: String,
    nonce: String,
}

impl Signer {
    /// Reads the key at `path`; `password` opens an encrypted key.
    pub fn load(path: &std::path::Path, password: Option<&Secret>) -> Result<Self, KeyError> {
        let shown = path.display().to_string();
        let bytes = crate::input::read_secret(path).map_err(|source| KeyError::Read { source })?;
        Self::from_pem(&shown, &bytes, password)
    }

    /// Reads a PEM key; `path` only names it in errors.
    pub fn from_pem(path: &str, pem: &[u8], password: Option<&Secret>) -> Result<Self, KeyError> {
        let (label, der) =
            p256::pkcs8::der::pem::decode_vec(pem).map_err(|_| KeyError::NotPem {
                path: path.to_owned(),
            })?;
        let not_p256 = || KeyError::NotP256 {
            path: path.to_owned(),
        };
        let key = match label {
            "ENCRYPTED SIGSTORE PRIVATE KEY" | "ENCRYPTED COSIGN PRIVATE KEY" => {
                let password = password.ok_or_else(|| KeyError::NoPassword {
                    path: path.to_owned(),
                })?;
                let plain = decrypt(path, &der, password)?;
                SigningKey::from_pkcs8_der(&plain).map_err(|_| not_p256())?
            }
            "PRIVATE KEY" => SigningKey::from_pkcs8_der(&der).map_err(|_| not_p256())?,
            "EC PRIVATE KEY" => p256::SecretKey::from_sec1_der(&der)
                .map(SigningKey::from)
                .map_err(|_| not_p256())?,
            other => {
                return Err(KeyError::Label {
                    path: path.to_owned(),
                    label: other.to_owned(),
                });
            }
        };
        let public = key
            .verifying_key()
            .to_public_key_der()
            .map_err(|_| not_p256())?;
        let key_id = sha256_digest(public.as_bytes())[7..23].to_owned();
        Ok(Self { key, key_id })
    }

    /// A short id of the public key (the first 16 hex digits of its SPKI's SHA-256).
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The base64 DER ECDSA signature of `payload`.
    pub fn sign(&self, payload: &[u8]) -> String {
        let signature: Signature = self.key.sign(payload);
        BASE64.encode(signature.to_der().as_bytes())
    }
}

fn decrypt(path: &str, der: &[u8], password: &Secret) -> Result<Vec<u8>, KeyError> {
    let envelope_err = |reason: &str| KeyError::Envelope {
        path: path.to_owned(),
        reason: reason.to_owned(),
    };
    let envelope: Envelope =
        serde_json::from_slice(der).map_err(|_| envelope_err("not the JSON envelope"))?;
    if envelope.kdf.name != "scrypt" || envelope.cipher.name != "nacl/secretbox" {
        return Err(envelope_err(&format!(
            "kdf {:?} and cipher {:?}",
            envelope.kdf.name, envelope.cipher.name
        )));
    }
    let decode = |field: &str, text: &str| {
        BASE64
            .decode(text)
            .map_err(|_| envelope_err(&format!("{field} is not base64")))
    };
    let salt = decode("kdf.salt", &envelope.kdf.salt)?;
    let nonce = decode("cipher.nonce", &envelope.cipher.nonce)?;
    let ciphertext = decode("ciphertext", &envelope.ciphertext)?;
    let n = envelope.kdf.params.N;
    if !n.is_power_of_two() || n < 2 {
        return Err(envelope_err("kdf.params.N is not a power of two"));
    }
    let params = scrypt::Params::new(
        n.trailing_zeros() as u8,
        envelope.kdf.params.r,
        envelope.kdf.params.p,
        32,
    )
    .map_err(|_| envelope_err("scrypt parameters out of range"))?;
    let mut key = [0u8; 32];
    scrypt::scrypt(password.expose().as_bytes(), &salt, &params, &mut key)
        .map_err(|_| envelope_err("scrypt parameters out of range"))?;
    if nonce.len() != 24 {
        return Err(envelope_err("cipher.nonce is not 24 bytes"));
    }
    let cipher = crypto_secretbox::XSalsa20Poly1305::new(&key.into());
    cipher
        .decrypt(
            crypto_secretbox::Nonce::from_slice(&nonce),
            ciphertext.as_slice(),
        )
        .map_err(|_| KeyError::WrongPassword {
            path: path.to_owned(),
        })
}

#[derive(Serialize)]
struct Payload<'a> {
    critical: Critical<'a>,
    optional: Option<()>,
}

#[derive(Serialize)]
struct Critical<'a> {
    identity: Identity<'a>,
    image: PayloadImage<'a>,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
struct Identity<'a> {
    #[serde(rename = "docker-reference")]
    docker_reference: &'a str,
}

#[derive(Serialize)]
struct PayloadImage<'a> {
    #[serde(rename = "docker-manifest-digest")]
    docker_manifest_digest: &'a str,
}

/// The simple-signing payload of the image `repository` (`host/repo`) at `digest`.
pub fn payload(repository: &str, digest: &str) -> Vec<u8> {
    serde_json::to_vec(&Payload {
        critical: Critical {
            identity: Identity {
                docker_reference: repository,
            },
            image: PayloadImage {
                docker_manifest_digest: digest,
            },
            kind: "cosign container image signature",
        },
        optional: None,
    })
    .expect("a payload serializes")
}

#[derive(Serialize)]
struct SignatureConfig {
    architecture: &'static str,
    os: &'static str,
    config: BTreeMap<String, String>,
    rootfs: RootFs,
}

#[derive(Serialize)]
struct RootFs {
    #[serde(rename = "type")]
    kind: &'static str,
    diff_ids: Vec<String>,
}

/// What signing did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signed {
    /// The signature image's manifest digest.
    pub digest: String,
    /// `host/repo:sha256-<hex>.sig`.
    pub reference: String,
}

/// Whether the signature image of `digest` in `repo` (tag `sha256-<hex>.sig`) holds the
/// signature `signer` gives it: false when the registry has no signature image there, one
/// without it (deleted, or replaced by someone else's), or one whose signature payload or
/// config blob it no longer has (cosign then finds no signature).
pub async fn is_signed(repo: &Repo, digest: &str, signer: &Signer) -> Result<bool, SignError> {
    let hex = sha256_hex(digest).ok_or_else(|| SignError::Digest {
        image: repo.name(),
        digest: digest.to_owned(),
    })?;
    let reference = repo.at_tag(&format!("sha256-{hex}.sig"));
    let Some(bytes) = repo
        .get_manifest(
            &reference,
            &[media_type::MANIFEST, media_type::DOCKER_MANIFEST],
        )
        .await?
    else {
        return Ok(false);
    };
    // A signature image that does not parse holds no signature of ours (signing then says why
    // it cannot add one).
    let Ok(manifest) = serde_json::from_slice::<ImageManifest>(&bytes) else {
        return Ok(false);
    };
    let payload = payload(&repo.name(), digest);
    let (layer, signature) = (sha256_digest(&payload), signer.sign(&payload));
    let ours = manifest.layers.iter().any(|l| {
        l.digest == layer
            && l.annotations
                .as_ref()
                .and_then(|a| a.get(SIGNATURE_ANNOTATION))
                == Some(&signature)
    });
    Ok(ours && repo.has_blob(&layer).await? && repo.has_blob(&manifest.config.digest).await?)
}

/// Signs the image at `digest` in `repo` and pushes the signature image (see the module docs).
pub async fn sign(repo: &Repo, digest: &str, signer: &Signer) -> Result<Signed, SignError> {
    let hex = sha256_hex(digest).ok_or_else(|| SignError::Digest {
        image: repo.name(),
        digest: digest.to_owned(),
    })?;
    let payload = payload(&repo.name(), digest);
    let signature = signer.sign(&payload);
    let tag = format!("sha256-{hex}.sig");
    let reference = repo.at_tag(&tag);
    let existing = repo
        .get_manifest(
            &reference,
            &[media_type::MANIFEST, media_type::DOCKER_MANIFEST],
        )
        .await?;
    let (mut layers, config) = match &existing {
        Some(bytes) => {
            let manifest: ImageManifest =
                serde_json::from_slice(bytes).map_err(|source| SignError::BadSignatureImage {
                    reference: reference.whole(),
                    source,
                })?;
            (manifest.layers, Some(manifest.config.digest))
        }
        None => (Vec::new(), None),
    };
    let mut layer = repo.ensure_blob(SIMPLE_SIGNING, &payload).await?;
    layer.annotations = Some(BTreeMap::from([(
        SIGNATURE_ANNOTATION.to_owned(),
        signature,
    )]));
    let present = layers
        .iter()
        .any(|l| l.digest == layer.digest && l.annotations == layer.annotations);
    // The payload blob is back (`ensure_blob`); a lost config blob is written again below.
    if let (true, Some(bytes), Some(config)) = (present, &existing, &config)
        && repo.has_blob(config).await?
    {
        return Ok(Signed {
            digest: sha256_digest(bytes),
            reference: reference.whole(),
        });
    }
    if !present {
        layers.push(layer);
    }
    let config = serde_json::to_vec(&SignatureConfig {
        architecture: "",
        os: "",
        config: BTreeMap::new(),
        rootfs: RootFs {
            kind: "layers",
            diff_ids: layers.iter().map(|l| l.digest.clone()).collect(),
        },
    })
    .expect("a config serializes");
    let config = repo.ensure_blob(media_type::CONFIG, &config).await?;
    let manifest = ImageManifest {
        schema_version: 2,
        media_type: Some(media_type::MANIFEST.to_owned()),
        config,
        layers,
        annotations: None,
    };
    let bytes = serde_json::to_vec(&manifest).expect("a manifest serializes");
    repo.put_manifest(&reference, &bytes, media_type::MANIFEST)
        .await?;
    Ok(Signed {
        digest: sha256_digest(&bytes),
        reference: reference.whole(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_payload_is_cosigns_simple_signing_json() {
        assert_eq!(
            String::from_utf8(payload("r.io/a/b", "sha256:00")).unwrap(),
            r#"{"critical":{"identity":{"docker-reference":"r.io/a/b"},"image":{"docker-manifest-digest":"sha256:00"},"type":"cosign container image signature"},"optional":null}"#
        );
    }

    #[test]
    fn keys_that_are_not_signing_keys_are_refused_by_name() {
        let cases: [(&[u8], &str); 3] = [
            (b"hello", "k.pem: not a PEM private key"),
            (
                b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
                "k.pem: PEM type \"PUBLIC KEY\" is not a signing key (expected ENCRYPTED SIGSTORE PRIVATE KEY, PRIVATE KEY or EC PRIVATE KEY)",
            ),
            (
                b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
                "k.pem: not an EC P-256 private key (cosign signs with ECDSA P-256)",
            ),
        ];
        for (pem, message) in cases {
            assert_eq!(
                Signer::from_pem("k.pem", pem, None)
                    .unwrap_err()
                    .to_string(),
                message
            );
        }
        let encrypted = b"-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\ne30=\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n";
        assert_eq!(
            Signer::from_pem("k.pem", encrypted, None)
                .unwrap_err()
                .to_string(),
            "k.pem: the key is encrypted; set its password in COSIGN_PASSWORD"
        );
        assert!(matches!(
            Signer::from_pem("k.pem", encrypted, Some(&Secret::new("x"))).unwrap_err(),
            KeyError::Envelope { .. }
        ));
    }

    #[test]
    fn signatures_are_deterministic_and_verify() {
        use p256::ecdsa::signature::Verifier as _;
        use p256::pkcs8::EncodePrivateKey;
        let key = SigningKey::from_slice(&[7u8; 32]).unwrap();
        let pem = key.to_pkcs8_pem(Default::default()).unwrap();
        let signer = Signer::from_pem("k.pem", pem.as_bytes(), None).unwrap();
        let first = signer.sign(b"payload");
        assert_eq!(first, signer.sign(b"payload"));
        let der = BASE64.decode(&first).unwrap();
        let signature = Signature::from_der(&der).unwrap();
        key.verifying_key().verify(b"payload", &signature).unwrap();
        assert!(!format!("{signer:?}").contains("SigningKey"));
    }
}
