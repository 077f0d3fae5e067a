//! Replays every committed seed of the fuzz targets `sections_patch` and `frontmatter_merge`
//! (`fuzz/seeds/<target>/*`) through the body its target calls (tc_vault::fuzz_bodies), so
//! what the fuzzer found stays a regression test on stable Rust (fuzz/README.md).

use std::fs;
use std::path::{Path, PathBuf};

use tc_vault::fuzz_bodies;

fn seeds_of(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/seeds")
        .join(target);
    let mut seeds: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.is_file())
        .collect();
    seeds.sort();
    seeds
}

fn replay(target: &str, body: fn(&[u8])) {
    let seeds = seeds_of(target);
    assert!(seeds.len() >= 5, "seeds committed for {target}");
    for seed in seeds {
        let data = fs::read(&seed).unwrap();
        if std::panic::catch_unwind(|| body(&data)).is_err() {
            panic!("seed {} of {target} fails", seed.display());
        }
    }
}

// r[verify vault.sections.lossless]
#[test]
fn sections_patch_seeds() {
    replay("sections_patch", fuzz_bodies::sections_patch);
}

// r[verify vault.frontmatter.lossless]
#[test]
fn frontmatter_merge_seeds() {
    replay("frontmatter_merge", fuzz_bodies::frontmatter_merge);
}

/// The bodies check something: a patch that changed a byte outside its span, or a merge that
/// was not a no-op the second time, would fail them. Random inputs as a smoke run.
#[test]
fn the_bodies_hold_on_random_inputs() {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let alphabet = b"#^- \n\r`~:'\"abcAB01\x00{}[]";
    for _ in 0..2000 {
        let mut data = Vec::new();
        for _ in 0..(state % 120) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            data.push(alphabet[(state % alphabet.len() as u64) as usize]);
        }
        data.insert(0, (state >> 32) as u8);
        fuzz_bodies::sections_patch(&data);
        fuzz_bodies::frontmatter_merge(&data);
    }
}
