"""Several hosts on one PostgreSQL store, measured with the real binary (started by
scripts/postgres/bench.sh, which builds it and starts a throwaway cluster). Prints
Markdown tables on stdout, progress on stderr; asserts only that the set-up did what it
meant to. Plain python3 and psql.

Sections (`--only pass,burst,failover`):
  pass      a daemon's own pass (due scan, claim, delivery retries and history trim, as
            its debug log times it) over N recurring jobs, with HISTORY finished runs per
            job in the ledger: nothing due (a job change wakes it) and 1 % due;
  burst     BURST jobs due at the same second on three daemons (three homes, three
            machine ids): how long until every occurrence started, how the hosts shared
            them, and whether any ran twice (script marks and the ledger);
  failover  two daemons; the one that claimed a batch of slow jobs is SIGKILLed: how long
            until the other host started the occurrences it had claimed but not started.
"""

import argparse
import datetime as dt
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

PASS_LOG = re.compile(r"pass_ms=([0-9.]+) claim_ms=[0-9.]+ occurrences=(\d+)")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def psql(url, sql):
    out = subprocess.run(["psql", url, "-qAtX", "-v", "ON_ERROR_STOP=1", "-c", sql],
                         check=True, capture_output=True, text=True)
    return out.stdout.strip()


def database(base, name):
    psql(base, f"DROP DATABASE IF EXISTS {name}")
    psql(base, f"CREATE DATABASE {name}")
    return base.replace("/postgres?", f"/{name}?")


def now():
    return dt.datetime.now(dt.timezone.utc)


def store_file(path, n, next_run, script="quiet.sh", minutes=60):
    """n recurring `every <minutes>m` script jobs, all next due at `next_run`."""
    created = now().replace(microsecond=0).isoformat()
    jobs = [{"id": f"{i:012x}", "name": f"job {i}", "prompt": "", "script": script,
             "no_agent": True,
             "schedule": {"kind": "interval", "minutes": minutes, "display": f"every {minutes}m"},
             "repeat": {"times": None, "completed": 0}, "enabled": True, "state": "scheduled",
             "created_at": created, "next_run_at": next_run.isoformat(), "deliver": "local"}
            for i in range(1, n + 1)]
    path.write_text(json.dumps({"jobs": jobs}))


