//! A local embeddings endpoint for the tests: it speaks the OpenAI `/embeddings` protocol
//! over HTTP/1.1 (`POST /v1/embeddings` with `{"model", "input": [..]}`, answered by
//! `{"object": "list", "data": [{"object": "embedding", "embedding", "index"}], "model"}`),
//! with deterministic vectors: a hashed bag of words (each lowercase word adds one to the
//! dimension its hash picks), so texts sharing words are near and semantic ranking can be
//! checked. It can be told to fail, and it records what it was sent.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

pub const DIMS: usize = 64;

/// The vector of `text`: a hashed bag of its words.
pub fn bag_of_words(text: &str) -> Vec<f32> {
    let mut v = vec![0.0f32; DIMS];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in word.to_lowercase().bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        v[(h % DIMS as u64) as usize] += 1.0;
    }
    // A text with no word still gets a vector (the endpoint never answers a zero one).
    v[DIMS - 1] += 0.01;
    v
}

#[derive(Default)]
pub struct Seen {
    /// Every `input` list received, in order.
    pub inputs: Mutex<Vec<Vec<String>>>,
    /// The Authorization headers received.
    pub auth: Mutex<Vec<Option<String>>>,
    pub models: Mutex<Vec<String>>,
    pub requests: AtomicUsize,
}

pub struct EmbedServer {
    pub url: String,
    pub seen: Arc<Seen>,
    /// When set, every request is answered HTTP 503.
    pub failing: Arc<AtomicBool>,
}

impl EmbedServer {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let seen = Arc::new(Seen::default());
        let failing = Arc::new(AtomicBool::new(false));
        let (s, f) = (Arc::clone(&seen), Arc::clone(&failing));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let (s, f) = (Arc::clone(&s), Arc::clone(&f));
                std::thread::spawn(move || serve(stream, &s, &f));
            }
        });
        EmbedServer { url, seen, failing }
    }

    pub fn requests(&self) -> usize {
        self.seen.requests.load(Ordering::SeqCst)
    }
}

fn serve(stream: TcpStream, seen: &Seen, failing: &AtomicBool) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let request_line = line.trim().to_owned();
        let mut length = 0usize;
        let mut auth = None;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').unwrap_or((header, ""));
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap_or(0),
                "authorization" => auth = Some(value.trim().to_owned()),
                _ => {}
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        seen.requests.fetch_add(1, Ordering::SeqCst);
        seen.auth.lock().unwrap().push(auth);
        let (status, answer) = if request_line != "POST /v1/embeddings HTTP/1.1" {
            ("404 Not Found", r#"{"error":"no such route"}"#.to_owned())
        } else if failing.load(Ordering::SeqCst) {
            (
                "503 Service Unavailable",
                r#"{"error":{"message":"model is loading"}}"#.to_owned(),
            )
        } else {
            let request: serde_json::Value = serde_json::from_slice(&body).unwrap();
            let model = request["model"].as_str().unwrap_or_default().to_owned();
            let inputs: Vec<String> = request["input"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i.as_str().unwrap().to_owned())
                .collect();
            seen.models.lock().unwrap().push(model.clone());
            // Answered out of order, as the protocol allows: `index` says which is which.
            let data: Vec<serde_json::Value> = inputs
                .iter()
                .enumerate()
                .rev()
                .map(|(i, text)| {
                    serde_json::json!({"object": "embedding", "index": i, "embedding": bag_of_words(text)})
                })
                .collect();
            seen.inputs.lock().unwrap().push(inputs);
            (
                "200 OK",
                serde_json::json!({"object": "list", "data": data, "model": model,
                    "usage": {"prompt_tokens": 1, "total_tokens": 1}})
                .to_string(),
            )
        };
        let response = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{answer}",
            answer.len()
        );
        if out.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}
