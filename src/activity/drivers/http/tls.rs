//! The `http` driver's TLS setup: one rustls client configuration per
//! activity, and how a failed handshake is told to the user.
//!
//! The TLS stack is rustls with its default crypto provider, set up by its own
//! builder; nothing here wires a cipher or a protocol version by hand. The
//! configuration is shared by every worker of the activity, so its session
//! store (rustls' default, in memory) lets a new connection resume a session an
//! earlier one made, where the server allows it. Each connection carries its
//! own TLS session for as long as it is kept alive (the connection's I/O is in
//! `transport`).
//!
//! Whom the driver trusts:
//!
//! - by default, the platform's root certificates (`rustls-native-certs`: the
//!   system store that curl and wrk read too, `/etc/ssl/certs` on Debian,
//!   `SSL_CERT_FILE` or `SSL_CERT_DIR` when set);
//! - with param `ca_file`, the certificates in that PEM file instead (a private
//!   CA, or a test server's own certificate). A server certificate that is
//!   itself in the file, byte for byte, is trusted as it is, as curl's
//!   `--cacert` trusts it: the usual self-signed test certificate
//!   (`openssl req -x509`, marked `CA:TRUE`, which WebPKI refuses as a
//!   server's own with `CaUsedAsEndEntity`) works. Its name and validity dates
//!   are still checked, and the handshake still proves the server holds its
//!   key ([`CaFileVerifier`]);
//! - with `tls_verify: false`, any certificate: the handshake's signatures are
//!   still checked, the certificate chain and its names are not. A warning line
//!   says so when the activity loads.
//!
//! The server name (SNI) and the name the certificate must hold are the URL's
//! host; an IP address is checked against the certificate's IP addresses and
//! sends no SNI (RFC 6066 §3).

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::path::Path;
use std::sync::{Arc, OnceLock};
use validity::validity;

/// Whom a TLS connection trusts (params `tls_verify` and `ca_file`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Trust {
    /// The platform's root certificates.
    Platform,
    /// The certificates in this PEM file.
    CaFile(String),
    /// Any certificate (`tls_verify: false`).
    Anyone,
}

/// Builds the client configuration for `trust`, or says why it cannot.
pub(crate) fn config(trust: &Trust) -> Result<Arc<ClientConfig>, String> {
    let builder = ClientConfig::builder();
    let mut config = match trust {
        Trust::Anyone => builder
            .with_root_certificates(RootCertStore::empty())
            .with_no_client_auth(),
        Trust::Platform => builder
            .with_root_certificates(platform_roots()?)
            .with_no_client_auth(),
        Trust::CaFile(path) => {
            let (roots, pinned) = file_roots(path)?;
            let provider = builder.crypto_provider().clone();
            let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| format!("param `ca_file`: `{path}` cannot be used: {e}"))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(CaFileVerifier { inner, pinned }))
                .with_no_client_auth()
        }
    };
    if *trust == Trust::Anyone {
        let provider = config.crypto_provider().clone();
        config
            .dangerous()
            .set_certificate_verifier(Arc::new(AcceptAny(provider)));
    }
    Ok(Arc::new(config))
}

/// The certificate verifier [`config`] installs for `trust` (for a driver that
/// wraps it, as `postgres` does for `sslmode=verify-ca`, which checks the chain
/// but not the name).
pub(crate) fn verifier(trust: &Trust) -> Result<Arc<dyn ServerCertVerifier>, String> {
    let provider = ClientConfig::builder().crypto_provider().clone();
    Ok(match trust {
        Trust::Anyone => Arc::new(AcceptAny(provider)),
        Trust::Platform => {
            WebPkiServerVerifier::builder_with_provider(Arc::new(platform_roots()?), provider)
                .build()
                .map_err(|e| format!("the platform's root certificates cannot be used: {e}"))?
        }
        Trust::CaFile(path) => {
            let (roots, pinned) = file_roots(path)?;
            let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| format!("param `ca_file`: `{path}` cannot be used: {e}"))?;
            Arc::new(CaFileVerifier { inner, pinned })
        }
    })
}

