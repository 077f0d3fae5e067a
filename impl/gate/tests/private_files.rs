//! What the server writes outside the vault is private whatever the umask (spec/gate.md
//! `gate.files.private`): folders it creates are 0700, cache.db and its WAL companions 0600.
//! One test in its own binary, since the umask is the whole process's.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use tc_gate::Store;
use tc_gate::private_fs::{create_private_dir, create_private_dir_all, make_private};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

// r[verify gate.files.private]
#[test]
fn what_the_server_creates_is_private_under_an_open_umask() {
    // Nothing is masked: every mode below is the code's own.
    let _ = rustix::process::umask(rustix::fs::Mode::empty());
    let dir = tempfile::tempdir().unwrap();

    let nested = dir.path().join("a/b/c");
    create_private_dir_all(&nested).unwrap();
    for folder in ["a", "a/b", "a/b/c"] {
        assert_eq!(mode(&dir.path().join(folder)), 0o700, "{folder}");
    }
    let one = nested.join("d");
    create_private_dir(&one).unwrap();
    assert_eq!(mode(&one), 0o700);
    assert!(
        create_private_dir(&dir.path().join("x/y")).is_err(),
        "its parent is missing"
    );

    let db = one.join("cache.db");
    let store = Store::open(&db).unwrap();
    assert_eq!(
        format!("{store:?}"),
        "Store { .. }",
        "nothing of the database in logs"
    );
    assert_eq!(mode(&db), 0o600);
    for suffix in ["-wal", "-shm"] {
        let companion = one.join(format!("cache.db{suffix}"));
        if companion.exists() {
            assert_eq!(mode(&companion), 0o600, "{suffix}");
        }
    }
    drop(store);
    // An existing database opens again, and stays private.
    drop(Store::open(&db).unwrap());
    assert_eq!(mode(&db), 0o600);

    let loose = dir.path().join("loose");
    std::fs::write(&loose, "x").unwrap();
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o644)).unwrap();
    make_private(&loose).unwrap();
    assert_eq!(mode(&loose), 0o600);
    make_private(&dir.path().join("missing")).expect("a missing file is no error");
}
