"""API latency against a running server: p50/p99 of `GET /api/jobs?include_disabled=true`
and `POST /api/jobs`, the dashboard's `GET /api/cron/jobs` and the `/metrics` scrape time
(when the server has them). One keep-alive connection, requests one after another.
With --clients C --each N: C clients at once, each on its own keep-alive connection,
create N jobs each; prints creates/s, p50/p99, and the server's peak RSS (VmHWM) when
--pid names it. Plain python3.

    bench.py HOST:PORT KEY LABEL [--list N] [--create N] [--dashboard N] [--metrics N]
                                 [--clients C --each N [--pid PID]]
"""

import argparse
import http.client
import json
import threading
import time


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def timed(conn, method, path, key, body=None, dashboard=False):
    if dashboard:
        headers = {"X-Hermes-Session-Token": key}
    else:
        headers = {"Authorization": f"Bearer {key}"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    start = time.perf_counter()
    conn.request(method, path, body=body, headers=headers)
    response = conn.getresponse()
    data = response.read()
    elapsed = (time.perf_counter() - start) * 1000
    if response.status != 200:
        raise SystemExit(f"{method} {path}: {response.status} {data[:200]!r}")
    return elapsed, data


def show(label, what, samples, extra=""):
    print(f"{label:28} {what:22} n={len(samples):4}  p50 {percentile(samples, 50):8.2f} ms"
          f"  p99 {percentile(samples, 99):8.2f} ms{extra}", flush=True)


def peak_rss_mb(pid):
    """The process's peak resident set (VmHWM), in MB; None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def concurrent_creates(address, key, label, clients, each, pid):
    """`clients` threads, each on its own connection, create `each` jobs at once."""
    host, port = address.rsplit(":", 1)
    samples, lock, failures = [], threading.Lock(), []
    start_gate = threading.Barrier(clients + 1)

    def client(n):
        conn = http.client.HTTPConnection(host, int(port), timeout=300)
        mine = []
        start_gate.wait()
        try:
            for i in range(each):
                body = json.dumps({"name": f"client {n} create {i}", "schedule": "every 1h",
                                   "prompt": "Summarize the news"})
                mine.append(timed(conn, "POST", "/api/jobs", key, body)[0])
        except BaseException as e:  # a failed request ends this client, not the run
            failures.append(f"client {n}: {e}")
        with lock:
            samples.extend(mine)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    start_gate.wait()
    began = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - began
    rss = peak_rss_mb(pid) if pid else None
    extra = f"  {len(samples) / wall:7.1f} creates/s"
    if rss is not None:
        extra += f"  peak RSS {rss:.0f} MB"
    show(label, f"{clients} clients create", samples, extra)
    if failures:
        raise SystemExit("; ".join(failures[:5]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("address")
    parser.add_argument("key")
    parser.add_argument("label")
    parser.add_argument("--list", type=int, default=50)
    parser.add_argument("--create", type=int, default=50)
    parser.add_argument("--dashboard", type=int, default=0)
    parser.add_argument("--metrics", type=int, default=0)
    parser.add_argument("--clients", type=int, default=0)
    parser.add_argument("--each", type=int, default=20)
    parser.add_argument("--pid", type=int, default=0)
    args = parser.parse_args()
    if args.clients:
        concurrent_creates(args.address, args.key, args.label, args.clients, args.each, args.pid)
        return
    host, port = args.address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=120)
    samples, size = [], 0
    for _ in range(args.list):
        elapsed, data = timed(conn, "GET", "/api/jobs?include_disabled=true", args.key)
        samples.append(elapsed)
        size = len(data)
    jobs = len(json.loads(data)["jobs"])
    show(args.label, f"list ({jobs} jobs)", samples, f"  ({size / 1e6:.1f} MB)")
    samples = []
    for i in range(args.create):
        body = json.dumps({"name": f"bench create {i}", "schedule": "every 1h",
                           "prompt": "Summarize the news"})
        samples.append(timed(conn, "POST", "/api/jobs", args.key, body)[0])
    show(args.label, "create", samples)
    if args.dashboard:
        samples = []
        for _ in range(args.dashboard):
            elapsed, data = timed(conn, "GET", "/api/cron/jobs", args.key, dashboard=True)
            samples.append(elapsed)
        show(args.label, f"dashboard list ({len(json.loads(data))} jobs)", samples,
             f"  ({len(data) / 1e6:.1f} MB)")
    if args.metrics:
        samples = [timed(conn, "GET", "/metrics", args.key)[0] for _ in range(args.metrics)]
        show(args.label, "/metrics scrape", samples)


if __name__ == "__main__":
    main()
