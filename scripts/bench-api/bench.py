"""API latency against a running server: p50/p99 of `GET /api/jobs?include_disabled=true`
and `POST /api/jobs`, the dashboard's `GET /api/cron/jobs` and the `/metrics` scrape time
(when the server has them). One keep-alive connection, requests one after another.
Plain python3.

    bench.py HOST:PORT KEY LABEL [--list N] [--create N] [--dashboard N] [--metrics N]
"""

import argparse
import http.client
import json
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("address")
    parser.add_argument("key")
    parser.add_argument("label")
    parser.add_argument("--list", type=int, default=50)
    parser.add_argument("--create", type=int, default=50)
    parser.add_argument("--dashboard", type=int, default=0)
    parser.add_argument("--metrics", type=int, default=0)
    args = parser.parse_args()
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
