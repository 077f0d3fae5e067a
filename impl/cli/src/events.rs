//! `obsidian-tc events` (spec/cli.md `cli.events.*`; spec/events.md; spec/cli.md, spec/events.md): the
//! audit log of cache.db, oldest first from `--after`, filtered by `--name`, as a table or
//! one JSON object a line, and with `--follow` watched live.
//!
//! An event names its vault, tool, args_hash, time and the caller's hash (the gate never
//! stores a caller id, a token, a secret or note content in an event, spec
//! `events.no-secrets`), so what is printed is safe to paste into a ticket.

use std::io::Write;
use std::time::Duration;

use serde_json::json;
use tc_gate::{Event, EventName, Gate};
use tc_server::config::CacheEnv;
use tc_tools::escape_for_terminal;

use crate::Refusal;
use crate::cli::EventsArgs;
use crate::elicit::open_gate;

/// Events read per query.
const PAGE: usize = 500;
/// How often `--follow` looks for new events.
const FOLLOW_EVERY: Duration = Duration::from_millis(250);

pub fn run(args: &EventsArgs, env: &CacheEnv) -> Result<String, Refusal> {
    let (config, cache_dir) = args.place.resolve(env)?;
    let name = match &args.name {
        Some(name) => Some(EventName::parse(name).ok_or_else(|| {
            let known: Vec<&str> = EventName::ALL.iter().map(|n| n.as_str()).collect();
            Refusal::new(format!(
                "--name {name:?} is no event name; use one of {}",
                known.join(", ")
            ))
        })?),
        None => None,
    };
    let gate = open_gate(&config, &cache_dir)?;
    let mut after = args.after;
    let mut out = std::io::stdout().lock();
    loop {
        after = print_after(&gate, after, name, args.json, &mut out)?;
        if !args.follow {
            return Ok(String::new());
        }
        std::thread::sleep(FOLLOW_EVERY);
    }
}

/// Prints every event after `after` (of `name`, if given); returns the last id read.
fn print_after(
    gate: &Gate,
    mut after: i64,
    name: Option<EventName>,
    json: bool,
    out: &mut impl Write,
) -> Result<i64, Refusal> {
    loop {
        let events = gate
            .events(after, PAGE)
            .map_err(|e| Refusal::new(format!("cannot read cache.db events: {e}")))?;
        for event in &events {
            after = event.id;
            if name.is_some_and(|n| n != event.name) {
                continue;
            }
            let line = if json {
                json_line(event)
            } else {
                table_line(event)
            };
            writeln!(out, "{line}")
                .and_then(|()| out.flush())
                .map_err(|_| Refusal::new("could not write to stdout"))?;
        }
        if events.len() < PAGE {
            return Ok(after);
        }
    }
}

// r[impl cli.events.json-caller]
fn json_line(event: &Event) -> String {
    json!({
        "id": event.id,
        "at_ms": event.at_ms,
        "at": utc(event.at_ms),
        "name": event.name.as_str(),
        "vault": event.vault,
        "tool": event.tool,
        "args_hash": event.args_hash,
        "caller": event.caller,
        "caller_hash": event.caller_hash,
        "detail": event.detail,
    })
    .to_string()
}

fn table_line(event: &Event) -> String {
    let field = |value: &Option<String>| {
        value
            .as_deref()
            .map_or_else(|| "-".to_owned(), escape_for_terminal)
    };
    format!(
        "{:>6}  {}  {:<22} vault {}  tool {}  args_hash {}  caller {}  {}",
        event.id,
        utc(event.at_ms),
        event.name.as_str(),
        field(&event.vault),
        field(&event.tool),
        field(&event.args_hash),
        field(&event.caller.clone().or_else(|| event.caller_hash.clone())),
        escape_for_terminal(&event.detail.to_string()),
    )
}

/// `2026-12-01T09:14:12.345Z` (the proleptic Gregorian calendar, UTC).
fn utc(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    // Howard Hinnant's days-from-civil, inverted.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1_000 % 60,
        in_day % 1_000
    )
}

#[cfg(test)]
mod tests {
    use super::utc;

    #[test]
    fn times_are_utc_iso_8601() {
        assert_eq!(utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(utc(1_796_040_000_123), "2026-11-30T12:00:00.123Z");
        assert_eq!(utc(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }
}
