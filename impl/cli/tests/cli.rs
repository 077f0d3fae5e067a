//! The built `obsidian-tc` binary: exit codes, stdout holding only the token, and the
//! refusals of `elicit`, `token mint` and `serve` (spec/cli.md).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use serde_json::Value;
use tc_gate::clock::{OsEntropy, SystemClock};
use tc_gate::{CallBinding, Gate, GateConfig, StateFp, Store, fingerprint_targets};
use tc_server::auth::Authenticator;
use tc_server::config::{AuthConfig, AuthMode};
use tempfile::TempDir;

const SECRET: &str = "a-jwt-secret-for-the-cli-tests-32b!";
const HASH: &str = "0123456789abcdef0123456789abcdef";

fn bin() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_obsidian-tc"));
    // The default cache directory must never be the real one of whoever runs the tests.
    command
        .env_remove("XDG_CACHE_HOME")
        .env("HOME", "/nonexistent-home");
    command
}

fn run(command: &mut Command) -> Output {
    command.output().expect("run obsidian-tc")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// A refusal: exit status 1 and one line on stderr, nothing on stdout.
#[track_caller]
fn assert_refused(output: &Output, needle: &str) {
    let err = stderr(output);
    assert_eq!(output.status.code(), Some(1), "stderr: {err}");
    assert!(output.stdout.is_empty(), "stdout: {}", stdout(output));
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("obsidian-tc: "), "{err}");
    assert!(err.contains(needle), "{needle:?} not in {err}");
}

struct Setup {
    dir: TempDir,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        for vault in ["notes", "work"] {
            std::fs::create_dir(dir.path().join(vault)).unwrap();
        }
        std::fs::create_dir(dir.path().join("cache")).unwrap();
        Setup { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn cache(&self) -> PathBuf {
        self.path("cache")
    }

    fn write_config(&self, name: &str, body: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, body).unwrap();
        path
    }

    fn one_vault_config(&self) -> PathBuf {
        self.write_config(
            "one.toml",
            "cacheDir = \"cache\"\n[[vaults]]\nid = \"notes\"\nroot = \"notes\"\n",
        )
    }

    fn two_vault_config(&self) -> PathBuf {
        self.write_config(
            "two.toml",
            "cacheDir = \"cache\"\n[[vaults]]\nid = \"notes\"\nroot = \"notes\"\n\
             [[vaults]]\nid = \"work\"\nroot = \"work\"\n",
        )
    }

    fn jwt_config(&self) -> PathBuf {
        self.write_config(
            "jwt.toml",
            &format!(
                "[auth]\nmode = \"jwt\"\njwtSecret = \"{SECRET}\"\n\
                 [[vaults]]\nid = \"notes\"\nroot = \"notes\"\n"
            ),
        )
    }

    /// The server's side: a gate on `<cache>/cache.db`.
    fn gate_in(&self, cache: &Path) -> Gate {
        std::fs::create_dir_all(cache).unwrap();
        Gate::new(
            Store::open(cache.join("cache.db")).unwrap(),
            Arc::new(SystemClock),
            Arc::new(OsEntropy),
            GateConfig::new(300).unwrap(),
        )
    }

    fn gate(&self) -> Gate {
        self.gate_in(&self.cache())
    }
}

fn call<'a>(vault: &'a str, caller: &'a str) -> CallBinding<'a> {
    CallBinding {
        vault,
        tool: "delete_note",
        args_hash: HASH,
        caller,
    }
}

fn fp(content: &str) -> StateFp {
    fingerprint_targets(&[("inbox/a.md".to_owned(), Some(content.to_owned()))])
}

fn elicit(config: &Path, extra: &[&str]) -> Output {
    run(bin()
        .args([
            "elicit",
            "--hash",
            HASH,
            "--tool",
            "delete_note",
            "--config",
        ])
        .arg(config)
        .args(extra))
}

// r[verify cli.elicit.prints-token]
// r[verify cli.elicit.caller-default]
// r[verify cli.elicit.same-db]
// r[verify cli.elicit.binds-raised-state]
#[test]
fn elicit_prints_only_a_token_the_server_redeems() {
    let setup = Setup::new();
    let gate = setup.gate();
    let state = fp("v1");
    gate.raise(&call("notes", "stdio"), &state).unwrap();

    let output = elicit(&setup.one_vault_config(), &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let out = stdout(&output);
    let token = out.strip_suffix('\n').expect("ends with a newline");
    assert!(!token.contains('\n'), "nothing but the token: {out:?}");
    assert_eq!(token.len(), 32);
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));

    // The live server's gate (same cache.db) redeems it once, for the stdio caller.
    let redemption = gate
        .redeem(token, &call("notes", "stdio"), || state.clone())
        .expect("redeems");
    drop(redemption);
    assert!(
        gate.redeem(token, &call("notes", "stdio"), || state.clone())
            .is_err()
    );
}

