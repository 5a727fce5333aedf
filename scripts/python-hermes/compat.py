"""Store compatibility between our `hermes` (Rust) and Python Hermes (hermes-agent from
PyPI) on one ~/.hermes/cron/jobs.json. Started by compat.sh; plain python3.

  A. Python writes (its own CLI and create_job API), ours reads and edits.
  B. Ours writes, Python reads (load_jobs/list_jobs, its CLI), and both compute the same
     next runs and the same due set (clocks pinned: HERMES_NOW / PYHERMES_NOW).
  C. Both edit one store in turn; after every step both read it and agree.

Each check prints PASS or FAIL (exit status 1 if any failed); INFO lines are known,
documented differences (docs/STORE.md#known-differences), not failures.
"""

import argparse
import copy
import datetime as dt
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ZONE = "Europe/Berlin"
FAILS = []
COUNTS = {"PASS": 0, "FAIL": 0, "INFO": 0}


def report(kind, name, detail=""):
    COUNTS[kind] += 1
    if kind == "FAIL":
        FAILS.append(name)
    line = f"{kind:4}  {name}"
    if detail:
        line += f"\n        {detail}" if kind != "PASS" else f"  ({detail})"
    print(line, flush=True)


def check(name, ok, detail="", pass_detail=""):
    report("PASS" if ok else "FAIL", name, pass_detail if ok else detail)
    return ok


def info(name, detail):
    report("INFO", name, detail)


def iso(text):
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


def same_instant(a, b):
    if a is None or b is None:
        return a is None and b is None
    return iso(a) == iso(b)


class World:
    def __init__(self, rust, venv, home):
        self.rust, self.venv, self.home = rust, Path(venv), Path(home)
        (self.home / "scripts").mkdir(parents=True, exist_ok=True)
        (self.home / "scripts" / "silent.sh").write_text(":\n")
        (self.home / "scripts" / "hello.sh").write_text("echo hello from the watchdog\n")
        (self.home / "work").mkdir(exist_ok=True)
        base = {k: v for k, v in os.environ.items()
                if not re.search(r"KEY|TOKEN|SECRET|PASSWORD|HERMES_|_HOME_CHANNEL|_API_BASE", k)}
        base.update(HERMES_HOME=str(self.home), HERMES_TIMEZONE=ZONE, NO_COLOR="1")
        self.env = base

    @property
    def jobs_path(self):
        return self.home / "cron" / "jobs.json"

    def store(self):
        return json.loads(self.jobs_path.read_text(encoding="utf-8"))

    def write_store(self, data):
        tmp = self.jobs_path.with_suffix(".compat-tmp")
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.jobs_path)

    def _run(self, cmd, env, what):
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120,
                           cwd=self.home)
        return p

    def rs(self, *args, now=None):
        env = dict(self.env)
        if now:
            env["HERMES_NOW"] = now
        return self._run([self.rust, *args], env, "rust")

    def py_cli(self, *args, now=None):
        env = dict(self.env)
        if now:
            env["PYHERMES_NOW"] = now
            cmd = [str(self.venv / "bin/python"), str(HERE / "pyhermes.py"), "cli", *args]
        else:
            cmd = [str(self.venv / "bin/hermes"), *args]
        return self._run(cmd, env, "python")

    def py(self, *args, now=None):
        env = dict(self.env)
        if now:
            env["PYHERMES_NOW"] = now
        p = self._run([str(self.venv / "bin/python"), str(HERE / "pyhermes.py"), *args], env, "py")
        if p.returncode != 0:
            raise RuntimeError(f"pyhermes {args[0]} failed: {p.stderr[-1500:]}")
        return json.loads(p.stdout.strip().splitlines()[-1])

    def rs_json(self, *args, now=None):
        p = self.rs(*args, now=now)
        if p.returncode != 0:
            raise RuntimeError(f"hermes {' '.join(args)} exit {p.returncode}: {p.stderr.strip()[-800:]}")
        return json.loads(p.stdout)


def created_id(p):
    m = re.search(r"Created job: ([0-9a-f]{12})", p.stdout)
    if p.returncode != 0 or not m:
        raise RuntimeError(f"create failed (exit {p.returncode}): {p.stdout[-500:]} {p.stderr[-800:]}")
    return m.group(1)


def must(name, p):
    if p.returncode != 0:
        report("FAIL", name, f"exit {p.returncode}: {(p.stderr or p.stdout).strip()[-600:]}")
        return False
    return True


def diff_stores(before, after, allowed=()):
    """Every difference between two parsed stores outside `allowed` ((id, key) pairs, or
    (id, '*')): missing or added jobs, keys, and changed values; top level apart from
    updated_at."""
    out = []
    allowed = set(allowed)
    tb = {k for k in before if k != "updated_at"}
    ta = {k for k in after if k != "updated_at"}
    if tb - ta:
        out.append(f"top-level keys lost: {sorted(tb - ta)}")
    for k in tb & ta:
        if k != "jobs" and before[k] != after[k]:
            out.append(f"top-level {k} changed")
    jb = {j.get("id"): j for j in before["jobs"]}
    ja = {j.get("id"): j for j in after["jobs"]}
    for jid in jb.keys() - ja.keys():
        out.append(f"job {jid} lost")
    for jid in ja.keys() - jb.keys():
        out.append(f"job {jid} appeared")
    for jid in jb.keys() & ja.keys():
        if (jid, "*") in allowed:
            continue
        b, a = jb[jid], ja[jid]
        for k in b.keys() - a.keys():
            if (jid, k) not in allowed:
                out.append(f"{jid}: key {k!r} dropped (was {json.dumps(b[k], ensure_ascii=False)})")
        for k in a.keys() - b.keys():
            if (jid, k) not in allowed:
                out.append(f"{jid}: key {k!r} added ({json.dumps(a[k], ensure_ascii=False)})")
        for k in a.keys() & b.keys():
            if a[k] != b[k] and (jid, k) not in allowed:
                out.append(f"{jid}: {k} {json.dumps(b[k], ensure_ascii=False)} -> "
                           f"{json.dumps(a[k], ensure_ascii=False)}")
    return out


