"""Write a jobs.json of N jobs in the exact record shape Python Hermes 0.19.0's
create_job() writes (every key it writes, in its order), so both implementations read
the same input. Plain python3, no dependencies.

    gen_store.py OUT N [--due N_DUE] [--now ISO] [--seed S]

Jobs (deterministic for a seed):
  * the first N_DUE are recurring `every 1d` `--no-agent` jobs running scripts/silent.sh
    (prints nothing, so both implementations record a silent ok run and deliver nothing),
    due 30 s before --now — inside both grace windows (half the period, clamped to 2 h),
    so both fire them normally instead of the catch-up path;
  * the rest: 40 % `every Nm` intervals, 40 % daily cron `M H * * *`, 15 % weekday cron
    `M H * * 1-5`, 5 % paused intervals; the same silent no-agent script, next run 1 h to
    23 h after --now (nothing else is due).
Ids are `b` + 11 hex digits, so the due ones are recognisable: b0000000000000 + i.
"""

import argparse
import json
import random
from datetime import datetime, timedelta, timezone


def record(i, kind, now, next_run, rng, paused=False):
    if kind == "interval":
        minutes = rng.choice([60, 120, 240, 360, 720, 1440]) if i >= 0 else 1440
        schedule = {"kind": "interval", "minutes": minutes, "display": f"every {minutes}m"}
    elif kind == "daily":
        expr = f"{rng.randrange(60)} {rng.randrange(24)} * * *"
        schedule = {"kind": "cron", "expr": expr, "display": expr}
    else:
        expr = f"{rng.randrange(60)} {rng.randrange(24)} * * 1-5"
        schedule = {"kind": "cron", "expr": expr, "display": expr}
    return {
        "id": f"b{i:011x}",
        "name": f"bench job {i}",
        "prompt": "",
        "skills": [],
        "skill": None,
        "model": None,
        "provider": None,
        "provider_snapshot": None,
        "model_snapshot": None,
        "base_url": None,
        "script": "silent.sh",
        "no_agent": True,
        "context_from": None,
        "schedule": schedule,
        "schedule_display": schedule["display"],
        "repeat": {"times": None, "completed": 0},
        "enabled": not paused,
        "state": "paused" if paused else "scheduled",
        "paused_at": (now - timedelta(days=1)).isoformat() if paused else None,
        "paused_reason": None,
        "created_at": (now - timedelta(days=2)).isoformat(),
        "next_run_at": next_run.isoformat(),
        "last_run_at": None,
        "last_status": None,
        "last_error": None,
        "last_delivery_error": None,
        "deliver": "local",
        "origin": None,
        "enabled_toolsets": None,
        "workdir": None,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("n", type=int)
    ap.add_argument("--due", type=int, default=0)
    ap.add_argument("--now", default=None)
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()
    now = datetime.fromisoformat(a.now) if a.now else datetime.now(timezone.utc)
    rng = random.Random(a.seed)
    jobs = []
    for i in range(a.n):
        if i < a.due:
            job = record(-1, "interval", now, now - timedelta(seconds=30), rng)
            job["id"] = f"b{i:011x}"
            job["name"] = f"bench job {i}"
            jobs.append(job)
            continue
        r = rng.random()
        kind = "interval" if (r < 0.40 or r >= 0.95) else ("daily" if r < 0.80 else "weekday")
        paused = r >= 0.95
        next_run = now + timedelta(seconds=rng.randrange(3600, 23 * 3600))
        jobs.append(record(i, kind, now, next_run, rng, paused=paused))
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump({"jobs": jobs, "updated_at": now.isoformat()}, f, indent=2)


if __name__ == "__main__":
    main()
