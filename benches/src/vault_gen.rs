//! A deterministic Obsidian vault for the paging benchmarks (the design targets:
//! "a 10,000-note vault (20.5 MB, mean 2 KB)").
//!
//! The same [`VaultSpec`] always yields the same files, byte for byte: a seeded splitmix64
//! drives note sizes, text, frontmatter and links. Notes live in a tree of folders with a
//! fan-out of ten and at most [`NOTES_PER_FOLDER`] notes per leaf folder, the way a real
//! vault spreads out; this also keeps a page's cost independent of the vault's size (a
//! resumed walk lists only the folders on its way, never a folder with all the notes).
//!
//! Generating 100,000 files takes a while, so [`cached_vault`] keeps each generated vault
//! under the target directory, keyed by the spec and [`GENERATOR_VERSION`], and publishes it
//! by renaming a finished temporary folder (a run killed half-way leaves no half vault).

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Bump when the generated content changes, so cached vaults are made again.
pub const GENERATOR_VERSION: u32 = 1;

/// Notes per leaf folder.
pub const NOTES_PER_FOLDER: usize = 100;

/// What to generate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VaultSpec {
    /// Ordinary notes.
    pub notes: usize,
    /// Their sizes are spread evenly over `mean/10 ..= mean*19/10` bytes (about).
    pub mean_note_bytes: usize,
    /// Extra large notes, by size in bytes (placed in `big/`).
    pub large_notes: Vec<usize>,
    pub seed: u64,
}

impl VaultSpec {
    /// The reference vault of the design targets: 10,000 notes of 2 KB on average, plus three of
    /// 1 MB and two of 5 MB.
    pub fn reference() -> Self {
        VaultSpec {
            notes: 10_000,
            mean_note_bytes: 2_000,
            large_notes: vec![1_000_000, 1_000_000, 1_000_000, 5_000_000, 5_000_000],
            seed: 0x0b51_d1a0,
        }
    }

    /// `notes` small notes (200 bytes on average) and nothing large: for measuring one page
    /// at growing vault sizes without generating gigabytes.
    pub fn small(notes: usize) -> Self {
        VaultSpec {
            notes,
            mean_note_bytes: 200,
            large_notes: Vec::new(),
            seed: 0x5a11,
        }
    }

    /// The cache key: every parameter that changes the files.
    pub fn key(&self) -> String {
        let large: Vec<String> = self.large_notes.iter().map(usize::to_string).collect();
        format!(
            "v{GENERATOR_VERSION}-n{}-m{}-l{}-s{:x}",
            self.notes,
            self.mean_note_bytes,
            if large.is_empty() {
                "0".to_owned()
            } else {
                large.join("_")
            },
            self.seed
        )
    }
}

/// splitmix64: tiny, seeded, and the same on every platform.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound` (`bound` > 0; the modulo bias is irrelevant here).
    pub fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % bound.max(1) as u64) as usize
    }
}

const WORDS: &[&str] = &[
    "vault",
    "note",
    "idea",
    "project",
    "meeting",
    "draft",
    "review",
    "garden",
    "link",
    "daily",
    "task",
    "reading",
    "summary",
    "question",
    "answer",
    "plan",
    "research",
    "archive",
    "the",
    "a",
    "of",
    "and",
    "to",
    "in",
    "with",
    "for",
    "on",
    "is",
    "was",
    "this",
    "that",
    "café",
    "naïve",
    "Grüße",
    "— dash",
    "“quoted”",
    "emoji 🙂",
];

/// The vault-relative path of ordinary note `index` of `total`.
pub fn note_path(index: usize, total: usize) -> String {
    let leaves = total.div_ceil(NOTES_PER_FOLDER).max(1);
    let depth = (leaves - 1).to_string().len();
    let leaf = index / NOTES_PER_FOLDER;
    let digits = format!("{leaf:0depth$}");
    let mut path = String::new();
    for (level, digit) in digits.chars().enumerate() {
        let name = ["area", "topic", "sub", "part", "bin", "box", "slot"][level % 7];
        let _ = write!(path, "{name}-{digit}/");
    }
    let _ = write!(path, "note-{index:06}.md");
    path
}

/// One note's text, about `target` bytes.
fn note_text(rng: &mut Rng, index: usize, total: usize, target: usize) -> String {
    let mut text = String::with_capacity(target + 128);
    if index.is_multiple_of(3) {
        let _ = write!(
            text,
            "---\nstatus: {}\ntags: [{}, {}]\ncreated: 2026-{:02}-{:02}\n---\n",
            ["draft", "done", "active"][rng.below(3)],
            WORDS[rng.below(18)],
            WORDS[rng.below(18)],
            1 + rng.below(12),
            1 + rng.below(28),
        );
    }
    let _ = writeln!(text, "# Note {index}\n");
    while text.len() < target {
        match rng.below(10) {
            0 => {
                let other = rng.below(total.max(1));
                let _ = writeln!(
                    text,
                    "See [[note-{other:06}]] and [[note-{:06}|an alias]].",
                    rng.below(total.max(1))
                );
            }
            1 => {
                let _ = writeln!(
                    text,
                    "- [ ] {} {}",
                    WORDS[rng.below(18)],
                    WORDS[rng.below(18)]
                );
            }
            2 => {
                let _ = writeln!(
                    text,
                    "- [x] {} ✅ 2026-10-{:02}",
                    WORDS[rng.below(18)],
                    1 + rng.below(28)
                );
            }
            3 => {
                let _ = writeln!(text, "\tcode \"with quotes\" and a \\ backslash");
            }
            _ => {
                let words = 8 + rng.below(12);
                for w in 0..words {
                    if w > 0 {
                        text.push(' ');
                    }
                    text.push_str(WORDS[rng.below(WORDS.len())]);
                }
                text.push_str(".\n");
            }
        }
    }
    text
}

