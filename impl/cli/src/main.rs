//! obsidian-tc: the command-line entry point (serve, elicit, pending, events, rerun, token mint) of spec/cli.md
//! (spec/cli.md `cli.commands`, `cli.exit-codes`).
//!
//! Exit status: 0 on success; 2 on a usage error, as clap reports it; 1 on a refusal or
//! failure, with one sentence on stderr (prefixed `obsidian-tc:`) that says what to do next.
//! stdout carries only what a command produces (a token, or one JSON object), so it can be
//! captured by a script; logs go to stderr.

mod cli;
mod elicit;
mod events;
mod logging;
mod pending;
mod rerun;
mod serve;
mod token;
mod versions;

use std::fmt;
use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use tc_server::config::{CacheEnv, ConfigError};

use crate::cli::{Cli, Command, TokenCommand};

/// A refusal or failure: one sentence for stderr, exit status 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    message: String,
}

impl Refusal {
    pub fn new(message: impl Into<String>) -> Self {
        Refusal {
            message: message.into(),
        }
    }

    /// A configuration problem: the error names the key; the sentence says to fix it.
    pub fn config(error: ConfigError) -> Self {
        Refusal::new(format!("{error}; fix that and run the command again"))
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // One line, whatever the underlying error's formatting.
        let one_line: Vec<&str> = self.message.split_whitespace().collect();
        f.write_str(&one_line.join(" "))
    }
}

// r[impl cli.exit-codes]
fn main() -> ExitCode {
    let cli = Cli::parse();
    let env = CacheEnv::from_process();
    let outcome = match &cli.command {
        Command::Serve(args) => run_serve(args, &env),
        Command::Elicit(args) => elicit::run(args, &env),
        Command::Pending(args) => pending::run(args, &env),
        Command::Events(args) => events::run(args, &env),
        Command::Snapshots(args) => versions::list(args, &env),
        Command::Restore(args) => versions::restore(args, &env),
        // Its own exit statuses (0, 3, 4; 1 for a refusal): spec/cli.md.
        Command::Rerun(args) => return rerun::main(args, &env),
        Command::Token {
            command: TokenCommand::Mint(args),
        } => token::run(args),
    };
    match outcome {
        Ok(stdout) => {
            let mut out = std::io::stdout().lock();
            if out
                .write_all(stdout.as_bytes())
                .and_then(|()| out.flush())
                .is_err()
            {
                eprintln!("obsidian-tc: could not write to stdout; run the command again");
                return ExitCode::from(1);
            }
            ExitCode::SUCCESS
        }
        Err(refusal) => {
            eprintln!("obsidian-tc: {refusal}");
            ExitCode::from(1)
        }
    }
}

fn run_serve(args: &cli::ServeArgs, env: &CacheEnv) -> Result<String, Refusal> {
    logging::init();
    let plan = serve::plan(args, env)?;
    tracing::info!(
        vaults = plan.config.vaults.len(),
        cache_dir = %plan.cache_dir.display(),
        transport = ?plan.transport,
        legacy_elicitation_shim = plan.legacy_elicitation_shim,
        "serve: configuration checked"
    );
    serve::run(plan)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    fn help(path: &[&str]) -> String {
        let mut command = Cli::command();
        command.build();
        let mut current = &mut command;
        for name in path {
            current = current
                .find_subcommand_mut(name)
                .unwrap_or_else(|| panic!("no subcommand {name}"));
        }
        current.render_long_help().to_string()
    }

    #[test]
    fn the_command_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    // r[verify cli.commands]
    // r[verify cli.elicit.no-ttl]
    // r[verify cli.elicit.caller-default]
    #[test]
    fn help_texts() {
        insta::assert_snapshot!("help", help(&[]));
        insta::assert_snapshot!("help_serve", help(&["serve"]));
        let elicit = help(&["elicit"]);
        assert!(!elicit.contains("--ttl"), "elicit has no --ttl");
        assert!(elicit.contains("[default: stdio]"));
        insta::assert_snapshot!("help_elicit", elicit);
        insta::assert_snapshot!("help_token", help(&["token"]));
        insta::assert_snapshot!("help_token_mint", help(&["token", "mint"]));
    }

    #[test]
    fn a_refusal_is_one_line() {
        let refusal = Refusal::new("first line\n  second   line");
        assert_eq!(refusal.to_string(), "first line second line");
    }
}
