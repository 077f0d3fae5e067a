//! `ocr_bulk` with the real engines (tesseract 5, poppler) on attachments the tests make:
//! what it reads, what it caches, what it refuses, and how its result stays bounded.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Value, json};
use support::*;
use tc_tools::{CallControl, CancellationFlag, ErrorCode, ProgressSink};

// r[verify ocr.image]
// r[verify ocr.cache]
#[test]
fn an_image_is_read_by_tesseract_and_then_answered_from_the_cache() {
    let fx = Fx::new();
    put_bytes(
        &fx,
        "scans/receipt.png",
        &text_png(&["Quartz harbor lantern", "violet meadow"]),
    );
    let args = json!({"paths": ["scans/receipt.png"]});
    let started = Instant::now();
    let first = approved(&fx, &args);
    let uncached = started.elapsed();
    let entry = file(&first, "scans/receipt.png");
    assert_words(
        entry["text"].as_str().unwrap(),
        &["quartz", "harbor", "lantern", "violet", "meadow"],
    );
    assert_eq!(entry["kind"], "image");
    assert_eq!(entry["cached"], false);
    assert_eq!(entry["ocr_pages"], 1);
    assert_eq!(entry["truncated"], false);
    assert_eq!(first["languages"], "eng");
    assert_eq!(cache().len().unwrap(), 1);

    let started = Instant::now();
    let second = approved(&fx, &args);
    let cached = started.elapsed();
    let again = file(&second, "scans/receipt.png");
    assert_eq!(again["cached"], true);
    assert_eq!(again["text"], entry["text"]);
    assert_eq!(second["from_cache"], 1);
    eprintln!("uncached {uncached:?}, cached {cached:?}");
}

// r[verify ocr.pdf.text-layer]
#[test]
fn a_pdf_gives_its_text_layer_page_by_page() {
    let fx = Fx::new();
    let bytes = pdf(&[
        Page::Text(&["First page about (parentheses)", "copper kettle"]),
        Page::Text(&["Second page", "silver spoon"]),
    ]);
    put_bytes(&fx, "docs/manual.pdf", &bytes);
    let result = approved(&fx, &json!({"paths": ["docs/manual.pdf"]}));
    let entry = file(&result, "docs/manual.pdf");
    let text = entry["text"].as_str().unwrap();
    assert!(text.contains("First page about (parentheses)"), "{text:?}");
    assert!(
        text.contains("copper kettle\n\u{c}\nSecond page"),
        "{text:?}"
    );
    assert_eq!(entry["pages"], 2);
    assert_eq!(entry["ocr_pages"], 0);
    assert_eq!(entry["kind"], "pdf");
    assert_eq!(entry["size"], bytes.len());
    assert_eq!(entry["text_bytes"], text.len());
}

// r[verify ocr.pdf.scanned-page]
#[test]
fn a_scanned_pdf_page_is_rendered_and_read_by_tesseract() {
    let fx = Fx::new();
    let bytes = pdf(&[
        Page::Text(&["Typed cover sheet"]),
        scan_page(&["Granite orchard", "seventeen ravens"]),
    ]);
    put_bytes(&fx, "scan.pdf", &bytes);
    let result = approved(&fx, &json!({"paths": ["scan.pdf"]}));
    let entry = file(&result, "scan.pdf");
    let text = entry["text"].as_str().unwrap();
    assert!(text.starts_with("Typed cover sheet"), "{text:?}");
    assert_words(text, &["granite", "orchard", "seventeen", "ravens"]);
    assert_eq!(entry["pages"], 2);
    assert_eq!(entry["ocr_pages"], 1);
}

