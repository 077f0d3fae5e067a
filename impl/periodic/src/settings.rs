//! The vault's own settings for periodic notes and templates (spec/periodic.md `## Settings`,
//! `templates.settings`): core Daily notes' `.obsidian/daily-notes.json`, the Periodic Notes
//! plugin's `data.json` in both of its shapes, the core Templates plugin's
//! `.obsidian/templates.json`, and whether those plugins are on. The files are read as they
//! are on disk in each call, so Obsidian need not run and an edit there counts at once.

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tc_tools::{ErrorCode, ToolError};

use crate::moment::Format;

/// The largest settings file read; Obsidian's are a few hundred bytes.
const MAX_SETTINGS_BYTES: u64 = 1 << 20;

pub const DAILY_NOTES: &str = ".obsidian/daily-notes.json";
pub const PERIODIC_NOTES: &str = ".obsidian/plugins/periodic-notes/data.json";
pub const CORE_PLUGINS: &str = ".obsidian/core-plugins.json";
pub const COMMUNITY_PLUGINS: &str = ".obsidian/community-plugins.json";
pub const TEMPLATES: &str = ".obsidian/templates.json";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Period {
    Daily,
    Weekly,
    Monthly,
    Quarterly,
    Yearly,
}

impl Period {
    pub fn name(self) -> &'static str {
        match self {
            Period::Daily => "daily",
            Period::Weekly => "weekly",
            Period::Monthly => "monthly",
            Period::Quarterly => "quarterly",
            Period::Yearly => "yearly",
        }
    }

    /// The key of the Periodic Notes plugin's calendar-set shape.
    fn granularity(self) -> &'static str {
        match self {
            Period::Daily => "day",
            Period::Weekly => "week",
            Period::Monthly => "month",
            Period::Quarterly => "quarter",
            Period::Yearly => "year",
        }
    }

    /// The Periodic Notes plugin's default format.
    fn default_format(self) -> &'static str {
        match self {
            Period::Daily => "YYYY-MM-DD",
            Period::Weekly => "gggg-[W]ww",
            Period::Monthly => "YYYY-MM",
            Period::Quarterly => "YYYY-[Q]Q",
            Period::Yearly => "YYYY",
        }
    }
}

/// Where one period's notes live and how they are named.
#[derive(Debug, Clone)]
pub struct PeriodSettings {
    pub period: Period,
    /// The folder, normalized (`""` is the vault root).
    pub folder: String,
    pub format: Format,
    pub format_text: String,
    /// The configured template, as written (a vault path with or without `.md`).
    pub template: Option<String>,
    /// The settings file the period comes from (`None`: Obsidian's defaults).
    pub source: Option<&'static str>,
}

/// The core Templates plugin's settings.
#[derive(Debug, Clone)]
pub struct TemplateSettings {
    /// The templates folder, normalized; `None` when none is set.
    pub folder: Option<String>,
    pub date_format: Format,
    pub time_format: Format,
}

/// Obsidian's `normalizePath`: `/` and `\` runs become one `/`, none at either end, and
/// non-breaking spaces plain ones.
pub fn normalize_path(path: &str) -> String {
    path.replace(['\u{a0}', '\u{202f}'], " ")
        .split(['/', '\\'])
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("/")
}

fn not_configured(message: String, file: &str) -> ToolError {
    ToolError::new(ErrorCode::PeriodicNotConfigured, message)
        .with_details(json!({ "settings_file": file }))
}

