"""The script of the soak's no-agent jobs (copied to <home>/scripts/soak_job.py).

It finds the occurrence it is running for — the ledger row `running` for this job whose
pid is our parent (the daemon that claimed it) — appends one line naming that occurrence
to <home>/soak-side.txt, and prints it as the message. The line is the same for the same
occurrence, so an occurrence executed twice shows as a duplicate line, and delivered twice
as the same text accepted twice. About 5 % of runs fail after writing the line, ~10 %
sleep 5-25 s first (so that kills land in the middle of runs).
"""
import os
import random
import sqlite3
import sys
import time

home = os.environ["HERMES_HOME"]
job = os.environ.get("HERMES_JOB_ID", "?")
ppid = os.getppid()
occurrence = None
for _ in range(20):
    try:
        con = sqlite3.connect(f"file:{home}/cron/executions.db?mode=ro", uri=True, timeout=5)
        row = con.execute(
            "SELECT occurrence FROM runs WHERE job_id = ? AND pid = ? AND status = 'running'"
            " ORDER BY id DESC LIMIT 1", (job, ppid)).fetchone()
        con.close()
        if row:
            occurrence = row[0]
            break
    except sqlite3.Error:
        pass
    time.sleep(0.1)
line = f"soak-run occ={occurrence or 'UNKNOWN-' + job} ppid={ppid}"
with open(os.path.join(home, "soak-side.txt"), "a") as f:
    f.write(f"{line} t={time.time():.3f}\n")
r = random.random()
if r < 0.10:
    time.sleep(random.uniform(5, 25))
if r > 0.95:
    print(f"soak failure for {line}", file=sys.stderr)
    sys.exit(3)
print(line)
