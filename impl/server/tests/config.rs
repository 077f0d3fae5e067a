//! The TOML configuration: parsing, defaults, errors that name the key, validation, the
//! default cache directory and its precedence (spec/config.md, spec/cli.md cache clauses).

use std::path::{Path, PathBuf};

use tc_server::config::{
    AuthMode, CacheEnv, Config, ConfigError, DEFAULT_ELICIT_TTL_SECONDS,
    DEFAULT_MAX_RESPONSE_BYTES, JwksLocation, MIN_MAX_RESPONSE_BYTES, slugify,
};
use tempfile::TempDir;

/// A temp dir with a `vault/` folder, where relative config paths resolve.
fn workspace() -> TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("vault")).expect("vault dir");
    dir
}

fn parse_in(dir: &Path, text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, "test.toml", dir)
}

const MINIMAL_VAULT: &str = "[[vaults]]\nid = \"main\"\nroot = \"vault\"\n";

fn err_text(result: Result<Config, ConfigError>) -> String {
    match result {
        Ok(config) => panic!("expected an error, got {config:?}"),
        Err(e) => e.to_string(),
    }
}

// r[verify config.file]
// r[verify config.ttl.default]
// r[verify config.legacy-shim]
// r[verify config.governor]
// r[verify config.auth]
#[test]
fn an_empty_file_gives_every_default() {
    let dir = workspace();
    let config = parse_in(dir.path(), "").expect("parses");
    assert_eq!(config.elicit_ttl_seconds, DEFAULT_ELICIT_TTL_SECONDS);
    assert_eq!(config.elicit_ttl_seconds, 300);
    assert!(!config.legacy_elicitation_shim);
    assert_eq!(
        config.governor.max_response_bytes,
        DEFAULT_MAX_RESPONSE_BYTES
    );
    assert_eq!(config.governor.max_response_bytes, 1_000_000);
    assert_eq!(config.auth.mode, AuthMode::None);
    assert!(config.cache_dir.is_none());
    assert!(config.vaults.is_empty());
}

// r[verify config.file]
// r[verify config.cache-dir]
// r[verify config.auth]
// r[verify config.vaults]
#[test]
fn every_key_is_read_with_the_seed_spelling() {
    let dir = workspace();
    let text = format!(
        r#"
cacheDir = "cache"
elicitTtlSeconds = 120
legacyElicitationShim = true
[governor]
maxResponseBytes = 200000
[auth]
mode = "jwt"
jwtSecret = "0123456789abcdef0123456789abcdef"
jwks = "keys/jwks.json"
audience = "obsidian-tc"
[auth.oidc]
issuer = "https://issuer.example"
{MINIMAL_VAULT}"#
    );
    let config = parse_in(dir.path(), &text).expect("parses");
    assert_eq!(config.cache_dir, Some(dir.path().join("cache")));
    assert_eq!(config.elicit_ttl_seconds, 120);
    assert!(config.legacy_elicitation_shim);
    assert_eq!(config.governor.max_response_bytes, 200_000);
    assert_eq!(config.auth.mode, AuthMode::Jwt);
    assert_eq!(
        config.auth.jwt_secret.as_deref(),
        Some("0123456789abcdef0123456789abcdef")
    );
    assert_eq!(
        config.auth.jwks_location(),
        Some(JwksLocation::File(dir.path().join("keys/jwks.json")))
    );
    assert_eq!(config.auth.audience.as_deref(), Some("obsidian-tc"));
    assert_eq!(
        config.auth.oidc.as_ref().map(|o| o.issuer.as_str()),
        Some("https://issuer.example")
    );
    assert_eq!(config.vaults.len(), 1);
    assert_eq!(config.vaults[0].id, "main");
    assert_eq!(
        config.vaults[0].root,
        dir.path().join("vault").canonicalize().unwrap()
    );
    // The secret never shows in Debug output.
    assert!(!format!("{config:?}").contains("0123456789abcdef"));
}

