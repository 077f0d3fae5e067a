//! `obsidian-tc snapshots` and `obsidian-tc restore` (spec/versions.md `versions.cli.*`): the
//! human's own way to see and undo what the server kept, with no agent in between. The
//! versions are read from the cache directory the server keeps them in; a restore goes
//! through the vault's own restore, under the same note locks a running server takes, and
//! keeps the note it replaces as a version too, so a restore can itself be undone.

use std::io::{IsTerminal, Write as _};
use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use tc_gate::clock::{OsEntropy, SystemClock};
use tc_server::config::{CacheEnv, Config};
use tc_tools::{Summary, escape_for_terminal};
use tc_vault::{Precondition, SnapshotInfo, Vault, snapshot_dir_for};

use crate::Refusal;
use crate::cli::{PlaceArgs, RestoreArgs, SnapshotsArgs};

/// The configuration the server runs with, a VAULT_DIR added as `serve` adds it.
fn configured(
    place: &PlaceArgs,
    vault_dir: Option<&Path>,
    env: &CacheEnv,
) -> Result<(Config, std::path::PathBuf), Refusal> {
    let (mut config, cache_dir) = place.resolve(env)?;
    if let Some(dir) = vault_dir {
        config.add_vault_dir(dir).map_err(Refusal::config)?;
    }
    if config.vaults.is_empty() {
        return Err(Refusal::new(
            "no vault: give the vault folder (as to serve) or --config with its [[vaults]]",
        ));
    }
    Ok((config, cache_dir))
}

fn open(config: &Config, cache_dir: &Path, id: &str) -> Result<Vault, Refusal> {
    let vc = config
        .vaults
        .iter()
        .find(|v| v.id == id)
        .ok_or_else(|| Refusal::new(format!("no vault {id} in the configuration")))?;
    let snapshots = snapshot_dir_for(cache_dir, id).map_err(|e| Refusal::new(e.to_string()))?;
    Vault::open(
        vc.id.clone(),
        &vc.root,
        snapshots,
        Arc::new(SystemClock),
        Arc::new(OsEntropy),
    )
    .map_err(|e| Refusal::new(format!("cannot open vault {id}: {e}")))
}

