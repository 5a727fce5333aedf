"""Side-by-side whole-process figures: our `hermes` (Rust) against Python Hermes
(hermes-agent from PyPI), measured in the same run, on the same generated jobs.json
copied into a separate HERMES_HOME per side. Started by bench.sh; plain python3.

Every figure is the wall time of a whole process started the way a user starts it —
`hermes cron list --all`, `hermes cron tick`, `hermes cron daemon` for ours;
`hermes cron list --all`, `hermes cron tick`, `hermes gateway run` (the Python
gateway with no chat platform configured, i.e. just its cron ticker) for Python —
from fork to exit, with the child's peak RSS from wait4(2).
"""

import argparse
import atexit
import datetime as dt
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import gen_store  # noqa: E402
GEN = HERE / "gen_store.py"
ID_RE = re.compile(r"\bb[0-9a-f]{11}\b")
LIVE = set()  # process groups started here and not reaped yet


@atexit.register
def _kill_live():
    for pgid in list(LIVE):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass


signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def loadavg():
    return "%.2f %.2f %.2f" % os.getloadavg()


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class Run:
    def __init__(self, secs, rss_kb, rc, timed_out):
        self.secs, self.rss_kb, self.rc, self.timed_out = secs, rss_kb, rc, timed_out


def run(cmd, env, timeout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=None):
    """Fork, exec, wait4: wall time and the child's peak RSS; kill the group at timeout."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=stdout, stderr=stderr, cwd=cwd,
                            start_new_session=True)
    LIVE.add(proc.pid)
    timed_out = []

    def kill():
        timed_out.append(True)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    timer = threading.Timer(timeout, kill)
    timer.start()
    try:
        _, status, ru = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
        LIVE.discard(proc.pid)
    secs = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Run(secs, ru.ru_maxrss, proc.returncode, bool(timed_out))


class Side:
    def __init__(self, name, bench_dir, env, list_cmd, tick_cmd, daemon_cmd):
        self.name = name
        self.home = bench_dir / name / "home"
        self.env = dict(env, HERMES_HOME=str(self.home))
        self.list_cmd, self.tick_cmd, self.daemon_cmd = list_cmd, tick_cmd, daemon_cmd

    def reset(self, warm=True):
        """A fresh HERMES_HOME with scripts/silent.sh; `warm` runs the list command once on
        the empty home so first-run set-up (directories, logs) is not timed."""
        if self.home.exists():
            shutil.rmtree(self.home)
        (self.home / "cron").mkdir(parents=True)
        os.chmod(self.home / "cron", 0o700)
        scripts = self.home / "scripts"
        scripts.mkdir()
        (scripts / "silent.sh").write_text(":\n")
        if warm:
            run(self.list_cmd, self.env, 120)

    @property
    def jobs(self):
        return self.home / "cron" / "jobs.json"

    def put_store(self, src):
        shutil.copyfile(src, self.jobs)
        os.chmod(self.jobs, 0o600)


def fmt_s(secs):
    if secs is None:
        return "—"
    if secs < 1:
        return f"{secs * 1000:.0f} ms"
    return f"{secs:.2f} s"


def fmt_mb(kb):
    return "—" if kb is None else f"{kb / 1024:.0f} MB"


def ratio(rs, py, py_timed_out=False):
    if rs is None or py is None or rs <= 0:
        return "—"
    r = py / rs
    return (">" if py_timed_out else "") + (f"{r:.0f}×" if r >= 10 else f"{r:.1f}×")


def make_store(out, n, due, now):
    subprocess.run([sys.executable, str(GEN), str(out), str(n), "--due", str(due),
                    "--now", now.isoformat()], check=True)


def grouped(n):
    return f"{n:,}"


# ---------------------------------------------------------------------------- list

def bench_list(sides, sizes, runs, timeout, work):
    rows = []
    for n in sizes:
        store = work / f"list-{n}.json"
        make_store(store, n, 0, dt.datetime.now(dt.timezone.utc))
        size_mb = store.stat().st_size / 1e6
        med, rss, seen = {}, {}, {}
        for side in sides:
            side.reset()
            side.put_store(store)
        times = {s.name: [] for s in sides}
        for i in range(runs + 1):  # run 0 is a warm-up
            order = sides if i % 2 == 0 else list(reversed(sides))
            for side in order:
                out = work / f"list-{side.name}.txt"
                with open(out, "wb") as f:
                    r = run(side.list_cmd, side.env, timeout, stdout=f)
                if r.rc != 0 or r.timed_out:
                    raise SystemExit(f"{side.name} list failed: rc={r.rc} timed_out={r.timed_out}")
                if i == 0:
                    text = out.read_text(encoding="utf-8", errors="replace")
                    seen[side.name] = (len(set(ID_RE.findall(text))), text.count("\n"))
                    continue
                times[side.name].append(r.secs)
                rss[side.name] = max(rss.get(side.name, 0), r.rss_kb)
        for side in sides:
            med[side.name] = statistics.median(times[side.name])
            if seen[side.name][0] != n:
                raise SystemExit(f"{side.name} list showed {seen[side.name][0]} of {n} jobs")
        rows.append((n, size_mb, med, rss, seen))
        log(f"list {n}: rust {fmt_s(med['rust'])} python {fmt_s(med['python'])} (load {loadavg()})")
    print(f"\n### `hermes cron list --all` (median of {runs} runs after a warm-up; every job listed)\n")
    print("| jobs | store | Rust | Python | Python / Rust | Rust peak RSS | Python peak RSS | lines printed (Rust / Python) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for n, size_mb, med, rss, seen in rows:
        print(f"| {grouped(n)} | {size_mb:.1f} MB | {fmt_s(med['rust'])} | {fmt_s(med['python'])} | "
              f"{ratio(med['rust'], med['python'])} | {fmt_mb(rss['rust'])} | {fmt_mb(rss['python'])} | "
              f"{grouped(seen['rust'][1])} / {grouped(seen['python'][1])} |")
    sys.stdout.flush()


# ---------------------------------------------------------------------------- tick

def parse_iso(text):
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def verify_pass(store_before, store_after, due):
    """How many due jobs moved next_run_at forward (and recorded a run), how many of the
    others changed at all."""
    before = {j["id"]: j for j in json.loads(Path(store_before).read_text())["jobs"]}
    after = {j["id"]: j for j in json.loads(Path(store_after).read_text())["jobs"]}
    due_ids = [f"b{i:011x}" for i in range(due)]
    advanced = ran = 0
    for jid in due_ids:
        a, b = after.get(jid), before[jid]
        if a and a.get("next_run_at") and parse_iso(a["next_run_at"]) > parse_iso(b["next_run_at"]) + dt.timedelta(hours=12):
            advanced += 1
        if a and a.get("last_run_at") and a.get("last_status") == "ok":
            ran += 1
    due_set = set(due_ids)
    others_changed = 0
    for jid, b in before.items():
        if jid in due_set:
            continue
        a = after.get(jid) or {}
        if a.get("next_run_at") != b["next_run_at"] or a.get("last_run_at") != b["last_run_at"]:
            others_changed += 1
    return advanced, ran, others_changed, len(after)


def bench_tick(sides, sizes, runs, due_runs, timeout, work, py_inproc):
    print("\n### One scheduler pass (`hermes cron tick`, whole process)\n")
    print("Due jobs are recurring `--no-agent` script jobs whose script prints nothing (a silent "
          "ok run in both, no LLM, delivery `local`); `HERMES_CRON_MAX_PARALLEL=4` for both. "
          "Each 1 %-due run starts from a fresh copy of the store. *verified* = due jobs whose "
          "`next_run_at` moved a day ahead with `last_status: ok` / other jobs changed.\n")
    print("| jobs | due | Rust | Python | Python / Rust | Rust peak RSS | Python peak RSS | verified Rust | verified Python | runs |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: |")
    sys.stdout.flush()
    inproc_rows = []
    for n in sizes:
        for due in (0, max(1, n // 100)):
            nruns = runs if due == 0 else (due_runs if n < 10000 else 1)
            now = dt.datetime.now(dt.timezone.utc)
            store = work / f"tick-{n}-{due}.json"
            make_store(store, n, due, now)
            times = {s.name: [] for s in sides}
            rss = {s.name: 0 for s in sides}
            timed_out = {s.name: False for s in sides}
            verified = {}
            for side in sides:
                side.reset()
                side.put_store(store)
            warm = 1 if due == 0 else 0
            for i in range(nruns + warm):
                order = sides if i % 2 == 0 else list(reversed(sides))
                for side in order:
                    if due:  # a fresh home: the same occurrences must not be in a ledger yet
                        side.reset()
                        side.put_store(store)
                    err = work / f"tick-{side.name}.err"
                    with open(err, "wb") as ef:
                        r = run(side.tick_cmd, side.env, timeout, stderr=ef)
                    if r.timed_out:
                        timed_out[side.name] = True
                    elif r.rc != 0:
                        sys.stderr.write(err.read_text(errors="replace")[-2000:])
                        raise SystemExit(f"{side.name} tick failed rc={r.rc}")
                    if i >= warm:
                        times[side.name].append(r.secs)
                        rss[side.name] = max(rss[side.name], r.rss_kb)
                    if due:
                        adv, ran, others, total = verify_pass(store, side.jobs, due)
                        verified[side.name] = (adv, ran, others, total)
                        if not r.timed_out and (adv != due or ran != due or others or total != n):
                            sample = json.loads(side.jobs.read_text())["jobs"][0]
                            sys.stderr.write(json.dumps(sample, indent=1) + "\n")
                            sys.stderr.write(err.read_text(errors="replace")[-1500:] + "\n")
                            raise SystemExit(f"{side.name}: unequal work at {n}/{due}: "
                                             f"advanced {adv}, ran {ran}, others changed {others}, jobs {total}")
                    else:
                        if side.jobs.read_bytes() != store.read_bytes():
                            verified[side.name] = "store rewritten"
                        else:
                            verified[side.name] = "store untouched"
                if any(timed_out.values()):
                    break  # one timed-out run is enough
            med = {k: (statistics.median(v) if v else None) for k, v in times.items()}

            def cell(name):
                if timed_out[name]:
                    return f"> {timeout:.0f} s (timeout)"
                return fmt_s(med[name])

            def ver(name):
                v = verified.get(name)
                if isinstance(v, tuple):
                    adv, ran, others, _ = v
                    tail = " at timeout" if timed_out[name] else ""
                    return f"{adv}/{due} advanced, {others} others{tail}"
                return v or "—"

            rs_t = med["rust"] if not timed_out["rust"] else None
            print(f"| {grouped(n)} | {grouped(due)} | {cell('rust')} | {cell('python')} | "
                  f"{ratio(rs_t, med['python'], timed_out['python'])} | {fmt_mb(rss['rust'])} | "
                  f"{fmt_mb(rss['python'])} | {ver('rust')} | {ver('python')} | {len(times['rust'])} |")
            sys.stdout.flush()
            log(f"tick {n}/{due}: rust {cell('rust')} python {cell('python')} (load {loadavg()})")
            if due == 0 and py_inproc:
                py = [s for s in sides if s.name == "python"][0]
                py.put_store(store)
                out = subprocess.run(py_inproc, env=py.env, capture_output=True, text=True,
                                     timeout=timeout)
                if out.returncode == 0:
                    inproc_rows.append((n, json.loads(out.stdout.strip().splitlines()[-1])))
            store.unlink()
    if inproc_rows:
        print("\nPython's nothing-due pass split up (one run, `pyhermes.py tick`: interpreter start + "
              "`import cron.scheduler`, then the `tick()` call alone):\n")
        print("| jobs | start + imports | `tick()` call |")
        print("| ---: | ---: | ---: |")
        for n, d in inproc_rows:
            print(f"| {grouped(n)} | {fmt_s(d['startup_s'])} | {fmt_s(d['tick_s'])} |")
    sys.stdout.flush()


# ---------------------------------------------------------------------------- lateness

def lateness_store(side, count, rate, start):
    """`count` one-shot no-agent jobs, one per `1/rate` s from `start`, each running its
    own script that writes the instant it started to fires/<i>."""
    fires = side.home / "fires"
    fires.mkdir(exist_ok=True)
    jobs = []
    now = dt.datetime.now(dt.timezone.utc)
    base = gen_store.record(0, "interval", now, now, random.Random(0))
    for i in range(count):
        at = start + dt.timedelta(seconds=i / rate)
        (side.home / "scripts" / f"fire_{i}.sh").write_text(f"date +%s.%N > {fires}/{i}\n")
        job = dict(base)
        job.update({
            "id": f"f{i:011x}", "name": f"fire {i}", "script": f"fire_{i}.sh",
            "schedule": {"kind": "once", "run_at": at.isoformat(),
                         "display": f"once at {at.strftime('%Y-%m-%d %H:%M')}"},
            "repeat": {"times": 1, "completed": 0},
            "next_run_at": at.isoformat(),
            "created_at": now.isoformat(),
        })
        job["schedule_display"] = job["schedule"]["display"]
        jobs.append(job)
    tmp = side.jobs.with_suffix(".bench-tmp")
    tmp.write_text(json.dumps({"jobs": jobs, "updated_at": dt.datetime.now(dt.timezone.utc).isoformat()}, indent=2))
    os.chmod(tmp, 0o600)
    os.replace(tmp, side.jobs)
    return [start + dt.timedelta(seconds=i / rate) for i in range(count)]


def pct(sorted_vals, p):
    if not sorted_vals:
        return None
    k = (len(sorted_vals) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (k - lo)


def stop_daemon(proc):
    """SIGTERM the daemon's process group, SIGKILL after 40 s."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=40)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        pass


