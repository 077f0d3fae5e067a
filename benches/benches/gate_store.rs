//! Durable token issue + redeem per second on a real cache.db (the design target:
//! ≥ 2,000 per second on 2 cores). The file is in WAL mode with synchronous=FULL,
//! and every consume is committed and synced before redeem returns (the mint skips its own
//! sync; see tc-gate's store). Sequential cases pay one fsync per cycle; the concurrent case
//! shows the group commit sharing it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use criterion::{Criterion, Throughput, criterion_group};
use tc_gate::clock::{OsEntropy, SystemClock};
use tc_gate::{CallBinding, Gate, GateConfig, SpentReason, StateFp, Store};

const CALL: CallBinding<'static> = CallBinding {
    vault: "main",
    tool: "delete_note",
    args_hash: "0123456789abcdef0123456789abcdef",
    caller: "stdio",
};

/// Threads redeeming at once in the concurrent case.
const CALLERS: usize = 8;

/// A fresh directory on the machine's disk (the temp dir), removed when dropped.
struct BenchDir(PathBuf);

impl BenchDir {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("tc-bench-gate-store-{}", std::process::id()));
        // A leftover from an interrupted run is simply replaced.
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create bench dir");
        BenchDir(dir)
    }
}

impl Drop for BenchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn gate_store(c: &mut Criterion) {
    let dir = BenchDir::new();
    let gate = Gate::new(
        Store::open(dir.0.join("cache.db")).expect("open cache.db"),
        Arc::new(SystemClock),
        Arc::new(OsEntropy),
        GateConfig::new(86_400).expect("ttl"),
    );
    let fp = StateFp::none();

    let mut group = c.benchmark_group("gate_store");
    group.throughput(Throughput::Elements(1));
    // Each round is the CLI route's own: the blocked call raises, the operator mints (which
    // consumes that raise), the call redeems.
    group.bench_function("issue_redeem", |b| {
        b.iter(|| {
            gate.raise(&CALL, &fp).expect("raise");
            let issued = gate.issue(&CALL, None).expect("issue");
            gate.redeem(issued.token.expose(), &CALL, StateFp::none)
                .expect("redeem")
                .keep_spent(SpentReason::Completed);
        })
    });
    // The whole CLI route as the server drives it: mint, spend, and the handler-run event.
    group.bench_function("issue_redeem_handler_run", |b| {
        b.iter(|| {
            gate.raise(&CALL, &fp).expect("raise");
            let issued = gate.issue(&CALL, None).expect("issue");
            gate.redeem(issued.token.expose(), &CALL, StateFp::none)
                .expect("redeem")
                .enter_handler()
                .expect("enter")
                .keep_spent(SpentReason::Completed);
        })
    });
    // Concurrent callers in one server process: their consumes share a synced commit.
    group.bench_function("issue_redeem_8_callers", |b| {
        b.iter_custom(|iters| {
            let per_caller = iters.div_ceil(CALLERS as u64);
            let started = Instant::now();
            std::thread::scope(|scope| {
                for n in 0..CALLERS {
                    let (gate, fp) = (&gate, &fp);
                    scope.spawn(move || {
                        // One principal per thread: each raises and mints its own call.
                        let caller = format!("caller-{n}");
                        let call = CallBinding {
                            caller: &caller,
                            ..CALL
                        };
                        for _ in 0..per_caller {
                            gate.raise(&call, fp).expect("raise");
                            let issued = gate.issue(&call, None).expect("issue");
                            gate.redeem(issued.token.expose(), &call, StateFp::none)
                                .expect("redeem")
                                .keep_spent(SpentReason::Completed);
                        }
                    });
                }
            });
            // Report the time per requested iteration, extra rounded-up ones included.
            started
                .elapsed()
                .mul_f64(iters as f64 / (per_caller * CALLERS as u64) as f64)
        })
    });
    group.finish();
}

criterion_group!(benches, gate_store);