// r[verify ocr.cache.force]
#[test]
fn force_reads_again_and_a_changed_file_is_not_answered_from_the_cache() {
    let fx = Fx::new();
    put_bytes(&fx, "a.pdf", &pdf(&[Page::Text(&["alpha"])]));
    let args = json!({"paths": ["a.pdf"]});
    assert_eq!(file(&approved(&fx, &args), "a.pdf")["cached"], false);
    assert_eq!(file(&approved(&fx, &args), "a.pdf")["cached"], true);
    let forced = approved(&fx, &json!({"paths": ["a.pdf"], "force": true}));
    assert_eq!(file(&forced, "a.pdf")["cached"], false);
    put_bytes(&fx, "a.pdf", &pdf(&[Page::Text(&["beta"])]));
    let changed = approved(&fx, &args);
    assert_eq!(file(&changed, "a.pdf")["cached"], false);
    assert_eq!(file(&changed, "a.pdf")["text"], "beta");
    assert_eq!(cache().len().unwrap(), 2);
}

// r[verify ocr.unavailable]
#[test]
fn no_tesseract_is_ocr_unavailable_before_the_gate_naming_the_package() {
    let fx = fx_with(without_tesseract());
    put_bytes(&fx, "x.png", &text_png(&["hello"]));
    let requested = fx.requested();
    let refusal = fx
        .call("ocr_bulk", json!({"paths": ["x.png"]}))
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::OcrUnavailable, "{refusal}");
    assert!(
        refusal.message.contains("apt-get install tesseract-ocr"),
        "{refusal}"
    );
    assert_eq!(
        refusal.details.as_ref().unwrap()["package"],
        "tesseract-ocr"
    );
    assert_eq!(
        fx.requested(),
        requested,
        "the human is not asked for a call that cannot run"
    );
}

// r[verify ocr.unavailable]
#[test]
fn a_missing_engine_found_while_running_and_a_missing_language_are_ocr_unavailable() {
    // A scanned page needs tesseract only once pdftotext finds no text on it.
    let fx = fx_with(without_tesseract());
    put_bytes(&fx, "s.pdf", &pdf(&[scan_page(&["hello"])]));
    let refusal = fx
        .call("ocr_bulk", json!({"paths": ["s.pdf"]}))
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::ElicitRequired);
    let token = fx.mint(&refusal);
    let error = fx
        .call("ocr_bulk", with_token(&json!({"paths": ["s.pdf"]}), &token))
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::OcrUnavailable, "{error}");
    assert!(error.message.contains("tesseract-ocr"), "{error}");

    // A language with no model, beside one that loads (tesseract alone would only warn):
    // for an image, refused before the gate; for a scanned page, when the page is reached.
    let config = tc_ocr::OcrConfig::new(vec!["eng".into(), "zzq".into()], 30).unwrap();
    let fx = fx_with(config);
    put_bytes(&fx, "x.png", &text_png(&["hello"]));
    let error = fx
        .call("ocr_bulk", json!({"paths": ["x.png"]}))
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::OcrUnavailable, "{error}");
    assert!(
        error.message.contains("apt-get install tesseract-ocr-zzq"),
        "{error}"
    );
    assert_eq!(error.details.as_ref().unwrap()["language"], "zzq");
    assert_eq!(fx.requested(), 0);
    put_bytes(&fx, "s.pdf", &pdf(&[scan_page(&["hello"])]));
    let token = fx.require("ocr_bulk", &json!({"paths": ["s.pdf"]}));
    let error = fx
        .call("ocr_bulk", with_token(&json!({"paths": ["s.pdf"]}), &token))
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::OcrUnavailable, "{error}");
    assert!(error.message.contains("tesseract-ocr-zzq"), "{error}");
}

// r[verify ocr.per-file-errors]
#[test]
fn a_broken_file_is_a_per_file_error_and_the_rest_is_read() {
    let fx = Fx::new();
    put_bytes(&fx, "good.pdf", &pdf(&[Page::Text(&["fine words"])]));
    put_bytes(&fx, "bad.pdf", b"%PDF-1.4 this is not a pdf at all");
    let result = approved(&fx, &json!({"paths": ["bad.pdf", "good.pdf"]}));
    assert_eq!(file(&result, "good.pdf")["text"], "fine words");
    let errors = result["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{result}");
    assert_eq!(errors[0]["path"], "bad.pdf");
    assert_eq!(errors[0]["code"], "ocr_failed");
    assert!(!errors[0]["message"].as_str().unwrap().contains('\n'));
    assert_eq!(result["read"], 1);
}