def bench_lateness(sides, count, rate, lead, work):
    print(f"\n### Fire lateness: {count} one-shot `--no-agent` script jobs, {rate:g} per second\n")
    print("Each job runs its own script, which writes the instant it started; lateness = that "
          "instant − the job's `run_at`. The store is written (atomic rename) once the daemon is "
          f"up (heartbeat file present), with the first job {lead:g} s later. "
          "`HERMES_CRON_MAX_PARALLEL=0` (unbounded) for both. Python: `hermes gateway run` with no "
          "platform configured (its cron ticker, which sleeps 60 s between passes).\n")
    results = {}
    for side in sides:
        side.reset(warm=False)
        env = dict(side.env, HERMES_CRON_MAX_PARALLEL="0")
        logf = open(work / f"daemon-{side.name}.log", "wb")
        t_launch = time.perf_counter()
        proc = subprocess.Popen(side.daemon_cmd, env=env, stdout=logf, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=side.home)
        LIVE.add(proc.pid)
        try:
            hb = side.home / "cron" / "ticker_heartbeat"
            deadline = time.time() + 120
            while not hb.exists():
                if proc.poll() is not None or time.time() > deadline:
                    logf.close()
                    sys.stderr.write((work / f"daemon-{side.name}.log").read_text(errors="replace")[-3000:])
                    raise SystemExit(f"{side.name} daemon did not come up")
                time.sleep(0.05)
            ready_s = time.perf_counter() - t_launch
            start = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=lead)
            planned = lateness_store(side, count, rate, start)
            last = planned[-1]
            fires = side.home / "fires"
            stop_at = last + dt.timedelta(seconds=150)
            while dt.datetime.now(dt.timezone.utc) < stop_at:
                if len(list(fires.iterdir())) >= count:
                    break
                time.sleep(0.5)
            time.sleep(1)
        finally:
            stop_daemon(proc)
            LIVE.discard(proc.pid)
        logf.close()
        late = []
        for i, at in enumerate(planned):
            f = fires / str(i)
            if f.exists():
                late.append(float(f.read_text().strip()) - at.timestamp())
        late.sort()
        results[side.name] = (late, ready_s)
        log(f"lateness {side.name}: {len(late)}/{count} fired, p50 {pct(late, 50)} (load {loadavg()})")
    print("| daemon | up in | fired | p50 | p99 | max | min |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for side in sides:
        late, ready_s = results[side.name]
        f = lambda v: "—" if v is None else (f"{v * 1000:.0f} ms" if abs(v) < 1 else f"{v:.1f} s")
        label = "Rust `hermes cron daemon`" if side.name == "rust" else "Python `hermes gateway run`"
        print(f"| {label} | {fmt_s(ready_s)} | {len(late)}/{count} | {f(pct(late, 50))} | "
              f"{f(pct(late, 99))} | {f(late[-1] if late else None)} | {f(late[0] if late else None)} |")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rust", required=True)
    ap.add_argument("--venv", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--list-sizes", default="1000,10000")
    ap.add_argument("--tick-sizes", default="100,1000,10000,100000")
    ap.add_argument("--runs", type=int, default=5, help="timed list runs per size")
    ap.add_argument("--tick-runs", type=int, default=3, help="timed nothing-due passes per size")
    ap.add_argument("--due-runs", type=int, default=3, help="timed 1%%-due passes below 10,000 jobs (1 at and above)")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--lateness-jobs", type=int, default=200)
    ap.add_argument("--lateness-rate", type=float, default=2.0)
    ap.add_argument("--lateness-lead", type=float, default=10.0)
    ap.add_argument("--only", default="list,tick,lateness")
    a = ap.parse_args()
    work = Path(a.work)
    only = set(a.only.split(","))
    venv = Path(a.venv)
    env = {k: v for k, v in os.environ.items()
           if not re.search(r"KEY|TOKEN|SECRET|PASSWORD|HERMES_|_HOME_CHANNEL|_API_BASE", k)}
    env.update(HERMES_TIMEZONE="UTC", HERMES_CRON_MAX_PARALLEL="4", NO_COLOR="1")
    rust = Side("rust", work, env, [a.rust, "cron", "list", "--all"], [a.rust, "cron", "tick"],
                [a.rust, "cron", "daemon"])
    python = Side("python", work, env, [str(venv / "bin/hermes"), "cron", "list", "--all"],
                  [str(venv / "bin/hermes"), "cron", "tick"],
                  [str(venv / "bin/hermes"), "gateway", "run"])
    sides = [rust, python]
    py_inproc = [str(venv / "bin/python"), str(HERE / "pyhermes.py"), "tick"]

    print(f"load average at start: {loadavg()} ({os.cpu_count()} CPUs)")
    if "list" in only:
        bench_list(sides, [int(x) for x in a.list_sizes.split(",") if x], a.runs, a.timeout, work)
    if "tick" in only:
        bench_tick(sides, [int(x) for x in a.tick_sizes.split(",") if x], a.tick_runs, a.due_runs,
                   a.timeout, work, py_inproc)
    if "lateness" in only and a.lateness_jobs > 0:
        bench_lateness(sides, a.lateness_jobs, a.lateness_rate, a.lateness_lead, work)
    print(f"\nload average at end: {loadavg()}")


if __name__ == "__main__":
    main()
