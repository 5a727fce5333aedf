"""Dashboard first paint with N jobs, in Debian's headless Chromium over chromedriver.

    python3 scripts/dashboard/bench.py HERMES_BIN [N ...]

For each N: a fresh HERMES_HOME with N jobs (scripts/python-hermes/gen_store.py), the
daemon serving the API and the dashboard, and RUNS (default 5) loads of the page with the
key already in the tab's session storage. Prints, as medians: first contentful paint, the
time until all N rows are in the table (both from navigation start, read from the page's
own performance clock), and the `/api/jobs` request's duration. Plain python3; needs
chromium and chromedriver (scripts/dashboard/setup.sh).
"""

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "..", "python-hermes", "gen_store.py")
KEY = "dashboard-bench-key-0123456789abcdef"
RUNS = int(os.environ.get("RUNS", "5"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(port, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=data, method=method,
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read() or b"null")


def wait_port(port, what):
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"{what} did not listen on {port}")


def session(driver_port, profile):
    args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--disable-dev-shm-usage", "--window-size=1400,900",
            f"--user-data-dir={profile}"]
    caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
        "binary": "/usr/bin/chromium", "args": args}}}}
    return call(driver_port, "POST", "/session", caps)["value"]["sessionId"]


def measure(driver_port, sid, api_port, n):
    base = f"/session/{sid}"
    script = lambda js: call(driver_port, "POST", f"{base}/execute/sync",
                             {"script": js, "args": []})["value"]
    call(driver_port, "POST", f"{base}/url", {"url": f"http://127.0.0.1:{api_port}/"})
    script(f"sessionStorage.setItem('hermes-cron.api-key', {json.dumps(KEY)});")
    samples = []
    for _ in range(RUNS):
        call(driver_port, "POST", f"{base}/refresh", {})
        deadline = time.time() + 60
        while True:
            rows, at = script("return [document.querySelectorAll('#jobs tr').length, performance.now()]")
            if rows >= n:
                break
            if time.time() > deadline:
                sys.exit(f"only {rows} of {n} rows after 60 s")
            time.sleep(0.01)
        paint = script("const p = performance.getEntriesByType('paint')"
                       ".find(e => e.name === 'first-contentful-paint'); return p ? p.startTime : null")
        api = script("const r = performance.getEntriesByType('resource')"
                     ".find(e => e.name.includes('/api/jobs')); return r ? r.duration : null")
        samples.append((paint or 0.0, at, api or 0.0))
    return [statistics.median(column) for column in zip(*samples)]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary, sizes = os.path.abspath(sys.argv[1]), [int(n) for n in sys.argv[2:]] or [1000]
    print("| jobs | first contentful paint | all rows shown | GET /api/jobs |")
    print("| --- | --- | --- | --- |")
    for n in sizes:
        with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as profile:
            os.makedirs(os.path.join(home, "cron"))
            now = datetime.now(timezone.utc).replace(microsecond=0).isoformat()
            subprocess.run([sys.executable, GEN, os.path.join(home, "cron", "jobs.json"), str(n),
                            "--now", now], check=True)
            api_port, driver_port = free_port(), free_port()
            with open(os.path.join(home, ".env"), "w") as env:
                env.write(f"API_SERVER_KEY={KEY}\nAPI_SERVER_PORT={api_port}\n")
            environment = {"PATH": os.environ["PATH"], "HOME": home, "HERMES_HOME": home,
                           "TZ": "UTC", "HERMES_TIMEZONE": "UTC"}
            daemon = subprocess.Popen([binary, "cron", "daemon"], env=environment,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            driver = subprocess.Popen(["chromedriver", f"--port={driver_port}"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                wait_port(api_port, "the daemon's API")
                wait_port(driver_port, "chromedriver")
                sid = session(driver_port, profile)
                try:
                    paint, rows, api = measure(driver_port, sid, api_port, n)
                finally:
                    call(driver_port, "DELETE", f"/session/{sid}")
                print(f"| {n:,} | {paint:.0f} ms | {rows:.0f} ms | {api:.0f} ms |")
            finally:
                for process in (daemon, driver):
                    process.terminate()
                    process.wait()


if __name__ == "__main__":
    main()