#[test]
fn a_jwks_url_stays_a_url() {
    let dir = workspace();
    let config = parse_in(
        dir.path(),
        "[auth]\nmode = \"jwt\"\njwks = \"https://idp.example/jwks.json\"\n",
    )
    .expect("parses");
    assert_eq!(
        config.auth.jwks_location(),
        Some(JwksLocation::Url("https://idp.example/jwks.json".into()))
    );
}

// r[verify config.unknown-key]
#[test]
fn an_unknown_key_is_named_with_its_table_path() {
    let dir = workspace();
    let cases = [
        ("cachedir = \"x\"\n", "cachedir"),
        (
            "[governor]\nmaxResponseByte = 5\n",
            "governor.maxResponseByte",
        ),
        ("[auth]\nmode = \"none\"\nsecret = \"x\"\n", "auth.secret"),
        (
            "[auth.oidc]\nissuer = \"https://a\"\nclient = \"x\"\n",
            "auth.oidc.client",
        ),
        (
            "[[vaults]]\nid = \"a\"\nroot = \"vault\"\npath = \"x\"\n",
            "vaults[0].path",
        ),
        (
            "[[vaults]]\nid = \"a\"\nroot = \"vault\"\n[vaults.acl]\nreadpaths = []\n",
            "vaults[0].acl.readpaths",
        ),
        (
            "[[vaults]]\nid = \"a\"\nroot = \"vault\"\n[[vaults.conventions]]\nglob = \"**\"\nmaxbytes = 3\n",
            "vaults[0].conventions[0].maxbytes",
        ),
    ];
    for (text, key) in cases {
        let error = parse_in(dir.path(), text).expect_err(text);
        assert_eq!(error.key(), Some(key), "{text}: {error}");
        let message = error.to_string();
        assert!(message.contains(key), "{message}");
        assert!(message.contains("unknown field"), "{message}");
        assert!(message.starts_with("test.toml line "), "{message}");
    }
}

// r[verify config.bad-value]
#[test]
fn a_value_of_the_wrong_type_names_the_key() {
    let dir = workspace();
    let cases = [
        ("elicitTtlSeconds = \"soon\"\n", "elicitTtlSeconds"),
        ("legacyElicitationShim = \"yes\"\n", "legacyElicitationShim"),
        (
            "[governor]\nmaxResponseBytes = -1\n",
            "governor.maxResponseBytes",
        ),
        ("[auth]\nmode = \"basic\"\n", "auth.mode"),
        ("[[vaults]]\nid = 7\nroot = \"vault\"\n", "vaults[0].id"),
        (
            "[[vaults]]\nid = \"a\"\nroot = \"vault\"\n[vaults.acl]\nreadOnly = \"no\"\n",
            "vaults[0].acl.readOnly",
        ),
    ];
    for (text, key) in cases {
        let error = parse_in(dir.path(), text).expect_err(text);
        assert_eq!(error.key(), Some(key), "{text}: {error}");
        assert!(error.to_string().contains(key), "{error}");
    }
}

#[test]
fn a_syntax_error_gives_the_line() {
    let dir = workspace();
    let message = err_text(parse_in(dir.path(), "elicitTtlSeconds = 3\n[auth\n"));
    assert!(message.contains("line 2"), "{message}");
}

// r[verify config.ttl.positive]
#[test]
fn a_non_positive_ttl_is_refused() {
    let dir = workspace();
    for ttl in ["0", "-5"] {
        let error = parse_in(dir.path(), &format!("elicitTtlSeconds = {ttl}\n")).expect_err(ttl);
        assert_eq!(error.key(), Some("elicitTtlSeconds"));
        assert!(error.to_string().contains("positive"), "{error}");
    }
    let huge = parse_in(dir.path(), "elicitTtlSeconds = 9223372036854775807\n").expect_err("huge");
    assert_eq!(huge.key(), Some("elicitTtlSeconds"));
}

