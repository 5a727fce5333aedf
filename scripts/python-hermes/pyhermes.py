"""Drive the real Python Hermes (hermes-agent from PyPI) for the side-by-side bench and
the store compatibility check. Run it with the venv's python (scripts/python-hermes/setup.sh).

Python Hermes reads "now" through `hermes_time.now()` (imported by name into cron.jobs,
cron.scheduler and cron.executions), so when PYHERMES_NOW (an ISO-8601 instant with an
offset) is set, `hermes_time.now` is replaced *before* any cron module is imported and
every copy of it is the pinned clock. Without PYHERMES_NOW nothing is patched.

    pyhermes.py cli ARGS...      # `hermes ARGS...` (its real CLI entry point)
    pyhermes.py load             # JSON: raw load_jobs() and list_jobs(include_disabled=True)
    pyhermes.py next             # JSON: {id: compute_next_run(schedule, last_run_at)}
    pyhermes.py chain SCHED START N  # JSON: N fires, each compute_next_run(SCHED, last_run_at=previous)
    pyhermes.py due              # JSON: ids get_due_jobs() returns (mutates the store!)
    pyhermes.py tick             # one cron.scheduler.tick(sync=True); prints JSON timing
    pyhermes.py create JSON      # cron.jobs.create_job(**JSON); prints the job as JSON
    pyhermes.py update ID JSON   # cron.jobs.update_job(ID, JSON)
"""

import json
import os
import sys
import time

_T_START = time.perf_counter()


def _pin_clock() -> None:
    text = os.environ.get("PYHERMES_NOW", "").strip()
    if not text:
        return
    from datetime import datetime

    import hermes_time

    pinned = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if pinned.tzinfo is None:
        raise SystemExit("PYHERMES_NOW needs an offset")

    def now():
        tz = hermes_time.get_timezone()
        return pinned.astimezone(tz) if tz is not None else pinned.astimezone()

    hermes_time.now = now
    for name in ("cron.jobs", "cron.scheduler", "cron.executions"):
        if name in sys.modules:  # pragma: no cover - imported before the patch
            raise SystemExit(f"{name} was imported before the clock was pinned")


def main(argv):
    _pin_clock()
    cmd, args = argv[0], argv[1:]
    if cmd == "cli":
        sys.argv = ["hermes", *args]
        from hermes_cli.main import main as hermes_main

        rc = hermes_main()
        sys.exit(rc if isinstance(rc, int) else 0)
    if cmd == "load":
        from cron.jobs import list_jobs, load_jobs

        raw = load_jobs()
        listed = list_jobs(include_disabled=True)
        print(json.dumps({"raw": raw, "listed": listed}, ensure_ascii=False, default=str))
        return
    if cmd == "next":
        from cron.jobs import compute_next_run, load_jobs

        out = {}
        for job in load_jobs():
            sched = job.get("schedule")
            if isinstance(sched, str):
                from cron.jobs import parse_schedule

                sched = parse_schedule(sched)
            out[job["id"]] = compute_next_run(sched, job.get("last_run_at"))
        print(json.dumps(out))
        return
    if cmd == "chain":
        from cron.jobs import compute_next_run

        schedule, prev, n = json.loads(args[0]), args[1], int(args[2])
        out = []
        for _ in range(n):
            prev = compute_next_run(schedule, prev)
            out.append(prev)
        print(json.dumps(out))
        return
    if cmd == "due":
        from cron.jobs import get_due_jobs

        print(json.dumps(sorted(j["id"] for j in get_due_jobs())))
        return
    if cmd == "tick":
        import logging

        logging.basicConfig(level=logging.WARNING)
        t_import = time.perf_counter()
        from cron.scheduler import tick

        t0 = time.perf_counter()
        ran = tick(verbose=False, sync=True)
        t1 = time.perf_counter()
        print(json.dumps({
            "ran": ran,
            "startup_s": t0 - _T_START,
            "import_s": t0 - t_import,
            "tick_s": t1 - t0,
        }))
        return
    if cmd == "create":
        from cron.jobs import create_job

        print(json.dumps(create_job(**json.loads(args[0])), ensure_ascii=False))
        return
    if cmd == "update":
        from cron.jobs import update_job

        print(json.dumps(update_job(args[0], json.loads(args[1])), ensure_ascii=False))
        return
    raise SystemExit(f"unknown command {cmd!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
