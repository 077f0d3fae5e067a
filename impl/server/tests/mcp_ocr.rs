//! `ocr_bulk` through the real server in process, on the real engines and a cache.db on
//! disk: the modern round trip with progress, drift on the round trip, the legacy shim and
//! the CLI token, and `[ocr]` in the configuration file (a language with no model is
//! `ocr_unavailable` naming its package) (spec/ocr.md;
//! spec/drift.md `drift.bind.ocr-bulk`, `drift.every-route`).

mod mcp_support;

use std::process::Command;
use std::sync::Arc;

use mcp_support::{
    Client, Harness, Reply, args, call, call_once, complete, connect, failure, legacy, modern,
    success,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, InputResponses, NumberOrString, ProgressToken,
    RequestMetaObject,
};
use serde_json::{Value, json};
use tc_server::config::Config;

/// A one-page PDF whose text layer holds `lines` (Helvetica, 24 pt).
fn pdf(lines: &[&str]) -> Vec<u8> {
    let mut content = String::from("BT /F1 24 Tf 72 720 Td 30 TL");
    for line in lines {
        content.push_str(&format!(" ({line}) Tj T*"));
    }
    content.push_str(" ET");
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_owned(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R \
         /Resources << /Font << /F1 5 0 R >> >> >>"
            .to_owned(),
        format!(
            "<< /Length {} >>\nstream\n{content}\nendstream",
            content.len()
        ),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_owned(),
    ];
    let mut out = String::from("%PDF-1.4\n");
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.push_str(&format!("{} 0 obj\n{object}\nendobj\n", i + 1));
    }
    let xref = out.len();
    out.push_str(&format!(
        "xref\n0 {}\n0000000000 65535 f \n",
        objects.len() + 1
    ));
    for offset in offsets {
        out.push_str(&format!("{offset:010} 00000 n \n"));
    }
    out.push_str(&format!(
        "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
        objects.len() + 1
    ));
    out.into_bytes()
}

/// An image of `lines`, rendered by the real `pdftoppm` (PNG, 150 dpi).
fn png(lines: &[&str]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.pdf");
    std::fs::write(&input, pdf(lines)).unwrap();
    let stem = dir.path().join("out");
    let status = Command::new("pdftoppm")
        .args(["-r", "150", "-gray", "-png", "-singlefile"])
        .arg(&input)
        .arg(&stem)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::read(stem.with_extension("png")).unwrap()
}

fn put(h: &Harness, rel: &str, bytes: &[u8]) {
    let path = h.vault.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn with_progress(arguments: Value) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new("ocr_bulk").with_arguments(args(arguments));
    params.meta = Some(RequestMetaObject::with_progress_token(ProgressToken(
        NumberOrString::Number(3),
    )));
    params
}

async fn resubmit(
    client: &Client,
    arguments: Value,
    state: Option<String>,
    progress: bool,
) -> CallToolResponse {
    let mut params = if progress {
        with_progress(arguments)
    } else {
        CallToolRequestParams::new("ocr_bulk").with_arguments(args(arguments))
    };
    let mut responses = InputResponses::new();
    responses.insert("confirm".to_owned(), Reply::Approve.json());
    params = params.with_input_responses(responses);
    if let Some(state) = state {
        params = params.with_request_state(state);
    }
    client.call_tool_once(params).await.unwrap()
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

// r[verify ocr.image]
// r[verify ocr.progress]
// r[verify ocr.cache]
#[tokio::test]
async fn the_modern_round_trip_reads_the_approved_files_with_progress() {
    let h = Harness::new();
    put(&h, "att/scan.png", &png(&["Nimbus copper falcon"]));
    put(&h, "att/doc.pdf", &pdf(&["plain text layer"]));
    let client_side = modern(Reply::Approve);
    let progress = client_side.progress.clone();
    let client = connect(h.core.clone(), client_side).await;
    let arguments = json!({"root": "att"});
    let CallToolResponse::InputRequired(asked) =
        call_once(&client, "ocr_bulk", arguments.clone()).await
    else {
        panic!("expected input_required");
    };
    let message = serde_json::to_string(&asked).unwrap();
    assert!(
        message.contains("att/scan.png ("),
        "the form names the files: {message}"
    );
    let result = complete(resubmit(&client, arguments.clone(), asked.request_state, true).await);
    let out = success(&result);
    let files = out["files"].as_array().unwrap();
    assert_eq!(files.len(), 2, "{out}");
    assert_eq!(files[0]["path"], "att/doc.pdf");
    assert_eq!(files[0]["text"], "plain text layer");
    let recognized = words(files[1]["text"].as_str().unwrap());
    for word in ["nimbus", "copper", "falcon"] {
        assert!(
            recognized.contains(&word.to_owned()),
            "{word} in {recognized:?}"
        );
    }
    let seen = progress.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "one per file and one at the end: {seen:?}");
    assert_eq!(seen[0]["message"], "att/doc.pdf");
    assert_eq!(seen[2]["progress"], 2.0);
    assert!(seen.iter().all(|p| p["total"] == 2.0));

    // The cache lives in the server's cache.db: a second server on it answers from there.
    let sibling = h.sibling(|_| {}, false);
    let client = connect(sibling, modern(Reply::Approve)).await;
    let CallToolResponse::InputRequired(asked) =
        call_once(&client, "ocr_bulk", arguments.clone()).await
    else {
        panic!("expected input_required");
    };
    let again = success(&complete(
        resubmit(&client, arguments, asked.request_state, false).await,
    ));
    assert_eq!(again["from_cache"], 2, "{again}");
}

