//! The engines as child processes (spec/ocr.md `ocr.engine.no-shell`, `ocr.engine.timeout`,
//! `ocr.engine.group`, `ocr.engine.memory`, `ocr.unavailable`).
//!
//! Each run is `std::process::Command` with its arguments as separate strings (no shell, so
//! nothing in a file name is ever interpreted), stdin closed, stdout and stderr read on
//! their own threads (a child that fills one pipe while we wait on the other would hang),
//! and a deadline. Every input path handed to an engine is absolute (canonical), so it can
//! never be read as an option.
//!
//! Containment. The engine starts in a process group of its own, so whatever it starts (a
//! wrapper script standing in for tesseract forks the real one) is reached by one kill of
//! the group: at the deadline, and when the engine exits (nothing it left behind outlives
//! the run). The group is killed while the engine is still unreaped (`waitid` with
//! `WNOWAIT`), so its id cannot have been reused by an unrelated group. Output is read only
//! until the deadline: a process that left the group and keeps a pipe open holds a reader
//! thread, never the call.
//!
//! Each engine process may map at most `ocr.maxMemoryMb` of address space (`RLIMIT_AS`), so a
//! decompression bomb fails its file instead of taking the host's memory. The limit is set
//! with `prlimit(2)` on the child right after `spawn` returns: the workspace forbids unsafe
//! code, so there is no `pre_exec` to set it between fork and exec, and the two other ways
//! (`sh -c 'ulimit -v …; exec "$@"'`, util-linux `prlimit --as=… --`) would put a shell or an
//! extra program between us and every engine. The window this leaves is the few
//! microseconds between the engine's exec and our call, while the dynamic loader runs: an
//! engine reads its input only after it has started up, and what it forks after the call
//! inherits the limit.

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::process::{Pid, Resource, Rlimit, Signal, WaitId, WaitIdOptions};

/// The most bytes of output one run may produce (a page of text is a few KiB; this bounds a
/// broken engine, not a real document).
pub const MAX_STDOUT_BYTES: u64 = 64 * 1024 * 1024;
/// The most bytes of stderr kept for an error message.
pub const MAX_STDERR_BYTES: u64 = 4096;
/// Bytes in a MiB (`ocr.maxMemoryMb` counts these).
pub const MIB: u64 = 1024 * 1024;
/// How often a running child is polled for its exit.
const POLL: Duration = Duration::from_millis(5);

/// Which engine, with the Debian package that provides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Tesseract,
    PdfToText,
    PdfToPpm,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Tesseract => "tesseract",
            Engine::PdfToText => "pdftotext",
            Engine::PdfToPpm => "pdftoppm",
        }
    }

    /// The Debian package to install for it.
    pub fn package(self) -> &'static str {
        match self {
            Engine::Tesseract => "tesseract-ocr",
            Engine::PdfToText | Engine::PdfToPpm => "poppler-utils",
        }
    }
}

/// Why an engine run gave no output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// The program is not on this host (the call is `ocr_unavailable`).
    #[error(
        "{} is not installed on the server host ({}); install it (Debian: apt-get install {})",
        engine.name(), program.display(), engine.package()
    )]
    Missing { engine: Engine, program: PathBuf },
    /// A tesseract language model the configuration names is not installed.
    #[error(
        "tesseract has no model for the language {language:?} (ocr.languages); install it \
         (Debian: apt-get install {package}) or change ocr.languages"
    )]
    MissingLanguage { language: String, package: String },
    /// Killed at the deadline.
    #[error("{} took longer than {seconds} s (ocr.timeoutSeconds) and was stopped", engine.name())]
    Timeout { engine: Engine, seconds: u64 },
    /// It ran and failed.
    #[error("{} failed ({status}): {stderr}", engine.name())]
    Failed {
        engine: Engine,
        status: String,
        stderr: String,
    },
    /// It ran out of the memory `ocr.maxMemoryMb` allows.
    #[error(
        "{} ran out of memory: engines may use at most {limit_mb} MB (ocr.maxMemoryMb): {stderr}",
        engine.name()
    )]
    OutOfMemory {
        engine: Engine,
        limit_mb: u64,
        stderr: String,
    },
    /// It printed more than [`MAX_STDOUT_BYTES`].
    #[error("{} printed more than {MAX_STDOUT_BYTES} bytes and was stopped", engine.name())]
    TooMuchOutput { engine: Engine },
    /// Starting or talking to it failed for another reason.
    #[error("{} could not be run: {message}", engine.name())]
    Io { engine: Engine, message: String },
}