// r[verify events.minted-by]
// r[verify events.caller-named]
/// The audit log says who minted (the local account) and whose call the token approves.
#[test]
fn the_minted_event_names_the_operator_and_the_caller() {
    let setup = Setup::new();
    let gate = setup.gate();
    gate.raise(&call("notes", "stdio"), &fp("v1")).unwrap();
    let output = run(bin()
        .env("USER", "ada")
        .args([
            "elicit",
            "--hash",
            HASH,
            "--tool",
            "delete_note",
            "--config",
        ])
        .arg(setup.one_vault_config()));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let minted = gate
        .events(0, 10)
        .unwrap()
        .into_iter()
        .find(|e| e.name.as_str() == "elicit_minted")
        .expect("a minted event");
    assert_eq!(minted.detail["operator"], "ada", "{minted:?}");
    assert_eq!(minted.caller.as_deref(), Some("stdio"));
}

// r[verify cli.elicit.requires-raise]
#[test]
fn elicit_refuses_without_a_raised_request() {
    let setup = Setup::new();
    let gate = setup.gate();
    let output = elicit(&setup.one_vault_config(), &[]);
    assert_refused(&output, "run the blocked call again first");
    assert_refused(&output, "--caller");

    // A request raised for another caller does not count.
    gate.raise(&call("notes", "alice"), &fp("v1")).unwrap();
    let output = elicit(&setup.one_vault_config(), &[]);
    assert_refused(&output, "run the blocked call again first");
    let output = elicit(&setup.one_vault_config(), &["--caller", "alice"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

// r[verify cli.elicit.state-fp]
#[test]
fn elicit_refuses_an_unknown_or_superseded_state_fp() {
    let setup = Setup::new();
    let gate = setup.gate();
    let old = fp("v1");
    let new = fp("v2");
    gate.raise(&call("notes", "stdio"), &old).unwrap();
    gate.raise(&call("notes", "stdio"), &new).unwrap();
    let config = setup.one_vault_config();

    let superseded = elicit(&config, &["--state-fp", old.as_str()]);
    assert_refused(&superseded, "newer request");
    let unknown = elicit(&config, &["--state-fp", fp("never").as_str()]);
    assert_refused(&unknown, "no request for this call recorded");
    let malformed = elicit(&config, &["--state-fp", "xyz"]);
    assert_refused(&malformed, "--state-fp");

    let current = elicit(&config, &["--state-fp", new.as_str(), "--json"]);
    assert_eq!(current.status.code(), Some(0), "{}", stderr(&current));
    // r[verify cli.elicit.json]
    let out = stdout(&current);
    assert_eq!(out.lines().count(), 1);
    let object: Value = serde_json::from_str(&out).expect("one JSON object");
    assert_eq!(object["state_fp"], new.as_str());
    assert_eq!(object["vault"], "notes");
    assert_eq!(object["tool"], "delete_note");
    assert_eq!(object["args_hash"], HASH);
    assert_eq!(object["caller"], "stdio");
    assert_eq!(object["token"].as_str().map(str::len), Some(32));
    assert!(object["expires_at_ms"].as_i64().is_some());
}

// r[verify cli.elicit.tool]
#[test]
fn elicit_refuses_another_tool_than_the_raised_one() {
    let setup = Setup::new();
    setup
        .gate()
        .raise(&call("notes", "stdio"), &fp("v1"))
        .unwrap();
    let output = run(bin()
        .args(["elicit", "--hash", HASH, "--tool", "move_note", "--config"])
        .arg(setup.one_vault_config()));
    assert_refused(&output, "--tool delete_note");
}

// r[verify cli.elicit.vault]
#[test]
fn elicit_needs_the_vault_when_several_are_configured() {
    let setup = Setup::new();
    setup
        .gate()
        .raise(&call("work", "stdio"), &fp("v1"))
        .unwrap();
    let config = setup.two_vault_config();
    assert_refused(&elicit(&config, &[]), "--vault");
    assert_refused(&elicit(&config, &["--vault", "nope"]), "notes, work");
    let output = elicit(&config, &["--vault", "work"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // The wrong (but configured) vault has no raised request.
    assert_refused(
        &elicit(&config, &["--vault", "notes"]),
        "run the blocked call again",
    );
}

// r[verify cli.cache-default]
// r[verify cli.elicit.vault]
// r[verify cli.elicit.indexed-vault]
#[test]
fn elicit_after_serve_vault_dir_needs_no_flag() {
    // `serve ~/vault` with no config uses $XDG_CACHE_HOME/obsidian-tc and the vault's slug;
    // `elicit --hash … --tool …` with no other flag finds both.
    let setup = Setup::new();
    let xdg = setup.path("xdg");
    let gate = setup.gate_in(&xdg.join("obsidian-tc"));
    gate.raise(&call("my-notes", "stdio"), &fp("v1")).unwrap();
    let output = run(bin().env("XDG_CACHE_HOME", &xdg).args([
        "elicit",
        "--hash",
        HASH,
        "--tool",
        "delete_note",
    ]));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output).trim().len(), 32);

    // Pending in two vaults at once (the mint consumed the first request, so the blocked
    // call is raised again): the vault has to be named.
    gate.raise(&call("my-notes", "stdio"), &fp("v1")).unwrap();
    gate.raise(&call("other", "stdio"), &fp("v1")).unwrap();
    let output = run(bin().env("XDG_CACHE_HOME", &xdg).args([
        "elicit",
        "--hash",
        HASH,
        "--tool",
        "delete_note",
    ]));
    assert_refused(&output, "--vault");
    let output = run(bin().env("XDG_CACHE_HOME", &xdg).args([
        "elicit",
        "--hash",
        HASH,
        "--tool",
        "delete_note",
        "--vault",
        "other",
    ]));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

// r[verify cli.cache-precedence]
#[test]
fn elicit_cache_dir_flag_wins_over_the_config() {
    let setup = Setup::new();
    let elsewhere = setup.path("elsewhere");
    setup
        .gate_in(&elsewhere)
        .raise(&call("notes", "stdio"), &fp("v1"))
        .unwrap();
    let config = setup.one_vault_config();
    // The config's cacheDir has no cache.db: refused, naming what to pass.
    assert_refused(&elicit(&config, &[]), "--cache-dir");
    let flag = elsewhere.to_str().unwrap();
    let output = elicit(&config, &["--cache-dir", flag]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

// r[verify cli.exit-codes]
// r[verify cli.elicit.hash]
// r[verify cli.elicit.no-ttl]
#[test]
fn usage_errors_exit_2() {
    let cases: &[&[&str]] = &[
        &["elicit", "--hash", "not-a-hash", "--tool", "delete_note"],
        &["elicit", "--hash", "0123", "--tool", "delete_note"],
        &["elicit", "--tool", "delete_note"],
        &[
            "elicit",
            "--hash",
            HASH,
            "--tool",
            "delete_note",
            "--ttl",
            "60",
        ],
        &["token", "mint"],
        &["token", "mint", "--sub", "a", "--ttl", "0"],
        &["serve", "--http", "not-an-address"],
        &["frobnicate"],
    ];
    for args in cases {
        let output = run(bin().args(*args));
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(output.stdout.is_empty());
    }
    let help = run(bin().arg("--help"));
    assert_eq!(help.status.code(), Some(0));
}

fn verify(token: &str) -> tc_server::auth::Caller {
    let auth = Authenticator::from_config(&AuthConfig {
        mode: AuthMode::Jwt,
        jwt_secret: Some(SECRET.into()),
        ..AuthConfig::default()
    })
    .unwrap();
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(auth.verify(token))
        .expect("the server accepts the minted token")
}

// r[verify cli.token.mint]
// r[verify cli.token.scopes]
#[test]
fn token_mint_prints_only_a_token_with_every_scope() {
    let setup = Setup::new();
    let output = run(bin()
        .args(["token", "mint", "--sub", "alice", "--config"])
        .arg(setup.jwt_config()));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let out = stdout(&output);
    let token = out.strip_suffix('\n').expect("newline");
    assert_eq!(
        token.matches('.').count(),
        2,
        "a JWT and nothing else: {out:?}"
    );
    let caller = verify(token);
    assert_eq!(caller.id, "alice");
    assert!(
        caller.scopes.has("read:private"),
        "no --scopes: every scope"
    );
    assert_eq!(caller.vault, None);
}

// r[verify cli.token.mint]
// r[verify cli.token.scopes]
#[test]
fn token_mint_takes_scopes_vault_audience_and_ttl() {
    let setup = Setup::new();
    let output = run(bin()
        .args([
            "token",
            "mint",
            "--sub",
            "bob",
            "--scopes",
            "read:notes,write:notes",
            "--vault",
            "notes",
            "--aud",
            "obsidian-tc",
            "--ttl",
            "120",
            "--json",
            "--config",
        ])
        .arg(setup.jwt_config()));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let out = stdout(&output);
    assert_eq!(out.lines().count(), 1);
    let object: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(object["sub"], "bob");
    assert_eq!(object["aud"], "obsidian-tc");
    assert_eq!(object["vault"], "notes");
    assert_eq!(
        object["scopes"],
        serde_json::json!(["read:notes", "write:notes"])
    );
    let now = jsonwebtoken::get_current_timestamp();
    let exp = object["expires_at"].as_u64().unwrap();
    assert!(
        (now + 110..=now + 130).contains(&exp),
        "exp {exp} vs now {now}"
    );
    let caller = verify(object["token"].as_str().unwrap());
    assert!(caller.scopes.has("write:notes") && !caller.scopes.has("delete:notes"));
    assert_eq!(caller.vault.as_deref(), Some("notes"));
}

// r[verify cli.token.requires-secret]
#[test]
fn token_mint_refuses_without_jwt_and_a_secret() {
    let setup = Setup::new();
    let no_config = run(bin().args(["token", "mint", "--sub", "a"]));
    assert_refused(&no_config, "--config");

    let none = setup.one_vault_config();
    let output = run(bin()
        .args(["token", "mint", "--sub", "a", "--config"])
        .arg(&none));
    assert_refused(&output, "auth.mode = \"jwt\"");

    let jwks_only = setup.write_config(
        "jwks.toml",
        "[auth]\nmode = \"jwt\"\njwks = \"https://idp.example/jwks.json\"\n",
    );
    let output = run(bin()
        .args(["token", "mint", "--sub", "a", "--config"])
        .arg(&jwks_only));
    assert_refused(&output, "jwtSecret");

    let jwt = setup.jwt_config();
    let unknown_vault = run(bin()
        .args(["token", "mint", "--sub", "a", "--vault", "nope", "--config"])
        .arg(&jwt));
    assert_refused(&unknown_vault, "notes");
    let reserved = run(bin()
        .args(["token", "mint", "--sub", "stdio", "--config"])
        .arg(&jwt));
    assert_refused(&reserved, "reserved");
    let bad_scopes = run(bin()
        .args([
            "token", "mint", "--sub", "a", "--scopes", "a,,b", "--config",
        ])
        .arg(&jwt));
    assert_refused(&bad_scopes, "--scopes");
}

// r[verify config.unknown-key]
#[test]
fn a_config_error_is_one_sentence_naming_the_key() {
    let setup = Setup::new();
    let bad = setup.write_config("bad.toml", "[governor]\nmaxResponseByte = 3\n");
    let output = run(bin()
        .args(["token", "mint", "--sub", "a", "--config"])
        .arg(&bad));
    assert_refused(&output, "governor.maxResponseByte");
    let output = elicit(&bad, &[]);
    assert_refused(&output, "governor.maxResponseByte");
}

// r[verify cli.serve.vault-dir]
// r[verify cli.cache-outside-vault]
// r[verify auth.none.loopback]
#[test]
fn serve_refuses_what_cannot_be_served() {
    let setup = Setup::new();
    let missing = run(bin().args(["serve"]).arg(setup.path("absent")));
    assert_refused(&missing, "VAULT_DIR");

    let nothing = run(bin().args(["serve", "--cache-dir"]).arg(setup.cache()));
    assert_refused(&nothing, "VAULT_DIR");

    let both = run(bin()
        .args(["serve", "--config"])
        .arg(setup.one_vault_config())
        .arg(setup.path("work")));
    assert_refused(&both, "VAULT_DIR");

    let inside = run(bin()
        .arg("serve")
        .arg(setup.path("notes"))
        .arg("--cache-dir")
        .arg(setup.path("notes/.cache")));
    assert_refused(&inside, "outside every vault");

    let public = run(bin()
        .arg("serve")
        .arg(setup.path("notes"))
        .args(["--http", "0.0.0.0:8787", "--cache-dir"])
        .arg(setup.cache()));
    assert_refused(&public, "loopback");
}
