//! Certificates made on the spot for the TLS tests (`rcgen`): a test CA, and
//! leaf certificates it signs for the names and the validity a test needs.

#![allow(dead_code)]

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, date_time_ymd,
};

/// A certificate authority for one test.
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A leaf certificate and its key, in PEM.
pub struct Leaf {
    /// The leaf's certificate.
    pub cert_pem: String,
    /// Its private key.
    pub key_pem: String,
}

/// A self-signed certificate for `names` marked `CA:TRUE`, as
/// `openssl req -x509` makes it, valid from `from` to `to` (year, month, day):
/// the server's certificate and its own issuer.
pub fn self_signed_ca_leaf(names: &[&str], from: (i32, u8, u8), to: (i32, u8, u8)) -> Leaf {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut params = CertificateParams::new(names).expect("valid names");
    params
        .distinguished_name
        .push(DnType::CommonName, "paceline self-signed");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.not_before = date_time_ymd(from.0, from.1, from.2);
    params.not_after = date_time_ymd(to.0, to.1, to.2);
    let key = KeyPair::generate().expect("a key");
    let cert = params.self_signed(&key).expect("self-signed");
    Leaf {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    }
}

impl TestCa {
    /// A new CA named `paceline test CA`.
    pub fn new() -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("no names");
        params
            .distinguished_name
            .push(DnType::CommonName, "paceline test CA");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let key = KeyPair::generate().expect("a key");
        Self {
            issuer: CertifiedIssuer::self_signed(params, key).expect("a CA certificate"),
        }
    }

    /// The CA's certificate in PEM (what `ca_file` points to).
    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A leaf for `names` (DNS names or IP addresses), valid from a year ago
    /// for ten years.
    pub fn leaf(&self, names: &[&str]) -> Leaf {
        self.leaf_valid(names, (2025, 1, 1), (2035, 1, 1))
    }

    /// A leaf for `names` that expired at the start of 2021.
    pub fn expired_leaf(&self, names: &[&str]) -> Leaf {
        self.leaf_valid(names, (2020, 1, 1), (2021, 1, 1))
    }

    fn leaf_valid(&self, names: &[&str], from: (i32, u8, u8), to: (i32, u8, u8)) -> Leaf {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).expect("valid names");
        params.not_before = date_time_ymd(from.0, from.1, from.2);
        params.not_after = date_time_ymd(to.0, to.1, to.2);
        let key = KeyPair::generate().expect("a key");
        let cert = params.signed_by(&key, &self.issuer).expect("signed");
        Leaf {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}