impl EngineError {
    /// Whether the host lacks what the call needs (the whole call is `ocr_unavailable`),
    /// rather than one file failing.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            EngineError::Missing { .. } | EngineError::MissingLanguage { .. }
        )
    }
}

/// Where `program` would be found: itself when it names a path, else the first match on
/// `PATH`. `None` when it is nowhere (checked before the gate, so a call that cannot run is
/// never put to the human).
pub fn locate(program: &Path) -> Option<PathBuf> {
    if program.components().count() > 1 {
        return program.is_file().then(|| program.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// The language models tesseract at `program` has (`tesseract --list-langs`).
pub fn installed_languages(program: &Path, limits: Limits) -> Result<Vec<String>, EngineError> {
    let out = run(Engine::Tesseract, program, ["--list-langs"], limits)?;
    Ok(String::from_utf8_lossy(&out)
        .lines()
        .skip_while(|line| !line.starts_with("List of available languages"))
        .skip(1)
        .map(|line| line.trim().to_owned())
        .filter(|line| !line.is_empty())
        .collect())
}

/// Refuses when one of `languages` has no model: tesseract itself only warns about a
/// missing language when another one loads, and reads with the rest. A listing that fails
/// otherwise (a timeout, an odd build) proves nothing missing; the run itself reports it.
pub fn check_languages(
    program: &Path,
    languages: &[String],
    limits: Limits,
) -> Result<(), EngineError> {
    let installed = match installed_languages(program, limits) {
        Ok(installed) => installed,
        Err(error) if error.is_unavailable() => return Err(error),
        Err(_) => return Ok(()),
    };
    match languages.iter().find(|l| !installed.contains(l)) {
        Some(language) => Err(EngineError::MissingLanguage {
            language: language.clone(),
            package: language_package(language),
        }),
        None => Ok(()),
    }
}

/// The Debian package of a tesseract language model (`chi_sim` → `tesseract-ocr-chi-sim`).
pub fn language_package(language: &str) -> String {
    format!("tesseract-ocr-{}", language.replace('_', "-"))
}

/// What one engine run may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// How long the run may take (`ocr.timeoutSeconds`).
    pub timeout: Duration,
    /// The most address space each of its processes may map, in bytes (`ocr.maxMemoryMb`).
    pub memory_bytes: u64,
}

/// Runs `program` with `args` within `limits`, returning its stdout.
pub fn run<I, S>(
    engine: Engine,
    program: &Path,
    args: I,
    limits: Limits,
) -> Result<Vec<u8>, EngineError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let deadline = Instant::now() + limits.timeout;
    let io_error = |e: std::io::Error| EngineError::Io {
        engine,
        message: e.to_string(),
    };
    let mut running = Running::spawn(engine, program, args, limits.memory_bytes)?;
    let stdout = running.child.stdout.take().ok_or_else(|| EngineError::Io {
        engine,
        message: "no stdout pipe".into(),
    })?;
    let stderr = running.child.stderr.take().ok_or_else(|| EngineError::Io {
        engine,
        message: "no stderr pipe".into(),
    })?;
    let (sender, received) = mpsc::channel();
    let out_sender = sender.clone();
    thread::spawn(move || {
        let _ = out_sender.send((Pipe::Out, read_capped(stdout, MAX_STDOUT_BYTES)));
    });
    thread::spawn(move || {
        let _ = sender.send((Pipe::Err, read_capped(stderr, MAX_STDERR_BYTES)));
    });
    // r[impl ocr.engine.timeout]
    let Some(status) = running.wait_until(deadline).map_err(io_error)? else {
        return Err(EngineError::Timeout {
            engine,
            seconds: limits.timeout.as_secs(),
        });
    };
    // r[impl ocr.engine.group]
    // The engine and its group are gone, so the pipes end once what they hold is read,
    // unless a process that left the group keeps one open: it is not waited for past the
    // deadline (or a moment after the exit, for an exit right at the deadline).
    let read_until = deadline.max(Instant::now() + EXIT_GRACE);
    let (mut out, mut err) = (None, None);
    while out.is_none() || err.is_none() {
        let left = read_until.saturating_duration_since(Instant::now());
        match received.recv_timeout(left) {
            Ok((Pipe::Out, read)) => out = Some(read),
            Ok((Pipe::Err, read)) => err = Some(read),
            Err(_) => break,
        }
    }
    let Some(out) = out else {
        return Err(EngineError::Timeout {
            engine,
            seconds: limits.timeout.as_secs(),
        });
    };
    let (stdout, overflowed) = out.map_err(io_error)?;
    let (stderr, _) = err.and_then(Result::ok).unwrap_or_default();
    if overflowed {
        return Err(EngineError::TooMuchOutput { engine });
    }
    if !status.success() || out_of_memory(&stderr) {
        return Err(failed(engine, status, &stderr, limits.memory_bytes));
    }
    Ok(stdout)
}

/// How long the output of an engine that exited right at its deadline is still read.
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// Which pipe a reader thread read.
enum Pipe {
    Out,
    Err,
}

/// A started engine: its own process group (its pid is the group's id), killed and reaped
/// when dropped unless [`Running::wait_until`] reaped it.
struct Running {
    child: Child,
    pid: Pid,
    reaped: bool,
}

impl Running {
    // r[impl ocr.engine.no-shell]
    // r[impl ocr.engine.memory]
    /// Starts `program` in a new process group with its address space capped.
    fn spawn<I, S>(
        engine: Engine,
        program: &Path,
        args: I,
        memory_bytes: u64,
    ) -> Result<Running, EngineError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = Command::new(program);
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // One kill of the group reaches whatever the engine starts.
            .process_group(0)
            // tesseract's OpenMP threads fight each other on a small host; one run, one thread.
            .env("OMP_THREAD_LIMIT", "1");
        let child = command.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => {
                EngineError::Missing {
                    engine,
                    program: program.to_path_buf(),
                }
            }
            _ => EngineError::Io {
                engine,
                message: e.to_string(),
            },
        })?;
        let running = Running {
            pid: Pid::from_child(&child),
            child,
            reaped: false,
        };
        let cap = Rlimit {
            current: Some(memory_bytes),
            maximum: Some(memory_bytes),
        };
        match rustix::process::prlimit(Some(running.pid), Resource::As, cap) {
            // Gone already (it is a zombie or reaped): there is nothing left to cap.
            Ok(_) | Err(Errno::SRCH) => Ok(running),
            // Never run an engine uncapped; dropping `running` kills and reaps it.
            Err(error) => Err(EngineError::Io {
                engine,
                message: format!("its memory could not be limited: {error}"),
            }),
        }
    }

    /// Waits for the engine's exit until `deadline`, then kills its process group (what it
    /// left running, or all of it at the deadline) and reaps it; `None` at the deadline.
    fn wait_until(&mut self, deadline: Instant) -> std::io::Result<Option<ExitStatus>> {
        loop {
            // WNOWAIT: the engine stays unreaped, so its pid (the group's id) stays ours
            // until the group is killed.
            let exited = rustix::process::waitid(
                WaitId::Pid(self.pid),
                WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT,
            );
            match exited {
                Ok(Some(_)) => {
                    self.kill_group();
                    let status = self.child.wait()?;
                    self.reaped = true;
                    return Ok(Some(status));
                }
                Ok(None) | Err(Errno::INTR) => {}
                Err(error) => return Err(error.into()),
            }
            if Instant::now() >= deadline {
                self.kill_group();
                self.child.wait()?;
                self.reaped = true;
                return Ok(None);
            }
            thread::sleep(POLL);
        }
    }

    /// SIGKILL to the engine's group, and to the engine itself in case it left the group.
    fn kill_group(&mut self) {
        // An empty group (ESRCH) or an engine already exited is fine: kill then fails.
        let _ = rustix::process::kill_process_group(self.pid, Signal::KILL);
        let _ = self.child.kill();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.reaped {
            self.kill_group();
            let _ = self.child.wait();
        }
    }
}