// r[verify config.governor]
#[test]
fn a_zero_response_cap_is_refused() {
    let dir = workspace();
    let error = parse_in(dir.path(), "[governor]\nmaxResponseBytes = 0\n").expect_err("zero");
    assert_eq!(error.key(), Some("governor.maxResponseBytes"));
}

// r[verify config.governor.floor]
#[test]
fn a_response_cap_below_the_minimum_is_refused() {
    let dir = workspace();
    for cap in [1, 2500, 16_383, MIN_MAX_RESPONSE_BYTES - 1] {
        let error = parse_in(
            dir.path(),
            &format!("[governor]\nmaxResponseBytes = {cap}\n"),
        )
        .expect_err("below the minimum");
        assert_eq!(error.key(), Some("governor.maxResponseBytes"), "{error}");
        assert!(
            error
                .to_string()
                .contains(&MIN_MAX_RESPONSE_BYTES.to_string()),
            "{error}"
        );
    }
    let at = parse_in(
        dir.path(),
        &format!("[governor]\nmaxResponseBytes = {MIN_MAX_RESPONSE_BYTES}\n"),
    )
    .expect("the minimum itself is accepted");
    assert_eq!(at.governor.max_response_bytes, MIN_MAX_RESPONSE_BYTES);
    // The CLI's path, a config file on disk, refuses it too.
    let file = dir.path().join("small.toml");
    std::fs::write(&file, "[governor]\nmaxResponseBytes = 4096\n").unwrap();
    let error = Config::load(&file).expect_err("load refuses");
    assert_eq!(error.key(), Some("governor.maxResponseBytes"), "{error}");
}

// r[verify config.auth.complete]
#[test]
fn incomplete_auth_settings_are_refused() {
    let dir = workspace();
    let jwt = parse_in(dir.path(), "[auth]\nmode = \"jwt\"\n").expect_err("jwt");
    assert_eq!(jwt.key(), Some("auth.mode"));
    assert!(jwt.to_string().contains("jwtSecret"), "{jwt}");
    let oidc = parse_in(dir.path(), "[auth]\nmode = \"oidc\"\n").expect_err("oidc");
    assert_eq!(oidc.key(), Some("auth.oidc.issuer"));
    let not_url = parse_in(
        dir.path(),
        "[auth]\nmode = \"oidc\"\n[auth.oidc]\nissuer = \"issuer.example\"\n",
    )
    .expect_err("not a url");
    assert_eq!(not_url.key(), Some("auth.oidc.issuer"));
    let short = parse_in(
        dir.path(),
        "[auth]\nmode = \"jwt\"\njwtSecret = \"short\"\n",
    )
    .expect_err("short secret");
    assert_eq!(short.key(), Some("auth.jwtSecret"));
    assert!(
        !short.to_string().contains("short\""),
        "the secret is not echoed: {short}"
    );
    // An OpenID provider signs tokens for all its clients: without an audience, any of
    // them would do.
    let no_audience = parse_in(
        dir.path(),
        "[auth]\nmode = \"oidc\"\n[auth.oidc]\nissuer = \"https://issuer.example\"\n",
    )
    .expect_err("oidc without an audience");
    assert_eq!(no_audience.key(), Some("auth.audience"), "{no_audience}");
    // Each mode is accepted once complete.
    parse_in(dir.path(), "[auth]\nmode = \"jwt\"\njwks = \"jwks.json\"\n").expect("jwt+jwks");
    parse_in(
        dir.path(),
        "[auth]\nmode = \"oidc\"\naudience = \"obsidian-tc\"\n\
         [auth.oidc]\nissuer = \"https://issuer.example\"\n",
    )
    .expect("oidc");
}

