"""Differential check of our cron engine (`CronExpr::next_after`) against croniter.

Owns: generating random (expression, instant, zone) triples, asking croniter and our
engine (the `croniter_diff` example, over JSON lines) for the next fire, and classing
every disagreement against an independent model of docs/SCHEDULES.md#dst-rules (the Vixie DST rule). It
never edits the engine; a disagreement it cannot class is reported and fails the run.

    crondiff.py diff [N] [--seed S]        run N triples, print classes, exit 1 if any unclassified
    crondiff.py subset N OUT [--seed S]    write a fixture of N triples with croniter's answers
    crondiff.py bench [N]                  ns/op of croniter vs ours on the bench cases

Run through scripts/croniter/*.sh, which set up the venv and build the example.
"""

import argparse
import bisect
import collections
import datetime as dt
import json
import os
import random
import subprocess
import sys
import time
from multiprocessing import Pool
from zoneinfo import ZoneInfo

UTC = dt.timezone.utc
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(REPO, "target", "release", "examples", "croniter_diff")

ZONES = [
    "America/New_York", "Europe/Berlin", "Australia/Sydney", "America/Santiago",  # DST
    "Asia/Kolkata", "Australia/Adelaide", "Australia/Lord_Howe",  # half-hour
    "Pacific/Chatham", "Asia/Kathmandu",  # 45-minute
    "UTC",
]
YEARS = (2024, 2031)  # instants in [2024-01-01, 2031-01-01)

MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]


# --------------------------------------------------------------------------- zones

def _offset(zone, t):
    return t.astimezone(zone).utcoffset()


def transitions(name):
    """Every offset change of `name` in YEARS, as (instant, offset_before, offset_after)."""
    zone = ZoneInfo(name)
    out = []
    t = dt.datetime(YEARS[0], 1, 1, tzinfo=UTC) - dt.timedelta(days=2)
    end = dt.datetime(YEARS[1], 1, 1, tzinfo=UTC) + dt.timedelta(days=2)
    prev = _offset(zone, t)
    step = dt.timedelta(hours=1)
    while t < end:
        nxt = t + step
        off = _offset(zone, nxt)
        if off != prev:
            lo, hi = t, nxt  # offset(lo) == prev, offset(hi) == off
            while hi - lo > dt.timedelta(minutes=1):
                mid = lo + (hi - lo) / 2
                mid = mid.replace(second=0, microsecond=0)
                if mid <= lo:
                    break
                if _offset(zone, mid) == prev:
                    lo = mid
                else:
                    hi = mid
            out.append((hi, prev, off))
            prev = off
        t = nxt
    return out


_TRANSITIONS = {}


def zone_transitions(name):
    if name not in _TRANSITIONS:
        _TRANSITIONS[name] = transitions(name)
    return _TRANSITIONS[name]


# --------------------------------------------------------------------------- generator

