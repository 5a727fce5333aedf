"""Two builds of `hermes` side by side on jobs.json at 10,000 jobs (docs/BENCHMARKS.md).

    python3 scripts/bench-jobs-json/paired.py BEFORE_BIN AFTER_BIN [ROUNDS]

The store is scripts/python-hermes/gen_store.py's (10,000 jobs, nothing due), one copy
per side in a HERMES_HOME of its own under a temporary directory, HERMES_NOW pinned.
Wall time of `hermes cron list --all` and an idle `hermes cron tick`: ROUNDS (default
60) paired rounds after a warm-up, each round running both builds, the order swapped
every round; min and median per side. Then instructions (valgrind callgrind, all
threads) of each command, and of `hermes cron pause` of one job (a change that copies
the other 9,999 jobs as text), whose jobs.json must come out the same on both sides.
Plain python3; valgrind on PATH."""
import tempfile
import os, re, shutil, statistics, subprocess, sys, time
from pathlib import Path
before, after = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 60
repo = Path(__file__).resolve().parent.parent.parent
NOW = "2026-11-28T12:00:00+00:00"
work = Path(tempfile.mkdtemp(prefix="hermes-paired-"))
store = work / "jobs.json"
subprocess.run([sys.executable, repo / "scripts/python-hermes/gen_store.py", store, "10000", "--now", NOW], check=True)
homes = {}
for side in ("before", "after"):
    h = work / side; (h / "cron").mkdir(parents=True)
    shutil.copy(store, h / "cron/jobs.json")
    homes[side] = h
bins = {"before": before, "after": after}
def env(side):
    return dict(os.environ, HERMES_HOME=str(homes[side]), HERMES_NOW=NOW)
cmds = {"list --all": ["cron", "list", "--all"], "tick": ["cron", "tick"]}
def once(side, args):
    t = time.perf_counter()
    r = subprocess.run([bins[side], *args], env=env(side), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    d = time.perf_counter() - t
    if r.returncode != 0: raise SystemExit(f"{side} {args}: rc={r.returncode} {r.stderr[:300]}")
    return d * 1000
print(f"load before: {os.getloadavg()}")
for name, args in cmds.items():
    for side in bins: once(side, args)  # warm-up
    times = {"before": [], "after": []}
    for i in range(rounds):
        order = ("before", "after") if i % 2 == 0 else ("after", "before")
        for side in order: times[side].append(once(side, args))
    for side in bins:
        t = times[side]
        print(f"{name:12s} {side:6s} min {min(t):6.1f} ms  median {statistics.median(t):6.1f} ms  (n={len(t)})")
    same = sum(1 for b, a in zip(times['before'], times['after']) if a <= b)
    print(f"{name:12s} after <= before in {same}/{rounds} pairs")
print(f"load after: {os.getloadavg()}")
for name, args in cmds.items():
    for side in bins:
        r = subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={work}/cg.%p", bins[side], *args],
                           env=env(side), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        tot = sum(int(x.replace(",", "")) for x in re.findall(r"Collected : ([\d,]+)", r.stderr))
        print(f"callgrind {name:12s} {side:6s} {tot/1e6:8.1f} M instructions")

# A change of one job (the write path that copies the other 9,999 as text): callgrind of
# `cron pause` on a fresh copy of the store per side.
for side in bins:
    shutil.copy(store, homes[side] / "cron/jobs.json")
    r = subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={work}/cg.%p", bins[side], "cron", "pause", "b00000000005"],
                       env=env(side), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    tot = sum(int(x.replace(",", "")) for x in re.findall(r"Collected : ([\d,]+)", r.stderr))
    print(f"callgrind {'pause':12s} {side:6s} {tot/1e6:8.1f} M instructions")
a = (homes["before"] / "cron/jobs.json").read_bytes(); b = (homes["after"] / "cron/jobs.json").read_bytes()
strip = lambda t: re.sub(rb'"updated_at": "[^"]*"', b"", t)
print("pause leaves the same jobs.json on both sides:", strip(a) == strip(b))
shutil.rmtree(work, ignore_errors=True)