// r[verify auth.keys.https]
#[test]
fn key_servers_are_https_unless_on_loopback() {
    let dir = workspace();
    let oidc = |issuer: &str| {
        format!("[auth]\nmode = \"oidc\"\naudience = \"a\"\n[auth.oidc]\nissuer = \"{issuer}\"\n")
    };
    let jwks = |url: &str| format!("[auth]\nmode = \"jwt\"\njwks = \"{url}\"\n");
    for refused in ["http://issuer.example", "http://10.0.0.1:8080"] {
        let error = parse_in(dir.path(), &oidc(refused)).expect_err(refused);
        assert_eq!(error.key(), Some("auth.oidc.issuer"), "{error}");
        assert!(error.to_string().contains("https://"), "{error}");
        let error =
            parse_in(dir.path(), &jwks(&format!("{refused}/jwks.json"))).expect_err(refused);
        assert_eq!(error.key(), Some("auth.jwks"), "{error}");
    }
    let error = parse_in(dir.path(), &oidc("ftp://issuer.example")).expect_err("ftp");
    assert_eq!(error.key(), Some("auth.oidc.issuer"), "{error}");
    for accepted in [
        "https://issuer.example",
        "http://127.0.0.1:8080",
        "http://localhost:8080",
        "http://[::1]:8080",
    ] {
        parse_in(dir.path(), &oidc(accepted)).expect(accepted);
        parse_in(dir.path(), &jwks(&format!("{accepted}/jwks.json"))).expect(accepted);
    }
}

// r[verify config.vaults]
#[test]
fn vault_ids_are_unique_and_roots_exist() {
    let dir = workspace();
    let twice = format!("{MINIMAL_VAULT}{MINIMAL_VAULT}");
    let error = parse_in(dir.path(), &twice).expect_err("duplicate id");
    assert_eq!(error.key(), Some("vaults[1].id"));
    assert!(error.to_string().contains("unique"), "{error}");

    let missing = parse_in(dir.path(), "[[vaults]]\nid = \"a\"\nroot = \"nowhere\"\n")
        .expect_err("missing root");
    assert_eq!(missing.key(), Some("vaults[0].root"));

    std::fs::write(dir.path().join("file.md"), "x").unwrap();
    let file = parse_in(dir.path(), "[[vaults]]\nid = \"a\"\nroot = \"file.md\"\n")
        .expect_err("file root");
    assert_eq!(file.key(), Some("vaults[0].root"));
    assert!(file.to_string().contains("not a directory"), "{file}");

    let empty =
        parse_in(dir.path(), "[[vaults]]\nid = \"\"\nroot = \"vault\"\n").expect_err("empty");
    assert_eq!(empty.key(), Some("vaults[0].id"));
}

// r[verify drift.residual.no-root]
// r[verify drift.residual.no-root.never-served]
#[test]
fn no_vault_is_served_without_a_root_so_no_path_binding_is_empty_for_want_of_one() {
    let dir = workspace();
    let rootless = parse_in(dir.path(), "[[vaults]]\nid = \"a\"\n").expect_err("no root");
    assert!(rootless.to_string().contains("root"), "{rootless}");
    let missing = parse_in(dir.path(), "[[vaults]]\nid = \"a\"\nroot = \"gone\"\n")
        .expect_err("missing root");
    assert_eq!(missing.key(), Some("vaults[0].root"));
    let served = parse_in(dir.path(), MINIMAL_VAULT).unwrap();
    assert!(served.vaults.iter().all(|v| v.root.is_dir()));
}