def both_read(w, step, now=None):
    """Both implementations read the store and agree on every job's main fields."""
    ok = True
    try:
        rs = {j["id"]: j for j in w.rs_json("cron", "list", "--all", "--json", now=now)["jobs"]}
    except Exception as e:  # noqa: BLE001
        return check(f"C {step}: ours reads the store", False, str(e))
    try:
        py = {j["id"]: j for j in w.py("load", now=now)["listed"]}
    except Exception as e:  # noqa: BLE001
        return check(f"C {step}: Python reads the store", False, str(e))
    raw = {j["id"]: j for j in w.store()["jobs"]}
    problems = []
    if rs.keys() != py.keys() or rs.keys() != raw.keys():
        problems.append(f"ids: ours {sorted(rs)} python {sorted(py)} file {sorted(raw)}")
    for jid in rs.keys() & py.keys():
        for k in ("name", "prompt", "enabled", "state", "schedule_display", "deliver", "skills",
                  "skill", "script", "no_agent", "repeat", "last_status"):
            if rs[jid].get(k) != py[jid].get(k):
                problems.append(f"{jid}.{k}: ours {rs[jid].get(k)!r} python {py[jid].get(k)!r}")
        for k in ("next_run_at", "last_run_at", "paused_at"):
            if not same_instant(rs[jid].get(k), py[jid].get(k)):
                problems.append(f"{jid}.{k}: ours {rs[jid].get(k)!r} python {py[jid].get(k)!r}")
        for k in ("kind", "minutes", "expr", "run_at"):
            if (rs[jid]["schedule"] or {}).get(k) != (py[jid]["schedule"] or {}).get(k):
                problems.append(f"{jid}.schedule.{k} differs")
    mode = stat.S_IMODE(w.jobs_path.stat().st_mode)
    if mode & 0o077:
        problems.append(f"jobs.json mode {oct(mode)}")
    ok = check(f"C {step}: both read the store and agree ({len(rs)} jobs)", not problems,
               "; ".join(problems[:6]))
    return ok


# ------------------------------------------------------------------ A: Python writes

