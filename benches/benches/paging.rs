//! `read_notes` paging (spec/paging.md; the design targets: a full walk of a 10,000-note vault
//! within 2× of reading and JSON-encoding the same files in the same process, and the cost
//! of one page flat from 1,000 to 100,000 notes).
//!
//! - `read_notes_walk/paged_walk_1MB`: every page of the reference vault at the default cap
//!   (1,000,000 bytes), following `next_cursor` to the end, as the registry would call it.
//! - `read_notes_walk/paged_walk_1MB_as_sent`: the same walk, plus what the server does to
//!   each page on its way out: rmcp's `CallToolResult` holds `structuredContent` as a
//!   `serde_json::Value`, so the page's bytes are parsed once into a `Value`, which rmcp then
//!   serializes, beside the text block (the page's bytes as a JSON string). The difference to
//!   `paged_walk_1MB` is what rmcp's types cost over sending the bytes as they are.
//! - `read_notes_walk/floor_read_encode`: the floor: the same notes read and JSON-encoded
//!   as `{path, content}` with nothing else (no cursor, no hash, no frontmatter, no ACL),
//!   notes over the cap left unread as the walk does. The ratio of the two is the figure.
//! - `read_notes_page/{first,middle}/<notes>`: one page at a 64 KiB cap (about 190 small
//!   notes) from the start and from a cursor in the middle of vaults of 1,000, 10,000 and
//!   100,000 notes of 200 bytes. A small cap keeps pages full at every size; small notes
//!   keep the 100,000-note vault affordable to generate.
//!
//! Vaults are generated once and cached under the target directory
//! ([`tc_benches::vault_gen::cached_vault`]); from scratch that takes about 1 s for the
//! reference vault and 5 s for the 100,000-note one, so `cargo bench -- --test` (CI, each
//! benchmark once) uses the same sizes. The byte counts of a walk (result bytes and a
//! stdio frame per page, against the note bytes) are printed to stderr once per run.

use std::collections::BTreeMap;
use std::fs;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use serde_json::Value;
use tc_benches::vault_gen::{VaultSpec, cached_vault};
use tc_gate::clock::{ManualClock, SeededEntropy};
use tc_gate::cursor::CursorCodec;
use tc_gate::keys::ServerSecret;
use tc_notes::paging_tools::{PagingContext, ReadNotesArgs, read_notes};
use tc_tools::PageLimits;
use tc_vault::{Acl, Scopes, Vault};

/// The default `governor.maxResponseBytes`. The walks set `governor.pageBytes` to the cap
/// ([`PageLimits::new`]): pages as large as the cap allows, the size the walk is compared at.
const WALK_CAP: usize = 1_000_000;
/// The cap of the one-page group (`governor.pageBytes` set to it as well).
const PAGE_CAP: usize = 64 * 1024;
const NOW_MS: i64 = 1_800_000_000_000;

/// A served vault, as the server would hold it.
struct Served {
    vault: Vault,
    acl: Acl,
    codec: CursorCodec,
    clock: ManualClock,
}

impl Served {
    fn open(root: &Path) -> Self {
        let clock = ManualClock::new(NOW_MS);
        let snapshots = root.parent().unwrap_or(root).join("snapshots");
        let vault = Vault::open(
            "main",
            root,
            snapshots,
            Arc::new(clock.clone()),
            Arc::new(SeededEntropy::new(1)),
        )
        .expect("open the generated vault");
        Served {
            vault,
            acl: Acl::unrestricted(),
            codec: CursorCodec::new(&ServerSecret::ephemeral(&SeededEntropy::new(2))),
            clock,
        }
    }

    fn ctx(&self, cap: usize) -> PagingContext<'_> {
        PagingContext {
            vault: &self.vault,
            acl: &self.acl,
            codec: &self.codec,
            clock: &self.clock,
            limits: PageLimits::new(cap),
        }
    }
}

fn whole_vault() -> ReadNotesArgs {
    ReadNotesArgs {
        folder: Some(String::new()),
        ..ReadNotesArgs::default()
    }
}

