//! A PDF's text layer through poppler's `pdftotext`, bounded as the OCR family bounds its
//! engines (spec/attachments.md `attachments.get.pdf`): a child process with its arguments as
//! separate strings (no shell), the file given by its absolute path, stdin closed, its own
//! process group killed at the deadline or when it exits, its address space capped
//! (`RLIMIT_AS`), and at most [`MAX_OUTPUT`] bytes of output read.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::process::{Pid, Resource, Rlimit, Signal, WaitId, WaitIdOptions};

/// How long one extraction may take.
pub const TIMEOUT: Duration = Duration::from_secs(20);
/// The address space pdftotext may map.
pub const MEMORY_BYTES: u64 = 1024 * 1024 * 1024;
/// The most text read from it (what does not fit the response is cut anyway).
pub const MAX_OUTPUT: u64 = 16 * 1024 * 1024;
const POLL: Duration = Duration::from_millis(5);

/// Why a PDF has no text here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PdfError {
    #[error(
        "pdftotext is not installed on the server host (Debian: apt-get install poppler-utils)"
    )]
    Missing,
    #[error("pdftotext took longer than {} s and was stopped", TIMEOUT.as_secs())]
    Timeout,
    #[error("pdftotext failed: {0}")]
    Failed(String),
}

/// Kills the child's group and reaps it unless it was reaped.
struct Running {
    child: std::process::Child,
    pid: Pid,
    reaped: bool,
}

impl Running {
    fn kill_group(&mut self) {
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

// r[impl attachments.get.pdf]
/// The text of the PDF at `file` (absolute), pages separated by form feeds as pdftotext
/// writes them; `(text, cut)` where `cut` says the output was longer than [`MAX_OUTPUT`].
pub fn pdf_text(program: &Path, file: &Path) -> Result<(String, bool), PdfError> {
    let deadline = Instant::now() + TIMEOUT;
    let child = Command::new(program)
        .args([
            "-q".as_ref(),
            "-enc".as_ref(),
            "UTF-8".as_ref(),
            file.as_os_str(),
            "-".as_ref(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => {
                PdfError::Missing
            }
            _ => PdfError::Failed(e.to_string()),
        })?;
    let mut running = Running {
        pid: Pid::from_child(&child),
        child,
        reaped: false,
    };
    let cap = Rlimit {
        current: Some(MEMORY_BYTES),
        maximum: Some(MEMORY_BYTES),
    };
    match rustix::process::prlimit(Some(running.pid), Resource::As, cap) {
        Ok(_) | Err(Errno::SRCH) => {}
        Err(e) => {
            return Err(PdfError::Failed(format!(
                "its memory could not be limited: {e}"
            )));
        }
    }
    let stdout = running.child.stdout.take();
    let (sender, received) = mpsc::channel();
    thread::spawn(move || {
        let mut kept = Vec::new();
        let read = stdout.map(|out| {
            let mut limited = out.take(MAX_OUTPUT + 1);
            let result = limited.read_to_end(&mut kept);
            let _ = std::io::copy(&mut limited.into_inner(), &mut std::io::sink());
            result
        });
        let _ = sender.send((kept, read.is_some_and(|r| r.is_ok())));
    });
    let status = loop {
        let exited = rustix::process::waitid(
            WaitId::Pid(running.pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT,
        );
        match exited {
            Ok(Some(_)) => {
                running.kill_group();
                let status = running
                    .child
                    .wait()
                    .map_err(|e| PdfError::Failed(e.to_string()))?;
                running.reaped = true;
                break status;
            }
            Ok(None) | Err(Errno::INTR) => {}
            Err(e) => return Err(PdfError::Failed(e.to_string())),
        }
        if Instant::now() >= deadline {
            return Err(PdfError::Timeout);
        }
        thread::sleep(POLL);
    };
    let left = deadline.saturating_duration_since(Instant::now()) + Duration::from_millis(500);
    let (mut out, ok) = received.recv_timeout(left).map_err(|_| PdfError::Timeout)?;
    if !status.success() || !ok {
        return Err(PdfError::Failed(format!("exit status {status}")));
    }
    let cut = out.len() as u64 > MAX_OUTPUT;
    out.truncate(MAX_OUTPUT as usize);
    Ok((String::from_utf8_lossy(&out).into_owned(), cut))
}