def _gen_time_field(r, lo, hi, dst_hours=False):
    """A minute or hour field: wildcard, steps, fixed values, lists, ranges."""
    span = hi - lo + 1

    def value():
        if dst_hours and r.random() < 0.6:
            return r.choice([0, 1, 2, 3, 4])  # the hours DST changes touch
        if not dst_hours and r.random() < 0.4:
            return r.choice([0, 15, 30, 45, 59])  # minutes on Lord Howe / Chatham edges
        return r.randint(lo, hi)

    def rng():
        a = r.randint(lo, hi - 1)
        return a, r.randint(a + 1, hi)

    k = r.random()
    if k < 0.15:
        return "*"
    if k < 0.32:
        return "*/%d" % r.choice([n for n in (1, 2, 3, 4, 5, 6, 7, 10, 12, 15, 20, 30, 45) if n < span])
    if k < 0.40:
        a, b = rng()
        return "%d-%d/%d" % (a, b, r.randint(1, max(1, (b - a))))
    if k < 0.45:
        return "%d/%d" % (r.randint(lo, hi), r.randint(1, span // 2))
    if k < 0.75:
        return str(value())
    if k < 0.88:
        return ",".join(str(v) for v in sorted(set(value() for _ in range(r.randint(2, 4)))))
    if k < 0.95:
        a, b = rng()
        return "%d-%d" % (a, b)
    a, b = rng()
    return "%d-%d,%d" % (a, b, value())


def _case(r, name):
    """Mixed-case a name, as users type it."""
    return r.choice([name, name.upper(), name.capitalize()])


def _gen_dom(r):
    k = r.random()
    if k < 0.62:
        return "*"
    if k < 0.78:
        return str(r.choice([1, 13, 15, 28, 29, 30, 31, r.randint(1, 31)]))
    if k < 0.86:
        return ",".join(str(v) for v in sorted(set(r.randint(1, 31) for _ in range(r.randint(2, 3)))))
    if k < 0.93:
        a = r.randint(1, 30)
        return "%d-%d" % (a, r.randint(a + 1, 31))
    return "*/%d" % r.randint(2, 15)


def _gen_month(r):
    k = r.random()
    if k < 0.7:
        return "*"
    if k < 0.8:
        return str(r.randint(1, 12))
    if k < 0.88:
        return _case(r, r.choice(MONTHS))
    if k < 0.94:
        a = r.randint(0, 10)
        b = r.randint(a + 1, 11)
        if r.random() < 0.5:
            return "%s-%s" % (_case(r, MONTHS[a]), _case(r, MONTHS[b]))
        return "%d-%d" % (a + 1, b + 1)
    return ",".join(_case(r, m) for m in sorted(set(r.sample(MONTHS, r.randint(2, 4))), key=MONTHS.index))


def _gen_dow(r):
    k = r.random()
    if k < 0.55:
        return "*"
    if k < 0.67:
        return str(r.randint(0, 7))  # Sunday is 0 or 7
    if k < 0.75:
        return _case(r, r.choice(DAYS))
    if k < 0.83:
        return r.choice(["1-5", "MON-FRI", "mon-fri", "0,6", "6,7", "sat,sun", "5-7", "0-3", "SUN-WED"])
    if k < 0.93:
        return ",".join(str(v) for v in sorted(set(r.randint(0, 7) for _ in range(r.randint(2, 3)))))
    a = r.randint(0, 6)
    return "%d-%d" % (a, r.randint(a + 1, 7))


def gen_expr(r, dst_focus=False):
    if dst_focus and r.random() < 0.6:
        # jobs whose readings fall in the hours DST changes skip or repeat
        h = r.choice(["0", "1", "2", "3", "1,2", "2-3", "*/2", "*/3", "*"])
        m = r.choice([str(r.randint(0, 59)), "0", "15", "30", "45", "*/15", "*/10", "*", "0,30"])
        return "%s %s * * %s" % (m, h, r.choice(["*", "*", "0", "7", "sun", "0-4"]))
    k = r.random()
    if k < 0.08:
        # the shapes Hermes' phrases and docs produce
        return r.choice([
            "0 9 * * *", "30 2 * * *", "0 9 * * 1-5", "*/15 * * * *", "0 */2 * * *",
            "0 0 29 2 *", "0 9 * * MON-FRI", "0 0 13 * 5", "30 1 * * *", "45 2 * * 0",
            "15 2 * * *", "0 3 * * *", "*/30 * * * *", "0 * * * *", "0 0 1 * *",
        ])
    minute = _gen_time_field(r, 0, 59)
    hour = _gen_time_field(r, 0, 23, dst_hours=True)
    return " ".join([minute, hour, _gen_dom(r), _gen_month(r), _gen_dow(r)])


def gen_instant(r, zone_name, near=0.5):
    """An instant in YEARS; by default half of them within 30 h of one of the zone's DST
    changes (most within 3 h)."""
    trans = zone_transitions(zone_name)
    if trans and r.random() < near:
        t = r.choice(trans)[0]
        if r.random() < 0.6 + 0.4 * (near == 1.0):
            delta = dt.timedelta(seconds=r.randint(-3 * 3600, 3 * 3600))
        else:
            delta = dt.timedelta(seconds=r.randint(-30 * 3600, 30 * 3600))
        t = t + delta
    else:
        start = dt.datetime(YEARS[0], 1, 1, tzinfo=UTC)
        span = (dt.datetime(YEARS[1], 1, 1, tzinfo=UTC) - start).total_seconds()
        t = start + dt.timedelta(seconds=r.randrange(int(span)))
    k = r.random()
    if k < 0.35:
        t = t.replace(second=0)  # exactly on a minute: "strictly after" matters
    elif k < 0.45:
        t = t.replace(minute=r.choice([0, 15, 30, 45]), second=0)
    return t.replace(microsecond=0)


def gen_triples(n, seed, near_dst=0):
    """n triples; the last `near_dst` of them start within 3 h of a DST change of a zone
    that has one (the fixture uses these to hold enough documented-class rows)."""
    r = random.Random(seed)
    out = []
    for i in range(n):
        dst = i >= n - near_dst
        zone = r.choice([z for z in ZONES if zone_transitions(z)] if dst else ZONES)
        out.append({
            "id": i,
            "expr": gen_expr(r, dst_focus=dst),
            "zone": zone,
            "after": iso(gen_instant(r, zone, near=1.0 if dst else 0.5)),
        })
    return out


def iso(t):
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(s):
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00")).astimezone(UTC)


# --------------------------------------------------------------------------- croniter

def croniter_next(case):
    """croniter's next fire: tz-aware start in the zone, get_next(datetime)."""
    from croniter import croniter  # pylint: disable=import-outside-toplevel

    start = parse_iso(case["after"]).astimezone(ZoneInfo(case["zone"]))
    try:
        nxt = croniter(case["expr"], start).get_next(dt.datetime)
    except Exception as e:  # noqa: BLE001 - every croniter failure is a result here
        return {"error": "%s: %s" % (type(e).__name__, e)}
    return {"next": iso(nxt), "offset": int(start.utcoffset().total_seconds())}


# --------------------------------------------------------------------------- docs/SCHEDULES.md#dst-rules model

def _parse_field(text, lo, hi, names=None, dow=False):
    vals = set()
    for part in text.lower().split(","):
        step, stepped = 1, "/" in part
        if stepped:
            part, s = part.split("/")
            step = int(s)
            if step < 1:
                raise ValueError("step")
        if part == "*":
            a, b = lo, hi
        elif "-" in part:
            x, y = part.split("-")
            a, b = _value(x, names, lo), _value(y, names, lo)
        else:
            a = _value(part, names, lo)
            b = hi if stepped else a
        if a > b or a < lo or b > hi:
            raise ValueError("range %s" % part)
        vals.update(range(a, b + 1, step))
    if dow and 7 in vals:
        vals.discard(7)
        vals.add(0)
    return vals


def _value(x, names, lo):
    if names and x in names:
        return names.index(x) + lo
    return int(x)


class Model:
    """docs/SCHEDULES.md#dst-rules with the DstRule of schedules/src/cron.rs, written independently:
    day matching per Vixie (both DOM and DOW restricted, i.e. not `*` → either; a DOW
    naming all 7 days next to a `*` step in DOM counts as `*`, as croniter and our
    engine do), and
    per matching wall-clock reading: one instant if it happens once; if repeated, the
    first pass only (fixed time) or both passes (elapsed); if skipped, the end of the
    gap (fixed time) or nothing (elapsed)."""

    def __init__(self, expr, croniter_days=True):
        f = expr.split()
        self.minutes = sorted(_parse_field(f[0], 0, 59))
        self.hours = sorted(_parse_field(f[1], 0, 23))
        self.doms = _parse_field(f[2], 1, 31)
        self.months = _parse_field(f[3], 1, 12, MONTHS)
        self.dows = _parse_field(f[4], 0, 7, DAYS, dow=True)
        self.dom_star = f[2] == "*"
        self.dow_star = f[4] == "*"
        if croniter_days and len(self.dows) == 7 and "*" in f[2]:
            # croniter's quirk: a DOW naming all 7 days counts as `*` when the DOM text
            # holds a `*` (`*/8`), so the day matches the DOM field alone.
            self.dow_star = True
        names_a_time = lambda s: not s.startswith("*") and "/" not in s  # noqa: E731
        self.fixed = names_a_time(f[0]) and names_a_time(f[1])

    def day_ok(self, d):
        if d.month not in self.months:
            return False
        dom = d.day in self.doms
        dow = (d.isoweekday() % 7) in self.dows
        if self.dom_star and self.dow_star:
            return True
        if self.dom_star:
            return dow
        if self.dow_star:
            return dom
        return dom or dow

    def instants(self, wall, zone):
        a = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
        b = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
        ok = lambda u: u.astimezone(zone).replace(tzinfo=None) == wall  # noqa: E731
        real = sorted({u for u in (a, b) if ok(u)})
        if len(real) == 2:
            return real if not self.fixed else real[:1]
        if len(real) == 1:
            return real
        if not self.fixed:
            return []
        probe = wall
        for _ in range(24 * 60):
            probe += dt.timedelta(minutes=1)
            u = probe.replace(tzinfo=zone).astimezone(UTC)
            if ok_at(u, zone, probe):
                return [u]
        return []

    def next_after(self, after, zone_name):
        zone = ZoneInfo(zone_name)
        local = after.astimezone(zone).replace(tzinfo=None)
        floor = local - dt.timedelta(hours=4)
        best = None
        best_wall = None
        day = floor.date()
        last = day + dt.timedelta(days=366 * 9)
        while day <= last:
            if best_wall is not None and day > best_wall.date() + dt.timedelta(days=1):
                break
            if self.day_ok(day):
                for h in self.hours:
                    if dt.datetime.combine(day, dt.time(h, 59)) < floor:
                        continue
                    for m in self.minutes:
                        wall = dt.datetime.combine(day, dt.time(h, m))
                        if wall < floor:
                            continue
                        if best_wall is not None and wall > best_wall + dt.timedelta(hours=4):
                            return best
                        for u in self.instants(wall, zone):
                            if u > after and (best is None or u < best):
                                best = u
                                best_wall = u.astimezone(zone).replace(tzinfo=None)
            day += dt.timedelta(days=1)
        return best


def ok_at(u, zone, wall):
    return u.astimezone(zone).replace(tzinfo=None) == wall


def model_next(case):
    try:
        m = Model(case["expr"])
    except (ValueError, IndexError) as e:
        return {"error": "model: %s" % e}
    t = m.next_after(parse_iso(case["after"]), case["zone"])
    return {"next": iso(t) if t else None, "fixed": m.fixed}


def both(case):
    return croniter_next(case), model_next(case)


# --------------------------------------------------------------------------- ours

def ours_next(cases):
    """Our engine's answers, from the release example over JSON lines."""
    payload = "".join(json.dumps({k: c[k] for k in ("expr", "zone", "after")}) + "\n" for c in cases)
    proc = subprocess.run([EXAMPLE, "next"], input=payload, capture_output=True, text=True, check=True)
    lines = proc.stdout.splitlines()
    assert len(lines) == len(cases), "example answered %d of %d" % (len(lines), len(cases))
    return [json.loads(line) for line in lines]


# --------------------------------------------------------------------------- classes

def _where(t, trans, zone):
    """Where instant `t` lies relative to DST change `trans` = (T, before, after)."""
    if t is None:
        return "none"
    T, off_b, off_a = trans
    d = off_b - off_a
    if d > dt.timedelta(0):  # repeated wall-clock stretch: [T-d, T) first, [T, T+d) second
        if T - d <= t < T:
            return "first_pass"
        if T <= t < T + d:
            return "second_pass"
    elif t == T:
        return "gap_end"
    if t < T:
        return "before"
    same_day = t.astimezone(ZoneInfo(zone)).date() == T.astimezone(ZoneInfo(zone)).date()
    return "after_same_day" if same_day else "later_day"


def classify(case, cron, model, ours):
    """None when ours and croniter agree; else the class name of the disagreement."""
    never = "error" in cron and "CroniterBadDateError" in cron["error"]
    if never and ours.get("next", 1) is None and model.get("next", 1) is None:
        return None  # e.g. `0 0 30 2 *`: croniter raises "failed to find next date", we say none
    if "error" in ours or "error" in cron or "error" in model:
        if "error" in ours and "error" in cron:
            return None
        return "BUG/parse: ours=%s croniter=%s" % (
            "error" if "error" in ours else "ok", "error" if "error" in cron else "ok")
    if ours.get("offset") != cron.get("offset"):
        return "BUG/tzdb: chrono-tz and zoneinfo disagree on the offset at `after`"
    if ours["next"] == cron["next"]:
        return None
    if ours["next"] != model["next"]:
        return "BUG/engine: ours differs from the docs/SCHEDULES.md#dst-rules model"
    if Model(case["expr"], croniter_days=True).next_after(parse_iso(case["after"]), case["zone"]) == (
        parse_iso(cron["next"]) if cron["next"] else None
    ):
        return ("BUG/dom-dow: DOM is a `*` step, DOW names all 7 days; croniter (like Vixie) "
                "matches the DOM alone, we match every day")
    a = parse_iso(case["after"])
    o = parse_iso(ours["next"]) if ours["next"] else None
    c = parse_iso(cron["next"]) if cron["next"] else None
    lo = min(x for x in (o, c) if x is not None)
    hi = max(x for x in (o, c) if x is not None)
    trans = zone_transitions(case["zone"])
    starts = [t[0] for t in trans]
    i = bisect.bisect_left(starts, a - dt.timedelta(hours=3))
    window = dt.timedelta(hours=3)
    for T, ob, oa in trans[i:]:
        if T - window > hi:
            break
        if abs(lo - T) <= window or abs(a - T) <= window:
            kind = "spring_gap" if oa > ob else "autumn_repeat"
            rule = "fixed_time" if model["fixed"] else "elapsed"
            return "DST/%s/%s: ours %s, croniter %s" % (
                kind, rule, _where(o, (T, ob, oa), case["zone"]), _where(c, (T, ob, oa), case["zone"]))
    return "BUG/croniter-outside-dst: ours matches the model of docs/SCHEDULES.md#dst-rules, croniter differs, no DST change near"


# --------------------------------------------------------------------------- commands

def evaluate(cases, jobs):
    t0 = time.time()
    with Pool(jobs) as pool:
        py = pool.map(both, cases, chunksize=200)
    t1 = time.time()
    ours = ours_next(cases)
    t2 = time.time()
    print("croniter + model: %.1f s (%d processes); ours: %.2f s (one process, incl. start)"
          % (t1 - t0, jobs, t2 - t1), file=sys.stderr)
    return [(c, cr, m, o) for c, (cr, m), o in zip(cases, py, ours)]


def local(t, zone):
    return parse_iso(t).astimezone(ZoneInfo(zone)).isoformat() if t else "none"


def cmd_diff(args):
    cases = gen_triples(args.n, args.seed)
    rows = evaluate(cases, args.jobs)
    classes = collections.Counter()
    examples = collections.defaultdict(list)
    agree = 0
    model_off = []  # ours == croniter but the model of docs/SCHEDULES.md#dst-rules says otherwise: a model bug
    for case, cron, model, ours in rows:
        cls = classify(case, cron, model, ours)
        if cls is None:
            agree += 1
            if "next" in ours and ours["next"] != model.get("next"):
                model_off.append((case, ours, model))
            continue
        classes[cls] += 1
        if len(examples[cls]) < (args.examples if not cls.startswith("BUG") else 3 * args.examples):
            examples[cls].append((case, cron, ours))
    print("%d triples (seed %d): %d agree, %d disagree" % (len(rows), args.seed, agree, len(rows) - agree))
    bad = 0
    for cls, count in sorted(classes.items(), key=lambda kv: (kv[0].startswith("BUG"), -kv[1])):
        bad += count if cls.startswith("BUG") else 0
        print("\n%6d  %s" % (count, cls))
        for case, cron, ours in examples[cls]:
            z = case["zone"]
            print("        %-22s %-19s after %s  ours %s  croniter %s" % (
                case["expr"], z, local(case["after"], z),
                ours.get("error") or local(ours.get("next"), z),
                cron.get("error") or local(cron.get("next"), z)))
    summary = collections.Counter("documented (Vixie DST rule)" if not k.startswith("BUG") else "unclassified"
                                  for k in classes.elements())
    print("\nsummary: agree %d; %s" % (agree, "; ".join("%s %d" % kv for kv in sorted(summary.items()))))
    print("self-check: the model of docs/SCHEDULES.md#dst-rules differs from both engines on %d agreed rows%s" % (
        len(model_off), "".join("\n        %s ours=%s model=%s" % (c["expr"], o["next"], m.get("next"))
                                for c, o, m in model_off[:5])))
    return 1 if bad else 0


def cmd_subset(args):
    cases = gen_triples(args.n, args.seed, near_dst=args.n // 2)
    rows = evaluate(cases, args.jobs)
    bad = 0
    with open(args.out, "w") as f:
        for case, cron, model, ours in rows:
            cls = classify(case, cron, model, ours)
            if cls is not None and cls.startswith("BUG"):
                bad += 1
                print("left out of the fixture (unclassified): %s %s" % (case["expr"], cls), file=sys.stderr)
                continue
            row = {"expr": case["expr"], "zone": case["zone"], "after": case["after"],
                   "croniter": cron.get("next")}
            if cls is not None:
                row["class"] = cls.split(":")[0]
                row["vixie"] = model["next"]
            f.write(json.dumps(row) + "\n")
    print("wrote %s (%d rows, %d unclassified rows left out)" % (args.out, len(rows) - bad, bad),
          file=sys.stderr)
    return 0


BENCH_CASES = [
    ("*/5 * * * *", "UTC"),
    ("0 9 * * 1-5", "UTC"),
    ("30 2 * * *", "America/New_York"),
    ("0 0 29 2 *", "UTC"),
]


def bench_afters(count=1000):
    """Starts spread over 2026 (every ~8h45m, so all hours and both DST changes)."""
    start = dt.datetime(2026, 1, 1, tzinfo=UTC)
    step = dt.timedelta(days=365) / count
    return [(start + step * i).replace(microsecond=0) for i in range(count)]


def cmd_bench(args):
    """Both sides, alternating, `rounds` times; each figure is the best round, so load
    from other processes on a shared machine inflates neither side alone."""
    from croniter import croniter  # pylint: disable=import-outside-toplevel

    afters = bench_afters()
    rust_in = "".join(json.dumps({"expr": e, "zone": z, "afters": [iso(t) for t in afters],
                                  "iterations": args.n}) + "\n" for e, z in BENCH_CASES)
    best = collections.defaultdict(lambda: float("inf"))

    def keep(key, ns):
        best[key] = min(best[key], ns)

    load = os.getloadavg()[0]
    for _ in range(args.rounds):
        rust = subprocess.run([EXAMPLE, "bench"], input=rust_in, capture_output=True, text=True, check=True)
        for case, line in zip(BENCH_CASES, rust.stdout.splitlines()):
            keep((case, "ours"), json.loads(line)["ns_per_op"])
        for expr, zone in BENCH_CASES:
            z = ZoneInfo(zone)
            starts = [t.astimezone(z) for t in afters]
            it = croniter(expr, starts[0])
            for s in starts:  # warm-up
                it.get_next(dt.datetime, start_time=s)
            k = len(starts)
            t0 = time.perf_counter_ns()
            for i in range(args.n):
                it.get_next(dt.datetime, start_time=starts[i % k])
            keep(((expr, zone), "reuse"), (time.perf_counter_ns() - t0) / args.n)
            n2 = max(1, args.n // 4)
            t0 = time.perf_counter_ns()
            for i in range(n2):
                croniter(expr, starts[i % k]).get_next(dt.datetime)
            keep(((expr, zone), "fresh"), (time.perf_counter_ns() - t0) / n2)
    print("%d next-fire computations per case and side over %d starts spread over 2026; best of %d "
          "alternating rounds; croniter %s, Python %s; load average %.2f at start"
          % (args.n, len(afters), args.rounds, _version("croniter"), sys.version.split()[0], load))
    print("| expression | zone | croniter `get_next` ns/op | `croniter(expr, now).get_next` ns/op "
          "| ours ns/op | ratio | ratio (construct each time) |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for case in BENCH_CASES:
        reuse, fresh, ours = best[(case, "reuse")], best[(case, "fresh")], best[(case, "ours")]
        print("| `%s` | %s | %s | %s | %s | %.0f× | %.0f× |" % (
            case[0], case[1], _fmt(reuse), _fmt(fresh), _fmt(ours), reuse / ours, fresh / ours))
    return 0


def _fmt(ns):
    return "{:,.0f}".format(ns)


def _version(pkg):
    import importlib.metadata  # pylint: disable=import-outside-toplevel
    return importlib.metadata.version(pkg)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("diff")
    d.add_argument("n", type=int, nargs="?", default=100_000)
    d.add_argument("--seed", type=int, default=20261101)
    d.add_argument("--examples", type=int, default=3)
    d.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    s = sub.add_parser("subset")
    s.add_argument("n", type=int)
    s.add_argument("out")
    s.add_argument("--seed", type=int, default=7)
    s.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    b = sub.add_parser("bench")
    b.add_argument("n", type=int, nargs="?", default=20_000)
    b.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    return {"diff": cmd_diff, "subset": cmd_subset, "bench": cmd_bench}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