class Host:
    def __init__(self, work, name, url, binary, parallel):
        self.name, self.url, self.binary = name, url, binary
        self.home = work / f"home-{name}"
        (self.home / "scripts").mkdir(parents=True, exist_ok=True)
        self.env = dict(os.environ, HERMES_HOME=str(self.home), HERMES_CRON_STORE=url,
                        HERMES_MACHINE_ID=name, TZ="UTC", HERMES_TIMEZONE="UTC",
                        HERMES_CRON_MAX_PARALLEL=str(parallel),
                        RUST_LOG="warn,hermes::scheduler=debug")
        self.proc = None
        self.log_path = work / f"daemon-{name}.log"

    def script(self, name, text):
        path = self.home / "scripts" / name
        path.write_text(text)
        path.chmod(0o755)

    def run(self, *args):
        return subprocess.run([self.binary, *args], env=self.env, check=True,
                              capture_output=True, text=True).stdout

    def start(self):
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([self.binary, "cron", "daemon"], env=self.env,
                                     stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def passes(self):
        text = self.log_path.read_text(errors="replace")
        return [(float(ms), int(n)) for ms, n in PASS_LOG.findall(text)]

    def wait_passes(self, count, timeout=120):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if len(self.passes()) >= count:
                return self.passes()
            if self.proc.poll() is not None:
                raise SystemExit(f"daemon {self.name} exited: {self.log_path.read_text()[-2000:]}")
            time.sleep(0.05)
        raise SystemExit(f"daemon {self.name}: no pass {count} within {timeout} s")

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            try:
                self.proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if self.proc:
            self.log.close()


def marks(path):
    """Lines `<job id> <host> <epoch seconds>` the jobs' script wrote."""
    if not path.exists():
        return []
    return [line.split() for line in path.read_text().splitlines() if line.strip()]


def mark_script(side):
    return f'echo "$HERMES_JOB_ID $HERMES_MACHINE_ID_MARK $(date +%s.%N)" >> {side}\n'


def make_due(url, count, at_sql="now() - interval '5 seconds'"):
    """Moves `count` jobs (column and record) to be due at `at_sql`; notifies the daemons."""
    psql(url, f"""UPDATE hermes_cron_jobs SET next_run_at = {at_sql},
        record = jsonb_set(record::jsonb, '{{next_run_at}}',
            to_jsonb(to_char(({at_sql}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"')))::json
        WHERE id IN (SELECT id FROM hermes_cron_jobs ORDER BY position LIMIT {count})""")


def bench_pass(a, work, base, binary):
    print("\n### A daemon's pass on PostgreSQL (from its debug log)"
          + (" without schema version 2's indexes" if a.without_v2_indexes else "")
          + f", {a.history} finished runs per job stored\n")
    print("| jobs | due | pass median | min | max | passes |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for n in a.sizes:
        url = database(base, f"bench_pass_{n}")
        host = Host(work / f"pass-{n}", "pass-a", url, binary, 16)
        host.script("quiet.sh", "true\n")
        store = work / f"pass-{n}.json"
        later = now().replace(microsecond=0) + dt.timedelta(hours=1)
        store_file(store, 1, later)
        # One job through `store import` (which creates the schema), the rest in one SQL
        # statement as the same rows: importing 100,000 jobs one by one takes minutes.
        host.run("cron", "store", "import", "--from", str(store))
        psql(url, f"""INSERT INTO hermes_cron_jobs (id, record, next_run_at, runnable)
            SELECT lpad(to_hex(i), 12, '0'), ((SELECT record::jsonb FROM hermes_cron_jobs LIMIT 1)
                || jsonb_build_object('id', lpad(to_hex(i), 12, '0'), 'name', 'job ' || i))::json,
                '{later.isoformat()}', true
            FROM generate_series(2, {n}) i""")
        if a.history:
            # Finished runs as a store in use holds them (one an hour per job), and one
            # delivered outbox row per job from yesterday.
            psql(url, f"""INSERT INTO hermes_cron_runs (job_id, occurrence, scheduled_at,
                    source, instance, host, pid, status, started_at, finished_at)
                SELECT lpad(to_hex(j), 12, '0'), lpad(to_hex(j), 12, '0') || '@old' || k,
                    now() - make_interval(hours => k), 'scheduler', 'old', 'old', 1, 'ok',
                    now() - make_interval(hours => k), now() - make_interval(hours => k)
                FROM generate_series(1, {n}) j, generate_series(1, {a.history}) k""")
            psql(url, f"""INSERT INTO hermes_cron_outbox (occurrence, target, job_id, payload,
                    state, created_at, next_attempt_at, expires_at, finished_at)
                SELECT lpad(to_hex(j), 12, '0') || '@old1', 'telegram:1', lpad(to_hex(j), 12, '0'),
                    'done', 'delivered', now() - interval '1 day', now() - interval '1 day',
                    now() + interval '1 day', now() - interval '1 day'
                FROM generate_series(1, {n}) j""")
        if a.without_v2_indexes:
            # Schema version 1's table, for a before/after of that index.
            psql(url, "DROP INDEX IF EXISTS hermes_cron_jobs_done")
            psql(url, "DROP INDEX IF EXISTS hermes_cron_outbox_created")
        psql(url, "VACUUM ANALYZE")
        assert psql(url, "SELECT count(*) FROM hermes_cron_jobs") == str(n)
        host.start()
        try:
            host.wait_passes(1)
            # Nothing due: any change to a job wakes the daemon for one pass.
            for i in range(a.passes):
                before = len(host.passes())
                psql(url, "UPDATE hermes_cron_jobs SET next_run_at = next_run_at "
                          "WHERE id = (SELECT id FROM hermes_cron_jobs ORDER BY position LIMIT 1)")
                host.wait_passes(before + 1)
                time.sleep(0.3)
            idle = [ms for ms, k in host.passes()[1:] if k == 0][-a.passes:]
            due = max(1, n // 100)
            busy = []
            for i in range(a.due_passes):
                time.sleep(1.1)  # a new second: new occurrences of the same jobs
                before = len(host.passes())
                make_due(url, due)
                deadline = time.time() + 60
                while not [p for p in host.passes()[before:] if p[1] > 0]:
                    if time.time() > deadline:
                        raise SystemExit("no pass claimed the due jobs")
                    time.sleep(0.05)
                ms, k = [p for p in host.passes()[before:] if p[1] > 0][0]
                if k != due:
                    raise SystemExit(f"pass claimed {k} of {due} due jobs")
                busy.append(ms)
                deadline = time.time() + 120
                while psql(url, "SELECT count(*) FROM hermes_cron_runs "
                                "WHERE status IN ('claimed', 'running')") != "0":
                    if time.time() > deadline:
                        raise SystemExit("the due runs did not finish")
                    time.sleep(0.2)
        finally:
            host.stop()
        for label, values in ((0, idle), (due, busy)):
            print(f"| {n:,} | {label:,} | {statistics.median(values):.1f} ms | {min(values):.1f} ms | "
                  f"{max(values):.1f} ms | {len(values)} |")
        log(f"pass {n}: idle {statistics.median(idle):.1f} ms, {due} due {statistics.median(busy):.1f} ms")
        sys.stdout.flush()


def bench_burst(a, work, base, binary):
    n = a.burst
    url = database(base, "bench_burst")
    side = work / "burst-marks.txt"
    hosts = [Host(work / "burst", f"host-{c}", url, binary, a.burst_parallel) for c in "abc"]
    for host in hosts:
        host.script("mark.sh", mark_script(side).replace("$HERMES_MACHINE_ID_MARK", host.name)
                    + (f"sleep {a.burst_sleep}\n" if a.burst_sleep else ""))
    due_at = now().replace(microsecond=0) + dt.timedelta(seconds=20)
    store = work / "burst.json"
    store_file(store, n, due_at, script="mark.sh", minutes=1440)
    hosts[0].run("cron", "store", "import", "--from", str(store))
    for host in hosts:
        host.start()
    try:
        deadline = due_at.timestamp() + 300
        while len(marks(side)) < n and time.time() < deadline:
            time.sleep(0.5)
        time.sleep(3)
    finally:
        for host in hosts:
            host.stop()
    lines = marks(side)
    starts = sorted(float(t) - due_at.timestamp() for _, _, t in lines)
    per_job = {}
    for job, _, _ in lines:
        per_job[job] = per_job.get(job, 0) + 1
    per_host = {h.name: sum(1 for _, name, _ in lines if name == h.name) for h in hosts}
    ledger = psql(url, "SELECT count(*), count(DISTINCT job_id), "
                       "count(*) FILTER (WHERE status = 'ok') FROM hermes_cron_runs").split("|")
    twice = sum(1 for c in per_job.values() if c > 1)
    claims = [ms for h in hosts for ms, k in h.passes() if k > 0]
    # Where a wave's time goes, from the ledger and the marks: the run's start in the
    # ledger to its script's first line, and its script's end (mark + sleep) to the
    # run's end in the ledger; then, per host, a run's end to the next run's start.
    rows = psql(url, "SELECT job_id, host, extract(epoch FROM started_at), "
                     "extract(epoch FROM finished_at) FROM hermes_cron_runs "
                     "WHERE started_at IS NOT NULL AND finished_at IS NOT NULL")
    mark_at = {job: float(t) for job, _, t in lines}
    before, after, ends, begins = [], [], {}, {}
    for row in rows.splitlines():
        job, host, started, finished = row.split("|")
        started, finished = float(started), float(finished)
        if job in mark_at:
            before.append(mark_at[job] - started)
            after.append(finished - (mark_at[job] + a.burst_sleep))
        ends.setdefault(host, []).append(finished)
        begins.setdefault(host, []).append(started)
    handoff = []
    for host, host_begins in begins.items():
        host_ends = sorted(ends[host])
        for begin in sorted(host_begins)[a.burst_parallel:]:
            ended = [e for e in host_ends if e <= begin]
            if ended:
                handoff.append(begin - ended[-1])
    med = lambda v: statistics.median(v) * 1000 if v else float("nan")
    print(f"\n### {n:,} occurrences due at the same second on three daemons\n")
    print(f"Each daemon with `HERMES_CRON_MAX_PARALLEL={a.burst_parallel}`; the job's script writes "
          "its job id, host and start instant. Times are from the due second.\n")
    print("| started | first start | p50 | p99 | last start (all started) | per host (a / b / c) "
          "| jobs run twice | ledger rows / distinct jobs / ok | claiming passes (count, max) |")
    print("| ---: | ---: | ---: | ---: | ---: | --- | ---: | --- | --- |")
    pick = lambda p: starts[min(len(starts) - 1, int(len(starts) * p))] if starts else float("nan")
    print(f"| {len(per_job):,} / {n:,} | {pick(0):.2f} s | {pick(0.5):.2f} s | {pick(0.99):.2f} s | "
          f"{starts[-1] if starts else float('nan'):.2f} s | "
          f"{' / '.join(str(per_host[h.name]) for h in hosts)} | {twice} | {' / '.join(ledger)} | "
          f"{len(claims)}, {max(claims) if claims else 0:.0f} ms |")
    print(f"\nPer run (median ms): ledger start to script start {med(before):.0f}, script end to "
          f"ledger end {med(after):.0f}, a run's end to the next start on its host {med(handoff):.0f}")
    log(f"burst: {len(per_job)}/{n} started, last at {starts[-1] if starts else 'n/a'} s, twice {twice}")
    sys.stdout.flush()


def bench_failover(a, work, base, binary):
    n = a.failover_jobs
    url = database(base, "bench_failover")
    side = work / "failover-marks.txt"
    hosts = [Host(work / "failover", f"host-{c}", url, binary, a.failover_parallel) for c in "ab"]
    for host in hosts:
        host.script("mark.sh", mark_script(side).replace("$HERMES_MACHINE_ID_MARK", host.name)
                    + f"sleep {a.failover_sleep}\n")
    due_at = now().replace(microsecond=0) + dt.timedelta(seconds=15)
    store = work / "failover.json"
    store_file(store, n, due_at, script="mark.sh", minutes=1440)
    hosts[0].run("cron", "store", "import", "--from", str(store))
    for host in hosts:
        host.start()
    try:
        # Whichever daemon claims the batch first holds every row (SKIP LOCKED; the other
        # takes some over as its slots free, work sharing); wait until it started what
        # its parallelism allows, then kill the one holding the most unstarted claims.
        deadline = time.time() + 60
        while len(marks(side)) < a.failover_parallel and time.time() < deadline:
            time.sleep(0.05)
        held = psql(url, "SELECT host, count(*) FROM hermes_cron_runs WHERE status = 'claimed' "
                         "GROUP BY host ORDER BY 2 DESC LIMIT 1")
        if not held:
            raise SystemExit("no claimed-but-unstarted occurrences to fail over")
        victim_name, unstarted = held.split("|")
        victim = [h for h in hosts if h.name == victim_name][0]
        survivor = [h for h in hosts if h is not victim][0]
        started_before = sum(1 for m in marks(side) if m[1] == victim.name)
        other_before = sum(1 for m in marks(side) if m[1] == survivor.name)
        killed_at = time.time()
        victim.stop(signal.SIGKILL)
        deadline = killed_at + 120
        while time.time() < deadline:
            taken = [m for m in marks(side) if m[1] == survivor.name and float(m[2]) >= killed_at]
            if len(taken) >= int(unstarted):
                break
            time.sleep(0.1)
        time.sleep(2)
    finally:
        for host in hosts:
            host.stop()
    lines = marks(side)
    # What the survivor started after the kill: the victim's unstarted claims (and any
    # of its own it was still working through).
    taken = sorted(float(t) - killed_at for _, name, t in lines
                   if name == survivor.name and float(t) >= killed_at)
    per_job = {}
    for job, _, _ in lines:
        per_job[job] = per_job.get(job, 0) + 1
    statuses = psql(url, "SELECT string_agg(status || ' ' || c, ', ' ORDER BY status) FROM "
                         "(SELECT status, count(*) c FROM hermes_cron_runs GROUP BY status) s")
    print(f"\n### Failover: the daemon holding {n} claimed slow jobs is SIGKILLed\n")
    print(f"Two daemons, `HERMES_CRON_MAX_PARALLEL={a.failover_parallel}`, each job sleeps "
          f"{a.failover_sleep} s; lease {a.lease} s. Times are from the SIGKILL.\n")
    print("| killed host had started | the other had started | killed host's claims not started "
          "| started by the other after the kill | first | last | jobs run twice | ledger |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    print(f"| {started_before} | {other_before} | {unstarted} | {len(taken)} | "
          f"{taken[0] if taken else float('nan'):.2f} s | {taken[-1] if taken else float('nan'):.2f} s | "
          f"{sum(1 for c in per_job.values() if c > 1)} | {statuses} |")
    log(f"failover: {len(taken)}/{unstarted} taken over, first {taken[0] if taken else 'n/a'} s")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--base-url", required=True, help="URL of the cluster's postgres database")
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", default="pass,burst,failover")
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--passes", type=int, default=7, help="nothing-due passes timed per size")
    ap.add_argument("--due-passes", type=int, default=3, help="1 %%-due passes timed per size")
    ap.add_argument("--history", type=int, default=10,
                    help="pass: finished runs per job (and one delivered outbox row) already stored")
    ap.add_argument("--without-v2-indexes", action="store_true",
                    help="pass: drop the indexes of schema version 2 (the tables before it)")
    ap.add_argument("--burst", type=int, default=1000)
    ap.add_argument("--burst-parallel", type=int, default=64)
    ap.add_argument("--burst-sleep", type=float, default=0,
                    help="seconds each burst job sleeps after its mark (1: one-second jobs)")
    ap.add_argument("--failover-jobs", type=int, default=200)
    ap.add_argument("--failover-parallel", type=int, default=10)
    ap.add_argument("--failover-sleep", type=float, default=3)
    ap.add_argument("--lease", type=int, default=10, help="the store's lease (for the table)")
    a = ap.parse_args()
    a.sizes = [int(x) for x in a.sizes.split(",") if x]
    work = Path(a.work)
    only = set(a.only.split(","))
    print(f"load average at start: {'%.2f %.2f %.2f' % os.getloadavg()} ({os.cpu_count()} CPUs)")
    if "pass" in only:
        bench_pass(a, work, a.base_url, a.bin)
    if "burst" in only:
        bench_burst(a, work, a.base_url, a.bin)
    if "failover" in only:
        bench_failover(a, work, a.base_url, a.bin)
    print(f"\nload average at end: {'%.2f %.2f %.2f' % os.getloadavg()}")


if __name__ == "__main__":
    main()
