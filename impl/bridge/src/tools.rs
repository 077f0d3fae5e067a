//! The bridge's tools (spec/tools.md; spec/bridge.md `bridge.command.*`, `bridge.quickadd.*`,
//! `bridge.status.*`; spec/drift.md `drift.bind.none-tools`, `drift.residual.opaque-effects`).
//!
//! `execute_command` and `trigger_quickadd` are always gated and bound to
//! `ConfirmationTargets::None`: their state is the empty fingerprint, so the approval binds
//! on the args_hash alone. Everything that can be judged without sending anything is judged
//! in the precheck, before the gate, so it never raises a confirmation or spends a token:
//! `commands.enabled`, the exact allowlist, a configured bridge, a usable key file. The
//! handler then sends the one request; whatever fails from there keeps the token spent.

mod templater;

pub use templater::{ExecuteTemplate, ExecuteTemplateArgs, ExecuteTemplateOutput};

use std::collections::BTreeMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tc_gate::ConfirmationTargets;
use tc_tools::summary::MAX_NAMED;
use tc_tools::{
    Annotations, ErrorCode, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx,
    ToolError, ToolSpec,
};

use crate::client::{Bridge, RESIDUAL};
use crate::config::CommandsConfig;
use crate::key::ApiKey;
use crate::probe::{ProbeReport, probe};

/// One vault's bridge and command settings.
#[derive(Debug, Clone, Default)]
pub struct VaultBridge {
    pub bridge: Option<Arc<Bridge>>,
    pub commands: CommandsConfig,
}

/// Every served vault's bridge, by vault id.
pub type Bridges = Arc<BTreeMap<String, VaultBridge>>;

/// What the precheck hands the handler: the bridge and the key it checked.
#[derive(Debug)]
pub struct Checked {
    bridge: Arc<Bridge>,
    key: ApiKey,
}

/// Annotations of a tool that acts inside Obsidian: anything may change, nothing is
/// idempotent, and the world it touches is not the vault folder alone.
const ACTS_IN_OBSIDIAN: Annotations = Annotations {
    read_only_hint: false,
    destructive_hint: true,
    idempotent_hint: false,
    open_world_hint: true,
};

fn settings<'a>(bridges: &'a Bridges, cx: &ToolCx<'_>) -> Option<&'a VaultBridge> {
    bridges.get(cx.vault().id())
}

/// The configured bridge and its key, or `plugin_unreachable` before the gate.
fn checked(bridges: &Bridges, cx: &ToolCx<'_>, tool: &str) -> Result<Checked, ToolError> {
    let vault = cx.vault().id();
    let bridge = settings(bridges, cx)
        .and_then(|s| s.bridge.clone())
        .ok_or_else(|| {
            ToolError::new(
                ErrorCode::PluginUnreachable,
                format!(
                    "vault {vault} has no [vaults.bridge] section, so {tool} cannot reach \
                     Obsidian; nothing was sent and no confirmation was asked for. Configure \
                     url and apiKeyFile of the Local REST API plugin there."
                ),
            )
            .with_details(json!({"vault": vault, "reason": "not_configured", "sent": false}))
        })?;
    let key = bridge.key()?;
    Ok(Checked { bridge, key })
}

/// The state of a `"none"` tool: the empty fingerprint.
fn no_state() -> TargetState {
    TargetState::default()
}

/// `execute_command`'s arguments.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecuteCommandArgs {
    /// The Obsidian command id (as in the command palette's list, e.g. `editor:toggle-bold`);
    /// it must be on the vault's `[vaults.commands] allowlist` exactly.
    pub command_id: String,
}

/// `execute_command`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ExecuteCommandOutput {
    pub vault: String,
    pub command_id: String,
    /// True: the Local REST API answered that it ran the command.
    pub executed: bool,
}

/// `execute_command`: runs an allowlisted Obsidian command through the Local REST API.
#[derive(Debug, Clone)]
pub struct ExecuteCommand {
    pub bridges: Bridges,
}

