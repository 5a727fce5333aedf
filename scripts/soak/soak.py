#!/usr/bin/env python3
"""Bounded soak / chaos run of `hermes cron` (Python 3 stdlib only, loopback only).

One HERMES_HOME, 3 daemons randomly SIGKILLed / SIGTERMed and restarted, 4 CLI workers
adding / editing / pausing / resuming / removing jobs, a fake model server and a fake
Telegram Bot API that inject 429s, 5xx, resets and timeouts, plus bounded Telegram outage
windows (every sendMessage answered 502/503) that push deliveries into the outbox. After
the chaos phase: a quiet phase (no faults, no kills) so retries and the outbox can settle,
a graceful stop, then the checks. Usage: see scripts/soak/run.sh and docs/RELIABILITY.md.
"""
import argparse
import collections
import datetime as dt
import html
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOKEN = "123456789:AAsoaktokensoaktokensoaktokensoak12"
CHATS = ["telegram", "telegram:1002", "telegram:1003"]  # home channel is 1001
CLI_TIMEOUT = 60  # seconds; every CLI call is bounded
# The key a soak message carries: a script run's occurrence, or an agent reply's tag and n.
KEY_RE = re.compile(r"soak-run occ=\S+|soak-reply tag=\S+ n=\d+")
PART_RE = re.compile(r"\((\d+)/(\d+)\)")  # a split message's part marker
OUTBOX_FIRST_RETRY = 30  # jobs/src/ledger/outbox.rs retry_delay(0): a row is never claimed sooner


def ts(text):
    """A ledger time (RFC 3339, `Z`) as epoch seconds; None when empty."""
    if not text:
        return None
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def ident(text, chat):
    """What identifies one message across the daemon's payload (Markdown) and what the fake
    accepted (Telegram HTML): its soak key (+ part marker), else, for a failure notice
    without one, the chat and the text's letters and digits."""
    m = KEY_RE.search(text)
    if m:
        part = PART_RE.search(text)
        return ("key", m.group(0), part.group(0) if part else "")
    plain = html.unescape(re.sub(r"<[^>]+>", "", text))
    return ("notice", chat, re.sub(r"[^0-9A-Za-z]", "", plain))


def now_iso(delta=0.0):
    t = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=delta)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


