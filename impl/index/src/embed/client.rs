//! The client of an OpenAI-compatible embeddings endpoint (spec/config.md `[search.embeddings]`;
//! spec/index.md `search.embeddings.endpoint`): `POST {url}/embeddings` with
//! `{"model", "input": [..]}`, answered by `{"data": [{"embedding", "index"}], "model"}`, as
//! OpenAI, Ollama (`/v1`), llama.cpp's server and LM Studio speak it.
//!
//! reqwest's blocking client (reqwest is already in the workspace for OIDC; the blocking
//! feature adds no crate the tree does not hold): every caller is a blocking thread (a
//! tool's handler on the blocking pool, the index's own threads). The key is read once from
//! the environment variable the config names and is sent as a bearer token only; no error
//! message, log line or `Debug` output carries it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::EmbeddingsConfig;

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one request (a batch of chunks, or one query) may take in all.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// The most bytes of an answer read (a batch of 1,536-dimension vectors is far below).
const MAX_ANSWER_BYTES: u64 = 64 << 20;

/// Why the endpoint gave no vectors (the message never holds the key).
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum EmbedError {
    #[error("the embeddings endpoint is not configured right: {0}")]
    Setup(String),
    #[error("storing the embeddings: {0}")]
    Db(String),
    #[error("the embeddings endpoint {url} could not be reached: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("the embeddings endpoint {url} answered HTTP {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    #[error(
        "the embeddings endpoint {url} answered something that is not an embeddings list: {reason}"
    )]
    Malformed { url: String, reason: String },
}

/// A configured endpoint.
pub struct Embedder {
    url: String,
    model: String,
    key: Option<String>,
    client: reqwest::blocking::Client,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("key", &self.key.as_ref().map(|_| "<set>"))
            .finish_non_exhaustive()
    }
}

#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    input: &'a [String],
}

#[derive(Deserialize)]
struct Answer {
    data: Vec<Datum>,
}

#[derive(Deserialize)]
struct Datum {
    embedding: Vec<f32>,
    index: usize,
}

impl Embedder {
    /// The endpoint of `config`, its key read from the environment variable `apiKeyEnv`
    /// names (a named variable that is unset or empty is an error naming the variable).
    pub fn new(config: &EmbeddingsConfig) -> Result<Self, EmbedError> {
        let key = match &config.api_key_env {
            None => None,
            Some(var) => match std::env::var(var) {
                Ok(key) if !key.trim().is_empty() => Some(key.trim().to_owned()),
                _ => {
                    return Err(EmbedError::Setup(format!(
                        "apiKeyEnv names {var}, which is not set in the server's environment"
                    )));
                }
            },
        };
        let url = config.url.trim_end_matches('/').to_owned();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(EmbedError::Setup(format!(
                "url {url} is not an http:// or https:// address"
            )));
        }
        // reqwest is built without a bundled crypto provider (see the workspace manifest);
        // ring is installed as the process default, as for OIDC. An error means another
        // provider is installed already, which serves as well.
        let _unused = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::blocking::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| EmbedError::Setup(e.to_string()))?;
        Ok(Embedder {
            url,
            model: config.model.clone(),
            key,
            client,
        })
    }

    /// The model the vectors come from (stored with each vector).
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The vectors of `inputs`, in order, each scaled to unit length (so a dot product is
    /// the cosine similarity).
    pub fn embed(&self, inputs: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if inputs.is_empty() {
            return Ok(Vec::new());
        }
        let endpoint = format!("{}/embeddings", self.url);
        let mut request = self.client.post(&endpoint).json(&Request {
            model: &self.model,
            input: inputs,
        });
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        let unreachable = |e: reqwest::Error| EmbedError::Unreachable {
            url: endpoint.clone(),
            reason: without_url(&e),
        };
        let response = request.send().map_err(unreachable)?;
        let status = response.status();
        let mut body = Vec::new();
        use std::io::Read as _;
        response
            .take(MAX_ANSWER_BYTES)
            .read_to_end(&mut body)
            .map_err(|e| EmbedError::Unreachable {
                url: endpoint.clone(),
                reason: e.to_string(),
            })?;
        if !status.is_success() {
            let text: String = String::from_utf8_lossy(&body).chars().take(300).collect();
            return Err(EmbedError::Status {
                url: endpoint,
                status: status.as_u16(),
                body: text,
            });
        }
        let malformed = |reason: String| EmbedError::Malformed {
            url: endpoint.clone(),
            reason,
        };
        let answer: Answer = serde_json::from_slice(&body).map_err(|e| malformed(e.to_string()))?;
        let mut vectors: Vec<Option<Vec<f32>>> = vec![None; inputs.len()];
        for datum in answer.data {
            let slot = vectors
                .get_mut(datum.index)
                .ok_or_else(|| malformed(format!("index {} is out of range", datum.index)))?;
            *slot = Some(unit(datum.embedding).ok_or_else(|| {
                malformed(format!(
                    "the vector of input {} is empty or zero",
                    datum.index
                ))
            })?);
        }
        let dims = vectors.first().and_then(|v| v.as_ref()).map(Vec::len);
        vectors
            .into_iter()
            .enumerate()
            .map(|(i, v)| match v {
                Some(v) if Some(v.len()) == dims => Ok(v),
                Some(_) => Err(malformed("the vectors differ in length".to_owned())),
                None => Err(malformed(format!("input {i} has no vector"))),
            })
            .collect()
    }
}