impl Tool for ExecuteCommand {
    type Args = ExecuteCommandArgs;
    type Output = ExecuteCommandOutput;
    type Plan = Checked;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "execute_command",
            description: "Run an Obsidian command (command palette id) in the running Obsidian, \
                through the Local REST API plugin; only with [vaults.commands] enabled and the \
                id allowlisted. Always asks the human (bound to the arguments: its effect is \
                inside Obsidian). Never retried: operation_timeout means it may have run.",
            annotations: ACTS_IN_OBSIDIAN,
            scopes: &["execute:command"],
            changes_notes: false,
            gating: Gating::bound_to(ConfirmationTargets::None),
        }
    }

    // r[impl bridge.command.disabled]
    // r[impl bridge.command.allowlist]
    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &ExecuteCommandArgs,
    ) -> Result<Precheck<Self::Plan>, ToolError> {
        let vault = cx.vault().id();
        let commands = settings(&self.bridges, cx)
            .map(|s| s.commands.clone())
            .unwrap_or_default();
        if !commands.enabled {
            return Err(ToolError::new(
                ErrorCode::ExecuteCommandDisabled,
                format!(
                    "execute_command is disabled for vault {vault}; nothing was sent and no \
                     confirmation was asked for. The operator enables it with [vaults.commands] \
                     enabled = true and lists the exact command ids in allowlist."
                ),
            )
            .with_details(json!({"vault": vault, "command_id": args.command_id})));
        }
        if !commands.allowlist.iter().any(|id| id == &args.command_id) {
            let shown: Vec<&String> = commands.allowlist.iter().take(MAX_NAMED).collect();
            return Err(ToolError::new(
                ErrorCode::CommandNotAllowlisted,
                format!(
                    "the command {:?} is not on vault {vault}'s [vaults.commands] allowlist \
                     (ids match exactly); nothing was sent and no confirmation was asked for",
                    args.command_id
                ),
            )
            .with_details(json!({
                "vault": vault,
                "command_id": args.command_id,
                "allowlist": shown,
                "allowlist_size": commands.allowlist.len(),
            })));
        }
        let checked = checked(&self.bridges, cx, "execute_command")?;
        Ok(Precheck {
            needs_confirmation: true,
            acl: Vec::new(),
            plan: Arc::new(checked),
        })
    }

    // r[impl drift.bind.none-tools]
    fn state(
        &self,
        _: &ToolCx<'_>,
        _: &ExecuteCommandArgs,
        _: &Precheck<Self::Plan>,
    ) -> Result<TargetState, ToolError> {
        Ok(no_state())
    }

    // r[impl bridge.summary]
    fn summary(
        &self,
        cx: &ToolCx<'_>,
        args: &ExecuteCommandArgs,
        precheck: &Precheck<Self::Plan>,
        _: &TargetState,
    ) -> Summary {
        let url = precheck.plan.bridge.url();
        Summary::new(format!(
            "run the Obsidian command {} in vault {}",
            args.command_id,
            cx.vault().id()
        ))
        .target(format!("command {}", args.command_id))
        .detail(format!("through the Local REST API at {url}"))
        .detail(format!("note: {RESIDUAL}"))
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &ExecuteCommandArgs,
        precheck: &Precheck<Self::Plan>,
        _: &TargetState,
    ) -> Result<ExecuteCommandOutput, HandlerFailure> {
        let checked = &precheck.plan;
        checked
            .bridge
            .execute_command(&checked.key, &args.command_id)?;
        Ok(ExecuteCommandOutput {
            vault: cx.vault().id().to_owned(),
            command_id: args.command_id.clone(),
            executed: true,
        })
    }
}

/// `trigger_quickadd`'s arguments.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TriggerQuickaddArgs {
    /// The name of the QuickAdd choice to run, exactly as QuickAdd shows it.
    pub action_name: String,
    /// The choice's variables (QuickAdd's `{{VALUE:name}}` fields), by name.
    #[serde(default)]
    pub args: Map<String, Value>,
}

/// `trigger_quickadd`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TriggerQuickaddOutput {
    pub vault: String,
    pub action_name: String,
    /// True: the companion answered that QuickAdd ran the choice.
    pub triggered: bool,
    /// What the companion returned for the run (null when QuickAdd returns nothing).
    pub result: Value,
}

/// `trigger_quickadd`: runs a QuickAdd choice through the companion plugin's route.
#[derive(Debug, Clone)]
pub struct TriggerQuickadd {
    pub bridges: Bridges,
}