/// Reads `pipe` to its end, keeping at most `cap` bytes; `true` when more came.
fn read_capped(pipe: impl Read, cap: u64) -> std::io::Result<(Vec<u8>, bool)> {
    let mut kept = Vec::new();
    let mut limited = pipe.take(cap + 1);
    limited.read_to_end(&mut kept)?;
    let over = kept.len() as u64 > cap;
    if over {
        kept.truncate(cap as usize);
        // Drain the rest so the child is not blocked on a full pipe until it is killed.
        std::io::copy(&mut limited.into_inner(), &mut std::io::sink())?;
    }
    Ok((kept, over))
}

fn failed(engine: Engine, status: ExitStatus, stderr: &[u8], memory_bytes: u64) -> EngineError {
    let text = String::from_utf8_lossy(stderr);
    if out_of_memory(stderr) {
        return EngineError::OutOfMemory {
            engine,
            limit_mb: memory_bytes / MIB,
            stderr: one_line(&text, 300),
        };
    }
    if engine == Engine::Tesseract
        && let Some(language) = missing_language(&text)
    {
        let package = language_package(&language);
        return EngineError::MissingLanguage { language, package };
    }
    EngineError::Failed {
        engine,
        status: status.to_string(),
        stderr: one_line(&text, 300),
    }
}

