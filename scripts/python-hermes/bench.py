"""Side-by-side whole-process figures: our `hermes` (Rust) against Python Hermes
(hermes-agent from PyPI), measured in the same run, on the same generated jobs.json
copied into a separate HERMES_HOME per side. Started by bench.sh; plain python3.

Every figure is the wall time of a whole process started the way a user starts it —
`hermes cron list --all`, `hermes cron tick`, `hermes cron daemon` for ours;
`hermes cron list --all`, `hermes cron tick`, `hermes gateway run` (the Python
gateway with no chat platform configured, i.e. just its cron ticker) for Python —
from fork to exit, with the child's peak RSS from wait4(2) — except the idle and burst
sections, which read the process tree in /proc (VmRSS, utime + stime) and, for the burst,
getrusage(RUSAGE_CHILDREN) around the waited tick. The burst's fake OpenAI-compatible
model runs in this process (threads), so its CPU is not counted for either side.
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
        # Ours also prints every job as JSON (`list --all --json`; Python has no such
        # option): timed in the same runs' conditions, after the text listings.
        rust = [s for s in sides if s.name == "rust"][0]
        json_cmd = rust.list_cmd + ["--json"]
        json_times, json_rss = [], 0
        for i in range(runs + 1):
            out = work / "list-rust.json"
            with open(out, "wb") as f:
                r = run(json_cmd, rust.env, timeout, stdout=f)
            if r.rc != 0 or r.timed_out:
                raise SystemExit(f"rust list --json failed: rc={r.rc} timed_out={r.timed_out}")
            if i == 0:
                listed = len(json.loads(out.read_bytes())["jobs"])
                if listed != n:
                    raise SystemExit(f"rust list --json showed {listed} of {n} jobs")
                continue
            json_times.append(r.secs)
            json_rss = max(json_rss, r.rss_kb)
        med["rust-json"], rss["rust-json"] = statistics.median(json_times), json_rss
        rows.append((n, size_mb, med, rss, seen))
        log(f"list {n}: rust {fmt_s(med['rust'])} (--json {fmt_s(med['rust-json'])}) "
            f"python {fmt_s(med['python'])} (load {loadavg()})")
    print(f"\n### `hermes cron list --all` (median of {runs} runs after a warm-up; every job listed)\n")
    print("| jobs | store | Rust | Rust `--json` | Python | Python / Rust | Python / Rust `--json` | "
          "Rust peak RSS | Rust `--json` peak RSS | Python peak RSS | lines printed (Rust / Python) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for n, size_mb, med, rss, seen in rows:
        print(f"| {grouped(n)} | {size_mb:.1f} MB | {fmt_s(med['rust'])} | {fmt_s(med['rust-json'])} | "
              f"{fmt_s(med['python'])} | {ratio(med['rust'], med['python'])} | "
              f"{ratio(med['rust-json'], med['python'])} | {fmt_mb(rss['rust'])} | "
              f"{fmt_mb(rss['rust-json'])} | {fmt_mb(rss['python'])} | "
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


# ---------------------------------------------------------------------------- /proc

CLK_TCK = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid):
    """Fields of /proc/<pid>/stat after `(comm)`: [0] state, [1] ppid, [11] utime,
    [12] stime, [13] cutime, [14] cstime."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return text[text.rfind(")") + 2:].split()


