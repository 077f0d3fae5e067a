//! The sandbox of a re-run (spec/sessions.md `sessions.rerun.sandbox`): a copy of one
//! vault and of the cache, made for the run under `<cacheDir>/sandboxes/` (0700) and
//! removed when the [`Sandbox`] is dropped, whether the run ended or failed.
//!
//! The vault is copied file by file (symbolic links are copied as links: one that leads
//! out of the copy is refused by the vault code there as it is here), except its `.git`:
//! the repository the vault uses may lie outside it, so [`repository`] copies that whole
//! repository into the sandbox and points the copy's `.git` at it (spec
//! `sessions.rerun.sandbox.git`). The cache is copied
//! without its traces, other sandboxes and `cache.db`, which is copied through SQLite's
//! online backup API from a read-only connection: a raw copy of a live database in WAL
//! mode can miss committed pages still in its `-wal` file.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::{Connection, OpenFlags};
use tc_gate::clock::{Clock, Entropy, OsEntropy};
use tc_gate::keys::ServerSecret;
use tc_gate::{CACHE_DB_FILE, Store};

use crate::config::Config;
use crate::metrics::Metrics;
use crate::server::{CoreParts, ServerCore};

mod repository;

/// The folder of the sandboxes under the cache directory.
pub const SANDBOX_DIR: &str = "sandboxes";

/// What a cache copy leaves out: the traces, the sandboxes, and the database with its
/// companions (copied by the backup API instead).
const NOT_COPIED: &[&str] = &[tc_sessions::trace::TRACE_DIR, SANDBOX_DIR, CACHE_DB_FILE];

/// A copy of a vault and a cache, removed on drop.
#[derive(Debug)]
pub(crate) struct Sandbox {
    dir: PathBuf,
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if let Err(error) = fs::remove_dir_all(&self.dir) {
            tracing::warn!(dir = %self.dir.display(), %error, "rerun: removing a sandbox");
        }
    }
}

impl Sandbox {
    /// Copies `vault_root` and `cache_dir` into a new sandbox under `cache_dir`.
    pub(crate) fn make(cache_dir: &Path, vault_root: &Path) -> io::Result<Sandbox> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let base = cache_dir.join(SANDBOX_DIR);
        tc_gate::private_fs::create_private_dir_all(&base)?;
        remove_abandoned(&base);
        let dir = loop {
            let name = format!(
                "rerun-{}-{}-{}",
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos()),
                NEXT.fetch_add(1, Ordering::Relaxed)
            );
            let dir = base.join(name);
            match tc_gate::private_fs::create_private_dir(&dir) {
                Ok(()) => break dir,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        };
        let sandbox = Sandbox { dir };
        copy_tree(vault_root, &sandbox.vault(), &|name| name == ".git")?;
        if let Err(why) = repository::copy_repository(vault_root, &sandbox.vault(), &sandbox.dir) {
            tracing::warn!(
                %why,
                "rerun: the sandbox has no copy of the vault's git repository, so its git tools \
                 answer git_no_repo"
            );
        }
        copy_tree(cache_dir, &sandbox.cache(), &|name| {
            NOT_COPIED.contains(&name) || name.starts_with(CACHE_DB_FILE)
        })?;
        backup_db(
            &cache_dir.join(CACHE_DB_FILE),
            &sandbox.cache().join(CACHE_DB_FILE),
        )?;
        Ok(sandbox)
    }

    pub(crate) fn vault(&self) -> PathBuf {
        self.dir.join("vault")
    }

    pub(crate) fn cache(&self) -> PathBuf {
        self.dir.join("cache")
    }

    /// A server over the copy: `config` with only vault `vault`, rooted in the copy, and
    /// the copied cache.
    pub(crate) fn core(
        &self,
        config: &Config,
        vault: &str,
        clock: &Arc<dyn Clock>,
        entropy: &Arc<dyn Entropy>,
    ) -> Result<ServerCore, String> {
        let mut config = config.clone();
        let cache = self.cache();
        config.cache_dir = Some(cache.clone());
        config.vaults.retain(|v| v.id == vault);
        for v in &mut config.vaults {
            v.root = self.vault();
        }
        let secret = ServerSecret::load_or_create(&cache, &OsEntropy).map_err(|e| e.to_string())?;
        let store = Store::open(cache.join(CACHE_DB_FILE)).map_err(|e| e.to_string())?;
        ServerCore::build(
            &config,
            CoreParts {
                cache_dir: &cache,
                secret: &secret,
                store,
                clock: Arc::clone(clock),
                entropy: Arc::clone(entropy),
                metrics: Arc::new(Metrics::new()),
                legacy_shim: false,
                approval_flags: Vec::new(),
                approval_program: None,
            },
        )
        .map_err(|e| e.to_string())
    }
}