// r[verify ocr.engine.timeout]
#[test]
fn an_engine_past_the_timeout_is_killed_and_that_file_reported() {
    let dir = tempfile::tempdir().unwrap();
    let slow = dir.path().join("slow-tesseract");
    std::fs::write(
        &slow,
        "#!/bin/sh\n[ \"$1\" = --list-langs ] && { echo 'List of available languages in \"x\" (1):'; echo eng; exit 0; }\nexec sleep 30\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&slow, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = tc_ocr::OcrConfig::new(vec!["eng".into()], 1)
        .unwrap()
        .with_engines(tc_ocr::Engines {
            tesseract: slow,
            ..tc_ocr::Engines::default()
        });
    let fx = fx_with(config);
    put_bytes(&fx, "x.png", &text_png(&["hello"]));
    let started = Instant::now();
    let result = approved(&fx, &json!({"paths": ["x.png"]}));
    assert!(started.elapsed().as_secs() < 10);
    assert_eq!(result["errors"][0]["code"], "operation_timeout", "{result}");
    assert!(
        result["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("1 s")
    );
}

/// A stand-in for tesseract: answers `--list-langs` with `eng`, else runs `body` (sh).
fn fake_tesseract(dir: &std::path::Path, body: &str) -> std::path::PathBuf {
    let path = dir.join("fake-tesseract");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\n[ \"$1\" = --list-langs ] && {{ echo 'List of available languages in \"x\" (1):'; echo eng; exit 0; }}\n{body}\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

// r[verify ocr.engine.group]
// r[verify ocr.engine.timeout]
#[test]
fn a_wrapper_whose_child_holds_the_pipe_is_stopped_at_the_deadline() {
    // No `exec`: the shell forks `sleep`, which keeps stdout open after the shell is killed.
    let dir = tempfile::tempdir().unwrap();
    let wrapper = fake_tesseract(dir.path(), "sleep 30\necho never");
    let config = tc_ocr::OcrConfig::new(vec!["eng".into()], 1)
        .unwrap()
        .with_engines(tc_ocr::Engines {
            tesseract: wrapper,
            ..tc_ocr::Engines::default()
        });
    let fx = fx_with(config);
    put_bytes(&fx, "x.png", &text_png(&["hello"]));
    let started = Instant::now();
    let result = approved(&fx, &json!({"paths": ["x.png"]}));
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
    assert_eq!(result["errors"][0]["code"], "operation_timeout", "{result}");
}

// r[verify ocr.engine.memory]
// r[verify ocr.per-file-errors]
#[test]
fn an_image_that_decompresses_past_the_memory_cap_fails_alone() {
    // A blank page at 500 dpi: a PNG of a few KB that tesseract holds as 23 million pixels
    // (about 300 MB); at 128 MB it fails, while a page at 150 dpi is read.
    let config = tc_ocr::OcrConfig::new(vec!["eng".into()], 60)
        .unwrap()
        .with_max_memory_mb(128)
        .unwrap();
    let fx = fx_with(config);
    put_bytes(
        &fx,
        "bomb.png",
        &render(&pdf(&[Page::Text(&[])]), 500, true),
    );
    put_bytes(&fx, "fine.png", &text_png(&["Quartz harbor lantern"]));
    let result = approved(&fx, &json!({"paths": ["bomb.png", "fine.png"]}));
    assert_words(
        file(&result, "fine.png")["text"].as_str().unwrap(),
        &["quartz", "harbor", "lantern"],
    );
    let errors = result["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{result}");
    assert_eq!(errors[0]["path"], "bomb.png");
    assert_eq!(errors[0]["code"], "ocr_failed");
    let message = errors[0]["message"].as_str().unwrap();
    assert!(message.contains("ocr.maxMemoryMb"), "{message}");
}

// r[verify ocr.candidates.root]
// r[verify ocr.candidates.hidden]
#[test]
fn root_takes_the_readable_files_with_the_extensions_and_never_hidden_ones() {
    let acl = tc_vault::acl::AclConfig {
        read_paths: Some(vec!["docs/**".into(), "*.pdf".into()]),
        ..Default::default()
    };
    let mut fx = Fx::new();
    fx.reconfigure(Some(acl), Vec::new());
    let one = pdf(&[Page::Text(&["one"])]);
    for path in [
        "docs/a.pdf",
        "docs/deep/b.PDF",
        "docs/.hidden/c.pdf",
        "docs/.d.pdf",
        "docs/e.png",
        "docs/f.md",
        "private/g.pdf",
        "top.pdf",
    ] {
        put_bytes(&fx, path, &one);
    }
    let result = approved(&fx, &json!({"root": "docs", "extensions": [".pdf"]}));
    let paths: Vec<&str> = result["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["docs/a.pdf", "docs/deep/b.PDF"]);
    let whole = approved(&fx, &json!({"root": "", "extensions": ["PDF"]}));
    assert_eq!(whole["read"], 3, "{whole}");
    assert!(whole.to_string().contains("top.pdf"));
    assert!(
        !whole.to_string().contains("private/g.pdf"),
        "the ACL hides it"
    );
    for hidden in ["docs/.hidden/c.pdf", ".obsidian/x.png"] {
        let error = fx.call("ocr_bulk", json!({"paths": [hidden]})).unwrap_err();
        assert_eq!(error.code, ErrorCode::PathInvalid, "{hidden}: {error}");
    }
    let error = fx
        .call("ocr_bulk", json!({"root": "docs/.hidden"}))
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::PathInvalid);
}

// r[verify ocr.candidates.paths]
#[test]
fn explicit_paths_are_judged_before_the_gate() {
    let fx = Fx::new();
    put_bytes(&fx, "n.md", b"# note");
    for (args, expected) in [
        (json!({"paths": ["n.md"]}), ErrorCode::ValidationError),
        (json!({"paths": ["missing.pdf"]}), ErrorCode::NoteNotFound),
        (json!({"paths": ["../out.pdf"]}), ErrorCode::PathInvalid),
        (
            json!({"paths": ["a.pdf"], "root": ""}),
            ErrorCode::ValidationError,
        ),
        (json!({}), ErrorCode::ValidationError),
        (
            json!({"root": "", "extensions": [".docx"]}),
            ErrorCode::ValidationError,
        ),
    ] {
        let error = fx.call("ocr_bulk", args.clone()).unwrap_err();
        assert_eq!(error.code, expected, "{args}: {error}");
    }
    assert_eq!(fx.requested(), 0);
    // The same file twice is read once.
    put_bytes(&fx, "a.pdf", &pdf(&[Page::Text(&["x"])]));
    let result = approved(&fx, &json!({"paths": ["a.pdf", "./a.pdf"]}));
    assert_eq!(result["read"], 1);
}

// r[verify ocr.candidates.limit]
#[test]
fn more_than_a_thousand_files_is_refused_before_the_gate() {
    let fx = Fx::new();
    for i in 0..1001 {
        put_bytes(&fx, &format!("many/{i:04}.png"), b"x");
    }
    let error = fx.call("ocr_bulk", json!({"root": "many"})).unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidInput, "{error}");
    assert_eq!(error.details.unwrap()["reason"], "too_many_files");
    assert_eq!(fx.requested(), 0);
}

// r[verify ocr.bounded.batch]
#[test]
fn a_batch_that_could_not_fit_one_response_is_refused_before_the_gate() {
    let fx = Fx::new();
    // Long paths: the test fixture's cap is 64 KiB.
    let mut paths = Vec::new();
    for i in 0..120 {
        let path = format!("{}/{i}.png", "deep-folder-name".repeat(12));
        put_bytes(&fx, &path, b"x");
        paths.push(path);
    }
    let error = fx.call("ocr_bulk", json!({"paths": paths})).unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidInput, "{error}");
    let fits = error.details.as_ref().unwrap()["fits"].as_u64().unwrap();
    assert!(fits > 0 && fits < 120, "{error}");
    assert_eq!(fx.requested(), 0);
    let ok = fx
        .call("ocr_bulk", json!({"paths": paths[..fits as usize]}))
        .unwrap_err();
    assert_eq!(ok.code, ErrorCode::ElicitRequired, "{ok}");
}

// r[verify ocr.bounded]
// r[verify ocr.bounded.fair]
#[test]
fn long_texts_are_cut_to_their_share_and_the_response_stays_under_the_cap() {
    let fx = Fx::new();
    let line = "lorem ipsum \"dolor\" sit amet consectetur adipiscing elit sed do";
    let long: Vec<&str> = std::iter::repeat_n(line, 20).collect();
    let pages: Vec<Page<'_>> = (0..30).map(|_| Page::Text(&long)).collect();
    let big = pdf(&pages);
    put_bytes(&fx, "big1.pdf", &big);
    put_bytes(&fx, "big2.pdf", &big);
    put_bytes(&fx, "small.pdf", &pdf(&[Page::Text(&["tiny text"])]));
    let result = approved(
        &fx,
        &json!({"paths": ["big1.pdf", "big2.pdf", "small.pdf"]}),
    );
    let json = serde_json::to_vec(&result).unwrap();
    let sent = tc_tools::wire_cost(&json) + tc_tools::paging::RESPONSE_FRAME_BYTES;
    assert!(sent <= tc_tools::testing::PAGE_CAP, "{sent} bytes as sent");
    assert!(
        sent > tc_tools::testing::PAGE_CAP * 9 / 10,
        "the room is used: {sent}"
    );
    assert_eq!(file(&result, "small.pdf")["text"], "tiny text");
    assert_eq!(file(&result, "small.pdf")["truncated"], false);
    for name in ["big1.pdf", "big2.pdf"] {
        let entry = file(&result, name);
        assert_eq!(entry["truncated"], true);
        let kept = entry["text"].as_str().unwrap().len();
        let whole = entry["text_bytes"].as_u64().unwrap() as usize;
        assert!(kept > 5_000 && kept < whole, "{kept} of {whole}");
    }
    let a = file(&result, "big1.pdf")["text"].as_str().unwrap().len();
    let b = file(&result, "big2.pdf")["text"].as_str().unwrap().len();
    assert!(a.abs_diff(b) < 100, "equal shares: {a} and {b}");
    assert_eq!(result["truncated"], 2);
}

// r[verify ocr.always-gated]
#[test]
fn every_call_is_gated_and_the_summary_names_files_and_sizes() {
    let fx = Fx::new();
    let bytes = pdf(&[Page::Text(&["x"])]);
    put_bytes(&fx, "a.pdf", &bytes);
    put_bytes(&fx, "b/c.png", &text_png(&["y"]));
    let prepared = fx
        .pipeline
        .prepare(&caller(), "ocr_bulk", &json!({"root": ""}))
        .unwrap();
    assert!(prepared.needs_confirmation());
    let summary = fx.pipeline.summary(&prepared);
    assert!(
        summary.contains(&format!("a.pdf ({} bytes)", bytes.len())),
        "{summary}"
    );
    assert!(summary.contains("b/c.png ("), "{summary}");
    assert!(
        summary.contains("2 file(s) under the vault root"),
        "{summary}"
    );
    assert!(summary.contains("languages eng"), "{summary}");
    let def = fx.pipeline.registry().get("ocr_bulk").unwrap();
    assert_eq!(def.scopes, ["read:ocr"]);
    assert!(def.annotations.read_only_hint);
}

/// One progress report: progress, total, message.
type Report = (f64, Option<f64>, Option<String>);

#[derive(Default)]
struct Recorder {
    reports: Mutex<Vec<Report>>,
    cancel_at_first: Option<CancellationFlag>,
}

impl ProgressSink for Recorder {
    fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        self.reports
            .lock()
            .unwrap()
            .push((progress, total, message.map(str::to_owned)));
        if let Some(flag) = &self.cancel_at_first {
            flag.cancel();
        }
    }
}

fn run_with(fx: &Fx, args: &Value, control: &CallControl) -> Result<Value, tc_tools::ToolError> {
    let token = fx.require("ocr_bulk", args);
    let prepared = fx
        .pipeline
        .prepare(&caller(), "ocr_bulk", &with_token(args, &token))
        .unwrap();
    fx.pipeline
        .execute(&prepared, prepared.token_approval(), control)
        .map(|out| out.to_value())
}

// r[verify ocr.progress]
// r[verify ocr.cancel]
#[test]
fn progress_per_file_and_a_cancel_stops_between_files() {
    let fx = Fx::new();
    for name in ["a.pdf", "b.pdf", "c.pdf"] {
        put_bytes(&fx, name, &pdf(&[Page::Text(&[name])]));
    }
    let args = json!({"root": ""});
    let recorder = Arc::new(Recorder::default());
    let control = CallControl {
        cancel: CancellationFlag::new(),
        progress: recorder.clone(),
    };
    run_with(&fx, &args, &control).unwrap();
    let reports = recorder.reports.lock().unwrap().clone();
    let shown: Vec<(f64, Option<String>)> = reports.iter().map(|r| (r.0, r.2.clone())).collect();
    assert_eq!(
        shown,
        [
            (0.0, Some("a.pdf".into())),
            (1.0, Some("b.pdf".into())),
            (2.0, Some("c.pdf".into())),
            (3.0, Some("done".into()))
        ]
    );
    assert!(reports.iter().all(|r| r.1 == Some(3.0)));

    let fx = Fx::new();
    for name in ["a.pdf", "b.pdf", "c.pdf"] {
        put_bytes(&fx, name, &pdf(&[Page::Text(&[name])]));
    }
    let flag = CancellationFlag::new();
    let recorder = Arc::new(Recorder {
        cancel_at_first: Some(flag.clone()),
        ..Recorder::default()
    });
    let control = CallControl {
        cancel: flag,
        progress: recorder.clone(),
    };
    let error = run_with(&fx, &args, &control).unwrap_err();
    assert_eq!(error.details.unwrap()["reason"], "cancelled");
    assert_eq!(
        cache().len().unwrap(),
        1,
        "the first file was read, the rest not"
    );
}

/// Replaces `path` in the vault when the first progress report arrives.
struct ReplaceAtFirst {
    file: std::path::PathBuf,
    with: Vec<u8>,
    done: Mutex<bool>,
}

impl ProgressSink for ReplaceAtFirst {
    fn report(&self, _progress: f64, _total: Option<f64>, _message: Option<&str>) {
        let mut done = self.done.lock().unwrap();
        if !*done {
            std::fs::write(&self.file, &self.with).unwrap();
            *done = true;
        }
    }
}

// r[verify ocr.reads-approved]
#[test]
fn a_file_replaced_after_the_approval_is_reported_and_never_read() {
    let fx = Fx::new();
    put_bytes(&fx, "a.pdf", &pdf(&[Page::Text(&["approved first"])]));
    put_bytes(&fx, "b.pdf", &pdf(&[Page::Text(&["approved second"])]));
    let control = CallControl {
        cancel: CancellationFlag::new(),
        progress: Arc::new(ReplaceAtFirst {
            file: fx.root.join("b.pdf"),
            with: pdf(&[Page::Text(&["swapped in later"])]),
            done: Mutex::new(false),
        }),
    };
    let result = run_with(&fx, &json!({"paths": ["a.pdf", "b.pdf"]}), &control).unwrap();
    assert_eq!(file(&result, "a.pdf")["text"], "approved first");
    assert_eq!(result["errors"][0]["path"], "b.pdf", "{result}");
    assert_eq!(result["errors"][0]["code"], "changed");
    assert!(!result.to_string().contains("swapped"), "{result}");
    assert_eq!(cache().len().unwrap(), 1);
}

// r[verify tools.output-schema]
#[test]
fn results_satisfy_the_advertised_output_schema() {
    let fx = Fx::new();
    put_bytes(&fx, "a.pdf", &pdf(&[Page::Text(&["x"])]));
    put_bytes(&fx, "bad.pdf", b"not a pdf");
    let result = approved(&fx, &json!({"paths": ["a.pdf", "bad.pdf"]}));
    let def = fx.pipeline.registry().get("ocr_bulk").unwrap();
    let validator = jsonschema::validator_for(&def.output_schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&result)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}\n{result}");
}