/// The vaults a command looks at: the one `--vault` names, else every configured one.
fn vault_ids<'a>(config: &'a Config, only: Option<&'a str>) -> Result<Vec<&'a str>, Refusal> {
    match only {
        Some(id) if config.vaults.iter().any(|v| v.id == id) => Ok(vec![id]),
        Some(id) => Err(Refusal::new(format!(
            "no vault {id} in the configuration (it has {})",
            config
                .vaults
                .iter()
                .map(|v| v.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        None => Ok(config.vaults.iter().map(|v| v.id.as_str()).collect()),
    }
}

fn time_of(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_else(|| ms.to_string())
}

/// Finds snapshot `id` in the vaults looked at: the vault and the snapshot.
fn find(
    config: &Config,
    cache_dir: &Path,
    only: Option<&str>,
    id: &str,
) -> Result<(Vault, SnapshotInfo), Refusal> {
    for vault_id in vault_ids(config, only)? {
        let vault = open(config, cache_dir, vault_id)?;
        if let Ok(info) = vault.snapshot(id) {
            return Ok((vault, info));
        }
    }
    Err(Refusal::new(format!(
        "no kept version {id}; `obsidian-tc snapshots` lists them"
    )))
}

// r[impl versions.cli.list]
/// `obsidian-tc snapshots`: the versions kept, newest first, or one version's bytes.
pub fn list(args: &SnapshotsArgs, env: &CacheEnv) -> Result<String, Refusal> {
    let (config, cache_dir) = configured(&args.place, args.vault_dir.as_deref(), env)?;
    if let Some(id) = &args.show {
        let (vault, info) = find(&config, &cache_dir, args.vault.as_deref(), id)?;
        let bytes = vault
            .read_snapshot(&info)
            .map_err(|e| Refusal::new(format!("cannot read version {id}: {e}")))?;
        return String::from_utf8(bytes).map_err(|_| {
            Refusal::new(format!(
                "version {id} of {} is not text; restore it to get the file back",
                info.path.as_str()
            ))
        });
    }
    let path = args
        .path
        .as_deref()
        .map(tc_vault::VaultPath::parse)
        .transpose()
        .map_err(|e| Refusal::new(e.to_string()))?;
    let mut rows = Vec::new();
    for vault_id in vault_ids(&config, args.vault.as_deref())? {
        let vault = open(&config, &cache_dir, vault_id)?;
        let kept = vault
            .snapshots(path.as_ref())
            .map_err(|e| Refusal::new(format!("cannot list the versions of {vault_id}: {e}")))?;
        rows.extend(kept.into_iter().map(|info| (vault_id.to_owned(), info)));
    }
    rows.sort_by(|(_, a), (_, b)| (b.created_ms, &b.id).cmp(&(a.created_ms, &a.id)));
    if args.json {
        let list: Vec<_> = rows
            .iter()
            .map(|(vault, info)| {
                json!({
                    "vault": vault,
                    "snapshot_id": info.id.as_str(),
                    "path": info.path.as_str(),
                    "kind": info.kind.as_str(),
                    "created": time_of(info.created_ms),
                    "size": info.size,
                    "content_hash": info.content_hash,
                })
            })
            .collect();
        return Ok(format!("{}\n", json!(list)));
    }
    if rows.is_empty() {
        return Ok("no versions kept\n".to_owned());
    }
    let mut out = String::new();
    for (vault, info) in &rows {
        out.push_str(&format!(
            "{}  {}  {:<8}  {:>9} B  {}:{}\n",
            info.id.as_str(),
            time_of(info.created_ms),
            info.kind.as_str(),
            info.size,
            escape_for_terminal(vault),
            escape_for_terminal(info.path.as_str()),
        ));
    }
    out.push_str("restore one with: obsidian-tc restore SNAPSHOT_ID (and the flags above)\n");
    Ok(out)
}

// r[impl versions.cli.restore]
/// `obsidian-tc restore`: the version put back over what is there, after the human saw the
/// change (on a terminal) or said `--yes`.
pub fn restore(args: &RestoreArgs, env: &CacheEnv) -> Result<String, Refusal> {
    let (config, cache_dir) = configured(&args.place, args.vault_dir.as_deref(), env)?;
    let (vault, info) = find(
        &config,
        &cache_dir,
        args.vault.as_deref(),
        &args.snapshot_id,
    )?;
    let path = info.path.clone();
    let current = vault
        .read_if_exists(&path)
        .map_err(|e| Refusal::new(format!("cannot read {}: {e}", path.as_str())))?;
    let kept = vault
        .read_snapshot(&info)
        .map_err(|e| Refusal::new(format!("cannot read version {}: {e}", info.id.as_str())))?;
    if !args.yes {
        if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
            return Err(Refusal::new(
                "not restored: without a terminal to ask on, add --yes to restore",
            ));
        }
        let mut summary = Summary::new(format!(
            "restore {} to the {} version of {}",
            path.as_str(),
            info.kind.as_str(),
            time_of(info.created_ms)
        ))
        .target(path.as_str());
        summary = match (&current, std::str::from_utf8(&kept)) {
            (Some(now), Ok(then)) => match now.utf8(&path) {
                Ok(now) => summary.diff(now, then),
                Err(_) => summary.detail("the note there now is not text"),
            },
            (None, _) => summary.detail("nothing is at that path now: the file comes back"),
            (Some(_), Err(_)) => summary.detail(format!("{} bytes, not text", kept.len())),
        };
        let shown = summary.render("restore", vault.id(), "you", "");
        let mut stderr = std::io::stderr().lock();
        for line in shown.lines() {
            let _ = writeln!(stderr, "  {line}");
        }
        let _ = write!(stderr, "\nRestore? [y/N] ");
        let _ = stderr.flush();
        let mut answer = String::new();
        std::io::stdin()
            .read_line(&mut answer)
            .map_err(|e| Refusal::new(format!("cannot read the answer: {e}")))?;
        if !matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
            return Err(Refusal::new("not restored: nothing was changed"));
        }
    }
    // What was shown is what is replaced: a change meanwhile refuses the restore.
    let expected = match &current {
        Some(now) => Precondition::HashIs(now.hash.clone()),
        None => Precondition::MustNotExist,
    };
    let (restored, replaced) = vault
        .restore_over(&path, Some(info.id.as_str()), &expected)
        .map_err(|e| {
            Refusal::new(format!(
                "not restored: {e}; run `obsidian-tc restore {}` again to see the change anew",
                info.id.as_str()
            ))
        })?;
    let mut out = format!(
        "restored {} from version {}\n",
        path.as_str(),
        restored.id.as_str()
    );
    if let Some(replaced) = replaced {
        out.push_str(&format!(
            "the content it replaced is kept as version {}\n",
            replaced.id.as_str()
        ));
    }
    Ok(out)
}
