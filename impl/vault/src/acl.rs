//! The per-vault folder ACL (spec/config.md `[vaults.acl]`).
//!
//! Rules, as configured:
//! - `readOnly = true` refuses every write and delete.
//! - `readPaths`, `writePaths`, `deletePaths` are globs over vault-relative paths. Absent
//!   means unrestricted; an empty list means nothing. A read needs a match in `readPaths`, a
//!   write one in `writePaths`, a delete one in `deletePaths` (spec `vault.acl.declared`:
//!   "`delete_note` delete on its path").
//! - `rules = [{glob, scopes}]`: a path matching a rule's glob is reachable, for any
//!   operation, only by a caller holding *every* scope the rule lists. Several matching rules
//!   all apply.
//!
//! Globs use `globset` with `literal_separator`, so `*` stays within one folder and `**`
//! crosses folders: `inbox/**` covers everything below `inbox/`, and `inbox/*` only its
//! direct children.
//!
//! The check runs centrally, from the paths a tool declares, after the confirmation gate and
//! before the handler; a refusal there gives a spent token back (seed: "the central folder
//! ACL"). The paging walk also calls it once per note on every page.

use std::collections::BTreeSet;
use std::fmt;

use globset::{Glob, GlobBuilder, GlobMatcher};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::path::{VaultPath, VaultRoot};

/// `[vaults.acl]` as written in the config file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AclConfig {
    #[serde(default)]
    pub read_only: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_paths: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_paths: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_paths: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<ScopeRuleConfig>,
}

/// One `{glob, scopes}` entry of `rules`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScopeRuleConfig {
    pub glob: String,
    pub scopes: Vec<String>,
}

/// A glob in the ACL or the conventions that does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid glob {glob:?} in {key}: {reason}")]
pub struct GlobConfigError {
    /// The config key that holds the glob, e.g. `acl.writePaths` or `conventions[2].glob`.
    pub key: String,
    pub glob: String,
    pub reason: String,
}

/// Compiles one glob the way every ACL and convention glob is compiled.
pub(crate) fn compile_glob(key: &str, glob: &str) -> Result<GlobMatcher, GlobConfigError> {
    GlobBuilder::new(glob)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|g: Glob| g.compile_matcher())
        .map_err(|e| GlobConfigError {
            key: key.to_owned(),
            glob: glob.to_owned(),
            reason: e.kind().to_string(),
        })
}

/// What a caller wants to do to a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AclOp {
    Read,
    Write,
    Delete,
}

impl fmt::Display for AclOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AclOp::Read => "read",
            AclOp::Write => "write",
            AclOp::Delete => "delete",
        })
    }
}

/// The scopes a caller holds. `*` among the granted scopes (what `token mint` gives by
/// default, and what the trusted stdio caller holds) grants every scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scopes {
    All,
    Granted(BTreeSet<String>),
}

impl Scopes {
    pub fn all() -> Self {
        Scopes::All
    }

    pub fn granted<I, S>(scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let set: BTreeSet<String> = scopes.into_iter().map(Into::into).collect();
        if set.contains("*") {
            Scopes::All
        } else {
            Scopes::Granted(set)
        }
    }

    pub fn has(&self, scope: &str) -> bool {
        match self {
            Scopes::All => true,
            Scopes::Granted(set) => set.contains(scope),
        }
    }
}

/// A refusal by the folder ACL (code `acl_denied`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the folder ACL does not allow {op} of {path:?}: {reason}")]
pub struct AclDenied {
    pub path: String,
    pub op: AclOp,
    pub reason: String,
}

impl AclDenied {
    pub fn details(&self) -> Value {
        json!({"path": self.path, "op": self.op, "reason": self.reason})
    }
}

#[derive(Debug, Clone)]
struct GlobList {
    key: &'static str,
    globs: Vec<GlobMatcher>,
}

impl GlobList {
    fn compile(
        key: &'static str,
        globs: Option<&Vec<String>>,
    ) -> Result<Option<Self>, GlobConfigError> {
        let Some(globs) = globs else { return Ok(None) };
        let compiled = globs
            .iter()
            .map(|g| compile_glob(key, g))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(GlobList {
            key,
            globs: compiled,
        }))
    }

    fn admits(&self, path: &str) -> bool {
        self.globs.iter().any(|g| g.is_match(path))
    }
}

#[derive(Debug, Clone)]
struct ScopeRule {
    glob_text: String,
    glob: GlobMatcher,
    scopes: Vec<String>,
}

/// The compiled folder ACL of one vault.
#[derive(Debug, Clone, Default)]
pub struct Acl {
    read_only: bool,
    read: Option<GlobList>,
    write: Option<GlobList>,
    delete: Option<GlobList>,
    rules: Vec<ScopeRule>,
}

impl Acl {
    /// The ACL of a vault whose config has no `[vaults.acl]`: everything is allowed.
    pub fn unrestricted() -> Self {
        Acl::default()
    }

