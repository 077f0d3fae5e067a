//! What `list_tasks` costs on a 10,000-note vault with 50,000 task lines (spec/tasks.md
//! `tasks.list`): the first page of every task, the todo tasks due in a month, the tasks of
//! one tag, and the first listing right after a note was edited. `cargo bench -p
//! tc-periodic --bench tasks` (it also prints p50/p99 over 200 calls of each); `cargo test
//! --benches` runs each once.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use tc_tools::testing::Tools;

struct TasksTools;

impl Tools for TasksTools {
    fn registry() -> tc_tools::Registry {
        let mut registry = tc_tools::Registry::new();
        tc_periodic::tasks::register(&mut registry).unwrap();
        registry
    }
}

type Fx = tc_tools::testing::Fx<TasksTools>;

const NOTES: usize = 10_000;
const TASKS_PER_NOTE: usize = 5;

fn vault() -> (Fx, std::sync::Arc<tc_index::VaultIndex>) {
    let fx = Fx::new();
    for i in 0..NOTES {
        let mut body = format!("---\ntags: [daily]\n---\n# Note {i}\n\nSome text.\n\n## Tasks\n");
        for t in 0..TASKS_PER_NOTE {
            let n = i * TASKS_PER_NOTE + t;
            let box_char = [' ', 'x', '/', ' ', '-'][n % 5];
            let day = 1 + n % 28;
            let month = 1 + (n / 28) % 12;
            let priority = ["", " ⏫", " 🔼", " 🔽", ""][n % 5];
            body.push_str(&format!(
                "- [{box_char}] task {n} #area/{}{priority} 📅 2026-{month:02}-{day:02}\n",
                n % 40
            ));
        }
        fx.put(&format!("daily/{:03}/{i:05}.md", i % 100), &body);
    }
    let index = tc_index::open_indexes(
        &fx.cache(),
        [("main", fx.root.as_path())],
        &tc_index::SearchConfig::default(),
    )
    .unwrap()
    .remove(0);
    index.first_build();
    fx.pipeline
        .vault("main")
        .unwrap()
        .attach_index(index.clone());
    (fx, index)
}

fn percentiles(label: &str, mut samples: Vec<Duration>) {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    println!(
        "{label}: p50 {:.2} ms, p99 {:.2} ms over {} calls",
        at(0.50).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
        samples.len()
    );
}

fn bench(c: &mut Criterion) {
    let (fx, index) = vault();
    let all = || fx.call("list_tasks", json!({})).unwrap();
    let due = || {
        fx.call(
            "list_tasks",
            json!({"status": "todo", "due_after": "2026-03-01", "due_before": "2026-03-31"}),
        )
        .unwrap()
    };
    let tagged = || fx.call("list_tasks", json!({"tag": "area/7"})).unwrap();
    assert!(!all()["tasks"].as_array().unwrap().is_empty());
    assert!(all()["next_cursor"].is_string());
    assert!(!due()["tasks"].as_array().unwrap().is_empty());
    assert!(!tagged()["tasks"].as_array().unwrap().is_empty());
    if std::env::args().any(|a| a == "--bench") {
        for (label, call) in [
            (
                "list_tasks, first page of 50,000 tasks",
                &all as &dyn Fn() -> Value,
            ),
            ("list_tasks, todo due in March", &due),
            ("list_tasks, tag area/7", &tagged),
        ] {
            let samples = (0..200)
                .map(|_| {
                    let started = Instant::now();
                    black_box(call());
                    started.elapsed()
                })
                .collect();
            percentiles(label, samples);
        }
        let samples = (0..50)
            .map(|round| {
                fx.put(
                    "daily/000/00000.md",
                    &format!("- [ ] edited {round} 📅 2026-03-0{}\n", 1 + round % 9),
                );
                let started = Instant::now();
                black_box(due());
                started.elapsed()
            })
            .collect();
        percentiles("list_tasks right after a note was edited", samples);
        // Where that time goes: the reconciliation of the edit alone, then the listing on
        // the index it left.
        let (mut reconciled, mut listed) = (Vec::new(), Vec::new());
        for round in 0..50 {
            fx.put(
                "daily/000/00000.md",
                &format!("- [ ] again {round} 📅 2026-03-0{}\n", 1 + round % 9),
            );
            let started = Instant::now();
            index.refresh().unwrap();
            reconciled.push(started.elapsed());
            let started = Instant::now();
            black_box(due());
            listed.push(started.elapsed());
        }
        percentiles("  of which the reconciliation of the edit", reconciled);
        percentiles("  and the listing after it", listed);
    }
    let mut group = c.benchmark_group("tasks_10000");
    group.sample_size(20);
    group.bench_function("list_tasks_first_page", |b| b.iter(|| black_box(all())));
    group.bench_function("list_tasks_todo_due_march", |b| b.iter(|| black_box(due())));
    group.bench_function("list_tasks_tag", |b| b.iter(|| black_box(tagged())));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
