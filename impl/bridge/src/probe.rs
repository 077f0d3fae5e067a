//! What of a vault's bridge is reachable (spec/bridge.md `bridge.probe.report`,
//! `bridge.probe.startup`): the Local REST API (and whether it takes the key), the
//! companion's version and capabilities, the pinned certificate.
//!
//! The probe only reads: `GET /` of the Local REST API, `GET /obsidian-tc/v1/probe` of the
//! companion (and, on first use of an `https://` url, the published certificate to pin).
//! It runs once at start-up on a thread of its own, logging to stderr, so `tools/list` never
//! waits for Obsidian, and on demand through the read-only tool `bridge_status`.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::client::{Bridge, COMPANION_PREFIX};
use crate::tls::cert_sha256;

/// The Local REST API as the probe found it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct RestApiStatus {
    /// Whether `GET /` answered.
    pub reachable: bool,
    /// Whether the plugin accepted the API key (`authenticated` in its answer).
    pub authenticated: bool,
    /// The plugin's own version (`versions.self`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Obsidian's version (`versions.obsidian`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub obsidian_version: Option<String>,
}

/// The companion as the probe found it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct CompanionStatus {
    /// Whether `GET /obsidian-tc/v1/probe` answered.
    pub reachable: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// What it can do (e.g. `quickadd`: QuickAdd is enabled and reachable).
    pub capabilities: Vec<String>,
}

/// The certificate an `https://` bridge trusts.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct CertificateStatus {
    pub pin_file: String,
    pub sha256: String,
}

/// `bridge_status`'s result.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ProbeReport {
    pub vault: String,
    /// Whether the vault has a `[vaults.bridge]` section.
    pub configured: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    pub rest_api: RestApiStatus,
    pub companion: CompanionStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub certificate: Option<CertificateStatus>,
    /// Whether `execute_command` is enabled here, and how many ids its allowlist holds.
    pub commands_enabled: bool,
    pub allowlisted_commands: usize,
    /// Each thing that is not as it should be, in a sentence that says what to do.
    pub problems: Vec<String>,
}

fn text(value: &Value, pointer: &str) -> Option<String> {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .map(str::to_owned)
}

// r[impl bridge.probe.report]
/// Probes `bridge` (blocking: run it off the async workers).
pub fn probe(
    vault: &str,
    bridge: Option<&Bridge>,
    commands_enabled: bool,
    allowlisted_commands: usize,
) -> ProbeReport {
    let mut report = ProbeReport {
        vault: vault.to_owned(),
        configured: bridge.is_some(),
        url: bridge.map(Bridge::url),
        rest_api: RestApiStatus::default(),
        companion: CompanionStatus::default(),
        certificate: None,
        commands_enabled,
        allowlisted_commands,
        problems: Vec::new(),
    };
    let Some(bridge) = bridge else {
        report.problems.push(format!(
            "vault {vault} has no [vaults.bridge] section: execute_command and trigger_quickadd \
             cannot reach Obsidian"
        ));
        return report;
    };
    let key = match bridge.key() {
        Ok(key) => Some(key),
        Err(error) => {
            report.problems.push(error.message);
            None
        }
    };
    match bridge.get(key.as_ref(), "/") {
        Ok(response) if response.status == 200 => {
            let answer: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
            report.rest_api.reachable = true;
            report.rest_api.authenticated = answer
                .get("authenticated")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            report.rest_api.version = text(&answer, "/versions/self");
            report.rest_api.obsidian_version = text(&answer, "/versions/obsidian");
            if key.is_some() && !report.rest_api.authenticated {
                report.problems.push(
                    "the Local REST API does not accept the API key in apiKeyFile".to_owned(),
                );
            }
        }
        Ok(response) => report.problems.push(format!(
            "GET / of the Local REST API answered status {}",
            response.status
        )),
        Err(error) => report.problems.push(error.message),
    }
    if bridge.uses_tls()
        && let Ok(Some(der)) = bridge.pins().load()
    {
        report.certificate = Some(CertificateStatus {
            pin_file: bridge.pins().path().display().to_string(),
            sha256: cert_sha256(&der),
        });
    }
    if report.rest_api.reachable && report.rest_api.authenticated {
        match bridge.get(key.as_ref(), &format!("{COMPANION_PREFIX}/probe")) {
            Ok(response) if response.status == 200 => {
                let answer: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
                report.companion.reachable = true;
                report.companion.version = text(&answer, "/version");
                report.companion.capabilities = answer
                    .get("capabilities")
                    .and_then(Value::as_array)
                    .map(|caps| {
                        caps.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                if !report.companion.capabilities.iter().any(|c| c == "quickadd") {
                    report.problems.push(
                        "the companion answers but QuickAdd is not enabled: trigger_quickadd will be refused"
                            .to_owned(),
                    );
                }
            }
            Ok(response) => report.problems.push(format!(
                "the obsidian-tc companion plugin is not reachable (GET {COMPANION_PREFIX}/probe answered \
                 status {}): install and enable it for trigger_quickadd",
                response.status
            )),
            Err(error) => report.problems.push(error.message),
        }
    }
    report
}

/// One line for stderr.
pub fn log_line(report: &ProbeReport) -> String {
    let Some(url) = &report.url else {
        return format!("bridge: vault {}: not configured", report.vault);
    };
    let companion = match (&report.companion.reachable, &report.companion.version) {
        (true, Some(version)) => format!(
            "companion {version} [{}]",
            report.companion.capabilities.join(", ")
        ),
        (true, None) => "companion (no version)".to_owned(),
        (false, _) => "no companion".to_owned(),
    };
    let api = if report.rest_api.reachable {
        format!(
            "Local REST API {}{}",
            report.rest_api.version.as_deref().unwrap_or("?"),
            if report.rest_api.authenticated {
                ""
            } else {
                " (key not accepted)"
            }
        )
    } else {
        "Local REST API unreachable".to_owned()
    };
    let mut line = format!(
        "bridge: vault {} at {url}: {api}, {companion}",
        report.vault
    );
    for problem in &report.problems {
        line.push_str("; ");
        line.push_str(problem);
    }
    line
}

// r[impl bridge.probe.startup]
/// Probes every configured bridge once on a background thread and logs each result to
/// stderr; returns at once.
pub fn spawn_startup_probe(bridges: Vec<(Arc<Bridge>, bool, usize)>) {
    if bridges.is_empty() {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("bridge-probe".to_owned())
        .spawn(move || {
            for (bridge, enabled, allowlisted) in bridges {
                let report = probe(bridge.vault(), Some(&bridge), enabled, allowlisted);
                if report.problems.is_empty() {
                    tracing::info!("{}", log_line(&report));
                } else {
                    tracing::warn!("{}", log_line(&report));
                }
            }
        });
    if let Err(error) = spawned {
        tracing::warn!("bridge: the start-up probe could not start: {error}");
    }
}