impl Tool for TriggerQuickadd {
    type Args = TriggerQuickaddArgs;
    type Output = TriggerQuickaddOutput;
    type Plan = Checked;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "trigger_quickadd",
            description: "Run a QuickAdd choice by name with its variables in the running \
                Obsidian, through the obsidian-tc companion plugin. Always asks the human (bound \
                to the arguments: its effect is inside Obsidian). Never retried: \
                operation_timeout means it may have run.",
            annotations: ACTS_IN_OBSIDIAN,
            scopes: &["execute:quickadd"],
            changes_notes: false,
            gating: Gating::bound_to(ConfirmationTargets::None),
        }
    }

    fn check(&self, args: &TriggerQuickaddArgs) -> Result<(), ToolError> {
        if args.action_name.trim().is_empty() {
            return Err(ToolError::validation(
                "/action_name",
                "must name a QuickAdd choice",
            ));
        }
        Ok(())
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        _: &TriggerQuickaddArgs,
    ) -> Result<Precheck<Self::Plan>, ToolError> {
        let checked = checked(&self.bridges, cx, "trigger_quickadd")?;
        Ok(Precheck {
            needs_confirmation: true,
            acl: Vec::new(),
            plan: Arc::new(checked),
        })
    }

    fn state(
        &self,
        _: &ToolCx<'_>,
        _: &TriggerQuickaddArgs,
        _: &Precheck<Self::Plan>,
    ) -> Result<TargetState, ToolError> {
        Ok(no_state())
    }

    fn summary(
        &self,
        cx: &ToolCx<'_>,
        args: &TriggerQuickaddArgs,
        precheck: &Precheck<Self::Plan>,
        _: &TargetState,
    ) -> Summary {
        let url = precheck.plan.bridge.url();
        let variables: Vec<String> = args
            .args
            .iter()
            .map(|(name, value)| format!("{name} = {value}"))
            .collect();
        let summary = Summary::new(format!(
            "run the QuickAdd choice {} in vault {}",
            args.action_name,
            cx.vault().id()
        ))
        .target(format!("QuickAdd choice {}", args.action_name))
        .detail(format!("through the obsidian-tc companion at {url}"));
        let summary = if variables.is_empty() {
            summary.detail("with no variables")
        } else {
            summary
                .detail(format!("with {} variable(s):", variables.len()))
                .details_named(variables, |n| format!("[… {n} more variables]"))
        };
        summary.detail(format!("note: {RESIDUAL}"))
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &TriggerQuickaddArgs,
        precheck: &Precheck<Self::Plan>,
        _: &TargetState,
    ) -> Result<TriggerQuickaddOutput, HandlerFailure> {
        let checked = &precheck.plan;
        let result =
            checked
                .bridge
                .trigger_quickadd(&checked.key, &args.action_name, &args.args)?;
        Ok(TriggerQuickaddOutput {
            vault: cx.vault().id().to_owned(),
            action_name: args.action_name.clone(),
            triggered: true,
            result,
        })
    }
}

/// `bridge_status`'s arguments (none but the common `vault`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BridgeStatusArgs {}

/// `bridge_status`: the probe, on demand.
#[derive(Debug, Clone)]
pub struct BridgeStatus {
    pub bridges: Bridges,
}

impl Tool for BridgeStatus {
    type Args = BridgeStatusArgs;
    type Output = ProbeReport;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "bridge_status",
            description: "Report what of the vault's Obsidian bridge is reachable: the Local \
                REST API (and whether it accepts the key), the obsidian-tc companion's version \
                and capabilities, the pinned certificate, and whether execute_command is \
                enabled. Only reads; never runs a command.",
            annotations: Annotations {
                open_world_hint: true,
                ..Annotations::READS
            },
            scopes: &["read:bridge"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(&self, _: &ToolCx<'_>, _: &BridgeStatusArgs) -> Result<Precheck, ToolError> {
        Ok(Precheck::free())
    }

    // r[impl bridge.status.tool]
    fn run(
        &self,
        cx: &ToolCx<'_>,
        _: &BridgeStatusArgs,
        _: &Precheck,
        _: &TargetState,
    ) -> Result<ProbeReport, HandlerFailure> {
        let vault = cx.vault().id();
        let settings = settings(&self.bridges, cx).cloned().unwrap_or_default();
        Ok(probe(
            vault,
            settings.bridge.as_deref(),
            settings.commands.enabled,
            settings.commands.allowlist.len(),
        ))
    }
}