    /// Compiles the configured ACL; a glob that does not compile is named with its key.
    pub fn compile(config: &AclConfig) -> Result<Self, GlobConfigError> {
        let rules = config
            .rules
            .iter()
            .enumerate()
            .map(|(i, rule)| {
                Ok(ScopeRule {
                    glob_text: rule.glob.clone(),
                    glob: compile_glob(&format!("acl.rules[{i}].glob"), &rule.glob)?,
                    scopes: rule.scopes.clone(),
                })
            })
            .collect::<Result<Vec<_>, GlobConfigError>>()?;
        Ok(Acl {
            read_only: config.read_only,
            read: GlobList::compile("readPaths", config.read_paths.as_ref())?,
            write: GlobList::compile("writePaths", config.write_paths.as_ref())?,
            delete: GlobList::compile("deletePaths", config.delete_paths.as_ref())?,
            rules,
        })
    }

    /// Whether `scopes` may perform `op` on `path`.
    pub fn check(&self, op: AclOp, path: &VaultPath, scopes: &Scopes) -> Result<(), AclDenied> {
        let deny = |reason: String| AclDenied {
            path: path.as_str().to_owned(),
            op,
            reason,
        };
        let needs = |list: &Option<GlobList>| -> Result<(), AclDenied> {
            match list {
                Some(list) if !list.admits(path.as_str()) => {
                    Err(deny(format!("the path matches no glob of {}", list.key)))
                }
                _ => Ok(()),
            }
        };
        match op {
            AclOp::Read => needs(&self.read)?,
            AclOp::Write | AclOp::Delete if self.read_only => {
                return Err(deny("the vault is read-only (readOnly = true)".to_owned()));
            }
            AclOp::Write => needs(&self.write)?,
            AclOp::Delete => needs(&self.delete)?,
        }
        for rule in &self.rules {
            if !rule.glob.is_match(path.as_str()) {
                continue;
            }
            if let Some(missing) = rule.scopes.iter().find(|s| !scopes.has(s)) {
                return Err(deny(format!(
                    "paths matching {:?} need the scope {missing:?}",
                    rule.glob_text
                )));
            }
        }
        Ok(())
    }

    /// Whether `scopes` may read every path of the vault: no `readPaths` list and no rule
    /// asking for a scope they lack, so no spelling and no link target is refused a read
    /// (what lets a listing skip judging each path).
    pub fn reads_everything(&self, scopes: &Scopes) -> bool {
        self.read.is_none()
            && self
                .rules
                .iter()
                .all(|rule| rule.scopes.iter().all(|s| scopes.has(s)))
    }

    // r[impl vault.path.links-judged-at-target]
    /// [`Acl::check`] on the caller's spelling and on every place in the vault a link on
    /// the path really leads to ([`VaultRoot::link_targets`]), so a link never grants more
    /// than its target allows. A path whose links cannot be resolved is judged on its
    /// spelling alone here: its reads and writes refuse it with `path_invalid` themselves.
    pub fn check_at(
        &self,
        root: &VaultRoot,
        op: AclOp,
        path: &VaultPath,
        scopes: &Scopes,
    ) -> Result<(), AclDenied> {
        self.check(op, path, scopes)?;
        for target in root.link_targets(path).unwrap_or_default() {
            self.check(op, &target, scopes)
                .map_err(|denied| AclDenied {
                    path: path.as_str().to_owned(),
                    op,
                    reason: format!(
                        "the path leads through a link to {target}, and there {}",
                        denied.reason
                    ),
                })?;
        }
        Ok(())
    }

