//! The product's world as the server comparison stages it (spec/drift.md `drift.path-fingerprint`, `drift.none-empty`).
//!
//! - `Vault(n)` is the configured vault `"v<n>"`, a real folder; every vault has the same
//!   configuration. `Caller(0)` is `stdio` and talks over stdio sessions; `Caller(n)` for
//!   `n > 0` is the JWT subject `c<n>` and talks over Streamable HTTP (`auth.mode = "jwt"`
//!   with an HS256 secret), where the legacy shim does not exist.
//! - The path tool (the model's `delete_note`, "always gated, bound to its path target")
//!   replaces the whole file of `Note(n)` with [`written_to`]: for an odd `Args(n)` it is
//!   `bulk_create_notes` with that one item in `overwrite` mode, always gated unless a dry
//!   run; for an even one `write_note` on the note `n<n>.md` of an even vault, gated on a
//!   note that is not empty, and `create_canvas` with `overwrite` on the canvas `n<n>.canvas`
//!   of an odd vault, gated since the canvas exists; so a bulk tool and a format tool travel
//!   every route of the comparison too ([`Subject`]). Every file starts with content of its
//!   own ([`initial`]), and a target change (the model's `ChangeTarget`) writes a new text
//!   that no other step writes ([`changed`]).
//! - The `"none"` tool is `execute_command` with the allowlisted command [`command_id`] of
//!   `Args(n)`, sent to a stand-in Obsidian (tc_bridge::testing): a 5xx from it after the
//!   request was sent is the model's `Http5xx`.
//! - The model's stages are arranged as the environment would: `AclDenied` by a server over
//!   the same cacheDir and vaults whose folder ACL lets nothing be written, `Http5xx` by the
//!   stand-in answering 500, `HandlerError` by the stand-in knowing no command (it answers
//!   404 and the bridge's handler refuses with `invalid_input`, `command_not_found`, the
//!   request sent), `Timeout` and `OperationTimeout` (the product has one path for both: the
//!   bridge gives up on an answer after the request was sent) by a server whose bridge waits
//!   [`IMPATIENT_TIMEOUT_MS`] and the stand-in stalling its answer [`STALL`].
//!   `ConventionBlockedBeforeWrite` has no arrangement: the path
//!   tools' conventions preflight refuses a blocked write before the gate (the token is not
//!   even looked at), so the write gate refuses after it only when the conventions change
//!   while the call runs.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Value, json};
use tc_model::{Call, Note, Tool, Vault};

/// The caller of every stdio request (the model's `Caller(0)`).
pub const CALLER: &str = "stdio";

/// The HS256 secret the HTTP sessions' bearer tokens are signed with.
pub const JWT_SECRET: &str = "tc-conformance: an hs256 secret of 32 bytes or more";

/// The caller id of a model caller: `Caller(0)` is `stdio` (its sessions are stdio),
/// `Caller(n)` is the JWT subject `c<n>` (its sessions are Streamable HTTP).
pub fn caller_id(caller: tc_model::Caller) -> String {
    if caller.0 == 0 {
        CALLER.to_owned()
    } else {
        format!("c{}", caller.0)
    }
}

/// The commands the vaults allow, by argument variant.
const COMMANDS: [&str; 2] = ["editor:toggle-bold", "app:reload"];

pub fn vault_id(vault: Vault) -> String {
    format!("v{}", vault.0)
}

/// The file of `note` in `vault`: a canvas where its path tool is `create_canvas`.
pub fn note_path(vault: Vault, note: Note) -> String {
    match subject(vault, note.0) {
        Subject::CreateCanvas => format!("n{}.canvas", note.0),
        Subject::WriteNote | Subject::BulkCreateNotes => format!("n{}.md", note.0),
    }
}

pub fn command_id(args: u8) -> &'static str {
    COMMANDS[usize::from(args) % COMMANDS.len()]
}

/// The real tool the path tool of a vault and `Args` is, so that each file is always written
/// by the same tool and each of the three is driven by every configuration of two vaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    WriteNote,
    BulkCreateNotes,
    CreateCanvas,
}

/// The path tool of `Args(args)` in `vault` (see [`Subject`]).
pub fn subject(vault: Vault, args: u8) -> Subject {
    if args % 2 == 1 {
        Subject::BulkCreateNotes
    } else if vault.0 % 2 == 1 {
        Subject::CreateCanvas
    } else {
        Subject::WriteNote
    }
}

/// The real tool of a model call, `None` for one the server comparison does not drive.
pub fn tool_name(call: &Call) -> Option<&'static str> {
    match call.tool {
        Tool::DeleteNote => Some(match subject(call.vault, call.args.0) {
            Subject::WriteNote => "write_note",
            Subject::BulkCreateNotes => "bulk_create_notes",
            Subject::CreateCanvas => "create_canvas",
        }),
        Tool::ExecuteCommand => Some("execute_command"),
        Tool::UpdateTask => None,
    }
}

/// What the path tool writes in a note for `Args(n)`.
pub fn written(args: u8) -> String {
    format!("written by the agent (args {args})\n")
}

