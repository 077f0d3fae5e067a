//! The server secret file and the derived keys (spec/state.md, `state.key.*`).

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::sync::Arc;

use tc_gate::clock::{OsEntropy, SeededEntropy};
use tc_gate::keys::{KeyError, KeyPurpose, KeySource, ServerSecret, secret_path};

fn fresh_dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|error| panic!("tempdir: {error}"))
}

fn load(cache_dir: &Path) -> Result<ServerSecret, KeyError> {
    ServerSecret::load_or_create(cache_dir, &OsEntropy)
}

fn request_state_key(secret: &ServerSecret) -> [u8; 32] {
    *secret.derive(KeyPurpose::RequestState).as_bytes()
}

// r[verify state.key.server-secret]
// r[verify state.key.secret-file]
#[test]
fn first_use_creates_a_private_32_byte_file_and_directory() {
    let cache = fresh_dir();
    let secret = load(cache.path());
    assert!(secret.is_ok(), "{secret:?}");
    let path = secret_path(cache.path());
    assert_eq!(
        path,
        cache
            .path()
            .join("server-secrets")
            .join("wiki-generated.key")
    );
    let metadata = fs::symlink_metadata(&path).ok();
    let metadata = metadata.as_ref();
    assert!(metadata.is_some_and(|m| m.file_type().is_file()));
    assert_eq!(metadata.map(|m| m.mode() & 0o777), Some(0o600));
    assert_eq!(metadata.map(|m| m.len()), Some(32));
    let dir_mode = fs::metadata(cache.path().join("server-secrets")).map(|m| m.mode() & 0o777);
    assert_eq!(dir_mode.ok(), Some(0o700));
    // No temporary file is left behind.
    let entries = fs::read_dir(cache.path().join("server-secrets")).map(|d| d.count());
    assert_eq!(entries.ok(), Some(1));
}

// r[verify state.key.server-secret]
#[test]
fn second_load_returns_the_same_key_and_the_file_is_the_secret() {
    let cache = fresh_dir();
    let first = load(cache.path()).map(|s| request_state_key(&s)).ok();
    let second = load(cache.path()).map(|s| request_state_key(&s)).ok();
    assert!(first.is_some());
    assert_eq!(first, second);
    // Replacing the file's bytes (keeping it valid) changes the key: the key comes from it.
    let path = secret_path(cache.path());
    assert!(fs::write(&path, [7u8; 32]).is_ok());
    let third = load(cache.path()).map(|s| request_state_key(&s)).ok();
    assert!(third.is_some());
    assert_ne!(first, third);
}

// r[verify state.key.secret-file]
#[test]
fn concurrent_first_use_agrees_on_one_secret() {
    for _round in 0..20 {
        let cache = Arc::new(fresh_dir());
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let cache = Arc::clone(&cache);
                std::thread::spawn(move || load(cache.path()).map(|s| request_state_key(&s)).ok())
            })
            .collect();
        let keys: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().ok().flatten())
            .collect();
        assert!(keys.iter().all(|k| k.is_some()), "{keys:?}");
        assert!(keys.windows(2).all(|pair| pair[0] == pair[1]));
        let entries = fs::read_dir(cache.path().join("server-secrets")).map(|d| d.count());
        assert_eq!(entries.ok(), Some(1));
    }
}

// r[verify state.key.secret-file]
#[test]
fn a_symlinked_secret_is_refused() {
    let cache = fresh_dir();
    assert!(load(cache.path()).is_ok());
    let path = secret_path(cache.path());
    let elsewhere = cache.path().join("elsewhere.key");
    assert!(fs::rename(&path, &elsewhere).is_ok());
    assert!(std::os::unix::fs::symlink(&elsewhere, &path).is_ok());
    let refused = load(cache.path());
    assert!(
        matches!(&refused, Err(KeyError::NotRegular { found, .. }) if found.contains("symbolic link")),
        "{refused:?}"
    );
    let message = refused.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("remove it"), "{message}");
}

