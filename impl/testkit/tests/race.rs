//! The race harness tested on itself: children of this binary report their own outcomes,
//! a child that fails is seen to fail, and actions released [`at_once`] overlap.

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tc_testkit::race::{ChildProcess, REPORT, at_once, start_soon, unix_ns, wait_until};

const CHILD: &str = "TC_TESTKIT_CHILD";

#[test]
fn each_child_reports_its_own_outcome_and_ends_well() {
    let mut children: Vec<ChildProcess> = (0..3)
        .map(|_| ChildProcess::spawn("harness_child", CHILD, "x"))
        .collect();
    let start = start_soon();
    for (i, child) in children.iter_mut().enumerate() {
        child.send(&format!("echo c{i} {start}"));
    }
    let reports: Vec<String> = children.iter_mut().map(ChildProcess::report).collect();
    assert_eq!(reports, ["c0", "c1", "c2"]);
    for child in children {
        assert!(child.wait().success());
    }
}

#[test]
fn a_failing_child_is_reported_as_failed() {
    let mut child = ChildProcess::spawn("harness_child", CHILD, "x");
    child.send("fail");
    assert_eq!(child.try_report(), None, "it panicked without reporting");
    assert!(!child.wait().success());

    let mut silent = ChildProcess::spawn("harness_child", CHILD, "x");
    silent.send("fail");
    let reported = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| silent.report()));
    assert!(reported.is_err(), "report() fails on a child that ended");
}

#[test]
fn finish_fails_on_a_failing_child() {
    let mut child = ChildProcess::spawn("harness_child", CHILD, "x");
    child.send("fail");
    let finished = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| child.finish()));
    assert!(finished.is_err(), "finish() accepted a failed child");
}

#[test]
fn a_killed_child_is_not_a_success() {
    let child = ChildProcess::spawn("harness_child", CHILD, "x");
    assert!(!child.kill().success());
}

#[test]
fn actions_released_at_once_overlap_and_come_back_in_order() {
    const N: usize = 4;
    let arrived = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&arrived);
    // Each action waits (bounded) until all N are in flight: only if they run together does
    // every one of them see N.
    let outcomes = at_once(N, move |i| {
        seen.fetch_add(1, Ordering::SeqCst);
        let deadline = Instant::now() + Duration::from_secs(10);
        while seen.load(Ordering::SeqCst) < N && Instant::now() < deadline {
            std::thread::yield_now();
        }
        (i, seen.load(Ordering::SeqCst))
    });
    assert_eq!(outcomes, (0..N).map(|i| (i, N)).collect::<Vec<_>>());
}

#[test]
fn a_panicking_action_fails_the_caller() {
    let outcome = std::panic::catch_unwind(|| {
        at_once(2, |i| {
            assert!(i != 1, "action 1 fails");
            i
        })
    });
    assert!(outcome.is_err());
}

#[test]
fn wait_until_waits_for_the_start() {
    let start = start_soon();
    wait_until(start);
    assert!(unix_ns() >= start);
}

/// Not a test: the child of the tests above. Reads commands until stdin closes:
/// - `echo <word> <start ns>`: reports `<word>` at the start instant;
/// - `fail`: panics without reporting.
#[test]
#[ignore = "child process of the harness tests; acts only when TC_TESTKIT_CHILD is set"]
fn harness_child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{REPORT}ready").unwrap();
    out.flush().unwrap();
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap();
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["echo", word, start] => {
                wait_until(start.parse().unwrap());
                writeln!(out, "{REPORT}{word}").unwrap();
                out.flush().unwrap();
            }
            ["fail"] => panic!("a deliberately failing child"),
            _ => panic!("unknown command {line:?}"),
        }
    }
}