/// The platform's root certificates, or why there are none: read once per
/// process (reading and parsing the system store takes tens of milliseconds,
/// most of a first `https://` connection's cost before it was cached and read
/// before the first op; see `docs/activities.md`).
fn platform_roots() -> Result<RootCertStore, String> {
    static ROOTS: OnceLock<Result<RootCertStore, String>> = OnceLock::new();
    ROOTS.get_or_init(read_platform_roots).clone()
}

fn read_platform_roots() -> Result<RootCertStore, String> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        let why = found
            .errors
            .first()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        return Err(format!(
            "found no root certificates on this machine{why}; install them \
             (`apt-get install ca-certificates`), or set param `ca_file` to a PEM file \
             of the certificates to trust"
        ));
    }
    Ok(roots)
}

/// The certificates in the PEM file `path` (as roots, and as they are), or
/// why they cannot be read.
fn file_roots(path: &str) -> Result<(RootCertStore, Vec<CertificateDer<'static>>), String> {
    let fix = "set it to a PEM file holding `-----BEGIN CERTIFICATE-----` blocks";
    let bad =
        |e: &dyn std::fmt::Display| format!("param `ca_file`: cannot read `{path}`: {e}; {fix}");
    if !Path::new(path).is_file() {
        return Err(format!("param `ca_file`: `{path}` is not a file; {fix}"));
    }
    let mut roots = RootCertStore::empty();
    let mut pinned = Vec::new();
    for cert in CertificateDer::pem_file_iter(path).map_err(|e| bad(&e))? {
        let cert = cert.map_err(|e| bad(&e))?;
        pinned.push(cert.clone());
        roots.add(cert).map_err(|e| {
            format!("param `ca_file`: `{path}` holds a certificate rustls refuses: {e}")
        })?;
    }
    if roots.is_empty() {
        return Err(format!(
            "param `ca_file`: `{path}` holds no certificate; {fix}"
        ));
    }
    Ok((roots, pinned))
}

/// The name a connection to `host` sends (SNI) and checks the certificate
/// against; an IP address (IPv6 without brackets) is one.
pub(crate) fn server_name(host: &str) -> Result<ServerName<'static>, String> {
    ServerName::try_from(host.to_string())
        .map_err(|_| format!("`{host}` is not a host name TLS can check a certificate against"))
}

/// What a failed handshake with `authority` means, and how to fix it: every
/// certificate error names its fix.
pub(crate) fn explain(authority: &str, e: &rustls::Error) -> String {
    use rustls::{CertificateError as C, Error as E};
    let trust = "set param `ca_file` to its CA's PEM file (or to the certificate itself), \
                 or `tls_verify: false` for a test server";
    match e {
        E::InvalidMessage(_) | E::InappropriateMessage { .. } => format!(
            "`{authority}` does not speak TLS ({e}); if it serves plain HTTP, use an `http://` URL"
        ),
        E::InvalidCertificate(C::NotValidForName | C::NotValidForNameContext { .. }) => format!(
            "`{authority}`'s certificate is not for that name ({e}); use the host name the \
             certificate names in the URL"
        ),
        E::InvalidCertificate(C::Expired | C::ExpiredContext { .. }) => {
            format!("`{authority}`'s certificate has expired ({e}); renew it on the server")
        }
        E::InvalidCertificate(C::NotValidYet | C::NotValidYetContext { .. }) => {
            format!("`{authority}`'s certificate is not valid yet ({e}); check the clocks")
        }
        E::InvalidCertificate(C::UnknownIssuer | C::BadSignature) => format!(
            "`{authority}`'s certificate is not signed by a certificate this run trusts ({e}); \
             {trust}"
        ),
        E::InvalidCertificate(C::Other(o)) if format!("{o:?}").contains("CaUsedAsEndEntity") => {
            format!(
                "`{authority}` presents a CA certificate (`CA:TRUE`, as `openssl req -x509` \
                 makes) as its own, which WebPKI refuses ({e}); set param `ca_file` to that \
                 certificate's PEM file to trust it as it is, or give the server a leaf \
                 certificate signed by it"
            )
        }
        E::InvalidCertificate(C::InvalidPurpose | C::InvalidPurposeContext { .. }) => format!(
            "`{authority}`'s certificate is not for TLS servers ({e}); give the server one \
             whose extended key usage includes serverAuth"
        ),
        E::InvalidCertificate(C::Revoked) => {
            format!("`{authority}`'s certificate has been revoked ({e}); replace it on the server")
        }
        E::InvalidCertificate(
            C::UnsupportedSignatureAlgorithmContext { .. }
            | C::UnsupportedSignatureAlgorithmForPublicKeyContext { .. },
        ) => format!(
            "`{authority}`'s certificate is signed with an algorithm rustls does not accept \
             ({e}); give the server a certificate signed with ECDSA, Ed25519 or RSA (SHA-256 \
             or better)"
        ),
        E::InvalidCertificate(_) => format!(
            "`{authority}`'s certificate was refused ({e}); look at it with `openssl s_client \
             -connect {authority} -showcerts`; {trust}"
        ),
        E::PeerIncompatible(_) | E::AlertReceived(_) => format!(
            "TLS with `{authority}` failed: {e}; check that the server offers TLS 1.2 or 1.3 \
             with a cipher suite rustls supports (ECDHE with AES-GCM or ChaCha20-Poly1305)"
        ),
        _ => format!("TLS with `{authority}` failed: {e}"),
    }
}