// r[verify config.acl]
// r[verify config.conventions]
#[test]
fn acl_and_conventions_are_read_and_bad_globs_named() {
    let dir = workspace();
    let text = r#"
[[vaults]]
id = "main"
root = "vault"
[vaults.acl]
readOnly = true
readPaths = ["**"]
writePaths = []
rules = [{ glob = "private/**", scopes = ["read:private"] }]
[[vaults.conventions]]
glob = "projects/**"
requireFrontmatter = ["status"]
[[vaults.conventions]]
glob = "**"
maxBytes = 10
namePattern = '^[a-z]+\.md$'
"#;
    let config = parse_in(dir.path(), text).expect("parses");
    let vault = &config.vaults[0];
    let acl = vault.acl.as_ref().expect("acl");
    assert!(acl.read_only);
    assert_eq!(acl.write_paths.as_deref(), Some(&[][..]));
    assert_eq!(
        acl.delete_paths, None,
        "absent list stays absent (unrestricted)"
    );
    assert_eq!(acl.rules[0].scopes, vec!["read:private".to_owned()]);
    assert_eq!(vault.conventions.len(), 2);
    assert_eq!(vault.conventions[1].max_bytes, Some(10));

    let bad_glob =
        "[[vaults]]\nid = \"a\"\nroot = \"vault\"\n[vaults.acl]\nwritePaths = [\"a/[\"]\n";
    let error = parse_in(dir.path(), bad_glob).expect_err("bad acl glob");
    assert_eq!(error.key(), Some("vaults[0].acl.writePaths"));
    assert!(error.to_string().contains("a/["), "{error}");

    let bad_rule = "[[vaults]]\nid = \"a\"\nroot = \"vault\"\n[[vaults.conventions]]\nglob = \"**\"\n\
                    [[vaults.conventions]]\nglob = \"x\"\nnamePattern = \"(\"\n";
    let error = parse_in(dir.path(), bad_rule).expect_err("bad pattern");
    assert_eq!(error.key(), Some("vaults[0].conventions[1].namePattern"));

    let bad_conv_glob =
        "[[vaults]]\nid = \"a\"\nroot = \"vault\"\n[[vaults.conventions]]\nglob = \"{a\"\n";
    let error = parse_in(dir.path(), bad_conv_glob).expect_err("bad convention glob");
    assert_eq!(error.key(), Some("vaults[0].conventions[0].glob"));
}

// r[verify cli.serve.vault-dir]
#[test]
fn a_vault_dir_alone_is_one_vault_named_by_its_slug() {
    let parent = tempfile::tempdir().unwrap();
    let vault = parent.path().join("My Notes (2026)");
    std::fs::create_dir(&vault).unwrap();
    let config = Config::from_vault_dir(&vault).expect("config");
    assert_eq!(config.vaults.len(), 1);
    assert_eq!(config.vaults[0].id, "my-notes-2026");
    assert_eq!(config.vaults[0].root, vault.canonicalize().unwrap());
    assert_eq!(config.elicit_ttl_seconds, 300);

    let missing = Config::from_vault_dir(&parent.path().join("absent")).expect_err("absent");
    assert_eq!(missing.key(), Some("VAULT_DIR"));

    // A config that lists vaults refuses VAULT_DIR; one that lists none takes it.
    let dir = workspace();
    let mut listed = parse_in(dir.path(), MINIMAL_VAULT).unwrap();
    assert!(listed.add_vault_dir(&vault).is_err());
    let mut unlisted = parse_in(dir.path(), "elicitTtlSeconds = 60\n").unwrap();
    unlisted.add_vault_dir(&vault).expect("added");
    assert_eq!(unlisted.vaults[0].id, "my-notes-2026");
    assert_eq!(unlisted.elicit_ttl_seconds, 60);
}

#[test]
fn slugs_are_lowercase_dashed_and_trimmed() {
    assert_eq!(slugify("Vault"), "vault");
    assert_eq!(slugify("  Work -- Notes!! "), "work-notes");
    assert_eq!(slugify("über_vault"), "ber-vault");
    assert_eq!(slugify("---"), "");
    assert_eq!(slugify("a.b.c"), "a-b-c");
}

fn env(xdg: Option<&str>, home: Option<&str>) -> CacheEnv {
    CacheEnv {
        xdg_cache_home: xdg.map(Into::into),
        home: home.map(Into::into),
    }
}

