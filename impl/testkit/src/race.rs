//! The multi-process race harness (spec/vault.md `vault.write.locked`, spec/config.md
//! `config.cache-dir.shared-startup`).
//!
//! A test binary re-runs itself as children: one ignored child test, told by an environment
//! variable which folder to work in, acts only when that variable is set. Parent and
//! children talk in lines; a child's lines meant for the parent start with [`REPORT`], so
//! libtest's own output is skipped. To make several children act at the same instant the
//! parent sends them a start time a little ahead ([`start_soon`]) and each waits for it
//! ([`wait_until`]); [`at_once`] lets N actions of the parent itself go together.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The marker of a child's line meant for the parent.
pub const REPORT: &str = "@@";

/// One child: the current test binary running `child_test` alone.
#[derive(Debug)]
pub struct ChildProcess {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl ChildProcess {
    /// Starts the child with `env` naming its folder `dir`, and waits for its `ready`.
    pub fn spawn(child_test: &str, env: &str, dir: impl AsRef<OsStr>) -> Self {
        let mut process = Self::start(child_test, &[(env, dir.as_ref())]);
        assert_eq!(process.report(), "ready", "the child did not start");
        process
    }

    /// Starts the child with the environment `envs`, without waiting for anything from it.
    pub fn start(child_test: &str, envs: &[(&str, &OsStr)]) -> Self {
        let exe = std::env::current_exe().expect("the test binary's path");
        let mut child = Command::new(exe)
            .args([child_test, "--exact", "--ignored", "--nocapture"])
            .args(["--test-threads", "1"])
            .envs(envs.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn the child test");
        let stdin = child.stdin.take().expect("the child's stdin");
        let stdout = BufReader::new(child.stdout.take().expect("the child's stdout"));
        ChildProcess {
            child,
            stdin,
            stdout,
        }
    }

    /// Sends one line; a child that has ended is reported by the next [`Self::report`].
    pub fn send(&mut self, line: &str) {
        let sent = writeln!(self.stdin, "{line}").and_then(|()| self.stdin.flush());
        if let Err(e) = sent {
            eprintln!("sending {line:?} to the child: {e}");
        }
    }

    /// The next line the child meant for us, or `None` when it ended first.
    pub fn try_report(&mut self) -> Option<String> {
        loop {
            let mut line = String::new();
            if self.stdout.read_line(&mut line).ok()? == 0 {
                return None;
            }
            // libtest may have written "test <name> ... " before it on the same line.
            if let Some(at) = line.find(REPORT) {
                return Some(line[at + REPORT.len()..].trim_end().to_owned());
            }
        }
    }

    /// The next line the child meant for us; a child that ended without one fails the test.
    pub fn report(&mut self) -> String {
        self.try_report()
            .expect("the child ended without reporting")
    }

    /// Closes the child's input and waits for it to end: its exit status.
    pub fn wait(self) -> ExitStatus {
        let ChildProcess {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        child.wait().expect("wait for the child")
    }

    /// Kills the child (e.g. mid-action) and reaps it: its exit status.
    pub fn kill(mut self) -> ExitStatus {
        let _ = self.child.kill();
        self.child.wait().expect("wait for the child")
    }

    /// Closes the child's input and waits for it to end well.
    pub fn finish(self) {
        let status = self.wait();
        assert!(status.success(), "the child failed: {status}");
    }
}

/// Runs `action(0..n)` on `n` threads released together by one barrier, and returns each
/// one's outcome in index order. A panicking action fails the caller with its message.
pub fn at_once<T, F>(n: usize, action: F) -> Vec<T>
where
    T: Send + 'static,
    F: Fn(usize) -> T + Send + Sync + 'static,
{
    let barrier = Arc::new(Barrier::new(n));
    let action = Arc::new(action);
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let (barrier, action) = (Arc::clone(&barrier), Arc::clone(&action));
            std::thread::spawn(move || {
                barrier.wait();
                action(i)
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
        .collect()
}

/// Nanoseconds since the Unix epoch: the clock parent and children share.
pub fn unix_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_nanos()
}

/// A start instant a little ahead, so every child is waiting for it when it comes.
pub fn start_soon() -> u128 {
    unix_ns() + Duration::from_millis(30).as_nanos()
}

/// Waits for `start` (sleeping most of the way, spinning the last millisecond).
pub fn wait_until(start: u128) {
    loop {
        let now = unix_ns();
        if now >= start {
            return;
        }
        let left = start - now;
        if left > 1_000_000 {
            let sleep = u64::try_from(left - 1_000_000).unwrap_or(u64::MAX);
            std::thread::sleep(Duration::from_nanos(sleep));
        } else {
            std::hint::spin_loop();
        }
    }
}