def proc_tree(root):
    """`root` and every live descendant, from the ppid links in /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        f = _stat_fields(entry)
        if f:
            children.setdefault(int(f[1]), []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def proc_status_kb(pid, field):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return None


def tree_sample(root):
    """(processes, sum of VmRSS in KiB, CPU seconds of the tree). CPU counts each live
    process's utime + stime plus cutime + cstime (its reaped children), so the figure
    keeps what exited children used."""
    pids = proc_tree(root)
    rss = cpu = 0
    alive = 0
    for pid in pids:
        f = _stat_fields(pid)
        if not f:
            continue
        alive += 1
        cpu += sum(int(x) for x in f[11:15])
        rss += proc_status_kb(pid, "VmRSS") or 0
    return alive, rss, cpu / CLK_TCK


def file_state(path):
    try:
        st = path.stat()
        return (st.st_ino, st.st_mtime_ns, st.st_size)
    except FileNotFoundError:
        return None


# ---------------------------------------------------------------------------- idle

def start_daemon(side, env, work, tag):
    logf = open(work / f"{tag}-{side.name}.log", "wb")
    t_launch = time.perf_counter()
    proc = subprocess.Popen(side.daemon_cmd, env=env, stdout=logf, stderr=subprocess.STDOUT,
                            start_new_session=True, cwd=side.home)
    LIVE.add(proc.pid)
    hb = side.home / "cron" / "ticker_heartbeat"
    deadline = time.time() + 120
    while not hb.exists():
        if proc.poll() is not None or time.time() > deadline:
            stop_daemon(proc)
            LIVE.discard(proc.pid)
            logf.close()
            sys.stderr.write((work / f"{tag}-{side.name}.log").read_text(errors="replace")[-3000:])
            raise SystemExit(f"{side.name} daemon did not come up")
        time.sleep(0.05)
    return proc, logf, time.perf_counter() - t_launch


# Python Hermes, left to its defaults, goes on the network by itself: `hermes gateway run`
# downloads the `tirith` command scanner from github.com, and an agent job pip-installs
# edge-tts (the `tts` toolset's lazy dependency) and fetches openrouter.ai's model list to
# learn the context length. These documented settings (plus `model.context_length` in the
# burst) keep it on loopback. Ours does none of these, so its config has no such keys.
PY_OFFLINE_CONFIG = "security:\n  tirith_enabled: false\n  allow_lazy_installs: false\n"


def trap_env(env, port):
    """Proxy every non-loopback HTTP(S) request of the measured process to the bench's
    FakeModel, which refuses and records it."""
    proxy = f"http://127.0.0.1:{port}"
    loop = "127.0.0.1,localhost,::1"
    return dict(env, HTTP_PROXY=proxy, HTTPS_PROXY=proxy, ALL_PROXY=proxy, http_proxy=proxy,
                https_proxy=proxy, all_proxy=proxy, NO_PROXY=loop, no_proxy=loop)


def bench_idle(sides, jobs, settle, secs, work):
    print(f"\n### Idle daemon: {grouped(jobs)} recurring jobs, none due for hours\n")
    print(f"Both daemons on copies of the same generated jobs.json (the `gen_store.py` mix, next "
          f"runs 1–23 h ahead); sampled from /proc once a second for {secs:g} s after the "
          f"heartbeat file appeared plus {settle:g} s. RSS = VmRSS summed over the daemon's "
          "process tree; CPU = utime + stime (live processes and reaped children) of the whole "
          "tree over the window. Python: `hermes gateway run` with no platform configured and "
          "config.yaml `security: {tirith_enabled: false, allow_lazy_installs: false}` (else it "
          "downloads the tirith scanner from github.com at start-up); ours: no config. Both run "
          "with HTTP(S) proxy variables pointing at a local trap that refuses and records any "
          "non-loopback request (*network tried*).\n")
    store = work / f"idle-{jobs}.json"
    make_store(store, jobs, 0, dt.datetime.now(dt.timezone.utc))
    store_mb = store.stat().st_size / 1e6
    res = {}
    trap = FakeModel(0)
    for side in sides:
        side.reset(warm=False)
        side.put_store(store)
        if side.name == "python":
            (side.home / "config.yaml").write_text(PY_OFFLINE_CONFIG)
        trap.reset()
        proc, logf, up_s = start_daemon(side, trap_env(side.env, trap.port), work, "idle")
        try:
            time.sleep(settle)
            if proc.poll() is not None:
                raise SystemExit(f"{side.name} daemon exited during the settle period")
            n0, rss0, cpu0 = tree_sample(proc.pid)
            t0 = time.perf_counter()
            st0 = file_state(side.jobs)
            last_st, rewrites = st0, 0
            peak, nmax = rss0, n0
            end = t0 + secs
            while time.perf_counter() < end:
                time.sleep(min(1.0, max(0.0, end - time.perf_counter())))
                n, rss, _ = tree_sample(proc.pid)
                peak, nmax = max(peak, rss), max(nmax, n)
                st = file_state(side.jobs)
                if st != last_st:
                    rewrites += 1
                    last_st = st
            if proc.poll() is not None:
                raise SystemExit(f"{side.name} daemon died during the idle window")
            n1, rss1, cpu1 = tree_sample(proc.pid)
            hwm1 = proc_status_kb(proc.pid, "VmHWM")
            window = time.perf_counter() - t0
            st1 = file_state(side.jobs)
            if st1 != last_st:
                rewrites += 1
        finally:
            stop_daemon(proc)
            LIVE.discard(proc.pid)
            logf.close()
        res[side.name] = dict(up=up_s, rss0=rss0, rss1=rss1, peak=max(peak, rss1), hwm=hwm1,
                              cpu_settle=cpu0, cpu=cpu1 - cpu0, window=window,
                              pct=(cpu1 - cpu0) / window * 100, procs=nmax, rewrites=rewrites,
                              rewritten=st1 != st0, foreign=sorted(set(trap.foreign + trap.other)))
        log(f"idle {side.name}: RSS {rss0 / 1024:.1f} -> {rss1 / 1024:.1f} MiB, CPU "
            f"{cpu1 - cpu0:.2f} s / {window:.0f} s, {nmax} processes, {rewrites} store writes "
            f"(load {loadavg()})")
    trap.close()
    store.unlink()
    mib = lambda kb: "—" if kb is None else f"{kb / 1024:.1f} MiB"
    print(f"jobs.json {store_mb:.2f} MB; window {res['rust']['window']:.0f} s.\n")
    print("| daemon | processes | up in | CPU to end of settle | RSS start | RSS end | RSS peak (samples) | "
          "VmHWM (main process) | CPU in window | % of one core | jobs.json rewritten | network tried |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    for side in sides:
        r = res[side.name]
        label = "Rust `hermes cron daemon`" if side.name == "rust" else "Python `hermes gateway run`"
        wrote = f"yes ({r['rewrites']}×)" if r["rewrites"] else "no"
        print(f"| {label} | {r['procs']} | {fmt_s(r['up'])} | {r['cpu_settle']:.2f} s | {mib(r['rss0'])} | "
              f"{mib(r['rss1'])} | {mib(r['peak'])} | {mib(r['hwm'])} | {r['cpu']:.2f} s | "
              f"{r['pct']:.3f} % | {wrote} | {', '.join(r['foreign']) or 'none'} |")
    rs, py = res["rust"], res["python"]
    print(f"| Python / Rust | | | | {ratio(rs['rss0'], py['rss0'])} | {ratio(rs['rss1'], py['rss1'])} | "
          f"{ratio(rs['peak'], py['peak'])} | {ratio(rs['hwm'], py['hwm'])} | "
          f"{ratio(rs['cpu'], py['cpu']) if rs['cpu'] > 0 else '— (Rust 0 ticks)'} | | | |")
    sys.stdout.flush()


# ---------------------------------------------------------------------------- burst

class FakeModel:
    """A local OpenAI-compatible server: every POST .../chat/completions is answered
    "done" (plain JSON, or SSE when the request asks to stream) after `delay` seconds, one
    thread per connection. It also serves as the HTTP(S) proxy of the measured processes
    (NO_PROXY covers loopback), so any request they make to another host arrives here
    as CONNECT / absolute-URI and is refused and recorded."""

    def __init__(self, delay):
        import http.server
        import socketserver

        fake = self
        self.delay = delay
        self.lock = threading.Lock()
        self.reset()

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _body(self):
                n = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(n) if n else b""

            def _send(self, code, body, ctype="application/json"):
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _foreign(self):
                with fake.lock:
                    fake.foreign.append(f"{self.command} {self.path}")
                self._body()
                self._send(403, b'{"error": "bench: no network but the fake model"}')

            def do_CONNECT(self):
                with fake.lock:
                    fake.foreign.append(f"CONNECT {self.path}")
                self.send_response(403)
                self.send_header("Content-Length", "0")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True

            def do_GET(self):
                if self.path.startswith("http"):
                    return self._foreign()
                with fake.lock:
                    fake.other.append(f"GET {self.path}")
                if self.path.rstrip("/").endswith("/models"):
                    return self._send(200, json.dumps({"object": "list", "data": [
                        {"id": "bench-model", "object": "model", "owned_by": "bench"}]}).encode())
                self._send(404, b'{"error": "not found"}')

            def do_POST(self):
                if self.path.startswith("http"):
                    return self._foreign()
                raw = self._body()
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    with fake.lock:
                        fake.other.append(f"POST {self.path}")
                    return self._send(404, b'{"error": "not found"}')
                try:
                    req = json.loads(raw or b"{}")
                except ValueError:
                    req = {}
                stream = bool(req.get("stream"))
                with fake.lock:
                    fake.chats += 1
                    fake.models.add(str(req.get("model")))
                    fake.tools.add(len(req.get("tools") or []))
                    fake.streamed += stream
                    fake.messages.add(len(req.get("messages") or []))
                time.sleep(fake.delay)
                created = int(time.time())
                usage = {"prompt_tokens": 50, "completion_tokens": 1, "total_tokens": 51}
                if stream:
                    base = {"id": "bench", "object": "chat.completion.chunk", "created": created,
                            "model": "bench-model"}
                    chunks = [
                        dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": "done"},
                                             "finish_reason": None}]),
                        dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}], usage=usage),
                    ]
                    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
                    return self._send(200, body.encode(), "text/event-stream")
                reply = {"id": "bench", "object": "chat.completion", "created": created,
                         "model": "bench-model",
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": "done"}}],
                         "usage": usage}
                self._send(200, json.dumps(reply).encode())

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            request_queue_size = 1024

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def reset(self):
        with self.lock:
            self.chats = self.streamed = 0
            self.models, self.tools, self.messages = set(), set(), set()
            self.other, self.foreign = [], []

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def burst_config(side, base_url, parallel):
    model = f"model:\n  default: bench-model\n  provider: custom\n  base_url: {base_url}\n"
    if side.name == "python":
        model += "  context_length: 128000\n" + PY_OFFLINE_CONFIG
    return model + f"cron:\n  max_parallel_jobs: {parallel}\n"


def burst_store(path, n, now):
    """`n` recurring `every 1d` agent jobs (prompt "Say done.", delivery local, no script,
    model/provider unset: the config's default), all due 3 s ago."""
    due = (now - dt.timedelta(seconds=3)).replace(microsecond=0)
    jobs = []
    for i in range(n):
        job = gen_store.record(-1, "interval", now, due, random.Random(i))
        job.update({"id": f"b{i:011x}", "name": f"bench agent job {i}", "prompt": "Say done.",
                    "script": None, "no_agent": False})
        jobs.append(job)
    path.write_text(json.dumps({"jobs": jobs, "updated_at": now.isoformat()}, indent=2))


def verify_burst(side, before):
    """(ran ok, advanced a day, other statuses {status: count}, first error)."""
    b = {j["id"]: j for j in json.loads(before.read_text())["jobs"]}
    try:
        after = json.loads(side.jobs.read_text())["jobs"]
    except (OSError, ValueError) as e:
        return 0, 0, {f"store unreadable: {e}": len(b)}, None
    ok = adv = 0
    other, first_err = {}, None
    for j in after:
        if j["id"] not in b:
            continue
        st = j.get("last_status")
        if st == "ok" and j.get("last_run_at"):
            ok += 1
        else:
            other[str(st)] = other.get(str(st), 0) + 1
            if first_err is None and j.get("last_error"):
                first_err = str(j["last_error"])[:300]
        if j.get("next_run_at") and parse_iso(j["next_run_at"]) > parse_iso(b[j["id"]]["next_run_at"]) + dt.timedelta(hours=12):
            adv += 1
    return ok, adv, other, first_err


def ledger_counts(side, n):
    """Each side's own run record: ours `hermes cron runs --json`, Python's
    cron/executions.db."""
    if side.name == "rust":
        out = subprocess.run([*side.list_cmd[:1], "cron", "runs", "--json", "--limit", str(max(n, 1) + 10)],
                             env=side.env, capture_output=True, text=True, timeout=120)
        try:
            rows = json.loads(out.stdout)["runs"]
        except (ValueError, KeyError):
            return f"runs --json failed: {out.stderr.strip()[-200:]}"
        counts = {}
        for r in rows:
            key = str(r.get("status") or r.get("outcome"))
            counts[key] = counts.get(key, 0) + 1
        return counts
    import sqlite3
    db = side.home / "cron" / "executions.db"
    if not db.exists():
        return "no executions.db"
    conn = sqlite3.connect(db)
    try:
        return dict(conn.execute("SELECT status, count(*) FROM executions GROUP BY status").fetchall())
    finally:
        conn.close()


def children_cpu():
    import resource
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def bench_burst(sides, n, parallel, delay, timeout, work):
    import math
    fake = FakeModel(delay)
    base_url = f"http://127.0.0.1:{fake.port}/v1"
    ideal = math.ceil(n / parallel) * delay
    print(f"\n### Burst: {grouped(n)} agent jobs due at once, fake model answering in {delay:g} s, "
          f"{parallel} in parallel\n")
    print(f"One `hermes cron tick` per side (whole process, fork to exit) on the same store: "
          f"{grouped(n)} recurring `every 1d` agent jobs (prompt \"Say done.\", delivery `local`), "
          "due 3 s before the tick. Both sides: config.yaml `model: {default: bench-model, "
          "provider: custom, base_url: <fake>}` and `cron.max_parallel_jobs`, plus "
          f"`HERMES_CRON_MAX_PARALLEL={parallel}`; default toolsets. Python's config also has "
          "`model.context_length: 128000`, `security.tirith_enabled: false` and "
          "`security.allow_lazy_installs: false`: without them its jobs go to openrouter.ai "
          "(model list) and PyPI (pip-installing edge-tts) by themselves. The fake (in the bench "
          "process) answers every chat completion with \"done\" and is also the HTTP(S) proxy "
          "of both processes, so a request to any other host is refused and counted. CPU = "
          "getrusage(RUSAGE_CHILDREN) delta around the waited tick (its whole reaped tree); "
          "RSS = VmRSS of its process tree sampled every 0.5 s.\n")
    store = work / f"burst-{n}.json"
    res = {}
    try:
        for side in sides:
            side.reset()  # warm: first-run set-up (dirs, logs) not timed
            (side.home / "config.yaml").write_text(burst_config(side, base_url, parallel))
            burst_store(store, n, dt.datetime.now(dt.timezone.utc))
            side.put_store(store)
            env = trap_env(dict(side.env, HERMES_CRON_MAX_PARALLEL=str(parallel)), fake.port)
            fake.reset()
            err = work / f"burst-{side.name}.err"
            out = work / f"burst-{side.name}.out"
            peak = [0, 0]
            done = threading.Event()
            cpu0 = children_cpu()
            t0 = time.perf_counter()
            proc = subprocess.Popen(side.tick_cmd, env=env, stdout=open(out, "wb"),
                                    stderr=open(err, "wb"), start_new_session=True)
            LIVE.add(proc.pid)

            names = set()

            def sampler(pid=proc.pid):
                while not done.wait(0.5):
                    nproc, rss, _ = tree_sample(pid)
                    peak[0], peak[1] = max(peak[0], rss), max(peak[1], nproc)
                    for p in proc_tree(pid)[1:]:
                        try:
                            names.add(Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()[:80])
                        except OSError:
                            pass

            th = threading.Thread(target=sampler, daemon=True)
            th.start()
            timed_out = []

            def kill(pid=proc.pid):
                timed_out.append(True)
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

            timer = threading.Timer(timeout, kill)
            timer.start()
            try:
                _, status, _ = os.wait4(proc.pid, 0)
            finally:
                timer.cancel()
                done.set()
                LIVE.discard(proc.pid)
            wall = time.perf_counter() - t0
            cpu = children_cpu() - cpu0
            th.join()
            rc = os.waitstatus_to_exitcode(status)
            proc.returncode = rc
            try:  # anything the tick left behind in its group
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            ok, adv, other, first_err = verify_burst(side, store)
            ledger = ledger_counts(side, n)
            with fake.lock:
                r = dict(wall=wall, cpu=cpu, rc=rc, timed_out=bool(timed_out), ok=ok, adv=adv,
                         other=other, err=first_err, ledger=ledger, chats=fake.chats,
                         streamed=fake.streamed, models=sorted(fake.models),
                         tools=sorted(fake.tools), messages=sorted(fake.messages),
                         other_reqs=list(fake.other), foreign=list(fake.foreign),
                         rss=peak[0], procs=peak[1], children=sorted(names))
            res[side.name] = r
            log(f"burst {side.name}: {wall:.1f} s, rc {rc}{' TIMED OUT' if timed_out else ''}, "
                f"{ok}/{n} ok, {r['chats']} chat requests, CPU {cpu:.1f} s (load {loadavg()})")
            if rc != 0 or ok != n:
                sys.stderr.write(err.read_text(errors="replace")[-2000:] + "\n")
    finally:
        fake.close()
        store.unlink(missing_ok=True)

    def wall_cell(r):
        return f"> {timeout:.0f} s (timeout)" if r["timed_out"] else f"{r['wall']:.1f} s"

    print("| side | wall | ideal | wall / ideal | CPU | CPU per job | peak RSS (tree, sampled) | processes | ran ok | "
          "next run +1 d | chat requests | other requests | refused non-loopback |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for side in sides:
        r = res[side.name]
        label = "Rust `hermes cron tick`" if side.name == "rust" else "Python `hermes cron tick`"
        print(f"| {label} | {wall_cell(r)} | {ideal:.0f} s | {r['wall'] / ideal:.2f} | {r['cpu']:.1f} s | "
              f"{r['cpu'] * 1000 / n:.1f} ms | {fmt_mb(r['rss'])} | {r['procs']} | {grouped(r['ok'])}/{grouped(n)} | "
              f"{grouped(r['adv'])} | {grouped(r['chats'])} | {len(r['other_reqs'])} | {len(r['foreign'])} |")
    rs, py = res["rust"], res["python"]
    print(f"| Python / Rust | {ratio(rs['wall'], py['wall'], py['timed_out'])} | | | "
          f"{ratio(rs['cpu'], py['cpu'], py['timed_out'])} | {ratio(rs['cpu'], py['cpu'], py['timed_out'])} | "
          f"{ratio(rs['rss'], py['rss'])} | | | | | | |")
    print()
    for side in sides:
        r = res[side.name]
        notes = [f"exit {r['rc']}", f"ledger {r['ledger']}",
                 f"requests: model {', '.join(r['models']) or '—'}, tools sent {r['tools']}, "
                 f"messages {r['messages']}, streamed {r['streamed']}"]
        if r["children"]:
            notes.append(f"child processes seen: {r['children'][:6]}")
        if r["other"]:
            notes.append(f"not ok: {r['other']}")
        if r["err"]:
            notes.append(f"first last_error: {r['err']!r}")
        if r["other_reqs"]:
            uniq = sorted(set(r["other_reqs"]))
            notes.append(f"other requests at the fake: {uniq[:8]}")
        if r["foreign"]:
            uniq = sorted(set(r["foreign"]))
            notes.append(f"refused non-loopback: {uniq[:8]}")
        print(f"- {side.name}: " + "; ".join(notes))
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
    ap.add_argument("--timeout", type=float, default=None,
                    help="per-process limit: default 300 s for list/tick, 900 s for burst")
    ap.add_argument("--lateness-jobs", type=int, default=200)
    ap.add_argument("--lateness-rate", type=float, default=2.0)
    ap.add_argument("--lateness-lead", type=float, default=10.0)
    ap.add_argument("--idle-jobs", type=int, default=1000)
    ap.add_argument("--idle-settle", type=float, default=10.0,
                    help="seconds after the heartbeat file appears before the idle window")
    ap.add_argument("--idle-secs", type=float, default=120.0)
    ap.add_argument("--burst-jobs", type=int, default=1000)
    ap.add_argument("--burst-parallel", type=int, default=64)
    ap.add_argument("--burst-delay", type=float, default=1.0, help="the fake model's answer time")
    ap.add_argument("--only", default="list,tick,lateness,idle,burst")
    a = ap.parse_args()
    tick_timeout = a.timeout if a.timeout is not None else 300.0
    burst_timeout = a.timeout if a.timeout is not None else 900.0
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
        bench_list(sides, [int(x) for x in a.list_sizes.split(",") if x], a.runs, tick_timeout, work)
    if "tick" in only:
        bench_tick(sides, [int(x) for x in a.tick_sizes.split(",") if x], a.tick_runs, a.due_runs,
                   tick_timeout, work, py_inproc)
    if "lateness" in only and a.lateness_jobs > 0:
        bench_lateness(sides, a.lateness_jobs, a.lateness_rate, a.lateness_lead, work)
    if "idle" in only and a.idle_jobs > 0:
        bench_idle(sides, a.idle_jobs, a.idle_settle, a.idle_secs, work)
    if "burst" in only and a.burst_jobs > 0:
        bench_burst(sides, a.burst_jobs, a.burst_parallel, a.burst_delay, burst_timeout, work)
    print(f"\nload average at end: {loadavg()}")


if __name__ == "__main__":
    main()
