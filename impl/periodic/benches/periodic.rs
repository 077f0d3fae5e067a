//! What the periodic note tools cost on a 10,000-note vault (spec/periodic.md
//! `periodic.list`, `periodic.get`, `periodic.append`): ten years of daily notes nested
//! `Journal/YYYY/MM/YYYY-MM-DD.md` (3,652), their weekly notes (522) and 5,826 other notes.
//! `list_periodic_notes` reads every note path under the folder from the index and parses it
//! with the moment format; `get_periodic_note` and `append_to_periodic_note` read the
//! settings files and one note. `cargo bench -p tc-periodic --bench periodic` (it also prints
//! p50/p99 over 200 calls of each); `cargo test --benches` runs each once.

use std::hint::black_box;
use std::time::{Duration, Instant};

use chrono::{Days, NaiveDate};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use tc_periodic::moment::Format;
use tc_tools::testing::Tools;

struct PeriodicTools;

impl Tools for PeriodicTools {
    fn registry() -> tc_tools::Registry {
        let mut registry = tc_tools::Registry::new();
        tc_periodic::register(&mut registry).unwrap();
        registry
    }
}

type Fx = tc_tools::testing::Fx<PeriodicTools>;

const NOTES: usize = 10_000;

fn vault() -> Fx {
    let fx = Fx::new();
    fx.put(
        ".obsidian/daily-notes.json",
        r#"{"folder": "Journal", "format": "YYYY/MM/YYYY-MM-DD"}"#,
    );
    fx.put(
        ".obsidian/plugins/periodic-notes/data.json",
        r#"{"weekly": {"enabled": true, "format": "gggg-[W]ww", "folder": "Journal/Weekly"}}"#,
    );
    let first = NaiveDate::from_ymd_opt(2017, 1, 1).unwrap();
    let daily = Format::new("YYYY/MM/YYYY-MM-DD").unwrap();
    let weekly = Format::new("gggg-[W]ww").unwrap();
    let mut written = 0;
    for day in 0..3_652u64 {
        let date = first + Days::new(day);
        fx.put(
            &format!("Journal/{}.md", daily.format_date(date)),
            "# Day\n\n## Log\n- a line\n",
        );
        written += 1;
        if day % 7 == 0 {
            fx.put(
                &format!("Journal/Weekly/{}.md", weekly.format_date(date)),
                "# Week\n",
            );
            written += 1;
        }
    }
    for i in written..NOTES {
        fx.put(
            &format!("notes/{:03}/{i:05}.md", i % 100),
            "# Note\n\nSome text.\n",
        );
    }
    let index = tc_index::open_indexes(
        &fx.cache(),
        [("main", fx.root.as_path())],
        &tc_index::SearchConfig::default(),
    )
    .unwrap()
    .remove(0);
    index.first_build();
    fx.pipeline.vault("main").unwrap().attach_index(index);
    fx
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
    let fx = vault();
    let all = || {
        fx.call("list_periodic_notes", json!({"period": "daily"}))
            .unwrap()
    };
    let month = || {
        fx.call(
            "list_periodic_notes",
            json!({"period": "daily", "from": "2024-03-01", "to": "2024-03-31"}),
        )
        .unwrap()
    };
    let get = || {
        fx.call(
            "get_periodic_note",
            json!({"period": "daily", "date": "2024-03-05"}),
        )
        .unwrap()
    };
    let append = || {
        fx.call(
            "append_to_periodic_note",
            json!({"period": "daily", "date": "2024-03-06", "heading": "Log", "content": "- more"}),
        )
        .unwrap()
    };
    assert!(!all()["notes"].as_array().unwrap().is_empty());
    assert_eq!(month()["notes"].as_array().unwrap().len(), 31);
    assert_eq!(get()["exists"], true);
    let runs: [(&str, &dyn Fn() -> Value); 4] = [
        ("list_periodic_notes daily, first page", &all),
        ("list_periodic_notes daily, one month", &month),
        ("get_periodic_note", &get),
        ("append_to_periodic_note under a heading", &append),
    ];
    for (label, run) in runs {
        let samples = (0..200)
            .map(|_| {
                let start = Instant::now();
                black_box(run());
                start.elapsed()
            })
            .collect();
        percentiles(label, samples);
    }
    let mut group = c.benchmark_group("periodic");
    group.sample_size(20);
    group.bench_function("list_periodic_notes_daily_first_page", |b| {
        b.iter(|| black_box(all()))
    });
    group.bench_function("list_periodic_notes_daily_one_month", |b| {
        b.iter(|| black_box(month()))
    });
    group.bench_function("get_periodic_note", |b| b.iter(|| black_box(get())));
    let format = Format::new("YYYY/MM/YYYY-MM-DD").unwrap();
    let today = NaiveDate::from_ymd_opt(2026, 12, 9).unwrap();
    group.bench_function("moment_parse_one_name", |b| {
        b.iter(|| {
            black_box(
                format
                    .parse(black_box("2024/03/2024-03-05"), today)
                    .unwrap(),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