/// Every page of a walk; returns (pages, result bytes).
fn paged_walk(ctx: &PagingContext<'_>, mut each: impl FnMut(&str)) -> (usize, usize) {
    let mut args = whole_vault();
    let (mut pages, mut bytes) = (0, 0);
    loop {
        let page = read_notes(ctx, "stdio", &Scopes::all(), &args).expect("a page");
        pages += 1;
        bytes += page.json.len();
        each(&page.json);
        match page.next_cursor {
            Some(cursor) => args.cursor = Some(cursor),
            None => return (pages, bytes),
        }
    }
}

/// The vault's notes in sorted path order, hidden names left out, as the walk orders them.
fn sorted_notes(root: &Path) -> Vec<(String, PathBuf)> {
    fn visit(dir: &Path, prefix: &str, out: &mut Vec<(String, PathBuf)>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<(String, bool, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let is_dir = e.file_type().ok()?.is_dir();
                (!name.starts_with('.')).then(|| (name, is_dir, e.path()))
            })
            .collect();
        entries.sort_by_cached_key(|(name, is_dir, _)| {
            if *is_dir {
                format!("{name}/")
            } else {
                name.clone()
            }
        });
        for (name, is_dir, path) in entries {
            let vault_path = format!("{prefix}{name}");
            if is_dir {
                visit(&path, &format!("{vault_path}/"), out);
            } else if name.ends_with(".md") {
                out.push((vault_path, path));
            }
        }
    }
    let mut out = Vec::new();
    visit(root, "", &mut out);
    out
}

/// The floor: list, read and JSON-encode every note that fits the cap, into page-sized
/// buffers. Returns the bytes encoded.
fn floor(root: &Path, cap: usize) -> usize {
    let mut buffer = Vec::with_capacity(cap + 64 * 1024);
    let mut total = 0;
    for (vault_path, location) in sorted_notes(root) {
        let Ok(meta) = fs::metadata(&location) else {
            continue;
        };
        if meta.len() > cap as u64 {
            continue;
        }
        let Ok(bytes) = fs::read(&location) else {
            continue;
        };
        let content = String::from_utf8_lossy(&bytes);
        let entry = BTreeMap::from([("path", vault_path.as_str()), ("content", &*content)]);
        if serde_json::to_writer(&mut buffer, &entry).is_ok() {
            buffer.push(b',');
        }
        if buffer.len() >= cap {
            total += buffer.len();
            buffer.clear();
        }
    }
    total + buffer.len()
}

/// What a walk puts on the wire, against the note bytes it serves (printed once).
fn report_bytes(served: &Served, root: &Path) {
    let mut note_bytes = 0u64;
    let mut notes = 0usize;
    let mut too_large = 0usize;
    let mut frame_bytes = 0usize;
    let started = Instant::now();
    let (pages, result_bytes) = paged_walk(&served.ctx(WALK_CAP), |json| {
        let page: Value = serde_json::from_str(json).expect("page JSON");
        for note in page["notes"].as_array().into_iter().flatten() {
            let path = note["path"].as_str().unwrap_or_default();
            note_bytes += fs::metadata(root.join(path)).map_or(0, |m| m.len());
            notes += 1;
        }
        too_large += page["errors"].as_array().map_or(0, Vec::len);
        // A tools/call response that carries the result as structuredContent and again as
        // a text block (spec/results.md), framed for stdio.
        let text = serde_json::to_string(json).map_or(0, |s| s.len());
        frame_bytes += text + json.len() + 90;
    });
    eprintln!(
        "paging: reference walk at cap {WALK_CAP}: {pages} pages, {notes} notes, {too_large} errors entries, {:.2?} (one untimed pass)\n\
         paging: note bytes {note_bytes}; result bytes {result_bytes} ({:.3}x); \
         stdio frames with structuredContent + text copy {frame_bytes} ({:.3}x)",
        started.elapsed(),
        result_bytes as f64 / note_bytes.max(1) as f64,
        frame_bytes as f64 / note_bytes.max(1) as f64,
    );
}