/// The bytes the path tool of `Args(args)` leaves in its file of `vault`: [`written`], or
/// for a canvas one text node of it as `create_canvas` writes it.
pub fn written_to(vault: Vault, args: u8) -> String {
    in_file(vault, Note(args), written(args))
}

/// A canvas of one text node holding `text`, laid out as Obsidian (and `create_canvas`)
/// writes one: tabs, one node to a line, keys in Obsidian's order.
fn canvas_of(text: &str) -> String {
    let text = Value::String(text.to_owned());
    format!(
        "{{\n\t\"nodes\":[\n\t\t{{\"id\":\"n\",\"type\":\"text\",\"text\":{text},\
         \"x\":0,\"y\":0,\"width\":400,\"height\":100}}\n\t],\n\t\"edges\":[]\n}}"
    )
}

/// `text` as the content of the file of `note` in `vault`.
fn in_file(vault: Vault, note: Note, text: String) -> String {
    match subject(vault, note.0) {
        Subject::CreateCanvas => canvas_of(&text),
        Subject::WriteNote | Subject::BulkCreateNotes => text,
    }
}

/// A file's content before any step.
pub fn initial(vault: Vault, note: Note) -> String {
    in_file(
        vault,
        note,
        format!("vault {} note {}: as created\n", vault.0, note.0),
    )
}

/// A file's content after the `serial`-th target change of the run.
pub fn changed(vault: Vault, note: Note, serial: u32) -> String {
    in_file(
        vault,
        note,
        format!(
            "vault {} note {}: changed by hand ({serial})\n",
            vault.0, note.0
        ),
    )
}

/// The arguments of a model call (without any approval).
pub fn arguments(call: &Call) -> Option<Value> {
    let (vault, args) = (vault_id(call.vault), call.args.0);
    Some(match call.tool {
        Tool::DeleteNote => match subject(call.vault, args) {
            Subject::BulkCreateNotes => json!({
                "vault": vault,
                "mode": "overwrite",
                "items": [{
                    "path": note_path(call.vault, Note(args)),
                    "content": written(args),
                }],
            }),
            Subject::WriteNote => json!({
                "vault": vault,
                "path": note_path(call.vault, Note(args)),
                "content": written(args),
            }),
            Subject::CreateCanvas => json!({
                "vault": vault,
                "path": note_path(call.vault, Note(args)),
                "nodes": [{
                    "id": "n", "type": "text", "text": written(args),
                    "x": 0, "y": 0, "width": 400, "height": 100,
                }],
                "overwrite": true,
            }),
        },
        Tool::ExecuteCommand => json!({
            "vault": vault,
            "command_id": command_id(args),
        }),
        Tool::UpdateTask => return None,
    })
}

/// The variant of the server's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// As configured for the run.
    Main,
    /// The folder ACL lets nothing be written.
    AclDenied,
    /// The bridge waits [`IMPATIENT_TIMEOUT_MS`] for Obsidian, not 5 s.
    Impatient,
}

impl Variant {
    pub const ALL: [Variant; 3] = [Variant::Main, Variant::AclDenied, Variant::Impatient];
}

/// The bridge timeout of the [`Variant::Impatient`] server. Only a step that has the stand-in
/// stall goes there, so no other step can time out spuriously; it is long enough that a
/// loaded machine still connects (a failure before sending would be `plugin_unreachable`).
pub const IMPATIENT_TIMEOUT_MS: u64 = 1000;

/// How long the stand-in stalls an answer the impatient bridge must give up on.
pub const STALL: std::time::Duration = std::time::Duration::from_secs(4);

/// Where the run's files are.
#[derive(Debug, Clone)]
pub struct Places<'a> {
    pub vaults: &'a [std::path::PathBuf],
    pub bridge_url: &'a str,
    pub key_file: &'a Path,
}

/// The config file text of one variant of the server.
pub fn config_text(
    places: &Places<'_>,
    ttl_seconds: i64,
    single_use: bool,
    variant: Variant,
) -> String {
    let mut text = format!(
        "elicitTtlSeconds = {ttl_seconds}\nrequestStateSingleUse = {single_use}\n\n\
         [toolFacade]\nmode = \"lean\"\n\n[search]\nenabled = false\n\n[auth]\nmode = \"jwt\"\njwtSecret = {JWT_SECRET:?}\n"
    );
    for (index, root) in places.vaults.iter().enumerate() {
        let _ = write!(
            text,
            "\n[[vaults]]\nid = \"v{index}\"\nroot = {root:?}\n\
             [vaults.bridge]\nurl = {url:?}\napiKeyFile = {key:?}\ntimeoutMs = {timeout_ms}\n\
             [vaults.commands]\nenabled = true\nallowlist = {commands:?}\n",
            root = root.display().to_string(),
            url = places.bridge_url,
            key = places.key_file.display().to_string(),
            commands = COMMANDS,
            timeout_ms = match variant {
                Variant::Impatient => IMPATIENT_TIMEOUT_MS,
                Variant::Main | Variant::AclDenied => 5000,
            },
        );
        match variant {
            Variant::Main | Variant::Impatient => {}
            Variant::AclDenied => text.push_str("[vaults.acl]\nwritePaths = []\n"),
        }
    }
    text
}