/// The verifier of `ca_file`: rustls' WebPKI verifier over the file's
/// certificates, except that a server certificate that is itself in the file
/// (byte for byte) passes whatever WebPKI says of its chain (a self-signed
/// `CA:TRUE` certificate is refused as an end entity there), provided it is
/// for the name asked and within its validity dates. The handshake's
/// signature is checked against it in every case.
#[derive(Debug)]
struct CaFileVerifier {
    inner: Arc<WebPkiServerVerifier>,
    /// The file's certificates, as they are.
    pinned: Vec<CertificateDer<'static>>,
}

impl ServerCertVerifier for CaFileVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let refused = match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        if !self
            .pinned
            .iter()
            .any(|c| c.as_ref() == end_entity.as_ref())
        {
            return Err(refused);
        }
        // Dates before the name: a wrapper that forgives a name mismatch
        // (`postgres`' `sslmode=verify-ca`) has had every other check.
        let Some((from, until)) = validity(end_entity.as_ref()) else {
            return Err(refused);
        };
        let t = now.as_secs();
        if t < from {
            return Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidYet,
            ));
        }
        if t > until {
            return Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::Expired,
            ));
        }
        let parsed = rustls::server::ParsedCertificate::try_from(end_entity)?;
        rustls::client::verify_server_name(&parsed, server_name)?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// A server that closed the connection before the handshake was done (rustls
/// reports it as an unexpected end of file).
pub(crate) fn closed_in_handshake(authority: &str) -> String {
    format!(
        "`{authority}` closed the connection during the TLS handshake; check that it serves TLS \
         on this port"
    )
}

/// What an I/O error during the handshake with `authority` means.
pub(crate) fn handshake_failure(authority: &str, e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        return closed_in_handshake(authority);
    }
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .map(|t| explain(authority, t))
        .unwrap_or_else(|| {
            format!(
                "the TLS handshake with `{authority}` broke: {e}; check that it serves TLS on this port"
            )
        })
}

/// The verifier of `tls_verify: false`: any certificate passes, the
/// handshake's signatures are still checked with the provider's algorithms.
#[derive(Debug)]
struct AcceptAny(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

mod validity;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_ca_file_that_is_missing_or_holds_no_certificate_says_so() {
        let e = config(&Trust::CaFile("/no/such/ca.pem".into())).unwrap_err();
        assert!(e.contains("`/no/such/ca.pem` is not a file"), "{e}");
        let dir = std::env::temp_dir().join(format!("paceline-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let e = config(&Trust::CaFile(empty.display().to_string())).unwrap_err();
        assert!(e.contains("holds no certificate"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn server_names_take_hosts_and_ip_addresses() {
        assert!(matches!(
            server_name("localhost"),
            Ok(ServerName::DnsName(_))
        ));
        assert!(matches!(
            server_name("127.0.0.1"),
            Ok(ServerName::IpAddress(_))
        ));
        assert!(matches!(server_name("::1"), Ok(ServerName::IpAddress(_))));
        assert!(server_name("bad host").is_err());
    }

    #[test]
    fn a_server_that_is_not_tls_is_named_as_such() {
        let e = rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType);
        let m = explain("h:443", &e);
        assert!(
            m.contains("does not speak TLS") && m.contains("`http://`"),
            "{m}"
        );
    }
}