class Soak:
    def __init__(self, args):
        self.args = args
        self.bin = os.path.abspath(args.bin)
        self.work = args.workdir or tempfile.mkdtemp(prefix="hermes-soak-")
        self.home = os.path.join(self.work, "home")
        self.logs = os.path.join(self.work, "logs")
        os.makedirs(os.path.join(self.home, "scripts"), exist_ok=True)
        os.makedirs(self.logs, exist_ok=True)
        self.rng = random.Random(args.seed)
        self.lock = threading.Lock()
        self.stop_chaos = threading.Event()
        self.stop_readers = threading.Event()
        self.children = []  # every process we started (fakes), ended by pid at the end
        self.stats = collections.Counter()
        self.notes = []  # unexpected CLI outcomes etc.
        self.jobs = {}  # id -> expected record
        self.slots = [None] * 3  # daemon Popen per slot
        self.restart_at = [0.0] * 3
        self.draining = []  # (Popen, deadline) after SIGTERM
        self.daemon_seq = 0
        self.events = []  # (time, what, pid, slot): daemon starts, kills, terms, exits
        self.outage_log = []  # [start, end] epoch seconds of each Telegram outage window
        self.t0 = time.time()

    # ------------------------------------------------------------------ setup
    def env(self, daemon=False):
        e = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self.home,
            "HERMES_HOME": self.home,
            "HERMES_TIMEZONE": "UTC",
            "TZ": "UTC",
            "LANG": "C.UTF-8",
        }
        if daemon:
            e["RUST_LOG"] = "info"
        return e

    def start_fake(self, kind):
        portfile = os.path.join(self.work, f"{kind}.port")
        p = subprocess.Popen([sys.executable, os.path.join(HERE, "fakes.py"), kind, portfile, self.logs],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=open(os.path.join(self.logs, f"{kind}.stderr"), "w"))
        self.children.append(p)
        for _ in range(100):
            if os.path.exists(portfile):
                return int(open(portfile).read())
            time.sleep(0.05)
        raise SystemExit(f"fake {kind} did not start")

    def setup(self):
        open(os.path.join(self.logs, "faults_on"), "w").close()
        llm = self.start_fake("llm")
        tg = self.start_fake("telegram")
        with open(os.path.join(self.home, "config.yaml"), "w") as f:
            f.write(
                "model:\n"
                "  default: soak-model\n"
                f"  base_url: http://127.0.0.1:{llm}/v1\n"
                "agent:\n"
                "  api_max_retries: 3\n"
                "  request_timeout_seconds: 4\n"
                "  max_turns: 3\n"
                "cron:\n"
                "  max_parallel_jobs: 8\n"
                "  delivery_retry_hours: 1\n"
            )
        with open(os.path.join(self.home, ".env"), "w") as f:
            f.write(f"TELEGRAM_BOT_TOKEN={TOKEN}\n"
                    f"TELEGRAM_API_BASE=http://127.0.0.1:{tg}\n"
                    "TELEGRAM_HOME_CHANNEL=1001\n")
        shutil.copy(os.path.join(HERE, "job_script.py"), os.path.join(self.home, "scripts", "soak_job.py"))

    # ------------------------------------------------------------------ CLI
    def cli(self, *args):
        """Runs `hermes cron ARGS`; returns (code, stdout, stderr); code None = timed out."""
        try:
            p = subprocess.run([self.bin, "cron", *args], env=self.env(), stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=CLI_TIMEOUT)
        except subprocess.TimeoutExpired:
            with self.lock:
                self.stats["cli_timeouts"] += 1
            return None, "", "timeout"
        with self.lock:
            self.stats["cli_calls"] += 1
            if p.returncode != 0:
                self.stats[f"cli_exit_{p.returncode}"] += 1
        return p.returncode, p.stdout, p.stderr

    def note(self, text):
        with self.lock:
            self.notes.append(text)

    # ------------------------------------------------------------------ driver workers
    def worker(self, wid):
        rng = random.Random(self.rng.random())
        seq = 0
        mine = []  # ids owned by this worker: operations on one job are sequential
        cap = 10
        while not self.stop_chaos.is_set():
            live = [i for i in mine if not self.jobs[i]["removed"]]
            ops = [("edit", 40), ("toggle", 8), ("remove", 5), ("read", 17)]
            if len(live) < cap:
                ops.append(("add", 30))
            if not live:
                ops = [("add", 1)]
            op = rng.choices([o for o, _ in ops], [w for _, w in ops])[0]
            if op == "add":
                seq += 1
                jid = self.add(wid, seq, rng)
                if jid:
                    mine.append(jid)
            elif op == "edit":
                self.edit(rng.choice(live), rng)
            elif op == "toggle":
                rec = [i for i in live if self.jobs[i]["recurring"]]
                paused = [i for i in rec if not self.jobs[i]["enabled"]]
                if paused and rng.random() < 0.6:
                    self.toggle(rng.choice(paused))
                elif rec:
                    self.toggle(rng.choice(rec))
            elif op == "remove":
                self.remove(rng.choice(live))
            else:
                self.cli(*rng.choice([["list", "--all", "--json"], ["status", "--json"], ["list"]]))
            self.stop_chaos.wait(rng.uniform(0.3, 2.0))

    def add(self, wid, seq, rng):
        kind = rng.choices(["agent", "script", "oneshot"], [40, 40, 20])[0]
        agent = kind == "agent" or (kind == "oneshot" and rng.random() < 0.5)
        tag = f"w{wid}j{seq}"
        name = f"soak-{kind}-{tag}-v0"
        prompt = f"Soak agent job tag={tag}.v0 - reply with one short line." if agent else f"soak script job {tag}"
        schedule = now_iso(rng.uniform(3, 10)) if kind == "oneshot" else "every 1m"
        args = ["add", schedule, prompt, "--name", name, "--deliver", rng.choice(CHATS)]
        if not agent:
            args += ["--script", "soak_job.py", "--no-agent"]
        code, out, err = self.cli(*args)
        m = re.search(r"^Created job: ([0-9a-f]{12})", out, re.M)
        if code == 0 and m:
            jid = m.group(1)
            with self.lock:
                self.stats["adds"] += 1
                self.jobs[jid] = {"id": jid, "kind": kind, "agent": agent, "tag": tag, "v": 0,
                                  "name": name, "prompt": prompt, "minutes": 1 if kind != "oneshot" else None,
                                  "enabled": True, "recurring": kind != "oneshot", "removed": False,
                                  "uncertain": [], "history": [("add", time.time())]}
            return jid
        self.note(f"add failed ({code}): {err.strip()[:300]}")
        return None

    def mark_uncertain(self, jid, what):
        with self.lock:
            self.jobs[jid]["uncertain"].append(what)
            self.stats["uncertain_ops"] += 1

    def edit(self, jid, rng):
        j = self.jobs[jid]
        v = j["v"] + 1
        name = f"soak-{j['kind']}-{j['tag']}-v{v}"
        args = ["edit", jid, "--name", name]
        prompt = None
        if j["agent"]:
            prompt = f"Soak agent job tag={j['tag']}.v{v} - reply with one short line."
            args += ["--prompt", prompt]
        minutes = None
        if j["recurring"] and rng.random() < 0.05:
            minutes = 2 if j["minutes"] == 1 else 1
            args += ["--schedule", f"every {minutes}m"]
        code, out, err = self.cli(*args)
        if code == 0:
            with self.lock:
                self.stats["edits"] += 1
                j["v"], j["name"] = v, name
                if prompt:
                    j["prompt"] = prompt
                if minutes:
                    j["minutes"] = minutes
                j["history"].append((f"edit v{v}", time.time()))
        elif code == 1:
            self.note(f"edit {jid} refused: {err.strip()[:300]}")
        else:
            self.mark_uncertain(jid, f"edit v{v} exit {code}: {err.strip()[:200]}")

    def toggle(self, jid):
        j = self.jobs[jid]
        verb = "pause" if j["enabled"] else "resume"
        code, out, err = self.cli(verb, jid)
        if code == 0:
            with self.lock:
                self.stats[verb + "s"] += 1
                j["enabled"] = not j["enabled"]
                j["history"].append((verb, time.time()))
        elif code == 1:
            self.note(f"{verb} {jid} refused: {err.strip()[:300]}")
        else:
            self.mark_uncertain(jid, f"{verb} exit {code}: {err.strip()[:200]}")

    def remove(self, jid):
        code, out, err = self.cli("remove", jid)
        if code == 0:
            with self.lock:
                self.stats["removes"] += 1
                self.jobs[jid]["removed"] = True
                self.jobs[jid]["history"].append(("remove", time.time()))
        elif code == 1:
            self.note(f"remove {jid} refused: {err.strip()[:300]}")
        else:
            self.mark_uncertain(jid, f"remove exit {code}: {err.strip()[:200]}")

    # ------------------------------------------------------------------ store readers
    def reader(self):
        path = os.path.join(self.home, "cron", "jobs.json")
        last_list = 0.0
        while not self.stop_readers.is_set():
            try:
                with open(path, "rb") as f:
                    data = f.read()
                json.loads(data.decode("utf-8"))
                with self.lock:
                    self.stats["store_reads"] += 1
            except FileNotFoundError:
                pass
            except (ValueError, UnicodeDecodeError) as e:
                with self.lock:
                    self.stats["store_unreadable_reads"] += 1
                    n = self.stats["store_unreadable_reads"]
                if n <= 5:
                    with open(os.path.join(self.logs, f"unreadable-{n}.json"), "wb") as f:
                        f.write(data)
                self.note(f"jobs.json unreadable by the driver: {e}")
            if time.time() - last_list > 3:
                last_list = time.time()
                code, out, err = self.cli("list", "--all", "--json")
                if code is not None and code != 0:
                    with self.lock:
                        self.stats["list_failures"] += 1
                    self.note(f"list --all --json exit {code}: {err.strip()[:300]}")
                elif code == 0:
                    try:
                        json.loads(out)
                    except ValueError:
                        with self.lock:
                            self.stats["list_failures"] += 1
                        self.note("list --all --json printed invalid JSON")
            self.stop_readers.wait(0.5)

    # ------------------------------------------------------------------ daemons
    def start_daemon(self, slot):
        self.daemon_seq += 1
        log = open(os.path.join(self.logs, f"daemon-{slot}-{self.daemon_seq:03d}.log"), "w")
        p = subprocess.Popen([self.bin, "cron", "daemon"], env=self.env(daemon=True),
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        log.close()
        self.slots[slot] = p
        with self.lock:
            self.stats["daemon_starts"] += 1
            self.events.append((time.time(), "start", p.pid, slot))

    def reap_draining(self, final=False):
        keep = []
        for p, deadline in self.draining:
            if p.poll() is not None:
                continue
            if time.time() > deadline:
                self.note(f"daemon {p.pid} still alive 45 s after SIGTERM; SIGKILLed")
                with self.lock:
                    self.stats["sigterm_overdue"] += 1
                    self.events.append((time.time(), "SIGKILL (overdue)", p.pid, None))
                p.kill()
                p.wait()
                continue
            keep.append((p, deadline))
        self.draining = keep

    def chaos(self):
        rng = random.Random(self.rng.random())
        for s in range(3):
            self.start_daemon(s)
        next_action = time.time() + rng.uniform(4, 12)
        while not self.stop_chaos.is_set():
            self.stop_chaos.wait(0.2)
            now = time.time()
            self.reap_draining()
            for s in range(3):
                p = self.slots[s]
                if p is not None and p.poll() is not None:
                    self.note(f"daemon {p.pid} (slot {s}) exited by itself with {p.returncode}")
                    with self.lock:
                        self.stats["daemon_unexpected_exits"] += 1
                        self.events.append((now, f"exited by itself ({p.returncode})", p.pid, s))
                    self.slots[s] = None
                    self.restart_at[s] = now + 1
                if self.slots[s] is None and now >= self.restart_at[s]:
                    self.start_daemon(s)
            if now < next_action:
                continue
            next_action = now + rng.uniform(4, 15)
            s = rng.randrange(3)
            p = self.slots[s]
            if p is None:
                continue
            if rng.random() < 0.75:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()
                with self.lock:
                    self.stats["sigkills"] += 1
                    self.events.append((now, "SIGKILL", p.pid, s))
            else:
                os.kill(p.pid, signal.SIGTERM)
                self.draining.append((p, now + 45))
                with self.lock:
                    self.stats["sigterms"] += 1
                    self.events.append((now, "SIGTERM", p.pid, s))
            self.slots[s] = None
            self.restart_at[s] = now + rng.uniform(0, 8)

    def stop_all_daemons(self):
        procs = [p for p in self.slots if p is not None] + [p for p, _ in self.draining]
        for p in procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGTERM)
                self.events.append((time.time(), "SIGTERM (final stop)", p.pid, None))
        deadline = time.time() + 45
        for p in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                self.note(f"daemon {p.pid} still alive 45 s after the final SIGTERM; SIGKILLed")
                with self.lock:
                    self.stats["sigterm_overdue"] += 1
                    self.events.append((time.time(), "SIGKILL (overdue)", p.pid, None))
                p.kill()
                p.wait()
        self.slots = [None] * 3
        self.draining = []

    # ------------------------------------------------------------------ Telegram outages
    def outage_windows(self):
        """(start, end) in seconds after the chaos start: `--outages` windows of
        `--outage-seconds`, centred at k/(n+1) of the chaos phase, inside it."""
        chaos = self.args.minutes * 60
        n, w = self.args.outages, min(self.args.outage_seconds, self.args.minutes * 60)
        out = []
        for k in range(1, n + 1):
            start = max(0.0, min(chaos * k / (n + 1) - w / 2, chaos - w))
            out.append((start, start + w))
        return out

    def outages(self):
        flag = os.path.join(self.logs, "outage_on")
        for start, end in self.outage_windows():
            if self.stop_chaos.wait(max(0.0, self.t0 + start - time.time())):
                break
            open(flag, "w").close()
            began = time.time()
            print(f"soak: t+{int(began - self.t0)}s Telegram outage on (every sendMessage 502/503) "
                  f"for {int(end - start)} s", flush=True)
            self.stop_chaos.wait(max(0.0, self.t0 + end - time.time()))
            os.remove(flag)
            with self.lock:
                self.outage_log.append([began, time.time()])
            print(f"soak: t+{int(time.time() - self.t0)}s Telegram outage off", flush=True)
            if self.stop_chaos.is_set():
                break

    # ------------------------------------------------------------------ run
    def run(self):
        self.setup()
        t0 = self.t0 = time.time()
        windows = ", ".join(f"{int(a)}-{int(b)} s" for a, b in self.outage_windows()) or "none"
        print(f"soak: work dir {self.work}; chaos {self.args.minutes} min (Telegram outages at {windows}), "
              f"quiet {self.args.quiet} s", flush=True)
        workers = [threading.Thread(target=self.worker, args=(w,), daemon=True) for w in range(4)]
        reader = threading.Thread(target=self.reader, daemon=True)
        chaos = threading.Thread(target=self.chaos, daemon=True)
        outage = threading.Thread(target=self.outages, daemon=True)
        reader.start()
        for w in workers:
            w.start()
        chaos.start()
        outage.start()
        end = t0 + self.args.minutes * 60
        while time.time() < end:
            time.sleep(min(30, max(0.1, end - time.time())))
            with self.lock:
                s = dict(self.stats)
            print(f"soak: t+{int(time.time() - t0)}s adds={s.get('adds', 0)} edits={s.get('edits', 0)} "
                  f"removes={s.get('removes', 0)} kills={s.get('sigkills', 0)}+{s.get('sigterms', 0)}TERM "
                  f"unreadable={s.get('store_unreadable_reads', 0)}", flush=True)
        self.stop_chaos.set()
        for w in workers:
            w.join(CLI_TIMEOUT + 5)
        chaos.join(10)
        outage.join(10)
        if os.path.exists(os.path.join(self.logs, "outage_on")):
            os.remove(os.path.join(self.logs, "outage_on"))
        # Quiet phase: all daemons up, no faults, no kills: retries and the outbox settle.
        os.remove(os.path.join(self.logs, "faults_on"))
        for s in range(3):
            if self.slots[s] is None or self.slots[s].poll() is not None:
                self.start_daemon(s)
        print(f"soak: chaos over; quiet phase {self.args.quiet} s", flush=True)
        qend = time.time() + self.args.quiet
        while time.time() < qend:
            self.reap_draining()
            time.sleep(1)
        self.stop_all_daemons()
        time.sleep(2)
        self.stop_readers.set()
        reader.join(CLI_TIMEOUT + 5)
        return self.check()

    # ------------------------------------------------------------------ checks
    def check(self):
        R = collections.OrderedDict()
        problems = collections.defaultdict(list)
        # --- the store
        path = os.path.join(self.home, "cron", "jobs.json")
        store_ok = True
        try:
            store = json.load(open(path, encoding="utf-8"))
            stored = {j["id"]: j for j in store["jobs"]}
        except (OSError, ValueError, KeyError, TypeError) as e:
            store_ok = False
            stored = {}
            problems["unreadable stores"].append(f"final jobs.json: {e}")
        code, out, err = self.cli("list", "--all", "--json")
        if code != 0:
            problems["unreadable stores"].append(f"final `list --all --json` exit {code}: {err.strip()[:300]}")
        unreadable = self.stats["store_unreadable_reads"] + self.stats["list_failures"] + (0 if store_ok else 1) \
            + (1 if code != 0 else 0)
        if self.stats["store_unreadable_reads"] or self.stats["list_failures"]:
            problems["unreadable stores"].append(
                f"driver saw {self.stats['store_unreadable_reads']} unreadable reads, "
                f"{self.stats['list_failures']} failed lists")
        # --- jobs lost / edits lost
        lost = edits_lost = resurrected = uncertain = 0
        for jid, exp in self.jobs.items():
            got = stored.get(jid)
            if exp["uncertain"]:
                uncertain += 1
                continue
            if exp["removed"]:
                if got is not None:
                    resurrected += 1
                    problems["removed jobs back"].append(f"{jid} removed at {exp['history'][-1][1]:.0f} but in the store")
                continue
            if got is None:
                lost += 1
                problems["jobs lost"].append(f"{jid} ({exp['name']}) history={exp['history']}")
                continue
            diffs = []
            if got.get("name") != exp["name"]:
                diffs.append(f"name {got.get('name')!r} != {exp['name']!r}")
            if exp["agent"] and got.get("prompt") != exp["prompt"]:
                diffs.append(f"prompt {got.get('prompt')!r} != {exp['prompt']!r}")
            if exp["recurring"]:
                minutes = (got.get("schedule") or {}).get("minutes")
                if minutes != exp["minutes"]:
                    diffs.append(f"schedule minutes {minutes} != {exp['minutes']}")
                if bool(got.get("enabled")) != exp["enabled"]:
                    diffs.append(f"enabled {got.get('enabled')} != {exp['enabled']} (state {got.get('state')})")
            if diffs:
                edits_lost += 1
                problems["edits lost"].append(f"{jid}: " + "; ".join(diffs) + f" history={exp['history'][-4:]}")
        phantom = [jid for jid in stored if jid not in self.jobs]
        for jid in phantom:
            problems["phantom jobs"].append(f"{jid} in the store but never added by the driver")
        # --- the ledger
        code, out, err = self.cli("runs", "--json", "--limit", "10000000")
        runs = json.loads(out)["runs"] if code == 0 else []
        if code != 0:
            problems["unreadable stores"].append(f"`runs --json` exit {code}: {err.strip()[:300]}")
            unreadable += 1
        status = collections.Counter(r["status"] for r in runs)
        occ_done = collections.Counter(r["occurrence"] for r in runs if r["status"] in ("ok", "error"))
        occ_dups = {o: n for o, n in occ_done.items() if n > 1}
        for o, n in occ_dups.items():
            problems["occurrences run twice"].append(f"ledger: {o} has {n} ok/error rows")
        by_occ = {r["occurrence"]: r for r in runs}
        # ledger rows per (job, scheduled_at): a different key for the same instant would dodge the index
        inst = collections.Counter((r["job_id"], r["scheduled_at"]) for r in runs
                                   if r["source"] == "scheduler" and r["status"] in ("ok", "error", "interrupted"))
        for (j, at), n in inst.items():
            if n > 1:
                problems["occurrences run twice"].append(f"ledger: job {j} scheduled_at {at} has {n} rows")
        # --- the side file: one line per script execution, naming its occurrence
        side = os.path.join(self.home, "soak-side.txt")
        lines = open(side).read().splitlines() if os.path.exists(side) else []
        side_occ = collections.Counter()
        unknown = 0
        for line in lines:
            m = re.match(r"soak-run occ=(\S+) ppid=(\d+)", line)
            if not m:
                continue
            if m.group(1).startswith("UNKNOWN-"):
                unknown += 1
                problems["executions without a claimed occurrence"].append(line)
                continue
            side_occ[m.group(1)] += 1
            if m.group(1) not in by_occ:
                problems["executions without a claimed occurrence"].append(f"{line} (occurrence not in the ledger)")
        side_dups = {o: n for o, n in side_occ.items() if n > 1}
        for o, n in side_dups.items():
            problems["occurrences run twice"].append(f"side file: {o} executed {n} times")
        # --- the fake Telegram: every accepted message
        tg = [json.loads(l) for l in open(os.path.join(self.logs, "telegram.log")) if l.strip()]
        accepted = [e for e in tg if e.get("kind") == "accepted"]
        faults_tg = collections.Counter(e["fault"] for e in tg
                                        if e["fault"] not in ("ok", "outage") and e.get("kind") != "accepted")
        faults_tg.update(e["fault"] for e in accepted if e["fault"] in ("accepted_reset", "timeout"))
        keyed = collections.Counter()
        notices = collections.Counter()
        for e in accepted:
            text = e["text"]
            k = ident(text, e["chat"])
            if k[0] == "key":
                keyed[k] += 1
            else:
                jm = re.search(r"job_id: ([0-9a-f]{12})", text)
                notices[jm.group(1) if jm else "?"] += 1
        tg_dups = {k: n for k, n in keyed.items() if n > 1}
        for k, n in tg_dups.items():
            times = ", ".join(f"t+{e['t'] - self.t0:.1f}s chat {e['chat']} ({e['fault']})" for e in accepted
                              if ident(e["text"], e["chat"]) == k)
            problems["messages delivered twice"].append(f"{k[1]} {k[2]} accepted {n} times: {times}")
        errors_by_job = collections.Counter(r["job_id"] for r in runs if r["status"] == "error")
        notice_excess = 0
        for jid, n in notices.items():
            if n > errors_by_job.get(jid, 0):
                notice_excess += n - errors_by_job.get(jid, 0)
                problems["messages delivered twice"].append(
                    f"job {jid}: {n} failure notices accepted for {errors_by_job.get(jid, 0)} failed runs")
        # --- the fake model
        llm = [json.loads(l) for l in open(os.path.join(self.logs, "llm.log")) if l.strip()]
        faults_llm = collections.Counter(e["fault"] for e in llm if e["fault"] not in ("ok", "slow"))
        slow_llm = sum(1 for e in llm if e["fault"] == "slow")
        # --- the outbox and the deliveries that failed (ledger, read-only) vs the fake
        D = self.deliveries(tg, accepted, problems)
        outbox = D["outbox_states"]
        outbox_dups = [k for k in D["dup_idents"] if k not in tg_dups]
        # --- self-overlap of ok/error runs of one job
        overlaps = 0
        per_job = collections.defaultdict(list)
        for r in runs:
            if r["status"] in ("ok", "error") and r["started_at"] and r["finished_at"]:
                per_job[r["job_id"]].append((r["started_at"], r["finished_at"], r["occurrence"]))
        for jid, rows in per_job.items():
            rows.sort()
            for a, b in zip(rows, rows[1:]):
                if b[0] < a[1]:
                    overlaps += 1
                    problems["overlapping runs of one job (info)"].append(f"{a[2]} and {b[2]}")
        delivered_sent = sum(1 for r in runs if (r.get("delivery") or "").startswith("sent"))

        R["jobs lost"] = lost
        R["occurrences run twice"] = len(occ_dups) + sum(1 for v in inst.values() if v > 1) + len(side_dups)
        R["messages delivered twice"] = len(tg_dups) + len(outbox_dups) + notice_excess
        R["messages lost"] = len(D["lost"])
        R["unreadable stores"] = unreadable
        R["edits lost"] = edits_lost
        R["removed jobs back"] = resurrected
        R["phantom jobs"] = len(phantom)
        R["executions without a claimed occurrence"] = len(problems["executions without a claimed occurrence"])
        must_be_zero = list(R.keys())
        T = collections.OrderedDict()
        T["minutes"] = self.args.minutes
        T["jobs added / edits / pauses / resumes / removes"] = (
            f"{self.stats['adds']} / {self.stats['edits']} / {self.stats['pauses']} / "
            f"{self.stats['resumes']} / {self.stats['removes']}")
        T["jobs in store at the end"] = len(stored)
        T["jobs with an uncertain CLI outcome (not checked)"] = uncertain
        T["CLI calls / exit 1 / exit 2 / timeouts"] = (
            f"{self.stats['cli_calls']} / {self.stats['cli_exit_1']} / {self.stats['cli_exit_2']} / "
            f"{self.stats['cli_timeouts']}")
        T["driver store reads"] = self.stats["store_reads"]
        T["runs ok / error / interrupted / skipped / missed / running(left)"] = (
            f"{status['ok']} / {status['error']} / {status['interrupted']} / {status['skipped']} / "
            f"{status['missed']} / {status['running']}")
        T["script executions (side-file lines)"] = len(lines)
        T["deliveries sent (runs with delivery 'sent…')"] = delivered_sent
        T["messages accepted by fake Telegram (replies / failure notices)"] = (
            f"{len(accepted)} ({sum(keyed.values())} / {sum(notices.values())})")
        T["telegram outage windows (s after start: 502/503 answers)"] = D["outages"]
        T["outbox rows by state"] = json.dumps(outbox, sort_keys=True)
        T["transient delivery failures (runs 'will retry' / outbox rows)"] = (
            f"{D['transient_runs']} / {D['outbox_rows']}")
        T["  delivered via the outbox (accepted >= first retry)"] = D["via_outbox"]
        T["  outbox attempts of the delivered rows"] = D["attempts_sent"]
        T["  still pending in the outbox at the end"] = D["pending_end"]
        T["  given up as ambiguous on a retry (arrived / not)"] = (
            f"{D['amb_retry_arrived']} / {D['amb_retry_lost']}")
        T["  given up as final on a retry / expired"] = f"{D['final_retry']} / {D['expired']}"
        T["  rows left 'sending' (arrived / not: counted lost)"] = (
            f"{D['sending_arrived']} / {D['sending_lost']}")
        T["  lost (must be 0; by cause)"] = json.dumps(dict(sorted(D["lost_causes"].items())))
        T["ambiguous in-run failures, not resent (info)"] = (
            f"{D['amb_runs']} runs; the fake accepted {D['amb_accepted']} unanswered messages "
            f"(accepted-then-reset + 62 s hangs, in-run and on retries)")
        T["final in-run failures (4xx, no target; info)"] = D["final_runs"]
        T["messages accepted = in-run + via the outbox"] = (
            f"{len(accepted)} = {len(accepted) - D['accepted_via_outbox']} + {D['accepted_via_outbox']}")
        T["faults injected: telegram"] = json.dumps(dict(sorted(faults_tg.items())))
        T["faults injected: llm (+ slow answers)"] = json.dumps(dict(sorted(faults_llm.items()))) + f" +{slow_llm} slow"
        T["faults injected: total (without outage answers)"] = sum(faults_tg.values()) + sum(faults_llm.values())
        T["model requests"] = len(llm)
        T["daemon kills: SIGKILL / SIGTERM / starts"] = (
            f"{self.stats['sigkills']} / {self.stats['sigterms']} / {self.stats['daemon_starts']}")
        T["daemons overdue after SIGTERM / exited by themselves"] = (
            f"{self.stats['sigterm_overdue']} / {self.stats['daemon_unexpected_exits']}")
        T["overlapping ok/error runs of one job (info)"] = overlaps
        T["daemon log: outbox retries logged / drains cut after 30 s"] = (
            f"{D['log_retries']} / {D['log_aborted_drains']}")
        print("\n=== hermes-cron soak: results ===")
        for k, v in R.items():
            print(f"{k:<46} {v}{'' if v == 0 else '   <-- MUST BE 0'}")
        print("--- totals")
        for k, v in T.items():
            print(f"{k:<46} {v}")
        if any(problems.values()):
            print("--- details")
            for k, items in problems.items():
                if not items:
                    continue
                print(f"[{k}] {len(items)}")
                for it in items[:15]:
                    print(f"   {it}")
        if self.notes:
            print(f"--- driver notes ({len(self.notes)}, first 15)")
            for n in self.notes[:15]:
                print(f"   {n}")
        failed = [k for k in must_be_zero if R[k] != 0]
        with open(os.path.join(self.work, "summary.json"), "w") as f:
            json.dump({"checks": R, "totals": T, "problems": problems, "notes": self.notes,
                       "failed": failed}, f, indent=2, default=str)
        print(f"work dir (home, logs, summary.json): {self.work}")
        print("RESULT:", "FAIL " + ", ".join(failed) if failed else "PASS")
        return 1 if failed else 0

    def deliveries(self, tg, accepted, problems):
        """Every delivery that failed for a transient reason — a finished run whose ledger
        `delivery` says "(will retry)", and every outbox row (an interrupted run may have
        queued one) — against what the fake Telegram accepted.

        In the ledger (cron/executions.db) a run's `delivery` column ends each failed
        target with "(will retry)" for a transient failure (kept in the outbox), with
        "not resent, to never post twice" for an ambiguous one (never retried), and with
        neither for a final one (4xx, no target). An outbox row (one per occurrence and
        target) ends `sent`, `failed` (its `last_error` says which kind), `expired`, or
        stays `pending` / `sending`. A copy the fake accepted before the row's
        `created_at` + 30 s came from the run itself (no row is claimed sooner); after, from
        the outbox."""
        out = {"lost": [], "lost_causes": collections.Counter(), "dup_idents": set()}
        rows, ob = [], []
        try:
            con = sqlite3.connect(f"file:{self.home}/cron/executions.db?mode=ro", uri=True, timeout=10)
            con.row_factory = sqlite3.Row
            rows = [dict(r) for r in con.execute("SELECT * FROM runs")]
            # Every delivery gets its outbox row before its first request (write-ahead);
            # a row the run itself settled (one attempt, sent or given up) is the run's
            # own delivery, counted from `runs.delivery`. The rest went through retries
            # or were left by a process that died while delivering.
            ob = [dict(r) for r in con.execute(
                "SELECT * FROM outbox WHERE NOT (attempts = 1 AND state IN ('sent', 'failed')) "
                "ORDER BY id")]
            con.close()
        except sqlite3.Error as e:
            problems["unreadable stores"].append(f"executions.db: {e}")
        out["outbox_states"] = dict(collections.Counter(r["state"] for r in ob))
        out["outbox_rows"] = len(ob)
        run_by_occ = {r["occurrence"]: r for r in rows}
        ob_by_occ = collections.defaultdict(list)
        for r in ob:
            ob_by_occ[r["occurrence"]].append(r)
        copies_of = collections.defaultdict(list)
        for e in accepted:
            copies_of[ident(e["text"], e["chat"])].append(e)
        seen_of = collections.defaultdict(list)  # every request whose text the fake read
        for e in tg:
            if "text" in e:
                seen_of[ident(e["text"], e.get("chat", ""))].append(e)
        finished = [r for r in rows if r["status"] in ("ok", "error")]
        transient = [r for r in finished if "(will retry)" in (r["delivery"] or "")]
        out["transient_runs"] = len(transient)
        out["amb_runs"] = sum(1 for r in finished if "not resent, to never post twice" in (r["delivery"] or ""))
        out["final_runs"] = sum(1 for r in finished if "failed:" in (r["delivery"] or "")
                                and "(will retry)" not in r["delivery"]
                                and "not resent, to never post twice" not in r["delivery"])
        out["amb_accepted"] = sum(1 for e in accepted if e["fault"] in ("accepted_reset", "timeout"))
        items = [(r["occurrence"], r, row) for r in transient for row in (ob_by_occ.get(r["occurrence"]) or [None])]
        items += [(row["occurrence"], run_by_occ.get(row["occurrence"]), row) for row in ob
                  if row["occurrence"] not in {r["occurrence"] for r in transient}]
        c = collections.Counter()
        attempts_sent = []
        via_outbox_ids = set()

        def when(t):
            return f"t+{t - self.t0:.1f}s" if t is not None else "?"

        def lose(cause, text):
            out["lost_causes"][cause] += 1
            out["lost"].append(text)
            problems["messages lost"].append(f"[{cause}] {text}")

        for occ, run, row in items:
            if row is not None:
                payload = json.loads(row["payload"])
                chat = row["target"].split(":")[1]
                key = ident(payload.get("text", ""), chat)
            else:
                m = re.search(r"failed: telegram:(-?\w+)", run["delivery"] or "")
                chat = m.group(1) if m else "?"
                # A script run's message carries its occurrence; an agent reply's n is unknown.
                key = ("key", f"soak-run occ={occ}", "")
            start = ts(run["started_at"]) if run else ts(row["created_at"]) - 600
            boundary = ts(row["created_at"]) + OUTBOX_FIRST_RETRY if row else float("inf")
            copies = [e for e in copies_of.get(key, []) if key[0] == "key" or e["t"] >= start - 1]
            in_run = [e for e in copies if e["t"] < boundary]
            later = [e for e in copies if e["t"] >= boundary]
            state = row["state"] if row else None
            err = (row["last_error"] or "") if row else ""
            desc = (f"{occ} -> {row['target'] if row else 'telegram:' + chat}: run "
                    f"{run['status'] if run else 'not in the ledger'}"
                    + (f", outbox row {row['id']} {state} attempts={row['attempts']} created "
                       f"{when(ts(row['created_at']))} next {when(ts(row['next_attempt_at']))} "
                       f"finished {when(ts(row['finished_at']))} last_error={err[:160]!r}" if row else
                       ", no outbox row")
                    + f"; fake: {len(seen_of.get(key, []))} requests read, {len(copies)} accepted "
                    + ", ".join(f"{when(e['t'])} ({e['fault']})" for e in copies))
            if len(copies) > 1:
                out["dup_idents"].add(key)
                problems["messages delivered twice"].append(
                    f"{desc} (in-run copies {len(in_run)}, via the outbox {len(later)})")
            if in_run:
                # A transient failure means the platform did not take the message.
                problems["transient failure but accepted in-run (info)"].append(desc)
            if later:
                via_outbox_ids.update(id(e) for e in later)
            if copies:
                if state == "sent":
                    c["via_outbox"] += 1
                    attempts_sent.append(row["attempts"])
                elif state == "sending":
                    c["sending_arrived"] += 1
                    problems["outbox rows left 'sending' (info)"].append(desc)
                elif state == "failed" and "not resent" in err:
                    c["amb_retry_arrived"] += 1
                elif state == "pending":
                    problems["accepted but still pending: a retry would post it twice"].append(desc)
                else:
                    problems["outbox state disagrees with the fake (info)"].append(desc)
                continue
            if state == "pending":
                c["pending_end"] += 1
                problems["still pending in the outbox at the end (info)"].append(desc)
            elif state == "sending":
                c["sending_lost"] += 1
                lose("left sending", desc + self.kills_near(ts(row["next_attempt_at"])))
            elif state == "failed" and "not resent" in err:
                c["amb_retry_lost"] += 1
            elif state == "failed":
                c["final_retry"] += 1
            elif state == "expired":
                c["expired"] += 1
                lose("expired", desc)
            elif state == "sent":
                lose("outbox says sent, the fake never accepted it", desc)
            else:
                lose("not in the outbox", desc)
        for k in ("via_outbox", "pending_end", "sending_arrived", "sending_lost", "amb_retry_arrived",
                  "amb_retry_lost", "final_retry", "expired"):
            out[k] = c[k]
        attempts_sent.sort()
        out["attempts_sent"] = (f"min {attempts_sent[0]}, median {attempts_sent[len(attempts_sent) // 2]}, "
                                f"max {attempts_sent[-1]}" if attempts_sent else "-")
        out["accepted_via_outbox"] = sum(1 for e in accepted if id(e) in via_outbox_ids)
        wins = []
        for a, b in self.outage_log:
            n = sum(1 for e in tg if e["fault"] == "outage" and a - 0.5 <= e["t"] <= b + 0.5)
            wins.append(f"{a - self.t0:.0f}-{b - self.t0:.0f} ({n})")
        out["outages"] = ", ".join(wins) or "none"
        retries = aborted = 0
        for name in os.listdir(self.logs):
            if name.startswith("daemon-"):
                text = open(os.path.join(self.logs, name), errors="replace").read()
                retries += text.count("delivery retried from the outbox")
                aborted += text.count("still going after 30 s; stopping them")
        out["log_retries"], out["log_aborted_drains"] = retries, aborted
        return out

    def kills_near(self, t):
        """Daemon stops in the minute after a row became due: who may have claimed it."""
        if t is None:
            return ""
        near = [f"{what} pid {pid} at t+{at - self.t0:.1f}s" for at, what, pid, _ in self.events
                if t - 1 <= at <= t + 60 and what != "start"]
        return "; daemon stops in the minute after it was due: " + (", ".join(near) or "none")

    def cleanup(self):
        self.stop_chaos.set()
        self.stop_readers.set()
        for p in [p for p in self.slots if p is not None] + [p for p, _ in self.draining]:
            if p.poll() is None:
                p.kill()
                p.wait()
        for p in self.children:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=10)
    # 150 s: a row still pending when the quiet phase starts has failed at most 3 times, so
    # its next attempt is at most 120 s away (outbox retry_delay: 30 s, 60 s, 120 s ...);
    # 150 s gives every such row at least one fault-free retry.
    ap.add_argument("--quiet", type=int, default=150, help="seconds without faults or kills at the end")
    ap.add_argument("--outages", type=int, default=2, help="Telegram outage windows during the chaos phase")
    ap.add_argument("--outage-seconds", type=float, default=40, help="length of each outage window")
    ap.add_argument("--bin", required=True)
    ap.add_argument("--workdir")
    ap.add_argument("--seed", type=int)
    args = ap.parse_args()
    soak = Soak(args)

    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    try:
        rc = soak.run()
    except KeyboardInterrupt:
        print("soak: interrupted", file=sys.stderr)
        rc = 2
    finally:
        soak.cleanup()
    sys.exit(rc)


if __name__ == "__main__":
    main()
