"""The daily-driver tools through the built binary and the official Python SDK (`mcp` 2.3) over
stdio, on a vault laid out as a person's: a daily note appended to under its heading from the
vault's own Daily notes settings (folder, `YYYY/MM/YYYY-MM-DD`, a template with a YAML
comment), tasks listed by due date, a template named as the picker names it, an image shown
to the model, a base whose filters change only with the printed approval, and a tag renamed
under one approval and undone from its version."""

from __future__ import annotations

import json
from typing import Any

from harness import MODERN, call_bounded, connect, failure, make_vault, run_bounded, run_elicit, success

TEMPLATE = "---\ncreated: {{date:YYYY-MM-DD}} # as the template wrote it\n---\n# {{title}}\n\n## Log\n\n## Tasks\n"

run = run_bounded
call = call_bounded


def test_a_journal_day_through_the_real_client() -> None:
    # r[verify periodic.append]
    # r[verify periodic.settings.daily]
    # r[verify templates.name]
    async def body() -> None:
        with make_vault() as v:
            (v.vault / ".obsidian").mkdir()
            (v.vault / ".obsidian" / "daily-notes.json").write_text(
                json.dumps({"folder": "Journal", "format": "YYYY/MM/YYYY-MM-DD", "template": "Templates/Daily"})
            )
            (v.vault / ".obsidian" / "templates.json").write_text(json.dumps({"folder": "Templates"}))
            (v.vault / "Templates").mkdir()
            (v.vault / "Templates" / "Daily.md").write_text(TEMPLATE)
            (v.vault / "Templates" / "Meeting.md").write_text("# {{title}} with {{who}}\n")
            (v.vault / "projects").mkdir()
            (v.vault / "projects" / "plan.md").write_text(
                "- [ ] Draft the budget 📅 2026-12-10 ⏫\n- [ ] Later 📅 2027-03-01\n- [x] Done ✅ 2026-12-01\n"
            )
            async with connect(v, era=MODERN, answer=None) as c:
                day = {"period": "daily", "date": "2026-12-05"}
                appended = success(
                    await call(c, "append_to_periodic_note", {**day, "heading": "Log", "content": "- Called the bank"}),
                    "append to today's note",
                )
                assert appended["path"] == "Journal/2026/12/2026-12-05.md" and appended["created"] is True
                text = (v.vault / appended["path"]).read_text()
                assert text == TEMPLATE.replace("{{date:YYYY-MM-DD}}", "2026-12-05").replace(
                    "{{title}}", "2026-12-05"
                ).replace("## Log\n", "## Log\n- Called the bank\n"), text
                got = success(await call(c, "get_periodic_note", day), "read today's note")
                assert got["exists"] is True and got["content"] == text

                due = success(
                    await call(c, "list_tasks", {"folder": "projects", "due_before": "2026-12-11", "status": "todo"}),
                    "tasks due before Friday",
                )
                assert [t["due"] for t in due["tasks"]] == ["2026-12-10"], due

                made = success(
                    await call(
                        c, "create_from_template", {"template": "Meeting", "path": "meetings/Sync.md", "variables": {"who": "Sam"}}
                    ),
                    "from the meeting template",
                )
                assert made["template"] == "Templates/Meeting.md"
                assert (v.vault / "meetings" / "Sync.md").read_text() == "# Sync with Sam\n"
                off = failure(await call(c, "get_periodic_note", {"period": "monthly"}), "monthly off")
                assert off["code"] == "periodic_not_configured", off

    run(body)


def test_a_base_filter_change_waits_for_the_printed_approval_and_a_rename_is_undone() -> None:
    # r[verify versions.keep.links-and-tags]
    async def body() -> None:
        with make_vault() as v:
            (v.vault / "projects").mkdir()
            for n in range(3):
                (v.vault / "projects" / f"p{n}.md").write_text(f"---\ntags: [todo] # mine\n---\n# P{n} #todo\n")
            async with connect(v, era=MODERN, answer=None) as c:
                success(
                    await call(c, "create_base", {"path": "Projects.base", "definition": {"filters": "status == 'active'"}}),
                    "create a base",
                )
                patch = {"path": "Projects.base", "patch": {"filters": "status == 'paused'"}}
                err = failure(await call(c, "update_base", patch), "a filter change asks")
                assert err["code"] == "elicit_required", err
                minted = run_elicit(v, err)
                assert minted.returncode == 0, minted.stderr
                success(await call(c, "update_base", {**patch, "elicit_token": minted.stdout.strip()}), "approved")
                assert "paused" in (v.vault / "Projects.base").read_text()

                rename = {"from": "todo", "to": "task", "dry_run": False}
                err = failure(await call(c, "rename_tag", rename), "a rename asks once")
                minted = run_elicit(v, err)
                assert minted.returncode == 0, minted.stderr
                done = success(await call(c, "rename_tag", {**rename, "elicit_token": minted.stdout.strip()}), "rename")
                assert done["notes_count"] == 3, done
                note = v.vault / "projects" / "p0.md"
                assert note.read_text() == "---\ntags: [task] # mine\n---\n# P0 #task\n"
                kept = success(await call(c, "list_snapshots", {"path": "projects/p0.md"}), "its version")
                assert len(kept["snapshots"]) == 1, kept
                restore = {"path": "projects/p0.md", "snapshot_id": kept["snapshots"][0]["snapshot_id"]}
                err = failure(await call(c, "restore_note", restore), "a restore asks")
                minted = run_elicit(v, err)
                success(await call(c, "restore_note", {**restore, "elicit_token": minted.stdout.strip()}), "undo")
                assert note.read_text() == "---\ntags: [todo] # mine\n---\n# P0 #todo\n"

    run(body)