// r[verify state.key.secret-file]
#[test]
fn a_group_or_world_readable_secret_is_refused() {
    for mode in [0o644, 0o640, 0o604, 0o660] {
        let cache = fresh_dir();
        assert!(load(cache.path()).is_ok());
        let path = secret_path(cache.path());
        assert!(fs::set_permissions(&path, fs::Permissions::from_mode(mode)).is_ok());
        let refused = load(cache.path());
        assert!(
            matches!(&refused, Err(KeyError::TooOpen { mode: m, .. }) if *m == mode),
            "{mode:o}: {refused:?}"
        );
        let message = refused.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("chmod 600"), "{message}");
    }
}

// r[verify state.key.secret-file]
#[test]
fn a_wrong_size_secret_is_refused() {
    for len in [0usize, 31, 33, 4096] {
        let cache = fresh_dir();
        assert!(load(cache.path()).is_ok());
        let path = secret_path(cache.path());
        assert!(fs::write(&path, vec![1u8; len]).is_ok());
        let refused = load(cache.path());
        assert!(
            matches!(&refused, Err(KeyError::WrongSize { len: l, .. }) if *l == len as u64),
            "{len}: {refused:?}"
        );
    }
}

// r[verify state.key.secret-file]
#[test]
fn a_directory_in_place_of_the_secret_is_refused() {
    let cache = fresh_dir();
    assert!(fs::create_dir_all(secret_path(cache.path())).is_ok());
    let refused = load(cache.path());
    assert!(
        matches!(&refused, Err(KeyError::NotRegular { found, .. }) if found.contains("directory")),
        "{refused:?}"
    );
}

// r[verify state.key.secret-file]
#[test]
fn a_group_writable_secrets_directory_is_refused() {
    let cache = fresh_dir();
    assert!(load(cache.path()).is_ok());
    let dir = cache.path().join("server-secrets");
    assert!(fs::set_permissions(&dir, fs::Permissions::from_mode(0o770)).is_ok());
    let refused = load(cache.path());
    assert!(
        matches!(&refused, Err(KeyError::TooOpen { .. })),
        "{refused:?}"
    );
}

// r[verify state.key.secret-file]
#[test]
fn a_secret_owned_by_another_user_is_refused() {
    let cache = fresh_dir();
    assert!(load(cache.path()).is_ok());
    let path = secret_path(cache.path());
    let our_uid = fs::metadata(&path).map(|m| m.uid()).unwrap_or(0);
    let other_uid = our_uid.wrapping_add(4242);
    match std::os::unix::fs::chown(&path, Some(other_uid), None) {
        Ok(()) => {
            let refused = load(cache.path());
            assert!(
                matches!(&refused, Err(KeyError::WrongOwner { owner, expected, .. })
                    if *owner == other_uid && *expected == our_uid),
                "{refused:?}"
            );
        }
        // Only root may give a file away; an unprivileged run cannot build this case.
        Err(error) => eprintln!("skipping the foreign-owner case: {error}"),
    }
}

// r[verify state.key.hkdf-label]
#[test]
fn each_purpose_has_its_own_label_and_key() {
    let secret = ServerSecret::ephemeral(&SeededEntropy::new(1));
    let labels: Vec<&str> = KeyPurpose::ALL.iter().map(|p| p.label()).collect();
    assert_eq!(
        labels,
        [
            "obsidian-tc/v1/request-state",
            "obsidian-tc/v1/read-notes-cursor",
            "obsidian-tc/v1/wiki-seal",
            "obsidian-tc/v1/state-fp"
        ]
    );
    let keys: Vec<[u8; 32]> = KeyPurpose::ALL
        .iter()
        .map(|p| *secret.derive(*p).as_bytes())
        .collect();
    for (i, key) in keys.iter().enumerate() {
        assert!(
            !keys[..i].contains(key),
            "{:?} shares a key",
            KeyPurpose::ALL[i]
        );
    }
    // Derivation is a function of the secret and the label only.
    assert_eq!(
        secret.derive(KeyPurpose::WikiSeal),
        ServerSecret::ephemeral(&SeededEntropy::new(1)).derive(KeyPurpose::WikiSeal)
    );
}