def part_a(w):
    print("\n== A. Python Hermes writes, ours reads and edits (real clocks) ==")
    year = dt.datetime.now().year + 1
    ids = {}
    ids["inbox"] = created_id(w.py_cli("cron", "create", "every 2h", "summarize inbox", "--name", "inbox",
                                       "--deliver", "telegram", "--skill", "news", "--skill", "mail"))
    ids["stretch"] = created_id(w.py_cli("cron", "create", "30m", "remind me to stretch"))
    ids["standup"] = created_id(w.py_cli("cron", "create", "0 9 * * 1-5", "standup notes", "--name",
                                         "standup", "--repeat", "3", "--deliver", "local"))
    ids["xmas"] = created_id(w.py_cli("cron", "create", f"{year}-12-24T18:00", "wish merry christmas",
                                      "--deliver", "telegram:12345"))
    ids["offset"] = created_id(w.py_cli("cron", "create", f"{year}-07-01T08:30:00+05:30", "offset one-shot",
                                        "--name", "offset"))
    ids["watchdog"] = created_id(w.py_cli("cron", "create", "every 15m", "--script", "hello.sh",
                                          "--no-agent", "--name", "watchdog"))
    ids["unicode"] = created_id(w.py_cli("cron", "create", "every 1d", "café ☕ report 日本語",
                                         "--name", "café ☕ 日本"))
    ids["daily"] = created_id(w.py_cli("cron", "create", "30 6 * * *", "morning brief", "--name", "daily",
                                       "--skill", "brief", "--deliver", "telegram,discord"))
    must("A python cron pause", w.py_cli("cron", "pause", "inbox"))
    api = w.py("create", json.dumps({
        "prompt": "check the build", "schedule": "every 6h", "name": "api-job",
        "deliver": "origin",
        "origin": {"platform": "telegram", "chat_id": "-100123", "chat_name": "Team", "thread_id": "7"},
        "context_from": [ids["standup"]], "enabled_toolsets": ["web", "terminal"],
        "model": "openai/gpt-4o-mini", "provider": "openrouter", "base_url": "https://openrouter.ai/api/v1/",
        "workdir": str(w.home / "work"), "attach_to_session": True, "skills": ["ci"]}))
    ids["api"] = api["id"]
    # A run recorded by Python: its own tick, 16 minutes on (the watchdog is due then).
    later = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=16)).isoformat()
    w.py("tick", now=later)
    # Unknown keys a newer Hermes (or a user) might write, at record and schedule level.
    data = w.store()
    for j in data["jobs"]:
        if j["id"] == ids["daily"]:
            j["x_custom"] = {"nested": [1, "two", None], "note": "keep me"}
            j["schedule"]["x_sched"] = True
    data["x_top"] = "kept"
    w.write_store(data)
    py_store = w.store()
    py_jobs = {j["id"]: j for j in py_store["jobs"]}

    check("A Python created every kind", len(py_jobs) == 9 and set(ids.values()) <= py_jobs.keys(),
          f"{len(py_jobs)} jobs", f"{len(py_jobs)} jobs: interval, one-shot 30m, cron, ISO naive, "
          "ISO offset, no-agent script, unicode, multi-skill, paused, API job with origin/context")
    wd = py_jobs[ids["watchdog"]]
    check("A Python's tick ran the watchdog", wd.get("last_status") == "ok" and wd.get("last_run_at"),
          json.dumps({k: wd.get(k) for k in ("last_status", "last_run_at", "last_error")}))

    # Ours reads it all.
    try:
        listed = {j["id"]: j for j in w.rs_json("cron", "list", "--all", "--json")["jobs"]}
    except Exception as e:  # noqa: BLE001
        check("A ours: list --all --json reads Python's store", False, str(e))
        return
    check("A ours: list --all --json shows every job", listed.keys() == py_jobs.keys(),
          f"missing {sorted(py_jobs.keys() - listed.keys())}")
    fields = ("name", "prompt", "schedule_display", "next_run_at", "repeat", "enabled", "state",
              "deliver", "skills", "skill", "script", "no_agent", "origin", "context_from",
              "enabled_toolsets", "workdir", "model", "provider", "base_url", "last_run_at",
              "last_status", "last_error", "paused_at", "paused_reason", "created_at")
    bad = []
    for jid, pj in py_jobs.items():
        rj = listed.get(jid, {})
        for k in fields:
            if k in pj and rj.get(k) != pj[k]:
                bad.append(f"{jid}.{k}: python wrote {pj[k]!r}, ours shows {rj.get(k)!r}")
        for k in ("kind", "minutes", "expr", "run_at", "display"):
            if pj["schedule"].get(k) != (rj.get("schedule") or {}).get(k):
                bad.append(f"{jid}.schedule.{k}: {pj['schedule'].get(k)!r} vs {(rj.get('schedule') or {}).get(k)!r}")
    check("A ours: ids, names, schedules, next_run_at (exact strings), state... as Python wrote them",
          not bad, "; ".join(bad[:8]), f"{len(fields) + 5} fields x {len(py_jobs)} jobs")
    p = w.rs("cron", "list", "--all")
    shown = set(re.findall(r"\b[0-9a-f]{12}\b", p.stdout))
    check("A ours: list --all (text) shows every job", p.returncode == 0 and shown >= py_jobs.keys(),
          f"exit {p.returncode}, missing {sorted(py_jobs.keys() - shown)} {p.stderr[-300:]}")
    p = w.rs("cron", "list")
    shown = set(re.findall(r"\b[0-9a-f]{12}\b", p.stdout))
    enabled = {j for j, v in py_jobs.items() if v.get("enabled", True)}
    paused = {j for j, v in py_jobs.items() if v.get("state") == "paused"}
    check("A ours: list (without --all) shows the enabled jobs and the paused ones (Hermes 0.22's rule)",
          p.returncode == 0 and shown == enabled | paused,
          f"extra {sorted(shown - enabled - paused)} missing {sorted((enabled | paused) - shown)}")
    if paused:
        info("A Python 0.19's `cron list` hides paused jobs; ours lists them, as Hermes 0.22 does",
             f"paused: {sorted(paused)} (docs/COMMANDS.md, list)")
    try:
        st = w.rs_json("cron", "status", "--json")
        nxt = min((py_jobs[j]["next_run_at"] for j in enabled if py_jobs[j].get("next_run_at")), key=iso)
        check("A ours: status --json counts Python's active jobs and their earliest next run (to the second)",
              st["active_jobs"] == len(enabled)
              and abs((iso(st["next_run_at"]) - iso(nxt)).total_seconds()) < 1,
              f"{st} vs {len(enabled)} / {nxt}")
        if st["next_run_at"] != nxt and same_instant(st["next_run_at"][:19], nxt[:19]):
            info("A ours: status --json prints next_run_at without the stored fraction of a second",
                 f"stored {nxt}, status shows {st['next_run_at']} (list --json keeps the exact string)")
    except Exception as e:  # noqa: BLE001
        check("A ours: status --json", False, str(e))
    p = w.rs("cron", "runs", "--json")
    check("A ours: runs --json works beside Python's executions table in executions.db",
          p.returncode == 0, f"exit {p.returncode}: {p.stderr[-400:]}")

    # Ours edits: only the edited fields change; every key Python wrote stays.
    def edit(label, args, allowed_keys, jid):
        before = w.store()
        p = w.rs("cron", "edit", jid, *args)
        if not must(f"A ours: edit {label}", p):
            return None
        after = w.store()
        d = diff_stores(before, after, [(jid, k) for k in allowed_keys])
        check(f"A ours: edit {label} keeps every other key and value Python wrote", not d, "; ".join(d[:8]))
        return after

    after = edit("--name (standup)", ["--name", "standup-renamed"], ["name"], ids["standup"])
    if after:
        j = {x["id"]: x for x in after["jobs"]}[ids["standup"]]
        check("A ours: the edited field is what we asked", j["name"] == "standup-renamed", j["name"])
    edit("--deliver (API job with origin)", ["--deliver", "origin,telegram:999"], ["deliver"], ids["api"])
    edit("--schedule (daily, unknown keys present)", ["--schedule", "45 7 * * *"],
         ["schedule", "schedule_display", "next_run_at"], ids["daily"])
    after = w.store()
    dj = {x["id"]: x for x in after["jobs"]}[ids["daily"]]
    check("A ours: unknown keys survive our rewrite (record x_custom, top-level x_top)",
          dj.get("x_custom") == {"nested": [1, "two", None], "note": "keep me"} and after.get("x_top") == "kept",
          json.dumps({"x_custom": dj.get("x_custom"), "x_top": after.get("x_top")}))
    if not dj["schedule"].get("x_sched"):
        info("A unknown key inside `schedule` is dropped when the schedule is replaced",
             "ours rebuilt schedule as " + json.dumps(dj["schedule"]) + " (Python's update_job replaces "
             "the whole schedule object too, so both behave alike)")
    edit("--add-skill (inbox, paused)", ["--add-skill", "weather"], ["skills"], ids["inbox"])

    before = w.store()
    ok1 = must("A ours: pause watchdog", w.rs("cron", "pause", ids["watchdog"], "--reason", "test"))
    ok2 = must("A ours: resume watchdog", w.rs("cron", "resume", ids["watchdog"]))
    if ok1 and ok2:
        d = diff_stores(before, w.store(), [(ids["watchdog"], k) for k in
                                            ("next_run_at", "paused_at", "paused_reason", "state", "enabled")])
        check("A ours: pause + resume keep every other key Python wrote", not d, "; ".join(d[:8]))

    # Python still reads what we wrote.
    try:
        loaded = w.py("load")
        check("A Python loads the store after our edits", len(loaded["listed"]) == len(py_jobs),
              f"{len(loaded['listed'])} jobs")
        pj = {j["id"]: j for j in loaded["listed"]}
        check("A Python sees our edits", pj[ids["standup"]]["name"] == "standup-renamed"
              and pj[ids["api"]]["deliver"] == "origin,telegram:999"
              and pj[ids["daily"]]["schedule"]["expr"] == "45 7 * * *"
              and pj[ids["inbox"]]["skills"] == ["news", "mail", "weather"],
              json.dumps({k: pj[ids[k]].get("skills") for k in ("inbox",)}))
    except Exception as e:  # noqa: BLE001
        check("A Python loads the store after our edits", False, str(e))
    p = w.py_cli("cron", "list", "--all")
    shown = set(re.findall(r"\b[0-9a-f]{12}\b", p.stdout))
    check("A Python CLI lists every job after our edits", p.returncode == 0 and shown >= py_jobs.keys(),
          f"exit {p.returncode} missing {sorted(py_jobs.keys() - shown)} {p.stderr[-300:]}")


