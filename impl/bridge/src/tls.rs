//! Trusting exactly the certificate the Local REST API plugin serves (spec/bridge.md
//! `bridge.tls.pin-first-use`, `bridge.tls.pin-checked`, `bridge.tls.changed`,
//! `bridge.tls.no-key-before-pin`).
//!
//! The plugin makes its own certificate and publishes it at `/obsidian-local-rest-api.crt`.
//! Older versions serve one self-signed certificate (the one the TLS server presents);
//! newer ones make a certificate authority, present a server certificate signed by it, and
//! publish the authority. Either way the published certificate is what the user would trust
//! by hand, so it is what is pinned: on first use the client connects accepting whatever is
//! presented, fetches the published certificate without sending the API key, checks that the
//! presented chain is that certificate or is signed by it, and stores it (0600) under the
//! cache directory. Every later connection is trusted only when the presented end-entity
//! certificate is the pin itself or chains to it; anything else is refused before a byte of
//! the request is sent, with the way to re-pin in the message.

use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, Error as TlsError, RootCertStore,
    SignatureScheme,
};
use sha2::{Digest, Sha256};

/// The path the plugin publishes its certificate at.
pub const CERT_PATH: &str = "/obsidian-local-rest-api.crt";

/// The SHA-256 of a certificate's DER, in hex: how a certificate is named in messages.
pub fn cert_sha256(der: &[u8]) -> String {
    hex::encode(Sha256::digest(der))
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Where the pin of one vault's bridge lives: `<cacheDir>/bridge-pins/<vault>.der`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinStore {
    path: PathBuf,
}

impl PinStore {
    pub fn new(cache_dir: &Path, vault: &str) -> Self {
        // A vault id is a slug in practice; anything else is hex-encoded so it cannot name
        // another folder.
        let safe = !vault.is_empty()
            && vault
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        let name = if safe {
            vault.to_owned()
        } else {
            format!("x-{}", hex::encode(vault))
        };
        PinStore {
            path: cache_dir.join("bridge-pins").join(format!("{name}.der")),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The pinned certificate's DER, if one was pinned.
    pub fn load(&self) -> io::Result<Option<Vec<u8>>> {
        match fs::read(&self.path) {
            Ok(der) => Ok(Some(der)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    // r[impl bridge.tls.pin-first-use]
    /// Stores `der` as the pin: a 0600 file in a 0700 folder, written whole then renamed so a
    /// reader never sees half a certificate.
    pub fn save(&self, der: &[u8]) -> io::Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        tc_gate::private_fs::create_private_dir_all(dir)?;
        let tmp = dir.join(format!(
            ".{}.{}.tmp",
            self.path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            std::process::id()
        ));
        let _ = fs::remove_file(&tmp);
        let mut file = tc_gate::private_fs::create_private_file(&tmp)?;
        file.write_all(der)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, &self.path)
    }
}

/// The certificates of a published `.crt` (PEM, one or more; or a single DER).
pub fn parse_published(body: &[u8]) -> Vec<Vec<u8>> {
    let pems: Vec<Vec<u8>> = CertificateDer::pem_slice_iter(body)
        .filter_map(Result::ok)
        .map(|der| der.as_ref().to_vec())
        .collect();
    if !pems.is_empty() {
        return pems;
    }
    // A DER certificate starts with a SEQUENCE tag.
    if body.first() == Some(&0x30) {
        return vec![body.to_vec()];
    }
    Vec::new()
}

/// Whether the presented chain (`end_entity`, `intermediates`) is `anchor` itself or is
/// signed by it for `server_name`.
fn chain_trusted(
    anchor: &[u8],
    end_entity: &CertificateDer<'_>,
    intermediates: &[CertificateDer<'_>],
    server_name: &ServerName<'_>,
    now: UnixTime,
) -> bool {
    if end_entity.as_ref() == anchor {
        return true;
    }
    let mut roots = RootCertStore::empty();
    if roots.add(CertificateDer::from(anchor.to_vec())).is_err() {
        return false;
    }
    let Ok(webpki) =
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider()).build()
    else {
        return false;
    };
    webpki
        .verify_server_cert(end_entity, intermediates, server_name, &[], now)
        .is_ok()
}

/// What a verifier saw of the chain presented in one handshake.
#[derive(Debug, Clone, Default)]
pub struct Presented {
    pub end_entity: Vec<u8>,
    pub intermediates: Vec<Vec<u8>>,
    /// Whether the verifier refused it (only a pinned verifier refuses).
    pub refused: bool,
}

/// The verifier of one connection: pinned (trusts the pin or what chains to it) or, on
/// first use, capturing (accepts any chain, to be judged against the published certificate
/// before anything is trusted). Either way the handshake's signatures are verified with
/// the presented key, so the peer holds the key of the certificate it showed.
#[derive(Debug)]
pub struct PinVerifier {
    pin: Option<Vec<u8>>,
    provider: Arc<CryptoProvider>,
    seen: Mutex<Presented>,
}

impl PinVerifier {
    /// Trusts `pin` (DER) and what chains to it.
    pub fn pinned(pin: Vec<u8>) -> Arc<Self> {
        Arc::new(PinVerifier {
            pin: Some(pin),
            provider: provider(),
            seen: Mutex::default(),
        })
    }

    /// Accepts any chain and remembers it (first use, before the pin exists).
    pub fn capturing() -> Arc<Self> {
        Arc::new(PinVerifier {
            pin: None,
            provider: provider(),
            seen: Mutex::default(),
        })
    }

    pub fn presented(&self) -> Presented {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// A client configuration using this verifier.
    pub fn client_config(self: &Arc<Self>) -> Result<Arc<ClientConfig>, TlsError> {
        let config = ClientConfig::builder_with_provider(Arc::clone(&self.provider))
            .with_safe_default_protocol_versions()?
            .dangerous()
            .with_custom_certificate_verifier(Arc::clone(self) as Arc<dyn ServerCertVerifier>)
            .with_no_client_auth();
        Ok(Arc::new(config))
    }
}

/// Whether `published` (the pin candidate) is consistent with the chain `presented` in the
/// handshake of the connection it was fetched over.
pub fn published_matches(
    published: &[u8],
    presented: &Presented,
    server_name: &ServerName<'_>,
) -> bool {
    let end_entity = CertificateDer::from(presented.end_entity.clone());
    let intermediates: Vec<CertificateDer<'_>> = presented
        .intermediates
        .iter()
        .map(|c| CertificateDer::from(c.clone()))
        .collect();
    chain_trusted(
        published,
        &end_entity,
        &intermediates,
        server_name,
        UnixTime::now(),
    )
}

impl ServerCertVerifier for PinVerifier {
    // r[impl bridge.tls.pin-checked]
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, TlsError> {
        let trusted = match &self.pin {
            None => true,
            Some(pin) => chain_trusted(pin, end_entity, intermediates, server_name, now),
        };
        if let Ok(mut seen) = self.seen.lock() {
            *seen = Presented {
                end_entity: end_entity.as_ref().to_vec(),
                intermediates: intermediates.iter().map(|c| c.as_ref().to_vec()).collect(),
                refused: !trusted,
            };
        }
        if trusted {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(TlsError::InvalidCertificate(
                CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