/// RFC 5869-style known answer: HKDF-SHA256, no salt, IKM = 32 × 0x07, our labels.
/// Computed independently with Python's hmac module.
// r[verify state.key.hkdf-label]
#[test]
fn derivation_matches_an_independent_hkdf() {
    let cache = fresh_dir();
    assert!(load(cache.path()).is_ok());
    assert!(fs::write(secret_path(cache.path()), [7u8; 32]).is_ok());
    let secret = load(cache.path());
    let derived = secret
        .as_ref()
        .map(|s| hex_of(s.derive(KeyPurpose::RequestState).as_bytes()))
        .unwrap_or_default();
    assert_eq!(derived, include_str!("keys_hkdf_known_answer.txt").trim());
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

// r[verify state.key.server-secret]
#[test]
fn two_cache_dirs_give_different_keys() {
    let (a, b) = (fresh_dir(), fresh_dir());
    let key_a = load(a.path()).map(|s| request_state_key(&s)).ok();
    let key_b = load(b.path()).map(|s| request_state_key(&s)).ok();
    assert!(key_a.is_some() && key_b.is_some());
    assert_ne!(key_a, key_b);
}

// r[verify state.key.per-process]
#[test]
fn without_a_cache_dir_the_key_is_per_process_random() {
    let one = ServerSecret::for_cache_dir(None, &OsEntropy);
    let two = ServerSecret::for_cache_dir(None, &OsEntropy);
    let (Ok(one), Ok(two)) = (one, two) else {
        panic!("ephemeral secrets never fail");
    };
    assert_eq!(one.source(), &KeySource::PerProcess);
    assert_ne!(request_state_key(&one), request_state_key(&two));
}

// r[verify state.key.startup-line-logged]
#[test]
fn startup_line_names_the_key_source() {
    let cache = fresh_dir();
    let secret = ServerSecret::for_cache_dir(Some(cache.path()), &OsEntropy);
    let line = secret
        .map(|s| s.source().startup_line())
        .unwrap_or_default();
    assert_eq!(
        line,
        format!(
            "elicit: requestState codec keyed from {}/server-secrets (stable across restarts)",
            cache.path().display()
        )
    );
    assert_eq!(
        KeySource::PerProcess.startup_line(),
        "elicit: requestState codec keyed from a per-process random key \
         (confirmations do not survive a restart and are not shared between processes)"
    );
}

#[test]
fn debug_output_never_shows_key_bytes() {
    let secret = ServerSecret::ephemeral(&SeededEntropy::new(9));
    let derived = secret.derive(KeyPurpose::ReadNotesCursor);
    let rendered = format!("{secret:?} {derived:?}");
    assert!(rendered.contains("<redacted>"));
    let derived_hex = hex_of(derived.as_bytes());
    assert!(!rendered.contains(&derived_hex[..8]));
    let decimal_first = derived.as_bytes()[..4]
        .iter()
        .map(|b| b.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    assert!(!rendered.contains(&decimal_first), "{rendered}");
}

// r[verify state.key.server-secret]
/// Logs never show key material: the secret and every derived key render as `<redacted>`
/// (cargo-mutants: a Debug that rendered nothing survived, so no test looked).
#[test]
fn the_secret_and_its_keys_render_redacted() {
    let dir = fresh_dir();
    let secret = load(dir.path()).unwrap();
    let shown = format!("{secret:?}");
    let bytes = fs::read(secret_path(dir.path())).unwrap();
    assert!(shown.starts_with("ServerSecret {"), "{shown}");
    assert!(shown.contains("<redacted>"), "{shown}");
    assert!(!shown.contains(&hex::encode(&bytes)), "{shown}");
    let key = secret.derive(KeyPurpose::RequestState);
    let shown = format!("{key:?}");
    assert!(shown.starts_with("DerivedKey {"), "{shown}");
    assert!(
        shown.contains("RequestState") && shown.contains("<redacted>"),
        "{shown}"
    );
    assert!(!shown.contains(&hex::encode(key.as_bytes())), "{shown}");
    assert!(!shown.contains(&format!("{:?}", key.as_bytes())), "{shown}");
}