/// Whether an engine's stderr says an allocation failed: leptonica's "malloc fail", poppler's
/// "Out of memory" (pdftoppm then writes a cut image and still exits 0), C++'s `bad_alloc`.
fn out_of_memory(stderr: &[u8]) -> bool {
    let text = String::from_utf8_lossy(stderr);
    [
        "malloc fail",
        "Out of memory",
        "bad_alloc",
        "Cannot allocate memory",
    ]
    .iter()
    .any(|sign| text.contains(sign))
}

/// tesseract's "Failed loading language 'xyz'".
fn missing_language(stderr: &str) -> Option<String> {
    let rest = stderr.split("Failed loading language '").nth(1)?;
    let language = rest.split('\'').next()?;
    (!language.is_empty()).then(|| language.to_owned())
}

/// `text` as one printable line of at most `max` bytes (for an error message).
pub fn one_line(text: &str, max: usize) -> String {
    let mut line: String = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    if line.len() > max {
        let mut cut = max;
        while !line.is_char_boundary(cut) {
            cut -= 1;
        }
        line.truncate(cut);
        line.push('…');
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(timeout: Duration) -> Limits {
        Limits {
            timeout,
            memory_bytes: 1024 * MIB,
        }
    }

    // r[verify ocr.engine.timeout]
    #[test]
    fn a_child_past_its_deadline_is_killed() {
        let started = Instant::now();
        let error = run(
            Engine::Tesseract,
            Path::new("sleep"),
            ["30"],
            limits(Duration::from_millis(200)),
        )
        .unwrap_err();
        assert!(matches!(error, EngineError::Timeout { .. }), "{error}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    // r[verify ocr.engine.group]
    #[test]
    fn what_the_engine_started_is_killed_with_it_at_the_deadline() {
        // A wrapper that forks the real work (no `exec`): the child keeps the pipes open.
        let started = Instant::now();
        let error = run(
            Engine::Tesseract,
            Path::new("sh"),
            ["-c", "sleep 30; echo never"],
            limits(Duration::from_millis(300)),
        )
        .unwrap_err();
        assert!(matches!(error, EngineError::Timeout { .. }), "{error}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }

    // r[verify ocr.engine.group]
    #[test]
    fn what_the_engine_left_running_is_killed_when_it_exits() {
        let started = Instant::now();
        let out = run(
            Engine::PdfToText,
            Path::new("sh"),
            ["-c", "sleep 30 & echo done"],
            limits(Duration::from_secs(20)),
        )
        .unwrap();
        assert_eq!(out, b"done\n");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }

    // r[verify ocr.engine.group]
    #[test]
    fn a_process_that_left_the_group_is_not_waited_for_past_the_deadline() {
        // `setsid` puts the sleeper in a session of its own, out of reach of the group kill;
        // it holds stdout for 4 s.
        let started = Instant::now();
        let error = run(
            Engine::Tesseract,
            Path::new("sh"),
            ["-c", "setsid sleep 4 & exec sleep 30"],
            limits(Duration::from_millis(300)),
        )
        .unwrap_err();
        assert!(matches!(error, EngineError::Timeout { .. }), "{error}");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
    }

    /// The `Max address space` line of `/proc/<pid>/limits`: soft and hard, in bytes.
    fn address_space_limit(pid: Pid) -> Vec<String> {
        let limits = std::fs::read_to_string(format!("/proc/{}/limits", pid.as_raw_pid())).unwrap();
        let line = limits
            .lines()
            .find(|l| l.starts_with("Max address space"))
            .unwrap()
            .to_owned();
        line["Max address space".len()..]
            .split_whitespace()
            .take(2)
            .map(str::to_owned)
            .collect()
    }

    // r[verify ocr.engine.memory]
    #[test]
    fn an_engine_s_address_space_is_capped_from_its_start() {
        let running =
            Running::spawn(Engine::Tesseract, Path::new("sleep"), ["5"], 300 * MIB).unwrap();
        let bytes = (300 * MIB).to_string();
        assert_eq!(address_space_limit(running.pid), [bytes.clone(), bytes]);
        drop(running);
        // And what the engine starts inherits it: a shell asked for its own limit (in KiB).
        let out = run(
            Engine::Tesseract,
            Path::new("sh"),
            ["-c", "sleep 0.2; ulimit -v"],
            Limits {
                timeout: Duration::from_secs(5),
                memory_bytes: 256 * MIB,
            },
        )
        .unwrap();
        assert_eq!(String::from_utf8_lossy(&out).trim(), "262144");
    }

    // r[verify ocr.engine.memory]
    #[test]
    fn an_engine_out_of_memory_is_named_so_even_when_it_exits_0() {
        let error = run(
            Engine::PdfToPpm,
            Path::new("sh"),
            ["-c", "echo 'Out of memory' >&2; exit 0"],
            limits(Duration::from_secs(5)),
        )
        .unwrap_err();
        assert!(
            matches!(error, EngineError::OutOfMemory { limit_mb: 1024, .. }),
            "{error}"
        );
        assert!(error.to_string().contains("ocr.maxMemoryMb"), "{error}");
    }

    // r[verify ocr.engine.no-shell]
    #[test]
    fn arguments_are_never_interpreted_by_a_shell() {
        let out = run(
            Engine::PdfToText,
            Path::new("echo"),
            ["$(touch /tmp/x); `id` | cat"],
            limits(Duration::from_secs(5)),
        )
        .unwrap();
        assert_eq!(out, b"$(touch /tmp/x); `id` | cat\n");
    }

    #[test]
    fn a_missing_program_names_its_package() {
        let program = Path::new("/nonexistent/tesseract");
        assert_eq!(locate(program), None);
        let error = run(
            Engine::Tesseract,
            program,
            ["x"],
            limits(Duration::from_secs(1)),
        )
        .unwrap_err();
        assert!(error.is_unavailable());
        assert!(
            error.to_string().contains("apt-get install tesseract-ocr"),
            "{error}"
        );
    }

    #[test]
    fn a_failure_keeps_one_line_of_stderr_and_the_missing_language_is_named() {
        let error = run(
            Engine::PdfToText,
            Path::new("sh"),
            ["-c", "echo 'bad\nthing' >&2; exit 3"],
            limits(Duration::from_secs(5)),
        )
        .unwrap_err();
        assert!(error.to_string().contains("bad thing"), "{error}");
        assert_eq!(
            missing_language("Error opening data file x\nFailed loading language 'chi_sim'\n"),
            Some("chi_sim".into())
        );
    }
}