# ------------------------------------------------------------------ B: ours writes

T0 = "2026-06-10T07:00:00+00:00"   # a Wednesday, no DST change nearby


def part_b(w):
    print(f"\n== B. Ours writes, Python Hermes reads (clocks pinned at {T0}, zone {ZONE}) ==")
    rs = lambda *a: created_id(w.rs("cron", "add", *a, now=T0))  # noqa: E731
    ids = {
        "inbox": rs("every 2h", "summarize inbox", "--name", "inbox", "--deliver", "telegram",
                    "--skill", "news", "--skill", "mail"),
        "stretch": rs("30m", "remind me to stretch"),
        "in45": rs("in 45m", "in forty-five", "--name", "in45"),
        "standup": rs("0 9 * * 1-5", "standup notes", "--name", "standup", "--repeat", "3"),
        "phrase": rs("weekdays at 9am", "daily report", "--name", "phrase"),
        "monday": rs("every monday 9:30am", "weekly", "--name", "monday"),
        "atdaily": rs("@daily", "midnight job", "--name", "atdaily"),
        "xmas": rs("2026-12-24T18:00", "wish merry christmas", "--deliver", "telegram:12345"),
        "offset": rs("2026-07-01T08:30:00+05:30", "offset one-shot", "--name", "offset"),
        "watchdog": rs("every 15m", "--script", "hello.sh", "--no-agent", "--name", "watchdog"),
        "unicode": rs("every 1d", "café ☕ report 日本語", "--name", "café ☕ 日本"),
        "drink": rs("30m", "drink water", "--repeat", "3", "--name", "drink"),
        "paused": rs("every 3h", "paused one", "--name", "paused", "--paused"),
        "origin": rs("every 6h", "check the build", "--name", "origin", "--origin", "telegram:-100123:7",
                     "--model", "openai/gpt-4o-mini", "--provider", "openrouter",
                     "--workdir", str(w.home / "work")),
        "tz": rs("0 9 * * *", "new york morning", "--name", "tz", "--tz", "America/New_York"),
    }
    raw = {j["id"]: j for j in w.store()["jobs"]}
    check("B ours created every kind", set(ids.values()) == raw.keys(), f"{len(raw)} jobs")

    try:
        loaded = w.py("load", now=T0)
    except Exception as e:  # noqa: BLE001
        check("B Python load_jobs()/list_jobs() read our store", False, str(e))
        return
    listed = {j["id"]: j for j in loaded["listed"]}
    check("B Python load_jobs()/list_jobs(include_disabled=True) read our store without error",
          listed.keys() == raw.keys(), f"missing {sorted(raw.keys() - listed.keys())}", f"{len(listed)} jobs")
    bad = []
    for jid, rj in raw.items():
        pj = listed.get(jid, {})
        for k, v in rj.items():
            if pj.get(k) != v:
                bad.append(f"{jid}.{k}: we wrote {v!r}, Python sees {pj.get(k)!r}")
    check("B Python sees every field as we wrote it (its normalised view)", not bad, "; ".join(bad[:8]),
          f"{sum(len(r) for r in raw.values())} values")
    p = w.py_cli("cron", "list", "--all", now=T0)
    shown = set(re.findall(r"\b[0-9a-f]{12}\b", p.stdout))
    check("B Python CLI `cron list --all` lists every job", p.returncode == 0 and shown >= raw.keys(),
          f"exit {p.returncode} missing {sorted(raw.keys() - shown)} {p.stderr[-300:]}")
    o = raw[ids["origin"]].get("origin") or {}
    check("B our --origin is an origin Python can deliver to (platform + chat_id)",
          o.get("platform") == "telegram" and o.get("chat_id") == "-100123" and str(o.get("thread_id")) == "7",
          json.dumps(o))

    # Next run: Python's compute_next_run at the same pinned instant.
    nxt = w.py("next", now=T0)
    bad, expected = [], []
    for jid, rj in raw.items():
        mine, theirs = rj.get("next_run_at"), nxt.get(jid)
        if same_instant(mine, theirs):
            continue
        if mine is None and rj.get("state") == "paused":
            info("B a job created paused has no next run (Hermes 0.22's record, docs/STORE.md)",
                 f"{jid}: Python's compute_next_run gives {theirs}; resume computes the next run on "
                 "either side")
            expected.append(None)
            continue
        if rj.get("timezone"):
            expected.append(f"{jid} ({rj['schedule'].get('expr')} --tz {rj['timezone']}): ours {mine}, Python {theirs}")
        else:
            bad.append(f"{jid} {rj['schedule']}: ours {mine}, Python {theirs}")
    check("B next_run_at: ours == Python's compute_next_run for every job (same instant)", not bad,
          "; ".join(bad[:6]), f"{len(raw) - len(expected)} jobs")
    for e in filter(None, expected):
        info("B per-job time zone (docs/STORE.md#what-hermes-cron-adds: Python does not know `timezone`)",
             e + " — Python keeps the key and the stored next_run_at, but would recompute in the "
             "global zone after it runs the job")

    # Five following fires, chained the way Python Hermes chains them (compute_next_run
    # from the previous run), against `hermes cron next --from`.
    bad = []
    count = 0
    for jid, rj in raw.items():
        s = rj["schedule"]
        if s["kind"] == "once" or rj.get("timezone") or not rj.get("next_run_at"):
            continue
        spec = s.get("expr") or f"every {s['minutes']}m"
        ours = w.rs_json("cron", "next", spec, "--from", rj["next_run_at"], "-n", "5", "--json")["next"]
        theirs = chain(w, s, rj["next_run_at"], 5)
        count += 1
        if not all(same_instant(a, b) for a, b in zip(ours, theirs)):
            bad.append(f"{spec}: ours {ours} Python {theirs}")
    check("B the next 5 fires after next_run_at agree (cron + interval)", not bad, "; ".join(bad[:4]),
          f"{count} schedules")
    dst_case(w)

    # Due set 31 minutes on: Python's get_due_jobs vs what our tick fires (copies of the home).
    t1 = (iso(T0) + dt.timedelta(minutes=31)).isoformat()
    py_home, rs_home = w.home.parent / "b-py", w.home.parent / "b-rs"
    for h in (py_home, rs_home):
        shutil.copytree(w.home, h)
    wp, wr = copy.copy(w), copy.copy(w)
    wp.home, wr.home = py_home, rs_home
    wp.env, wr.env = dict(w.env, HERMES_HOME=str(py_home)), dict(w.env, HERMES_HOME=str(rs_home))
    py_due = set(wp.py("due", now=t1))
    p = wr.rs("cron", "tick", now=t1)
    after = {j["id"]: j for j in wr.store()["jobs"]}
    rs_fired = {jid for jid, j in after.items() if j.get("last_run_at") != raw[jid].get("last_run_at")
                or (j.get("repeat") or {}).get("completed") != (raw[jid].get("repeat") or {}).get("completed")}
    names = {v: k for k, v in ids.items()}
    check(f"B due set at T0+31m: Python get_due_jobs() == the jobs our tick fired",
          p.returncode == 0 and py_due == rs_fired,
          f"python {sorted(names[i] for i in py_due)} ours {sorted(names[i] for i in rs_fired)} {p.stderr[-300:]}",
          ", ".join(sorted(names[i] for i in py_due)))
    # After one side's pass, the other side's pass at the same instant fires nothing.
    try:
        listed = wr.py("load", now=t1)["listed"]
        p2 = wr.py_cli("cron", "list", "--all", now=t1)
        check("B Python reads the store after our tick (completed/failed one-shots, run counts)",
              len(listed) == len(after) and p2.returncode == 0, f"{len(listed)} vs {len(after)} {p2.stderr[-300:]}")
        again = wr.py("due", now=t1)
        check("B after our tick, Python's get_due_jobs() at the same instant finds nothing to fire",
              again == [], f"Python would fire again: {sorted(names.get(i, i) for i in again)}")
    except Exception as e:  # noqa: BLE001
        check("B Python reads the store after our tick", False, str(e))
    # (a fresh copy: get_due_jobs above stamped Python's run_claim on the due one-shot)
    shutil.rmtree(py_home)
    shutil.copytree(w.home, py_home)
    before = {j["id"]: j for j in wp.store()["jobs"]}
    wp.py("tick", now=t1)
    mid = {j["id"]: j for j in wp.store()["jobs"]}
    p = wp.rs("cron", "tick", now=t1)
    end = {j["id"]: j for j in wp.store()["jobs"]}
    refired = [names.get(i, i) for i in end if end[i].get("last_run_at") != mid.get(i, {}).get("last_run_at")
               or (end[i].get("repeat") or {}).get("completed") != (mid.get(i, {}).get("repeat") or {}).get("completed")]
    check("B after Python's tick, our tick at the same instant fires nothing",
          p.returncode == 0 and not refired, f"exit {p.returncode}, fired again: {refired} {p.stderr[-300:]}")
    gone = sorted(names.get(i, i) for i in before.keys() - mid.keys())
    if gone:
        info("B Python deletes a one-shot (or a repeat-limited job) once it has run; ours keeps it "
             "`completed` (docs/SCHEDULES.md#repeat)", f"deleted by Python's tick: {gone}")
    shutil.rmtree(py_home)
    shutil.rmtree(rs_home)


