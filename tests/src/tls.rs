//! A throw-away PKI for TLS tests: a CA and a server certificate signed by it.
// Test support: a failure to make a certificate is the test failure report.
#![allow(clippy::expect_used)]

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// Matching server and client TLS configurations.
#[derive(Debug, Clone)]
pub struct TestPki {
    /// Presents a certificate for the names given to [`test_pki`].
    pub server: Arc<rustls::ServerConfig>,
    /// Trusts only the test CA.
    pub client: Arc<rustls::ClientConfig>,
    /// A client configuration trusting a different CA, which must fail the handshake.
    pub untrusting_client: Arc<rustls::ClientConfig>,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn ca() -> (CertificateDer<'static>, Issuer<'static, KeyPair>) {
    let key = KeyPair::generate().expect("CA key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, "outbox test CA");
    let cert = params.self_signed(&key).expect("CA certificate");
    (cert.der().clone(), Issuer::new(params, key))
}

fn client_trusting(ca: CertificateDer<'static>) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca).expect("CA into the root store");
    Arc::new(
        rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

/// A new CA and a server certificate for `names` (DNS names or IP addresses).
///
/// # Panics
/// When generating keys or certificates fails.
pub fn test_pki(names: &[&str]) -> TestPki {
    let (ca_der, issuer) = ca();
    let key = KeyPair::generate().expect("server key");
    let params = CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>())
        .expect("server params");
    let cert = params.signed_by(&key, &issuer).expect("server certificate");
    let server = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .expect("server TLS config");
    let (other_ca, _) = ca();
    TestPki {
        server: Arc::new(server),
        client: client_trusting(ca_der),
        untrusting_client: client_trusting(other_ca),
    }
}