// r[verify cli.cache-default]
#[test]
fn the_default_cache_dir_is_xdg_then_home() {
    assert_eq!(
        env(Some("/x/cache"), Some("/home/me")).default_cache_dir(),
        Some(PathBuf::from("/x/cache/obsidian-tc"))
    );
    assert_eq!(
        env(None, Some("/home/me")).default_cache_dir(),
        Some(PathBuf::from("/home/me/.cache/obsidian-tc"))
    );
    // A relative XDG_CACHE_HOME is invalid per the XDG spec and ignored.
    assert_eq!(
        env(Some("rel"), Some("/home/me")).default_cache_dir(),
        Some(PathBuf::from("/home/me/.cache/obsidian-tc"))
    );
    assert_eq!(env(None, None).default_cache_dir(), None);
    let error = Config::default()
        .resolve_cache_dir(None, &env(None, None))
        .expect_err("no default");
    assert!(error.to_string().contains("--cache-dir"), "{error}");
}

// r[verify cli.cache-precedence]
#[test]
fn flag_beats_config_beats_default() {
    let dir = workspace();
    let e = env(Some("/xdg"), None);
    let with_config = parse_in(dir.path(), "cacheDir = \"/from/config\"\n").unwrap();
    let flag = Path::new("/from/flag");
    assert_eq!(
        with_config.resolve_cache_dir(Some(flag), &e).unwrap(),
        PathBuf::from("/from/flag")
    );
    assert_eq!(
        with_config.resolve_cache_dir(None, &e).unwrap(),
        PathBuf::from("/from/config")
    );
    assert_eq!(
        Config::default().resolve_cache_dir(None, &e).unwrap(),
        PathBuf::from("/xdg/obsidian-tc")
    );
}

// r[verify cli.cache-outside-vault]
#[test]
fn a_cache_dir_inside_a_vault_is_refused() {
    let dir = workspace();
    let inside = format!("cacheDir = \"vault/.cache\"\n{MINIMAL_VAULT}");
    let error = parse_in(dir.path(), &inside).expect_err("inside");
    assert_eq!(error.key(), Some("cacheDir"));
    assert!(error.to_string().contains("outside"), "{error}");

    // The vault root itself, and a sneaky path through `..`, are inside too.
    let via_dots = format!("cacheDir = \"other/../vault\"\n{MINIMAL_VAULT}");
    assert!(parse_in(dir.path(), &via_dots).is_err());

    // The flag and the default are checked as well.
    let config = parse_in(dir.path(), MINIMAL_VAULT).unwrap();
    let flag = dir.path().join("vault/deeper/cache");
    let error = config
        .resolve_cache_dir(Some(&flag), &env(None, None))
        .expect_err("flag inside");
    assert_eq!(error.key(), Some("--cache-dir"));
    let xdg = dir.path().join("vault");
    let error = config
        .resolve_cache_dir(None, &env(Some(xdg.to_str().unwrap()), None))
        .expect_err("default inside");
    assert_eq!(error.key(), Some("default cache directory"));

    // Beside the vault is fine, even though the names share a prefix.
    let beside = dir.path().join("vault-cache");
    assert_eq!(
        config
            .resolve_cache_dir(Some(&beside), &env(None, None))
            .unwrap(),
        beside
    );
}

/// The example config shipped in examples/, copied beside a `vault/` folder.
fn example_text() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/obsidian-tc.toml");
    std::fs::read_to_string(&path).expect("examples/obsidian-tc.toml")
}

// r[verify config.file]
#[test]
fn the_example_config_parses() {
    let dir = workspace();
    let config = parse_in(dir.path(), &example_text()).expect("example parses");
    assert_eq!(config.vaults[0].id, "example");
    assert!(config.vaults[0].acl.is_some());
    assert_eq!(config.vaults[0].conventions.len(), 3);
    assert_eq!(config.auth.mode, AuthMode::None);
}

