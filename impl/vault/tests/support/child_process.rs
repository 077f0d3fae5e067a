//! The child-process harness of the race tests (spec/vault.md `vault.write.locked`): the
//! test binary re-runs itself as children (one ignored child test, told by an environment
//! variable which folder to work in), and parent and children talk in lines. A child's lines
//! meant for the parent start with [`REPORT`], so libtest's own output is skipped.
//!
//! Shared by `impl/vault/tests/note_lock.rs` and `impl/notes/tests/write_races.rs` (included
//! there by path), so both race the same way.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// The marker of a child's line meant for the parent.
pub const REPORT: &str = "@@";

/// One child: the test binary running `child_test` alone, with `env` naming its folder.
pub struct ChildProcess {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl ChildProcess {
    /// Starts the child and waits for its `ready`.
    pub fn spawn(child_test: &str, env: &str, dir: &Path) -> Self {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([child_test, "--exact", "--ignored", "--nocapture"])
            .args(["--test-threads", "1"])
            .env(env, dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut process = ChildProcess {
            child,
            stdin,
            stdout,
        };
        assert_eq!(process.report(), "ready");
        process
    }

    pub fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next line the child meant for us.
    pub fn report(&mut self) -> String {
        loop {
            let mut line = String::new();
            let read = self.stdout.read_line(&mut line).unwrap();
            assert!(read > 0, "the child ended without reporting");
            if let Some(at) = line.find(REPORT) {
                return line[at + REPORT.len()..].trim_end().to_owned();
            }
        }
    }

    /// Closes the child's input and waits for it to end well.
    pub fn finish(self) {
        let ChildProcess {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        assert!(child.wait().unwrap().success());
    }
}