/// Writes the vault of `spec` into `root` (created if missing).
pub fn generate(spec: &VaultSpec, root: &Path) -> io::Result<()> {
    let mut rng = Rng::new(spec.seed);
    let low = spec.mean_note_bytes / 10;
    let spread = spec.mean_note_bytes * 18 / 10;
    let mut made_folder = None;
    for index in 0..spec.notes {
        let path = root.join(note_path(index, spec.notes));
        let folder = path.parent().map(Path::to_path_buf);
        if folder != made_folder {
            if let Some(folder) = &folder {
                fs::create_dir_all(folder)?;
            }
            made_folder = folder;
        }
        let target = low + rng.below(spread + 1);
        fs::write(&path, note_text(&mut rng, index, spec.notes, target))?;
    }
    if !spec.large_notes.is_empty() {
        let big = root.join("big");
        fs::create_dir_all(&big)?;
        for (i, &size) in spec.large_notes.iter().enumerate() {
            let text = note_text(&mut rng, spec.notes + i, spec.notes, size);
            let text = &text.as_bytes()[..size.min(text.len())];
            // Cut on a character boundary: the note stays valid UTF-8.
            let end = (0..=text.len())
                .rev()
                .find(|&end| std::str::from_utf8(&text[..end]).is_ok())
                .unwrap_or(0);
            fs::write(big.join(format!("large-{i}-{size}.md")), &text[..end])?;
        }
    }
    Ok(())
}

/// Where generated vaults are kept: `$CARGO_TARGET_DIR`, else the `target/` folder the
/// running bench binary sits in (`target/release/deps/<bench>`), else the system temp dir.
pub fn cache_root() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::current_exe()
                .ok()
                .and_then(|exe| exe.ancestors().nth(3).map(Path::to_path_buf))
        })
        .unwrap_or_else(std::env::temp_dir);
    target.join("tc-bench-vaults")
}

/// The generated vault of `spec`, made on first use and kept under [`cache_root`]. Returns
/// the vault root; `<root>/../snapshots` is free for the vault's snapshot folder.
pub fn cached_vault(spec: &VaultSpec) -> io::Result<PathBuf> {
    let home = cache_root().join(spec.key());
    let root = home.join("vault");
    if root.is_dir() {
        return Ok(root);
    }
    fs::create_dir_all(cache_root())?;
    let staging = cache_root().join(format!("{}.tmp-{}", spec.key(), std::process::id()));
    if staging.exists() {
        fs::remove_dir_all(&staging)?;
    }
    generate(spec, &staging.join("vault"))?;
    match fs::rename(&staging, &home) {
        Ok(()) => Ok(root),
        // Another run published the same vault first: use theirs.
        Err(_) if root.is_dir() => {
            fs::remove_dir_all(&staging)?;
            Ok(root)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_is_deterministic_and_shaped_as_asked() {
        let spec = VaultSpec {
            notes: 250,
            mean_note_bytes: 2_000,
            large_notes: vec![10_000],
            seed: 3,
        };
        let a = tempfile_dir("a");
        let b = tempfile_dir("b");
        generate(&spec, &a).unwrap();
        generate(&spec, &b).unwrap();
        let mut total = 0usize;
        for index in 0..spec.notes {
            let path = note_path(index, spec.notes);
            let one = fs::read(a.join(&path)).unwrap();
            assert_eq!(one, fs::read(b.join(&path)).unwrap(), "{path}");
            total += one.len();
        }
        let mean = total / spec.notes;
        assert!((1_700..2_300).contains(&mean), "mean {mean}");
        assert_eq!(
            fs::metadata(a.join("big/large-0-10000.md")).unwrap().len(),
            10_000
        );
        assert_eq!(note_path(0, 250), "area-0/note-000000.md");
        assert_eq!(note_path(249, 250), "area-2/note-000249.md");
        assert_eq!(
            note_path(12_345, 100_000),
            "area-1/topic-2/sub-3/note-012345.md"
        );
        fs::remove_dir_all(a.parent().unwrap()).unwrap();
    }

    fn tempfile_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir()
            .join(format!("tc-vault-gen-test-{}", std::process::id()))
            .join(name);
        let _ = fs::remove_dir_all(&dir);
        dir
    }
}