/// What the server does to a page's bytes on the way out, and the bytes it writes: the page
/// parsed into the `Value` rmcp's `structuredContent` needs and serialized again by rmcp, and
/// the text block (the page as a JSON string).
fn as_sent(json: &str) -> usize {
    let structured: Value = serde_json::from_str(json).expect("page JSON");
    let structured_bytes = serde_json::to_vec(&structured).map_or(0, |b| b.len());
    let text_bytes = serde_json::to_vec(json).map_or(0, |b| b.len());
    black_box(structured_bytes + text_bytes)
}

fn walk_vs_floor(c: &mut Criterion) {
    let started = Instant::now();
    let root = cached_vault(&VaultSpec::reference()).expect("generate the reference vault");
    eprintln!(
        "paging: reference vault ready in {:.2?} at {}",
        started.elapsed(),
        root.display()
    );
    let served = Served::open(&root);
    report_bytes(&served, &root);
    let mut group = c.benchmark_group("read_notes_walk");
    group.sample_size(10);
    group.bench_function("paged_walk_1MB", |b| {
        b.iter(|| paged_walk(black_box(&served.ctx(WALK_CAP)), |_| ()))
    });
    group.bench_function("paged_walk_1MB_as_sent", |b| {
        b.iter(|| {
            let mut sent = 0usize;
            paged_walk(black_box(&served.ctx(WALK_CAP)), |json| {
                sent += as_sent(json);
            });
            sent
        })
    });
    group.bench_function("floor_read_encode", |b| {
        b.iter(|| floor(black_box(&root), WALK_CAP))
    });
    group.finish();
}

/// A cursor about halfway through the walk.
fn middle_cursor(ctx: &PagingContext<'_>, notes: usize) -> Option<String> {
    let mut args = whole_vault();
    let mut seen = 0;
    loop {
        let page = read_notes(ctx, "stdio", &Scopes::all(), &args).ok()?;
        seen += page.notes;
        let cursor = page.next_cursor?;
        if seen >= notes / 2 {
            return Some(cursor);
        }
        args.cursor = Some(cursor);
    }
}

fn page_cost(c: &mut Criterion) {
    let mut group = c.benchmark_group("read_notes_page");
    group.measurement_time(Duration::from_secs(3));
    for notes in [1_000, 10_000, 100_000] {
        let started = Instant::now();
        let root = cached_vault(&VaultSpec::small(notes)).expect("generate a small-note vault");
        eprintln!(
            "paging: {notes}-note vault ready in {:.2?}",
            started.elapsed()
        );
        let served = Served::open(&root);
        let ctx = served.ctx(PAGE_CAP);
        let first = read_notes(&ctx, "stdio", &Scopes::all(), &whole_vault()).expect("a page");
        let middle = ReadNotesArgs {
            cursor: middle_cursor(&ctx, notes),
            ..whole_vault()
        };
        let middle_page = read_notes(&ctx, "stdio", &Scopes::all(), &middle).expect("a page");
        eprintln!(
            "paging: {notes} notes: first page {} notes / {} bytes, middle page {} notes / {} bytes",
            first.notes,
            first.json.len(),
            middle_page.notes,
            middle_page.json.len()
        );
        group.throughput(Throughput::Elements(first.notes as u64));
        group.bench_with_input(BenchmarkId::new("first", notes), &notes, |b, _| {
            b.iter(|| read_notes(&ctx, "stdio", &Scopes::all(), black_box(&whole_vault())))
        });
        group.throughput(Throughput::Elements(middle_page.notes as u64));
        group.bench_with_input(BenchmarkId::new("middle", notes), &notes, |b, _| {
            b.iter(|| read_notes(&ctx, "stdio", &Scopes::all(), black_box(&middle)))
        });
    }
    group.finish();
}

criterion_group!(benches, walk_vs_floor, page_cost);
