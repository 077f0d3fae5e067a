//! Conventions: the vault's block rules, judged by the write gate before any write
//! (spec/config.md `[[vaults.conventions]]`; seed: "the vault write gate
//! refused it with convention_blocked before any write of the call").
//!
//! Each rule has a `glob` over vault-relative paths and any of:
//! - `requireFrontmatter = [keys]`: a note written there must carry these frontmatter keys;
//! - `forbidWrites = true`: nothing may be written, created, copied or moved there;
//! - `maxBytes = N`: a note written there may not exceed N bytes;
//! - `namePattern = 'regex'`: the note's file name (last segment) must match.
//!
//! Rules are judged in config order and the first broken one is reported, by index, glob
//! and a description, so the agent can fix its call.
//!
//! Existing notes that already break a rule (spec `vault.conventions.grandfathered`): a
//! rule that the target note *already* broke before this write does not refuse an overwrite
//! of it. Otherwise an agent could never fix a task line in an old, non-conforming note.
//! That tolerance needs the prior state ([`Prior::Known`]). When the gate has no prior state to
//! go on, [`Prior::Unknown`], the note is judged as if it were new. That is the requirements'
//! `update_task` case: "the write gate judges a note that already breaks a block rule as a
//! new note when the caller lacks read:notes or the note is over 1 MiB"
//! ([`update_task_prior`]).
//! `forbidWrites` is about the act, not the note, so nothing excuses it.

use std::collections::BTreeSet;

use globset::GlobMatcher;
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::acl::{GlobConfigError, compile_glob};
use crate::note::parse_note;
use crate::path::{VaultPath, VaultRoot};

/// One `[[vaults.conventions]]` entry as written in the config file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConventionConfig {
    pub glob: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub require_frontmatter: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub forbid_writes: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_pattern: Option<String>,
}

/// A convention whose glob or name pattern does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConventionConfigError {
    #[error(transparent)]
    Glob(#[from] GlobConfigError),
    #[error("invalid namePattern {pattern:?} in conventions[{index}]: {reason}")]
    NamePattern {
        index: usize,
        pattern: String,
        reason: String,
    },
}

/// A write refused by a convention (code `convention_blocked`), naming the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("convention {rule_index} ({glob:?}) blocks writing {path:?}: {rule}")]
pub struct ConventionBlocked {
    /// The rule's position in `[[vaults.conventions]]`, from 0.
    pub rule_index: usize,
    pub glob: String,
    /// What the rule demands and how the write breaks it.
    pub rule: String,
    pub path: String,
}

impl ConventionBlocked {
    pub fn details(&self) -> Value {
        json!({
            "rule_index": self.rule_index,
            "glob": self.glob,
            "rule": self.rule,
            "path": self.path,
        })
    }
}

/// What kind of write reaches the target path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteKind {
    /// A note created where none was.
    Create,
    /// An existing note rewritten in place (overwrite, append, prepend, frontmatter or task
    /// edits).
    Overwrite,
    /// A note moved here from `from`; judged as new at the destination.
    Move { from: VaultPath },
    /// A note copied here from `from`; judged as new at the destination.
    Copy { from: VaultPath },
    /// A snapshot restored here; judged as new.
    Restore,
}

/// The frontmatter keys and size of a note's content, as the judge needs them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ContentFacts {
    pub size: u64,
    /// Top-level frontmatter keys; empty when the note has no (or unparsable) frontmatter.
    pub frontmatter_keys: BTreeSet<String>,
}

impl ContentFacts {
    pub fn of(content: &[u8]) -> Self {
        let frontmatter_keys = std::str::from_utf8(content)
            .ok()
            .and_then(|text| parse_note(text).ok())
            .and_then(|note| note.frontmatter)
            .map(|fm| fm.keys().into_iter().collect())
            .unwrap_or_default();
        ContentFacts {
            size: content.len() as u64,
            frontmatter_keys,
        }
    }
}

/// What the gate knows about the target before the write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prior {
    /// No note is at the target.
    Absent,
    /// The note that is there now.
    Known(ContentFacts),
    /// A note is there but the gate may not or will not look at it: judge as new.
    Unknown,
}

/// The prior state `update_task`'s write gate judges with (seed): a caller without
/// `read:notes`, or a note over 1 MiB, gets [`Prior::Unknown`], so the note is judged as new.
pub fn update_task_prior(caller_has_read_notes: bool, current: &[u8]) -> Prior {
    if !caller_has_read_notes || current.len() as u64 > UPDATE_TASK_PRIOR_LIMIT {
        Prior::Unknown
    } else {
        Prior::Known(ContentFacts::of(current))
    }
}