def chain(w, schedule, start, n):
    """n fires after `start`, each Python's compute_next_run(schedule, last_run_at=previous)
    (how Python Hermes re-arms a job after each run)."""
    return w.py("chain", json.dumps(schedule), start, str(n), now=start)


def dst_case(w):
    """DST changes in Berlin, where the stores' next runs could drift apart."""
    berlin_local = lambda t: iso(t).astimezone(dt.timezone(iso(t).utcoffset())).strftime("%H:%M")  # noqa: E731
    # Spring forward: there is no 02:30 on 2026-03-29.
    start = "2026-03-28T12:00:00+01:00"
    s = {"kind": "cron", "expr": "30 2 * * *", "display": "30 2 * * *"}
    ours = w.rs_json("cron", "next", "30 2 * * *", "--from", start, "-n", "3", "--json")["next"]
    theirs = chain(w, s, start, 3)
    if all(same_instant(a, b) for a, b in zip(ours, theirs)):
        check("B DST spring gap `30 2 * * *` Europe/Berlin agrees", True)
    else:
        check("B DST spring gap `30 2 * * *`: ours runs once right after the gap (docs/SCHEDULES.md#dst-rules)",
              ours[0] == "2026-03-29T03:00:00+02:00", f"ours {ours}")
        info("B DST spring gap `30 2 * * *` Europe/Berlin 2026-03-29: Python differs (our DST rule, docs/SCHEDULES.md#dst-rules, follows "
             "Vixie cron: a skipped fixed time runs right after the gap)",
             f"ours {ours[0]}, Python {theirs[0]}; later fires: ours {ours[1:]}, Python {theirs[1:]}")
    # Autumn: 02:30 happens twice on 2026-10-25; a fixed-time job runs once, in the first pass,
    # and at 02:30 (+01:00) the next day.
    start = "2026-10-24T12:00:00+02:00"
    ours = w.rs_json("cron", "next", "30 2 * * *", "--from", start, "-n", "2", "--json")["next"]
    theirs = chain(w, s, start, 2)
    check("B DST autumn `30 2 * * *`: ours runs once, in the first 02:30, then 02:30 local (docs/SCHEDULES.md#dst-rules)",
          ours == ["2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"], f"ours {ours}")
    if not all(same_instant(a, b) for a, b in zip(ours, theirs)):
        info("B DST autumn `30 2 * * *`: Python Hermes differs (croniter 6.0.0, which it pins, is an "
             "hour off on the day after the change; croniter 7.0.0 is not; wrong per docs/SCHEDULES.md#dst-rules)",
             f"ours {ours}, Python {theirs}")
    # `0 9 * * *` must stay 09:00 local through both changes (docs/SCHEDULES.md#dst-rules).
    for label, start in (("spring", "2026-03-28T09:00:00+01:00"), ("autumn", "2026-10-24T09:00:00+02:00")):
        s = {"kind": "cron", "expr": "0 9 * * *", "display": "0 9 * * *"}
        ours = w.rs_json("cron", "next", "0 9 * * *", "--from", start, "-n", "3", "--json")["next"]
        theirs = chain(w, s, start, 3)
        ok = all(berlin_local(t) == "09:00" for t in ours)
        check(f"B `0 9 * * *` across the {label} DST change: ours stays 09:00 local", ok, f"ours {ours}")
        if ok and not all(same_instant(a, b) for a, b in zip(ours, theirs)):
            info(f"B `0 9 * * *` across the {label} DST change: Python Hermes is an hour off on the "
                 "day of the change (croniter 6.0.0, which it pins, returns 08:00/10:00 for a start "
                 "the day before; croniter 7.0.0 returns 09:00; wrong per docs/SCHEDULES.md#dst-rules)", f"ours {ours}, Python {theirs}")


