//! The lean facade: `find_capability`, `describe_capability` and `call_capability`
//! (spec/facade.md; spec/config.md `toolFacade.mode`; spec/tools.md; spec/trips.md route 5).
//!
//! The facade changes what `tools/list` advertises, never what a call may do. The two
//! look-ups are answered here from the registry's definitions; `call_capability` is turned
//! back into the named tool's own call ([`Dispatch::Inner`]) before the dispatch pipeline
//! sees it, so scopes, gates, `args_hash`, drift binding, round trips and the governor are
//! the named tool's by construction. What the facade adds afterwards is words: a
//! confirmation refusal says to resend through `call_capability` ([`resend_through_facade`]).

mod rank;

use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::{Map, Value, json};
use tc_tools::{CallerContext, ErrorCode, Registry, ToolDef, ToolError, ToolOutput};

/// `find_capability`.
pub const FIND: &str = "find_capability";
/// `describe_capability`.
pub const DESCRIBE: &str = "describe_capability";
/// `call_capability`.
pub const CALL: &str = "call_capability";

const DEFAULT_LIMIT: u64 = 10;
const MAX_LIMIT: u64 = 50;

/// `toolFacade.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FacadeMode {
    /// Every tool is advertised; the facade's three are not offered.
    #[default]
    Flat,
    /// Only the facade's three tools are advertised.
    Lean,
}

/// `[toolFacade]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ToolFacadeConfig {
    #[serde(default)]
    pub mode: FacadeMode,
}

/// How a `tools/call` is served, decided before the pipeline.
#[derive(Debug)]
pub(crate) enum Dispatch {
    /// A registry tool called by its own name.
    Direct,
    /// A facade look-up, answered here.
    Answer(Result<ToolOutput, ToolError>),
    /// `call_capability`: the named tool's call, with the token (if any) put where the
    /// pipeline takes it from.
    Inner { tool: String, arguments: Value },
}

/// The facade of one server: its mode, and the BM25 index over the registry's tools.
#[derive(Debug)]
pub struct Facade {
    mode: FacadeMode,
    index: rank::ToolIndex,
}

impl Facade {
    pub fn new(mode: FacadeMode, registry: &Registry) -> Self {
        Facade {
            mode,
            index: rank::ToolIndex::over(registry.iter().map(|def| def.as_ref())),
        }
    }

    pub fn mode(&self) -> FacadeMode {
        self.mode
    }

    // r[impl facade.mode.flat]
    // r[impl facade.mode.lean]
    /// The `tools/list` entries of this mode.
    pub fn list(&self, registry: &Registry) -> Vec<Value> {
        match self.mode {
            FacadeMode::Flat => registry.list(),
            FacadeMode::Lean => vec![find_entry(), describe_entry(), call_entry()],
        }
    }

    /// Whether `tool` is one of the facade's own tools, offered in this mode.
    pub fn offers(&self, tool: &str) -> bool {
        self.mode == FacadeMode::Lean && matches!(tool, FIND | DESCRIBE | CALL)
    }

    /// How to serve a call of `tool` (known to be offered, or a registry tool).
    pub(crate) fn dispatch(
        &self,
        registry: &Registry,
        caller: &CallerContext,
        tool: &str,
        arguments: &Value,
    ) -> Dispatch {
        if !self.offers(tool) {
            return Dispatch::Direct;
        }
        match tool {
            FIND => Dispatch::Answer(self.find(registry, caller, arguments)),
            DESCRIBE => Dispatch::Answer(describe(registry, caller, arguments)),
            _ => match inner_call(registry, arguments) {
                Ok((tool, arguments)) => Dispatch::Inner { tool, arguments },
                Err(error) => Dispatch::Answer(Err(error)),
            },
        }
    }

    // r[impl facade.find.bm25]
    fn find(
        &self,
        registry: &Registry,
        caller: &CallerContext,
        arguments: &Value,
    ) -> Result<ToolOutput, ToolError> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct FindArgs {
            query: String,
            #[serde(default)]
            limit: Option<u64>,
        }
        let args: FindArgs = parse_args(arguments)?;
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(ToolError::validation(
                "/limit",
                format!("must be between 1 and {MAX_LIMIT}"),
            ));
        }
        let visible: BTreeSet<&str> = registry
            .iter()
            .filter(|def| visible_to(def, caller))
            .map(|def| def.name.as_str())
            .collect();
        let ranked = self.index.rank(&args.query, &visible);
        let total = ranked.len();
        let capabilities: Vec<Value> = ranked
            .into_iter()
            .take(usize::try_from(limit).unwrap_or(usize::MAX))
            .filter_map(|(name, score)| {
                let def = registry.get(name)?;
                Some(json!({
                    "name": def.name,
                    "description": def.description,
                    "score": (score * 1000.0).round() / 1000.0,
                    "changes_vault": !def.annotations.read_only_hint,
                    "may_need_confirmation": def.gated,
                }))
            })
            .collect();
        Ok(ToolOutput::Value(json!({
            "query": args.query,
            "capabilities": capabilities,
            "matched": total,
        })))
    }
}