// r[impl sessions.rerun.sandbox]
/// Removes the sandboxes of processes that no longer run (a re-run killed before its
/// sandbox was dropped); a sandbox of a live process, this one's included, is kept.
fn remove_abandoned(base: &Path) {
    let Ok(entries) = fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("rerun-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        if !process_alive(pid)
            && let Err(error) = fs::remove_dir_all(entry.path())
        {
            tracing::warn!(dir = %entry.path().display(), %error, "rerun: removing an abandoned sandbox");
        }
    }
}

/// Whether process `pid` exists (signal 0; one of another user's counts as existing).
fn process_alive(pid: i32) -> bool {
    match rustix::process::Pid::from_raw(pid) {
        Some(pid) => !matches!(
            rustix::process::test_kill_process(pid),
            Err(rustix::io::Errno::SRCH)
        ),
        None => false,
    }
}

/// Copies the tree at `from` to `to` (created 0700), leaving out the top-level entries
/// whose names `skip` picks.
fn copy_tree(from: &Path, to: &Path, skip: &dyn Fn(&str) -> bool) -> io::Result<()> {
    tc_gate::private_fs::create_private_dir_all(to)?;
    let mut stack = vec![(from.to_path_buf(), to.to_path_buf(), true)];
    while let Some((src, dst, top)) = stack.pop() {
        for entry in fs::read_dir(&src)? {
            let entry = entry?;
            let name = entry.file_name();
            if top && skip(&name.to_string_lossy()) {
                continue;
            }
            let target = dst.join(&name);
            let kind = entry.file_type()?;
            if kind.is_dir() {
                tc_gate::private_fs::create_private_dir(&target)?;
                stack.push((entry.path(), target, false));
            } else if kind.is_file() {
                fs::copy(entry.path(), &target)?;
            } else if kind.is_symlink() {
                std::os::unix::fs::symlink(fs::read_link(entry.path())?, &target)?;
            }
        }
    }
    Ok(())
}

/// Copies the database at `from` to `to` with SQLite's online backup.
fn backup_db(from: &Path, to: &Path) -> io::Result<()> {
    let source = Connection::open_with_flags(from, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(io::Error::other)?;
    drop(tc_gate::private_fs::create_private_file(to)?);
    let mut target = Connection::open(to).map_err(io::Error::other)?;
    rusqlite::backup::Backup::new(&source, &mut target)
        .and_then(|backup| backup.run_to_completion(256, std::time::Duration::ZERO, None))
        .map_err(io::Error::other)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sandbox_copies_vault_and_cache_and_is_removed_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let vault = dir.path().join("vault");
        let cache = dir.path().join("cache");
        fs::create_dir_all(vault.join("sub")).unwrap();
        fs::write(vault.join("sub/a.md"), "a").unwrap();
        fs::create_dir_all(cache.join("sessions")).unwrap();
        fs::write(cache.join("sessions/s1.jsonl"), "{}\n").unwrap();
        fs::create_dir_all(cache.join("server-secrets")).unwrap();
        fs::write(cache.join("server-secrets/k"), "k").unwrap();
        let conn = Connection::open(cache.join(CACHE_DB_FILE)).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (42);")
            .unwrap();
        let made = Sandbox::make(&cache, &vault).unwrap();
        let root = made.dir.clone();
        assert!(root.starts_with(cache.join(SANDBOX_DIR)));
        assert_eq!(
            fs::read_to_string(made.vault().join("sub/a.md")).unwrap(),
            "a"
        );
        assert_eq!(
            fs::read_to_string(made.cache().join("server-secrets/k")).unwrap(),
            "k"
        );
        assert!(!made.cache().join("sessions").exists());
        assert!(!made.cache().join(SANDBOX_DIR).exists());
        // Committed rows still in the WAL are in the copy.
        let copy = Connection::open(made.cache().join(CACHE_DB_FILE)).unwrap();
        let x: i64 = copy.query_row("SELECT x FROM t", [], |r| r.get(0)).unwrap();
        assert_eq!(x, 42);
        drop(copy);
        drop(made);
        assert!(!root.exists());
        drop(conn);
    }

    #[test]
    fn a_dead_process_s_sandbox_is_removed_and_a_live_one_s_kept() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join(SANDBOX_DIR);
        // No process has pid 2^22 + 1 on Linux (pid_max is at most 2^22).
        let dead = base.join("rerun-4194305-1-0");
        let live = base.join(format!("rerun-{}-1-0", std::process::id()));
        fs::create_dir_all(dead.join("vault")).unwrap();
        fs::create_dir_all(&live).unwrap();
        fs::create_dir_all(base.join("unrelated")).unwrap();
        remove_abandoned(&base);
        assert!(!dead.exists());
        assert!(live.exists());
        assert!(base.join("unrelated").exists());
    }
}
