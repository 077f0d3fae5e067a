//! git_commit's binding over an index of 10,000 entries: the fingerprint alone, and the whole
//! state step a redemption runs (open the repository, read HEAD and the index, fingerprint).

use std::hint::black_box;
use std::process::Command;

use criterion::{Criterion, criterion_group, criterion_main};
use gix::bstr::ByteSlice;
use gix::index::entry::{Flags, Mode, Stat};
use tc_git::repo::HeadState;
use tc_git::{ConfigScope, GitOptions};

const ENTRIES: usize = 10_000;

fn synthetic_index() -> gix::index::State {
    let mut state = gix::index::State::new(gix::hash::Kind::Sha1);
    for i in 0..ENTRIES {
        let path = format!("notes/{:02}/note-{i:05}.md", i % 100);
        let id = gix::hash::ObjectId::from_hex(format!("{:040x}", i + 1).as_bytes()).unwrap();
        state.dangerously_push_entry(
            Stat::default(),
            id,
            Flags::empty(),
            Mode::FILE,
            path.as_bytes().as_bstr(),
        );
    }
    state.sort_entries();
    state
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

fn fingerprint(c: &mut Criterion) {
    let head = HeadState {
        reference: Some("refs/heads/main".to_owned()),
        commit: Some(gix::hash::ObjectId::from_hex(&[b'a'; 40]).unwrap()),
    };
    let index = synthetic_index();
    let mut group = c.benchmark_group("git_commit_binding");
    group.bench_function("fingerprint_10k_entries", |b| {
        b.iter(|| tc_git::binding::fingerprint(black_box(&head), black_box(&index)))
    });

    // A real repository with 10,000 staged files.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    for i in 0..ENTRIES {
        let folder = root.join(format!("notes/{:02}", i % 100));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join(format!("note-{i:05}.md")),
            format!("note {i}\n"),
        )
        .unwrap();
    }
    git(root, &["add", "."]);
    let options = GitOptions {
        config: ConfigScope::RepositoryOnly,
    };
    group.bench_function("state_step_10k_entries", |b| {
        b.iter(|| {
            let repo = tc_git::repo::open(root, &options).unwrap();
            let head = tc_git::repo::head(&repo).unwrap();
            let index = tc_git::repo::read_index(&repo).unwrap();
            tc_git::binding::fingerprint(&head, &index)
        })
    });
    group.finish();
}

criterion_group!(benches, fingerprint);
criterion_main!(benches);