// r[impl facade.describe.schema]
fn describe(
    registry: &Registry,
    caller: &CallerContext,
    arguments: &Value,
) -> Result<ToolOutput, ToolError> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct DescribeArgs {
        name: String,
    }
    let args: DescribeArgs = parse_args(arguments)?;
    let def = registry
        .get(&args.name)
        .filter(|def| visible_to(def, caller))
        .ok_or_else(|| not_found(&args.name))?;
    Ok(ToolOutput::Value(def.list_entry()))
}

// r[impl facade.call.same-pipeline]
// r[impl facade.call.token-beside]
/// The named tool and its arguments, with the token moved from beside them into the
/// arguments, where the pipeline takes it out again before hashing.
fn inner_call(registry: &Registry, arguments: &Value) -> Result<(String, Value), ToolError> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct CallArgs {
        name: String,
        #[serde(default)]
        args: Option<Map<String, Value>>,
        #[serde(default)]
        elicit_token: Option<String>,
    }
    let call: CallArgs = parse_args(arguments)?;
    if registry.get(&call.name).is_none() {
        return Err(not_found(&call.name));
    }
    let mut args = call.args.unwrap_or_default();
    if args.contains_key("elicit_token") {
        return Err(ToolError::validation(
            "/args/elicit_token",
            "the token goes next to name and args (call_capability's own elicit_token), not inside args",
        ));
    }
    if let Some(token) = call.elicit_token {
        args.insert("elicit_token".to_owned(), Value::String(token));
    }
    Ok((call.name, Value::Object(args)))
}

// r[impl facade.call.resend]
/// A confirmation refusal answered through the facade: the same refusal, told to come back
/// through `call_capability`.
pub(crate) fn resend_through_facade(mut error: ToolError, tool: &str) -> ToolError {
    let resend = match error.code {
        ErrorCode::ElicitRequired | ErrorCode::ApprovalNotObtained => format!(
            " You called {tool} through the lean facade: send call_capability again with name \
             \"{tool}\", the same args, and elicit_token set to the token next to name and args \
             (not inside args)."
        ),
        ErrorCode::ReplayDrift => format!(
            " You called {tool} through the lean facade: send call_capability again with name \
             \"{tool}\" and the same args, without elicit_token."
        ),
        _ => return error,
    };
    error.message.push_str(&resend);
    if let Some(recovery) = error.recovery.as_mut() {
        recovery.instruction = match error.code {
            ErrorCode::ReplayDrift => format!(
                "send call_capability again with name \"{tool}\" and the same args, without elicit_token; it asks for a fresh confirmation"
            ),
            _ => format!(
                "ask the human to approve this exact call by running the command, then send call_capability again with name \"{tool}\", the same args, and elicit_token next to them"
            ),
        };
    }
    error.detail("via", json!(CALL))
}

fn visible_to(def: &ToolDef, caller: &CallerContext) -> bool {
    def.scopes.iter().all(|scope| caller.scopes.has(scope))
}

// r[impl facade.not-found]
fn not_found(name: &str) -> ToolError {
    ToolError::new(
        ErrorCode::CapabilityNotFound,
        format!(
            "no capability named {name:?} is available to you; call find_capability with a few \
             words of what you want to do to get the right name"
        ),
    )
    .with_details(json!({"name": name}))
    .with_recovery("call find_capability to find the capability's name", None)
}

fn parse_args<T: serde::de::DeserializeOwned>(arguments: &Value) -> Result<T, ToolError> {
    serde_json::from_value(arguments.clone()).map_err(|e| ToolError::validation("", e.to_string()))
}

fn annotations(read_only: bool, destructive: bool, idempotent: bool) -> Value {
    json!({
        "readOnlyHint": read_only,
        "destructiveHint": destructive,
        "idempotentHint": idempotent,
        "openWorldHint": false,
    })
}