    /// Whether the caller may read `path`, judged on its spelling and at every place a link
    /// on it leads to ([`Acl::check_at`]). There is no check of the spelling alone: a link
    /// must never show what its target hides, wherever a path is judged.
    pub fn can_read_at(&self, root: &VaultRoot, path: &VaultPath, scopes: &Scopes) -> bool {
        self.check_at(root, AclOp::Read, path, scopes).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> VaultPath {
        VaultPath::parse(s).unwrap()
    }

    fn contract_example() -> Acl {
        let config: AclConfig = toml::from_str(
            r#"
            readOnly = false
            readPaths = ["**"]
            writePaths = ["**"]
            deletePaths = ["inbox/**", "scratch/**"]
            rules = [{ glob = "private/**", scopes = ["read:private"] }]
            "#,
        )
        .unwrap();
        Acl::compile(&config).unwrap()
    }

    // r[verify config.acl]
    // r[verify vault.acl.rules]
    #[test]
    fn contract_example_config() {
        let acl = contract_example();
        let none = Scopes::granted(Vec::<String>::new());
        let private = Scopes::granted(["read:private"]);
        assert!(acl.check(AclOp::Read, &p("a/b.md"), &none).is_ok());
        assert!(acl.check(AclOp::Write, &p("a/b.md"), &none).is_ok());
        assert!(acl.check(AclOp::Delete, &p("inbox/x.md"), &none).is_ok());
        assert!(
            acl.check(AclOp::Delete, &p("inbox/deep/x.md"), &none)
                .is_ok()
        );
        let denied = acl
            .check(AclOp::Delete, &p("notes/x.md"), &none)
            .unwrap_err();
        assert!(denied.reason.contains("deletePaths"));
        assert_eq!(crate::VaultError::from(denied).code(), "acl_denied");
        let denied = acl
            .check(AclOp::Read, &p("private/diary.md"), &none)
            .unwrap_err();
        assert!(denied.reason.contains("read:private"), "{denied}");
        assert!(
            acl.check(AclOp::Read, &p("private/diary.md"), &private)
                .is_ok()
        );
        assert!(
            acl.check(AclOp::Write, &p("private/diary.md"), &Scopes::all())
                .is_ok()
        );
        assert!(
            acl.check(AclOp::Read, &p("private/x.md"), &Scopes::granted(["*"]))
                .is_ok()
        );
    }

    // r[verify vault.acl.globs]
    #[test]
    fn absent_is_unrestricted_and_empty_is_none() {
        let acl = Acl::compile(&AclConfig {
            write_paths: Some(vec![]),
            ..AclConfig::default()
        })
        .unwrap();
        let none = Scopes::granted(Vec::<String>::new());
        assert!(acl.check(AclOp::Read, &p("x.md"), &none).is_ok());
        assert!(acl.check(AclOp::Write, &p("x.md"), &none).is_err());
        // Deletes answer to deletePaths alone.
        assert!(acl.check(AclOp::Delete, &p("x.md"), &none).is_ok());
        let no_deletes = Acl::compile(&AclConfig {
            delete_paths: Some(vec![]),
            ..AclConfig::default()
        })
        .unwrap();
        assert!(no_deletes.check(AclOp::Delete, &p("x.md"), &none).is_err());
        assert!(no_deletes.check(AclOp::Write, &p("x.md"), &none).is_ok());
        assert!(
            Acl::unrestricted()
                .check(AclOp::Delete, &p("x.md"), &none)
                .is_ok()
        );
    }

    #[test]
    fn read_only_refuses_writes_and_deletes_only() {
        let acl = Acl::compile(&AclConfig {
            read_only: true,
            ..AclConfig::default()
        })
        .unwrap();
        let all = Scopes::all();
        assert!(acl.check(AclOp::Read, &p("x.md"), &all).is_ok());
        assert!(
            acl.check(AclOp::Write, &p("x.md"), &all)
                .unwrap_err()
                .reason
                .contains("read-only")
        );
        assert!(acl.check(AclOp::Delete, &p("x.md"), &all).is_err());
    }

    #[test]
    fn single_star_stays_in_one_folder() {
        let acl = Acl::compile(&AclConfig {
            write_paths: Some(vec!["inbox/*".into()]),
            ..AclConfig::default()
        })
        .unwrap();
        let all = Scopes::all();
        assert!(acl.check(AclOp::Write, &p("inbox/a.md"), &all).is_ok());
        assert!(acl.check(AclOp::Write, &p("inbox/sub/a.md"), &all).is_err());
    }

    // r[verify vault.acl.rules]
    #[test]
    fn every_matching_rule_applies() {
        let acl = Acl::compile(&AclConfig {
            rules: vec![
                ScopeRuleConfig {
                    glob: "work/**".into(),
                    scopes: vec!["work".into()],
                },
                ScopeRuleConfig {
                    glob: "work/hr/**".into(),
                    scopes: vec!["hr".into()],
                },
            ],
            ..AclConfig::default()
        })
        .unwrap();
        let work = Scopes::granted(["work"]);
        assert!(acl.check(AclOp::Read, &p("work/a.md"), &work).is_ok());
        assert!(acl.check(AclOp::Read, &p("work/hr/a.md"), &work).is_err());
        assert!(
            acl.check(
                AclOp::Read,
                &p("work/hr/a.md"),
                &Scopes::granted(["work", "hr"])
            )
            .is_ok()
        );
    }

    #[test]
    fn unknown_keys_and_bad_globs_are_named() {
        let err = toml::from_str::<AclConfig>("readonly = true").unwrap_err();
        assert!(err.to_string().contains("readonly"), "{err}");
        let err = toml::from_str::<AclConfig>("rules = [{ glob = \"a\", scopes = [], scope = 1 }]")
            .unwrap_err();
        assert!(err.to_string().contains("scope"), "{err}");
        let err = Acl::compile(&AclConfig {
            write_paths: Some(vec!["a/[".into()]),
            ..AclConfig::default()
        })
        .unwrap_err();
        assert_eq!(err.key, "writePaths");
        assert_eq!(err.glob, "a/[");
    }
}
