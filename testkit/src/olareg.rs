//! [`ReferrersRegistry`]: a real OCI registry with the referrers API of the OCI distribution
//! spec 1.1, for the paths Debian's docker-registry 2.8 cannot show — olareg, started as OLM
//! v1's environment starts it ([`olmpack_envtest::olm::v1::LocalRegistry`]: plain HTTP on
//! 127.0.0.1, anonymous, its own temp directory removed on drop).

pub use olmpack_envtest::olm::v1::LocalRegistry as ReferrersRegistry;