/// reqwest's error without its URL (the endpoint is named apart, once).
fn without_url(error: &reqwest::Error) -> String {
    let mut text = tc_tools::with_causes(error);
    if let Some(url) = error.url() {
        text = text.replace(url.as_str(), "");
    }
    text.trim().to_owned()
}

/// `v` scaled to unit length, or `None` when it has no length (or is not finite).
pub(crate) fn unit(mut v: Vec<f32>) -> Option<Vec<f32>> {
    let norm = v
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt();
    if v.is_empty() || !norm.is_finite() || norm == 0.0 {
        return None;
    }
    for x in &mut v {
        *x = (f64::from(*x) / norm) as f32;
    }
    Some(v)
}

/// A vector as stored (little-endian f32s).
pub(crate) fn to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A stored vector.
#[cfg(test)]
fn from_blob(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_unit_and_round_trip_through_blobs() {
        let v = unit(vec![3.0, 4.0]).unwrap();
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
        assert_eq!(from_blob(&to_blob(&v)), v);
        assert_eq!(unit(vec![0.0, 0.0]), None);
        assert_eq!(unit(Vec::new()), None);
    }

    #[test]
    fn a_named_key_variable_that_is_unset_is_refused_by_name_and_the_key_never_shows() {
        let config = EmbeddingsConfig {
            url: "http://127.0.0.1:9/v1".into(),
            model: "m".into(),
            api_key_env: Some("TC_INDEX_TEST_SURELY_UNSET_KEY".into()),
        };
        let error = Embedder::new(&config).unwrap_err();
        assert!(error.to_string().contains("TC_INDEX_TEST_SURELY_UNSET_KEY"));
        let config = EmbeddingsConfig {
            url: "ftp://x".into(),
            model: "m".into(),
            api_key_env: None,
        };
        assert!(matches!(Embedder::new(&config), Err(EmbedError::Setup(_))));
        let config = EmbeddingsConfig {
            url: "http://127.0.0.1:9/v1/".into(),
            model: "m".into(),
            api_key_env: None,
        };
        let embedder = Embedder {
            key: Some("sekrit-value".into()),
            ..Embedder::new(&config).unwrap()
        };
        assert!(!format!("{embedder:?}").contains("sekrit"));
        // Port 9 (discard) refuses: an unreachable endpoint, named, without the key.
        let error = embedder.embed(&["x".into()]).unwrap_err();
        assert!(matches!(error, EmbedError::Unreachable { .. }), "{error}");
        assert!(!error.to_string().contains("sekrit"));
    }
}