/// The size above which `update_task`'s gate does not look at the prior note (seed: 1 MiB).
pub const UPDATE_TASK_PRIOR_LIMIT: u64 = 1 << 20;

/// One write as the gate judges it.
#[derive(Debug, Clone)]
pub struct WriteIntent {
    pub path: VaultPath,
    pub kind: WriteKind,
    /// The content the write leaves at `path`.
    pub content: ContentFacts,
    pub prior: Prior,
}

impl WriteIntent {
    /// An intent for `content` written at `path`.
    pub fn new(path: VaultPath, kind: WriteKind, content: &[u8], prior: Prior) -> Self {
        WriteIntent {
            path,
            kind,
            content: ContentFacts::of(content),
            prior,
        }
    }
}

#[derive(Debug, Clone)]
struct Rule {
    glob_text: String,
    glob: GlobMatcher,
    require_frontmatter: Vec<String>,
    forbid_writes: bool,
    max_bytes: Option<u64>,
    name_pattern: Option<Regex>,
}

/// The compiled conventions of one vault.
#[derive(Debug, Clone, Default)]
pub struct Conventions {
    rules: Vec<Rule>,
}

impl Conventions {
    /// No rules: every write passes.
    pub fn none() -> Self {
        Conventions::default()
    }

    pub fn compile(configs: &[ConventionConfig]) -> Result<Self, ConventionConfigError> {
        let mut rules = Vec::with_capacity(configs.len());
        for (index, config) in configs.iter().enumerate() {
            let glob = compile_glob(&format!("conventions[{index}].glob"), &config.glob)?;
            let name_pattern = config
                .name_pattern
                .as_deref()
                .map(|pattern| {
                    Regex::new(pattern).map_err(|e| ConventionConfigError::NamePattern {
                        index,
                        pattern: pattern.to_owned(),
                        reason: e.to_string(),
                    })
                })
                .transpose()?;
            rules.push(Rule {
                glob_text: config.glob.clone(),
                glob,
                require_frontmatter: config.require_frontmatter.clone(),
                forbid_writes: config.forbid_writes,
                max_bytes: config.max_bytes,
                name_pattern,
            });
        }
        Ok(Conventions { rules })
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Judges one write; the first broken rule, in config order, refuses it.
    pub fn judge(&self, intent: &WriteIntent) -> Result<(), ConventionBlocked> {
        for (rule_index, rule) in self.rules.iter().enumerate() {
            if !rule.glob.is_match(intent.path.as_str()) {
                continue;
            }
            if let Some(broken) = rule.broken_by(intent) {
                return Err(ConventionBlocked {
                    rule_index,
                    glob: rule.glob_text.clone(),
                    rule: broken,
                    path: intent.path.as_str().to_owned(),
                });
            }
        }
        Ok(())
    }

    /// Judges a write to a file of the vault's settings folder (`.obsidian/…`, given as
    /// `rel`), which is no vault path: only `forbidWrites` holds there, since every other
    /// rule is about notes.
    pub fn judge_settings_file(&self, rel: &str) -> Result<(), ConventionBlocked> {
        match self
            .rules
            .iter()
            .enumerate()
            .find(|(_, rule)| rule.forbid_writes && rule.glob.is_match(rel))
        {
            Some((rule_index, rule)) => Err(ConventionBlocked {
                rule_index,
                glob: rule.glob_text.clone(),
                rule: "forbidWrites: changing the vault's settings is forbidden here".into(),
                path: rel.to_owned(),
            }),
            None => Ok(()),
        }
    }

    // r[impl vault.path.links-judged-at-target]
    /// [`Conventions::judge`] at the caller's spelling and at every place in the vault a
    /// link on the path really leads to ([`VaultRoot::link_targets`]). A path whose links
    /// cannot be resolved is judged at its spelling alone: the write refuses it itself.
    pub fn judge_at(
        &self,
        root: &VaultRoot,
        intent: &WriteIntent,
    ) -> Result<(), ConventionBlocked> {
        self.judge(intent)?;
        for target in root.link_targets(&intent.path).unwrap_or_default() {
            let at_target = WriteIntent {
                path: target.clone(),
                ..intent.clone()
            };
            self.judge(&at_target)
                .map_err(|blocked| ConventionBlocked {
                    rule: format!(
                        "{} (the path leads through a link to {target})",
                        blocked.rule
                    ),
                    path: intent.path.as_str().to_owned(),
                    ..blocked
                })?;
        }
        Ok(())
    }
}

impl Rule {
    /// How `intent` breaks this rule, if it does.
    fn broken_by(&self, intent: &WriteIntent) -> Option<String> {
        if self.forbid_writes {
            let act = match &intent.kind {
                WriteKind::Create => "creating notes".to_owned(),
                WriteKind::Overwrite => "changing notes".to_owned(),
                WriteKind::Move { from } => format!("moving notes here (from {from})"),
                WriteKind::Copy { from } => format!("copying notes here (from {from})"),
                WriteKind::Restore => "restoring notes".to_owned(),
            };
            return Some(format!("forbidWrites: {act} is forbidden here"));
        }
        // r[impl attachments.conventions]
        // The other rules are about notes: a file that is not one (an attachment, a canvas)
        // is judged by forbidWrites alone.
        if !intent.path.is_note() {
            return None;
        }
        // The prior note counts only for an in-place overwrite the gate could look at.
        let prior = match (&intent.kind, &intent.prior) {
            (WriteKind::Overwrite, Prior::Known(facts)) => Some(facts),
            _ => None,
        };
        let missing = |facts: &ContentFacts| -> Vec<&str> {
            self.require_frontmatter
                .iter()
                .filter(|k| !facts.frontmatter_keys.contains(k.as_str()))
                .map(String::as_str)
                .collect()
        };
        let missing_now = missing(&intent.content);
        if !missing_now.is_empty() {
            let tolerated = prior.is_some_and(|before| !missing(before).is_empty());
            if !tolerated {
                return Some(format!(
                    "requireFrontmatter: the note must carry the frontmatter key(s) {}",
                    missing_now.join(", ")
                ));
            }
        }
        if let Some(limit) = self.max_bytes
            && intent.content.size > limit
        {
            let tolerated = prior.is_some_and(|before| before.size > limit);
            if !tolerated {
                return Some(format!(
                    "maxBytes: the note would be {} bytes, over the limit of {limit}",
                    intent.content.size
                ));
            }
        }
        if let Some(pattern) = &self.name_pattern
            && !pattern.is_match(intent.path.file_name())
        {
            // An overwrite keeps the name: the note already broke this rule.
            let tolerated = prior.is_some();
            if !tolerated {
                return Some(format!(
                    "namePattern: the file name {:?} does not match {:?}",
                    intent.path.file_name(),
                    pattern.as_str()
                ));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> VaultPath {
        VaultPath::parse(s).unwrap()
    }

    fn contract_example() -> Conventions {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            conventions: Vec<ConventionConfig>,
        }
        let file: File = toml::from_str(
            r#"
            [[conventions]]
            glob = "projects/**"
            requireFrontmatter = ["status"]
            [[conventions]]
            glob = "archive/**"
            forbidWrites = true
            [[conventions]]
            glob = "**"
            maxBytes = 5000000
            namePattern = '^[^#^|\[\]]+\.md$'
            "#,
        )
        .unwrap();
        Conventions::compile(&file.conventions).unwrap()
    }

    fn create(path: &str, content: &str) -> WriteIntent {
        WriteIntent::new(
            p(path),
            WriteKind::Create,
            content.as_bytes(),
            Prior::Absent,
        )
    }

    // r[verify vault.conventions.judged]
    // r[verify vault.conventions.require-frontmatter]
    #[test]
    fn new_notes_need_the_required_keys() {
        let c = contract_example();
        let blocked = c
            .judge(&create("projects/a.md", "no frontmatter"))
            .unwrap_err();
        assert_eq!(blocked.rule_index, 0);
        assert_eq!(blocked.glob, "projects/**");
        assert!(blocked.rule.contains("status"), "{}", blocked.rule);
        assert_eq!(
            crate::VaultError::from(blocked).code(),
            "convention_blocked"
        );
        assert!(
            c.judge(&create("projects/a.md", "---\nstatus: x\n---\n"))
                .is_ok()
        );
        assert!(c.judge(&create("elsewhere/a.md", "free")).is_ok());
    }

    // r[verify vault.conventions.forbid-writes]
    #[test]
    fn forbid_writes_blocks_every_kind_of_write() {
        let c = contract_example();
        for kind in [
            WriteKind::Create,
            WriteKind::Overwrite,
            WriteKind::Move { from: p("a.md") },
            WriteKind::Copy { from: p("a.md") },
            WriteKind::Restore,
        ] {
            let intent = WriteIntent::new(p("archive/x.md"), kind, b"x", Prior::Absent);
            let blocked = c.judge(&intent).unwrap_err();
            assert_eq!(blocked.rule_index, 1);
            assert!(blocked.rule.starts_with("forbidWrites"));
        }
    }

    // r[verify vault.conventions.max-bytes]
    // r[verify vault.conventions.name-pattern]
    #[test]
    fn size_and_name_rules() {
        let c = contract_example();
        let big = "x".repeat(5_000_001);
        let blocked = c.judge(&create("big.md", &big)).unwrap_err();
        assert_eq!(blocked.rule_index, 2);
        assert!(blocked.rule.contains("maxBytes"));
        let blocked = c.judge(&create("bad#name.md", "x")).unwrap_err();
        assert!(blocked.rule.contains("namePattern"));
        // A file that is not a note is judged by forbidWrites alone (attachments.conventions).
        assert!(c.judge(&create("image.png", "x")).is_ok());
        assert!(c.judge(&create("ok name.md", "x")).is_ok());
        // A move is judged as new at its destination.
        let mv = WriteIntent::new(
            p("bad[1].md"),
            WriteKind::Move { from: p("ok.md") },
            b"x",
            Prior::Absent,
        );
        assert!(c.judge(&mv).is_err());
    }

    // r[verify vault.conventions.grandfathered]
    #[test]
    fn an_old_nonconforming_note_stays_editable_when_the_prior_is_known() {
        let c = contract_example();
        let old = b"- [ ] task\n";
        let new = b"- [x] task \xE2\x9C\x85 2026-11-01\n";
        let known = WriteIntent::new(
            p("projects/old.md"),
            WriteKind::Overwrite,
            new,
            Prior::Known(ContentFacts::of(old)),
        );
        assert!(c.judge(&known).is_ok());
        // Dropping a key from a note that complied is refused: it did not break the rule.
        let worse = WriteIntent::new(
            p("projects/old.md"),
            WriteKind::Overwrite,
            b"no keys",
            Prior::Known(ContentFacts::of(b"---\nstatus: a\n---\n")),
        );
        assert!(c.judge(&worse).is_err());
        // An oversized note stays editable; a note within the limit may not outgrow it.
        let huge = vec![b'x'; 5_000_010];
        let grow = WriteIntent::new(
            p("big.md"),
            WriteKind::Overwrite,
            &[huge.as_slice(), b"more"].concat(),
            Prior::Known(ContentFacts::of(&huge)),
        );
        assert!(c.judge(&grow).is_ok());
        let outgrow = WriteIntent::new(
            p("small.md"),
            WriteKind::Overwrite,
            &huge,
            Prior::Known(ContentFacts::of(b"small")),
        );
        assert!(c.judge(&outgrow).is_err());
        // A misnamed note stays editable in place, but a copy to a misnamed path is refused.
        let misnamed = WriteIntent::new(
            p("bad#name.md"),
            WriteKind::Overwrite,
            b"x",
            Prior::Known(ContentFacts::of(b"y")),
        );
        assert!(c.judge(&misnamed).is_ok());
    }

    // r[verify vault.conventions.unreadable-as-new]
    #[test]
    fn update_task_without_read_notes_or_over_one_mib_is_judged_as_new() {
        let c = contract_example();
        let old = b"- [ ] task\n".to_vec();
        let new = b"- [x] task\n";
        let judge = |prior: Prior| {
            c.judge(&WriteIntent::new(
                p("projects/old.md"),
                WriteKind::Overwrite,
                new,
                prior,
            ))
        };
        assert!(judge(update_task_prior(true, &old)).is_ok());
        let blocked = judge(update_task_prior(false, &old)).unwrap_err();
        assert_eq!(blocked.rule_index, 0);
        let mut large = old.clone();
        large.resize((1 << 20) + 1, b' ');
        assert_eq!(update_task_prior(true, &large), Prior::Unknown);
        assert!(judge(update_task_prior(true, &large)).is_err());
        // Exactly 1 MiB is still looked at.
        large.truncate(1 << 20);
        assert!(matches!(update_task_prior(true, &large), Prior::Known(_)));
    }

    // r[verify config.conventions]
    #[test]
    fn config_errors_name_the_key() {
        let err =
            toml::from_str::<ConventionConfig>("glob = \"a\"\nforbidwrites = true").unwrap_err();
        assert!(err.to_string().contains("forbidwrites"), "{err}");
        let err = Conventions::compile(&[ConventionConfig {
            glob: "**".into(),
            name_pattern: Some("(".into()),
            ..ConventionConfig::default()
        }])
        .unwrap_err();
        assert!(matches!(
            err,
            ConventionConfigError::NamePattern { index: 0, .. }
        ));
        let err = Conventions::compile(&[ConventionConfig {
            glob: "{a".into(),
            ..ConventionConfig::default()
        }])
        .unwrap_err();
        assert!(err.to_string().contains("conventions[0].glob"), "{err}");
    }
}
