//! libpq's `sslmode` on rustls: whom a connection trusts in each mode, and
//! what a failed check means.
//!
//! | sslmode | TLS | certificate checked |
//! |---|---|---|
//! | `disable` | never | - |
//! | `allow`, `prefer` | when the server offers it | as `require` |
//! | `require` | always | not at all without a root certificate (as libpq without `root.crt`); with one (`sslrootcert` or `ca_file`), as `verify-ca` |
//! | `verify-ca` | always | the chain, against the root certificate |
//! | `verify-full` | always | the chain and the host name |
//!
//! The root certificate is `sslrootcert` (in the URL or as a param) or param
//! `ca_file`: a PEM file, or `system` for the platform's roots. Unlike libpq,
//! no `~/.postgresql/root.crt` is read: a run's trust is what its file says.

use super::super::http_tls::{Trust, verifier};
use super::target::Mode;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, SignatureScheme};
use std::sync::Arc;

/// The rustls configuration for `mode` (`None` for `disable`) and whether it
/// checks nothing, from the root certificate (`sslrootcert` or `ca_file`)
/// and `tls_verify`.
pub(super) fn config(
    mode: Mode,
    root: Option<&str>,
    tls_verify: bool,
) -> Result<(Option<Arc<ClientConfig>>, bool), String> {
    let trust = match root {
        Some("system") => Some(Trust::Platform),
        Some(path) => Some(Trust::CaFile(path.to_string())),
        None => None,
    };
    let verifying = matches!(mode, Mode::VerifyCa | Mode::VerifyFull);
    if verifying && !tls_verify {
        return Err(format!(
            "`sslmode={}` and `tls_verify: false` contradict each other; remove `tls_verify: \
             false`, or use `sslmode=require` to encrypt without checking",
            mode.name()
        ));
    }
    let (verify, unchecked): (Arc<dyn ServerCertVerifier>, bool) = match (mode, trust) {
        (Mode::Disable, _) => return Ok((None, false)),
        (Mode::VerifyCa | Mode::VerifyFull, None) => {
            return Err(format!(
                "`sslmode={}` checks the server's certificate against a root certificate: \
                 give `sslrootcert=/path/to/ca.pem` (in the URL or as a param, or param \
                 `ca_file`), or `sslrootcert=system` for the platform's roots",
                mode.name()
            ));
        }
        (_, _) if !tls_verify => (verifier(&Trust::Anyone)?, true),
        (Mode::Allow | Mode::Prefer | Mode::Require, None) => (verifier(&Trust::Anyone)?, true),
        (Mode::VerifyFull, Some(t)) => (verifier(&t)?, false),
        (_, Some(t)) => (Arc::new(ChainOnly(verifier(&t)?)), false),
    };
    let config = ClientConfig::builder()
        .dangerous()
        .with_custom_certificate_verifier(verify)
        .with_no_client_auth();
    Ok((Some(Arc::new(config)), unchecked))
}

/// `verify-ca`: the inner verifier's checks but the name's. rustls' WebPKI
/// verifier and the `ca_file` one check the name last, after the chain, its
/// dates and usage, so a name mismatch means every other check passed.
#[derive(Debug)]
struct ChainOnly(Arc<dyn ServerCertVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The rustls error inside a failed connection's causes, if any.
pub(super) fn rustls_error<'a>(
    e: &'a (dyn std::error::Error + 'static),
) -> Option<&'a rustls::Error> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cur {
        if let Some(r) = c.downcast_ref::<rustls::Error>() {
            return Some(r);
        }
        if let Some(io) = c.downcast_ref::<std::io::Error>()
            && let Some(inner) = io.get_ref()
            && let Some(r) = inner.downcast_ref::<rustls::Error>()
        {
            return Some(r);
        }
        cur = c.source();
    }
    None
}

/// Which check a failed handshake under `mode` failed, and how to fix it.
pub(super) fn explain(mode: Mode, host: &str, root: Option<&str>, e: &rustls::Error) -> String {
    use rustls::Error as E;
    let root = root.unwrap_or("(none)");
    match e {
        E::InvalidCertificate(CertificateError::NotValidForName)
        | E::InvalidCertificate(CertificateError::NotValidForNameContext { .. }) => format!(
            "the host name check (sslmode=verify-full) failed: the server's certificate is not \
             for `{host}` ({e}); connect by a name the certificate holds, give the server a \
             certificate for `{host}`, or use sslmode=verify-ca to check the chain only"
        ),
        E::InvalidCertificate(CertificateError::UnknownIssuer | CertificateError::BadSignature) => {
            format!(
                "the certificate chain check (sslmode={}) failed: the server's certificate is \
                 not signed by a certificate in sslrootcert `{root}` ({e}); point sslrootcert \
                 (or ca_file) at the CA that signed it",
                mode.name()
            )
        }
        other => format!(
            "the TLS handshake (sslmode={}) failed: {}",
            mode.name(),
            super::super::http_tls::explain(host, other)
        ),
    }
}
