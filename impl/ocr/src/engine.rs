//! The engines as child processes (spec/ocr.md `ocr.engine.no-shell`, `ocr.engine.timeout`,
//! `ocr.unavailable`).
//!
//! Each run is `std::process::Command` with its arguments as separate strings (no shell, so
//! nothing in a file name is ever interpreted), stdin closed, stdout and stderr read on
//! their own threads (a child that fills one pipe while we wait on the other would hang),
//! and a deadline: a child still running at `ocr.timeoutSeconds` is killed and reaped.
//! Every input path handed to an engine is absolute (canonical), so it can never be read as
//! an option.

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// The most bytes of output one run may produce (a page of text is a few KiB; this bounds a
/// broken engine, not a real document).
pub const MAX_STDOUT_BYTES: u64 = 64 * 1024 * 1024;
/// The most bytes of stderr kept for an error message.
pub const MAX_STDERR_BYTES: u64 = 4096;
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
pub fn installed_languages(program: &Path, timeout: Duration) -> Result<Vec<String>, EngineError> {
    let out = run(Engine::Tesseract, program, ["--list-langs"], timeout)?;
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
    timeout: Duration,
) -> Result<(), EngineError> {
    let installed = match installed_languages(program, timeout) {
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

/// Runs `program` with `args` until `timeout`, returning its stdout.
pub fn run<I, S>(
    engine: Engine,
    program: &Path,
    args: I,
    timeout: Duration,
) -> Result<Vec<u8>, EngineError>
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
        // tesseract's OpenMP threads fight each other on a small host; one run, one thread.
        .env("OMP_THREAD_LIMIT", "1");
    let mut child = command.spawn().map_err(|e| match e.kind() {
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
    let io_error = |e: std::io::Error| EngineError::Io {
        engine,
        message: e.to_string(),
    };
    let stdout = child.stdout.take().ok_or_else(|| EngineError::Io {
        engine,
        message: "no stdout pipe".into(),
    })?;
    let stderr = child.stderr.take().ok_or_else(|| EngineError::Io {
        engine,
        message: "no stderr pipe".into(),
    })?;
    let out_reader = thread::spawn(move || read_capped(stdout, MAX_STDOUT_BYTES));
    let err_reader = thread::spawn(move || read_capped(stderr, MAX_STDERR_BYTES));
    let status = wait_until(&mut child, Instant::now() + timeout).map_err(io_error)?;
    let out = out_reader
        .join()
        .unwrap_or_else(|_| Ok((Vec::new(), false)));
    let err = err_reader
        .join()
        .unwrap_or_else(|_| Ok((Vec::new(), false)));
    let Some(status) = status else {
        return Err(EngineError::Timeout {
            engine,
            seconds: timeout.as_secs(),
        });
    };
    let (stdout, overflowed) = out.map_err(io_error)?;
    let (stderr, _) = err.unwrap_or_default();
    if overflowed {
        return Err(EngineError::TooMuchOutput { engine });
    }
    if !status.success() {
        return Err(failed(engine, status, &stderr));
    }
    Ok(stdout)
}

/// Waits for `child` until `deadline`; past it the child is killed and reaped (`None`).
fn wait_until(child: &mut Child, deadline: Instant) -> std::io::Result<Option<ExitStatus>> {
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if Instant::now() >= deadline {
            // Already exited between the two calls is fine: kill then fails, wait reaps.
            let _ = child.kill();
            child.wait()?;
            return Ok(None);
        }
        thread::sleep(POLL);
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

fn failed(engine: Engine, status: ExitStatus, stderr: &[u8]) -> EngineError {
    let text = String::from_utf8_lossy(stderr);
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

    // r[verify ocr.engine.timeout]
    #[test]
    fn a_child_past_its_deadline_is_killed() {
        let started = Instant::now();
        let error = run(
            Engine::Tesseract,
            Path::new("sleep"),
            ["30"],
            Duration::from_millis(200),
        )
        .unwrap_err();
        assert!(matches!(error, EngineError::Timeout { .. }), "{error}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    // r[verify ocr.engine.no-shell]
    #[test]
    fn arguments_are_never_interpreted_by_a_shell() {
        let out = run(
            Engine::PdfToText,
            Path::new("echo"),
            ["$(touch /tmp/x); `id` | cat"],
            Duration::from_secs(5),
        )
        .unwrap();
        assert_eq!(out, b"$(touch /tmp/x); `id` | cat\n");
    }

    #[test]
    fn a_missing_program_names_its_package() {
        let program = Path::new("/nonexistent/tesseract");
        assert_eq!(locate(program), None);
        let error = run(Engine::Tesseract, program, ["x"], Duration::from_secs(1)).unwrap_err();
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
            Duration::from_secs(5),
        )
        .unwrap_err();
        assert!(error.to_string().contains("bad thing"), "{error}");
        assert_eq!(
            missing_language("Error opening data file x\nFailed loading language 'chi_sim'\n"),
            Some("chi_sim".into())
        );
    }
}