fn find_entry() -> Value {
    json!({
        "name": FIND,
        "description": "Find the capability (tool) for what you want to do: BM25 over the names and descriptions of the tools you may use, best first. Then describe_capability for its arguments and call_capability to run it.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "a few words of what you want to do"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT}
            },
            "required": ["query"],
            "additionalProperties": false
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "matched": {"type": "integer", "minimum": 0},
                "capabilities": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "description": {"type": "string"},
                            "score": {"type": "number"},
                            "changes_vault": {"type": "boolean"},
                            "may_need_confirmation": {"type": "boolean"}
                        },
                        "required": ["name", "description", "score", "changes_vault", "may_need_confirmation"]
                    }
                }
            },
            "required": ["query", "matched", "capabilities"]
        },
        "annotations": annotations(true, false, true),
    })
}

fn describe_entry() -> Value {
    json!({
        "name": DESCRIBE,
        "description": "Describe a capability found with find_capability: its description, input schema (the args of call_capability), output schema and annotations.",
        "inputSchema": {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
            "additionalProperties": false
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "description": {"type": "string"},
                "inputSchema": {"type": "object"},
                "outputSchema": {"type": "object"},
                "annotations": {"type": "object"}
            },
            "required": ["name", "description", "inputSchema", "outputSchema", "annotations"]
        },
        "annotations": annotations(true, false, true),
    })
}

fn call_entry() -> Value {
    json!({
        "name": CALL,
        "description": "Run a capability by name with its args (as describe_capability shows them). Its confirmation rules are that capability's own: when a call is refused with elicit_required, ask the human first and send call_capability again with elicit_token next to name and args. The result is the capability's own result.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "args": {"type": "object", "default": {}},
                "elicit_token": {"type": "string", "description": "the token printed by obsidian-tc elicit for this exact call"}
            },
            "required": ["name"],
            "additionalProperties": false
        },
        "outputSchema": {"type": "object"},
        // It reaches every tool, the destructive ones among them.
        "annotations": annotations(false, true, false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notes_registry() -> Registry {
        let mut registry = Registry::new();
        tc_notes::register(&mut registry).unwrap();
        registry
    }

    fn reader() -> CallerContext {
        CallerContext {
            id: "reader".to_owned(),
            scopes: tc_vault::acl::Scopes::granted(["read:notes"]),
            only_vault: None,
        }
    }

    // r[verify facade.find.bm25]
    // r[verify facade.not-found]
    #[test]
    fn a_caller_finds_and_describes_only_the_tools_its_scopes_reach() {
        let registry = notes_registry();
        let facade = Facade::new(FacadeMode::Lean, &registry);
        let found = match facade.dispatch(&registry, &reader(), FIND, &json!({"query": "note"})) {
            Dispatch::Answer(Ok(ToolOutput::Value(found))) => found,
            other => panic!("{other:?}"),
        };
        let names: Vec<&str> = found["capabilities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"read_notes"), "{names:?}");
        assert!(!names.contains(&"delete_note"), "{names:?}");
        let hidden = facade.dispatch(
            &registry,
            &reader(),
            DESCRIBE,
            &json!({"name": "delete_note"}),
        );
        match hidden {
            Dispatch::Answer(Err(error)) => assert_eq!(error.code, ErrorCode::CapabilityNotFound),
            other => panic!("{other:?}"),
        }
        // Calling is the pipeline's business: its scope refusal is the direct call's.
        match facade.dispatch(
            &registry,
            &reader(),
            CALL,
            &json!({"name": "delete_note", "args": {"path": "a.md"}}),
        ) {
            Dispatch::Inner { tool, arguments } => {
                assert_eq!(tool, "delete_note");
                assert_eq!(arguments, json!({"path": "a.md"}));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn flat_mode_dispatches_everything_directly() {
        let registry = notes_registry();
        let facade = Facade::new(FacadeMode::Flat, &registry);
        assert!(!facade.offers(CALL));
        assert!(matches!(
            facade.dispatch(&registry, &reader(), CALL, &json!({})),
            Dispatch::Direct
        ));
        assert_eq!(facade.list(&registry).len(), registry.iter().count());
    }

    #[test]
    fn resend_text_names_the_facade_for_confirmation_refusals_only() {
        let drift =
            ToolError::new(ErrorCode::ReplayDrift, "changed.").with_recovery("send again", None);
        let drift = resend_through_facade(drift, "delete_note");
        assert!(
            drift
                .message
                .contains("call_capability again with name \"delete_note\"")
        );
        assert_eq!(drift.details.unwrap()["via"], "call_capability");
        let other = resend_through_facade(ToolError::new(ErrorCode::NoteNotFound, "gone"), "x");
        assert_eq!(other.message, "gone");
        assert!(other.details.is_none());
    }
}