# ------------------------------------------------------------------ C: both edit

def part_c(w):
    print(f"\n== C. Both edit one store in turn (real clocks, zone {ZONE}) ==")
    a = created_id(w.py_cli("cron", "create", "every 1h", "alpha task", "--name", "alpha"))
    both_read(w, "1 python create alpha")
    b = created_id(w.rs("cron", "add", "0 8 * * *", "beta task", "--name", "beta", "--tz", "Asia/Tokyo",
                        "--max-turns", "3", "--max-runtime", "10m", "--max-tokens", "9000", "--max-cost", "0.5",
                        "--after", a, "--on", "failure",
                        "--start-at", "2026-01-01T08:00:00+09:00", "--until", "2099-01-01T08:00:00+09:00",
                        "--jitter", "5m", "--overlap", "queue", "--sandbox", "strict"))
    both_read(w, "2 ours add beta --tz Asia/Tokyo --max-turns/-runtime/-tokens/-cost --after alpha --on failure --start-at/--until/--jitter --overlap --sandbox")
    chain = {x["id"]: x for x in w.store()["jobs"]}[b]
    chain = {k: chain.get(k) for k in ("after", "after_since")}
    must("C python edit beta", w.py_cli("cron", "edit", b, "--name", "beta2"))
    must("C python pause beta", w.py_cli("cron", "pause", b))
    must("C python resume beta", w.py_cli("cron", "resume", b))
    j = {x["id"]: x for x in w.store()["jobs"]}[b]
    caps = {"max_turns": 3, "max_runtime_seconds": 600, "max_tokens": 9000, "max_cost_usd": 0.5,
            "start_at": "2026-01-01T08:00:00+09:00", "until": "2099-01-01T08:00:00+09:00", "jitter": 300,
            "overlap": "queue", "sandbox": "strict"}
    check("C 3 Python's edit, pause and resume keep our keys (timezone, failure_streak, caps, after, window, overlap, sandbox)",
          j.get("timezone") == "Asia/Tokyo" and "failure_streak" in j and j["name"] == "beta2"
          and all(j.get(k) == v for k, v in caps.items())
          and j.get("after") == {"job": a, "on": "failure"} and chain["after"] == j.get("after")
          and j.get("after_since") == chain["after_since"],
          json.dumps({k: j.get(k) for k in ("name", "timezone", "failure_streak", "after", "after_since", *caps)}))
    both_read(w, "3 python edit beta --name")
    must("C ours edit alpha --schedule", w.rs("cron", "edit", a, "--schedule", "every 3h"))
    j = {x["id"]: x for x in w.store()["jobs"]}[a]
    check("C 4 our edit keeps Python's keys (provider_snapshot, model_snapshot)",
          "provider_snapshot" in j and "model_snapshot" in j and j["schedule"]["minutes"] == 180,
          json.dumps({k: j.get(k, "<missing>") for k in ("provider_snapshot", "model_snapshot", "schedule")}))
    both_read(w, "4 ours edit alpha --schedule")
    must("C python pause beta", w.py_cli("cron", "pause", b))
    both_read(w, "5 python pause beta")
    must("C ours resume beta", w.rs("cron", "resume", b))
    j = {x["id"]: x for x in w.store()["jobs"]}[b]
    nr = iso(j.get("next_run_at"))
    tokyo = nr.astimezone(dt.timezone(dt.timedelta(hours=9))) if nr is not None else None
    check("C 6 our resume of Python's pause: scheduled, next run 08:00 Tokyo plus its jitter (under 5 min)",
          j.get("enabled") is True and j.get("state") == "scheduled" and tokyo is not None
          and tokyo.hour == 8 and tokyo.minute < 5,
          json.dumps({k: j.get(k) for k in ("enabled", "state", "next_run_at", "paused_at")}))
    both_read(w, "6 ours resume beta")
    must("C ours edit alpha --add-skill x", w.rs("cron", "edit", a, "--add-skill", "x"))
    must("C python edit alpha --add-skill y", w.py_cli("cron", "edit", a, "--add-skill", "y"))
    j = {x["id"]: x for x in w.store()["jobs"]}[a]
    check("C 7 skills added by both, in order, legacy `skill` aligned",
          j.get("skills") == ["x", "y"] and j.get("skill") == "x", json.dumps({"skills": j.get("skills"),
                                                                             "skill": j.get("skill")}))
    both_read(w, "7 both add skills")
    g = created_id(w.py_cli("cron", "create", "every 10m", "--script", "silent.sh", "--no-agent",
                            "--name", "gamma"))
    both_read(w, "8 python create gamma (script)")
    # Ours runs gamma (due 11 minutes on), then Python reads the result and the ledger.
    t1 = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=11)).isoformat()
    p = w.rs("cron", "tick", now=t1)
    j = {x["id"]: x for x in w.store()["jobs"]}[g]
    check("C 9 our tick ran Python's script job", p.returncode == 0 and j.get("last_status") == "ok",
          f"exit {p.returncode} {json.dumps({k: j.get(k) for k in ('last_status', 'last_run_at', 'last_error')})} "
          f"{p.stderr[-300:]}")
    both_read(w, "9 ours tick", now=t1)
    p = w.py_cli("cron", "runs")
    check("C 9 Python `cron runs` works after our ledger wrote executions.db", p.returncode == 0,
          f"exit {p.returncode}: {p.stderr[-400:]}")
    # Python runs gamma at its next run (10 minutes after ours), then ours reads it.
    t2 = (iso(j["next_run_at"]) + dt.timedelta(seconds=30)).isoformat()
    w.py("tick", now=t2)
    j2 = {x["id"]: x for x in w.store()["jobs"]}[g]
    check("C 10 Python's tick ran gamma after ours (next_run_at moved on)",
          j2.get("last_status") == "ok" and iso(j2["last_run_at"]) > iso(j["last_run_at"])
          and iso(j2["next_run_at"]) > iso(j["next_run_at"]),
          json.dumps({k: j2.get(k) for k in ("last_status", "last_run_at", "next_run_at")}))
    both_read(w, "10 python tick", now=t2)
    p = w.rs("cron", "runs", "--json")
    check("C 10 our `cron runs` works after Python wrote its executions table", p.returncode == 0,
          f"exit {p.returncode}: {p.stderr[-400:]}")
    must("C ours remove alpha", w.rs("cron", "remove", a))
    must("C python remove beta2", w.py_cli("cron", "remove", b))
    both_read(w, "11 ours remove alpha, python remove beta")
    ids = {x["id"] for x in w.store()["jobs"]}
    check("C 11 only gamma is left", ids == {g}, str(ids))