// r[verify drift.bind.ocr-bulk]
#[tokio::test]
async fn a_file_added_under_root_during_the_round_trip_is_drift_on_every_route() {
    let h = Harness::new();
    put(&h, "att/a.pdf", &pdf(&["first"]));
    let arguments = json!({"root": "att"});

    // Modern: the requestState carries the state that was shown.
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let CallToolResponse::InputRequired(asked) =
        call_once(&client, "ocr_bulk", arguments.clone()).await
    else {
        panic!("expected input_required");
    };
    put(&h, "att/b.pdf", &pdf(&["added"]));
    let refused = failure(&complete(
        resubmit(&client, arguments.clone(), asked.request_state, false).await,
    ));
    assert_eq!(refused["code"], "replay_drift", "{refused}");

    // The legacy shim: the file is replaced while the prompt is open.
    let mut shim_client = legacy(Reply::Approve);
    let vault = h.vault.clone();
    shim_client.during_prompt = Some(Arc::new(move || {
        std::fs::write(vault.join("att/a.pdf"), pdf(&["replaced"])).unwrap();
    }));
    let client = connect(h.sibling(|_| {}, true), shim_client).await;
    let refused = failure(&call(&client, "ocr_bulk", arguments.clone()).await);
    assert_eq!(refused["code"], "replay_drift", "{refused}");

    // The CLI token: minted for the raised state, then a file is replaced.
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let raised = failure(&call(&client, "ocr_bulk", arguments.clone()).await);
    assert_eq!(raised["code"], "elicit_required");
    let token = h.mint(&raised, "stdio");
    put(&h, "att/b.pdf", &pdf(&["replaced too"]));
    let mut with_token = arguments.clone();
    with_token["elicit_token"] = json!(token);
    let refused = failure(&call(&client, "ocr_bulk", with_token.clone()).await);
    assert_eq!(refused["code"], "replay_drift", "{refused}");
    // And unchanged, a fresh token reads it.
    let raised = failure(&call(&client, "ocr_bulk", arguments.clone()).await);
    with_token["elicit_token"] = json!(h.mint(&raised, "stdio"));
    let out = success(&call(&client, "ocr_bulk", with_token).await);
    assert_eq!(out["read"], 2, "{out}");
}

// r[verify ocr.config.unknown-key]
// r[verify ocr.config.languages]
// r[verify ocr.unavailable]
#[tokio::test]
async fn the_ocr_section_of_the_config_file_reaches_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    let parse = |text: &str| Config::parse(text, "test.toml", dir.path());
    let error = parse("[ocr]\nlangs = [\"eng\"]\n").unwrap_err().to_string();
    assert!(error.contains("langs"), "{error}");
    let error = parse("[ocr]\nlanguages = [\"EN\"]\n")
        .unwrap_err()
        .to_string();
    assert!(error.contains("ocr.languages[0]"), "{error}");
    let error = parse("[ocr]\ntimeoutSeconds = 0\n")
        .unwrap_err()
        .to_string();
    assert!(error.contains("ocr.timeoutSeconds"), "{error}");

    // A language the host has no model for: the configured languages are the ones used.
    let parsed = parse("[ocr]\nlanguages = [\"eng\", \"zzq\"]\ntimeoutSeconds = 9\n").unwrap();
    let h = Harness::with(move |config| {
        let vaults = std::mem::take(&mut config.vaults);
        *config = parsed;
        config.vaults = vaults;
    });
    put(&h, "x.png", &png(&["hello"]));
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    // Refused before the gate: the human is not asked for a call that cannot run.
    let refused = failure(&call(&client, "ocr_bulk", json!({"paths": ["x.png"]})).await);
    assert_eq!(refused["code"], "ocr_unavailable", "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("apt-get install tesseract-ocr-zzq"),
        "{refused}"
    );
    assert_eq!(refused["retryable"], false);
}