#[test]
fn the_example_config_parses_with_every_optional_key_switched_on() {
    // `#key = …` lines (no space after #) are settings the example leaves off.
    let text: String = example_text()
        .lines()
        .map(|line| match line.strip_prefix('#') {
            Some(rest) if rest.starts_with(|c: char| c.is_ascii_alphabetic() || c == '[') => rest,
            _ => line,
        })
        .map(|line| format!("{line}\n"))
        .collect();
    assert!(
        text.contains("\njwtSecret = "),
        "the example lists jwtSecret"
    );
    assert!(
        text.contains("\n[auth.oidc]\n"),
        "the example lists [auth.oidc]"
    );
    let dir = workspace();
    let config = parse_in(dir.path(), &text).expect("example with every key parses");
    assert!(config.auth.jwt_secret.is_some());
    assert!(config.auth.jwks.is_some());
    assert!(config.auth.audience.is_some());
    assert!(config.auth.oidc.is_some());
}

// r[verify config.vaults.disjoint]
#[test]
fn overlapping_vault_roots_are_refused_naming_both_vaults() {
    let dir = workspace();
    std::fs::create_dir_all(dir.path().join("vault/inner")).unwrap();
    std::fs::create_dir(dir.path().join("vault2")).unwrap();
    let two = |a: &str, b: &str| {
        format!(
            "[[vaults]]\nid = \"outer\"\nroot = \"{a}\"\n[[vaults]]\nid = \"other\"\nroot = \"{b}\"\n"
        )
    };
    // The same folder twice (spelt differently), one inside the other, either order.
    for (a, b) in [
        ("vault", "vault"),
        ("vault", "./vault/"),
        ("vault", "vault/inner"),
        ("vault/inner", "vault"),
    ] {
        let error = parse_in(dir.path(), &two(a, b)).expect_err("overlap");
        assert_eq!(error.key(), Some("vaults[1].root"), "{a} {b}: {error}");
        let text = error.to_string();
        assert!(
            text.contains("\"outer\"") && text.contains("\"other\""),
            "{text}"
        );
    }
    // Siblings whose names share a prefix do not overlap.
    let config = parse_in(dir.path(), &two("vault", "vault2")).expect("disjoint");
    assert_eq!(config.vaults.len(), 2);
}

// r[verify config.tools.families]
#[test]
fn tools_families_is_a_list_of_names_and_its_table_names_an_unknown_key() {
    let dir = tempfile::tempdir().unwrap();
    let config = parse_in(dir.path(), "[tools]\nfamilies = [\"notes\", \"git\"]\n").unwrap();
    assert_eq!(
        config.tools.families,
        Some(vec!["notes".to_owned(), "git".to_owned()])
    );
    assert_eq!(parse_in(dir.path(), "").unwrap().tools.families, None);
    let error = parse_in(dir.path(), "[tools]\nfamily = [\"notes\"]\n").unwrap_err();
    assert_eq!(error.key(), Some("tools.family"), "{error}");
}

// r[verify config.governor.page-bytes]
#[test]
fn page_bytes_defaults_to_forty_thousand_and_stays_under_the_cap() {
    let dir = workspace();
    assert_eq!(
        parse_in(dir.path(), "").unwrap().governor.page_bytes(),
        40_000
    );
    // Under a smaller cap the default page is the cap.
    let small = parse_in(dir.path(), "[governor]\nmaxResponseBytes = 16384\n").unwrap();
    assert_eq!(small.governor.page_bytes(), 16_384);
    let over = parse_in(
        dir.path(),
        "[governor]\nmaxResponseBytes = 200000\npageBytes = 300000\n",
    )
    .unwrap_err();
    assert_eq!(over.key(), Some("governor.pageBytes"), "{over}");
    let under = parse_in(dir.path(), "[governor]\npageBytes = 100\n").unwrap_err();
    assert_eq!(under.key(), Some("governor.pageBytes"), "{under}");
    let set = parse_in(dir.path(), "[governor]\npageBytes = 20000\n").unwrap();
    assert_eq!(set.governor.page_bytes(), 20_000);
}