/// The JSON object in the vault's settings file `rel`, `None` when there is none.
fn read_json(root: &Path, rel: &str) -> Result<Option<Value>, String> {
    let path = root.join(rel);
    let meta = match std::fs::metadata(&path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{rel} cannot be read: {e}")),
    };
    if !meta.is_file() || meta.len() > MAX_SETTINGS_BYTES {
        return Err(format!("{rel} is not a settings file of at most 1 MiB"));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{rel} cannot be read: {e}"))?;
    match serde_json::from_str::<Value>(text.trim_start_matches('\u{feff}')) {
        Ok(value @ Value::Object(_)) => Ok(Some(value)),
        // Obsidian writes an empty file for settings it has never saved.
        Ok(Value::Null) => Ok(None),
        _ if text.trim().is_empty() => Ok(None),
        _ => Err(format!("{rel} is not a JSON object")),
    }
}

fn text_of<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value
        .get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

// r[impl periodic.settings.daily]
/// Whether the core Daily notes plugin is on (on unless core-plugins.json turns it off).
fn core_daily_on(root: &Path) -> Result<bool, String> {
    Ok(match read_json_any(root, CORE_PLUGINS)? {
        Some(Value::Array(ids)) => ids.iter().any(|id| id == "daily-notes"),
        Some(Value::Object(map)) => map.get("daily-notes") != Some(&Value::Bool(false)),
        _ => true,
    })
}

// r[impl periodic.settings.plugin-off]
/// Whether the Periodic Notes plugin is on (listed in community-plugins.json, when it exists).
fn plugin_on(root: &Path) -> Result<bool, String> {
    Ok(match read_json_any(root, COMMUNITY_PLUGINS)? {
        Some(Value::Array(ids)) => ids.iter().any(|id| id == "periodic-notes"),
        _ => true,
    })
}

/// Like [`read_json`] for the plugin lists, which are JSON arrays.
fn read_json_any(root: &Path, rel: &str) -> Result<Option<Value>, String> {
    let path = root.join(rel);
    match std::fs::read_to_string(&path) {
        Ok(text) if text.trim().is_empty() => Ok(None),
        Ok(text) => serde_json::from_str(text.trim_start_matches('\u{feff}'))
            .map(Some)
            .map_err(|_| format!("{rel} is not JSON")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{rel} cannot be read: {e}")),
    }
}

// r[impl periodic.settings.plugin]
/// The Periodic Notes plugin's entry for `period`, in either shape, when it enables it.
fn plugin_entry(data: &Value, period: Period) -> Option<&Value> {
    let flat = ["daily", "weekly", "monthly", "quarterly", "yearly"]
        .iter()
        .any(|k| data.get(k).is_some());
    let entry = if flat {
        data.get(period.name())?
    } else {
        let sets = data.get("calendarSets")?.as_array()?;
        let active = data.get("activeCalendarSet").and_then(Value::as_str);
        let set = match active {
            Some(id) => sets
                .iter()
                .find(|s| s.get("id").and_then(Value::as_str) == Some(id))?,
            None => sets.first()?,
        };
        set.get(period.granularity())?
    };
    (entry.get("enabled") == Some(&Value::Bool(true))).then_some(entry)
}

fn parse_format(text: &str, file: &'static str) -> Result<Format, ToolError> {
    Format::new(text)
        .map_err(|e| not_configured(format!("the format {text:?} in {file}: {e}"), file))
}

// r[impl periodic.settings.wins]
// r[impl periodic.settings.not-configured]
// r[impl periodic.settings.broken]
/// The settings of `period` in the vault at `root`, or `periodic_not_configured`.
pub fn period_settings(root: &Path, period: Period) -> Result<PeriodSettings, ToolError> {
    let broken = |message: String, file: &str| not_configured(message, file);
    let plugin = if plugin_on(root).map_err(|m| broken(m, COMMUNITY_PLUGINS))? {
        read_json(root, PERIODIC_NOTES).map_err(|m| broken(m, PERIODIC_NOTES))?
    } else {
        None
    };
    if let Some(entry) = plugin.as_ref().and_then(|data| plugin_entry(data, period)) {
        let format_text = text_of(entry, "format").unwrap_or(period.default_format());
        return Ok(PeriodSettings {
            period,
            folder: normalize_path(text_of(entry, "folder").unwrap_or("")),
            format: parse_format(format_text, PERIODIC_NOTES)?,
            format_text: format_text.to_owned(),
            template: text_of(entry, "templatePath")
                .or_else(|| text_of(entry, "template"))
                .map(str::to_owned),
            source: Some(PERIODIC_NOTES),
        });
    }
    if period != Period::Daily {
        return Err(not_configured(
            format!(
                "{} notes are not enabled in this vault: the Periodic Notes plugin's settings ({PERIODIC_NOTES}) do not turn them on",
                period.name()
            ),
            PERIODIC_NOTES,
        ));
    }
    if !core_daily_on(root).map_err(|m| broken(m, CORE_PLUGINS))? {
        return Err(not_configured(
            format!(
                "daily notes are off in this vault: the core Daily notes plugin is disabled in {CORE_PLUGINS}"
            ),
            CORE_PLUGINS,
        ));
    }
    let core = read_json(root, DAILY_NOTES).map_err(|m| broken(m, DAILY_NOTES))?;
    let core = core.unwrap_or(Value::Null);
    let format_text = text_of(&core, "format").unwrap_or(period.default_format());
    Ok(PeriodSettings {
        period,
        folder: normalize_path(text_of(&core, "folder").unwrap_or("")),
        format: parse_format(format_text, DAILY_NOTES)?,
        format_text: format_text.to_owned(),
        template: text_of(&core, "template").map(str::to_owned),
        source: core.is_object().then_some(DAILY_NOTES),
    })
}

// r[impl templates.settings]
/// The core Templates plugin's settings in the vault at `root`.
pub fn template_settings(root: &Path) -> Result<TemplateSettings, ToolError> {
    let data = read_json(root, TEMPLATES)
        .map_err(|m| {
            ToolError::new(ErrorCode::InvalidInput, m)
                .with_details(json!({"reason": "settings", "settings_file": TEMPLATES}))
        })?
        .unwrap_or(Value::Null);
    let format = |key: &str, default: &str| {
        let text = text_of(&data, key).unwrap_or(default);
        Format::new(text).map_err(|e| {
            ToolError::new(
                ErrorCode::InvalidInput,
                format!("{key} {text:?} in {TEMPLATES}: {e}"),
            )
            .with_details(json!({"reason": "settings", "settings_file": TEMPLATES}))
        })
    };
    Ok(TemplateSettings {
        folder: text_of(&data, "folder")
            .map(normalize_path)
            .filter(|f| !f.is_empty()),
        date_format: format("dateFormat", "YYYY-MM-DD")?,
        time_format: format("timeFormat", "HH:mm")?,
    })
}