# ------------------------------------------------------------------ D: both schedulers

def _wait_for(paths, secs):
    end = dt.datetime.now() + dt.timedelta(seconds=secs)
    while dt.datetime.now() < end:
        if all(p.exists() for p in paths):
            return True
        import time
        time.sleep(0.1)
    return False


def _fires(path):
    return len(path.read_text().split()) if path.exists() else 0


def _slow_jobs(w, creator):
    """Two slow no-agent script jobs due in 3 s: a one-shot and an `every 1h` whose
    next_run_at is moved to the same instant (store edit: test set-up only)."""
    for name in ("once", "every"):
        (w.home / "scripts" / f"slow_{name}.sh").write_text(
            f"date +%s.%N >> {w.home}/fired_{name}\nsleep 8\n")
    at = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=3)).replace(microsecond=0)
    once = created_id(creator("cron", "add" if creator == w.rs else "create", at.isoformat(),
                              "--script", "slow_once.sh", "--no-agent", "--name", "slow-once"))
    every = created_id(creator("cron", "add" if creator == w.rs else "create", "every 1h",
                               "--script", "slow_every.sh", "--no-agent", "--name", "slow-every"))
    data = w.store()
    for j in data["jobs"]:
        if j["id"] == every:
            j["next_run_at"] = at.isoformat()
    w.write_store(data)
    return once, every, at


def part_d(w):
    import signal
    import time
    print("\n== D. Both schedulers on one store, one firing while the other passes (real clocks) ==")
    # D1: Python's gateway ticker is running both jobs; our tick passes meanwhile.
    once, every, at = _slow_jobs(w, w.py_cli)
    time.sleep(max(0.0, (at - dt.datetime.now(dt.timezone.utc)).total_seconds()) + 0.5)
    gw = subprocess.Popen([str(w.venv / "bin/hermes"), "gateway", "run"], env=w.env, cwd=w.home,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        started = _wait_for([w.home / "fired_once", w.home / "fired_every"], 30)
        mid = {j["id"]: j for j in w.store()["jobs"]}
        p = w.rs("cron", "tick")
        time.sleep(9)
    finally:
        os.killpg(gw.pid, signal.SIGTERM)
        try:
            gw.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(gw.pid, signal.SIGKILL)
    o = mid.get(once, {})
    check("D1 Python gateway runs a one-shot; our tick meanwhile does not fire it again",
          started and p.returncode == 0 and _fires(w.home / "fired_once") == 1,
          f"the one-shot ran {_fires(w.home / 'fired_once')} times. Mid-run Python's record was "
          + json.dumps({k: o.get(k, "<absent>") for k in ("next_run_at", "last_run_at", "repeat", "run_claim")})
          + " - ours must treat a one-shot with repeat.completed >= repeat.times (Python's "
          "claim_dispatch) or a fresh `run_claim` as already dispatched (docs/RUNNING.md#one-scheduler-pass, docs/STORE.md#running-both-on-one-store)")
    check("D1 Python gateway runs a recurring job; our tick meanwhile does not fire it again",
          _fires(w.home / "fired_every") == 1, f"ran {_fires(w.home / 'fired_every')} times")

    # D2: our daemon is running both jobs; Python's `hermes cron tick` passes meanwhile.
    w2 = copy.copy(w)
    w2.home = w.home.parent / "home-D2"
    World.__init__(w2, w.rust, w.venv, w2.home)
    once, every, at = _slow_jobs(w2, w2.rs)
    d = subprocess.Popen([w2.rust, "cron", "daemon"], env=w2.env, cwd=w2.home,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        started = _wait_for([w2.home / "fired_once", w2.home / "fired_every"], 30)
        mid = {j["id"]: j for j in w2.store()["jobs"]}
        p = w2.py_cli("cron", "tick")
        after_py = {j["id"]: j for j in w2.store()["jobs"]}
        time.sleep(9)
    finally:
        os.killpg(d.pid, signal.SIGTERM)
        d.wait(timeout=40)
    final = {j["id"]: j for j in w2.store()["jobs"]}
    check("D2 our daemon runs a one-shot; Python's tick meanwhile does not fire it again",
          started and _fires(w2.home / "fired_once") == 1, f"ran {_fires(w2.home / 'fired_once')} times")
    check("D2 our daemon runs a recurring job; Python's tick meanwhile does not fire it again",
          _fires(w2.home / "fired_every") == 1, f"ran {_fires(w2.home / 'fired_every')} times")
    o = mid.get(once, {})
    check("D2 our in-flight one-shot survives Python's pass and ends `completed` (docs/SCHEDULES.md#repeat)",
          once in after_py and (final.get(once) or {}).get("state") == "completed",
          "Python's get_due_jobs deleted the record while our run was in flight (mid-run ours wrote "
          + json.dumps({k: o.get(k, "<absent>") for k in ("next_run_at", "last_run_at", "repeat", "run_claim")})
          + "; Python re-arms a one-shot with next_run_at null from run_at inside its 120 s grace, sees "
          "completed >= times and removes it as a stale claim). Fix on our side: stamp Python's "
          "`run_claim: {\"at\": <now>, \"by\": \"<host>:<pid>\"}` when dispatching a one-shot, refresh it "
          "during long runs, set it to null when recording the result; Python skips a one-shot "
          "with a fresh run_claim")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rust", required=True)
    ap.add_argument("--venv", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", default="A,B,C,D")
    a = ap.parse_args()
    for part, fn in (("A", part_a), ("B", part_b), ("C", part_c), ("D", part_d)):
        if part not in a.only.split(","):
            continue
        home = Path(a.work) / f"home-{part}"
        w = World(a.rust, a.venv, home)
        try:
            fn(w)
        except Exception as e:  # noqa: BLE001
            import traceback
            traceback.print_exc()
            report("FAIL", f"{part}: aborted: {e}")
    print(f"\n{COUNTS['PASS']} passed, {COUNTS['FAIL']} failed, {COUNTS['INFO']} known differences (INFO)")
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
