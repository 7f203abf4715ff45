"""Median latency of the leaderboard page, an inspector page and the ranking API against a running server.

A bounded Python loop on loopback (standard library only): for each URL, a few warm-up requests, then N timed
requests from C threads; prints a Markdown table (median, p95, max, requests/s) and checks the targets
(pages < 100 ms median, API < 50 ms). The first request of each URL is reported separately as "first": on a freshly
started server it includes computing the board (the cache is empty).

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/kbv_web_bench SECRET_KEY=x .venv/bin/python manage.py migrate
    ... manage.py seed_demo_results --llms 10 --problems 250 --samples 5
    ... manage.py collectstatic --noinput
    API_THROTTLE_ANON=100000/minute ... manage.py runserver 127.0.0.1:8001 --noreload &
    .venv/bin/python benchmarks/web_load.py --base-url http://127.0.0.1:8001 --requests 200 --concurrency 1

The inspector page measured is the first kernel the leaderboard's heat map links to (or --inspector-path).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

TARGETS_MS = {"page": 100.0, "api": 50.0}


def fetch(url: str) -> tuple[float, int, int]:
    """(milliseconds, status, bytes) for one GET, body fully read."""
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=60) as response:  # loopback URL given by the operator
            body = response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        if exc.code == 429:
            hint = "the API throttle: start the server with API_THROTTLE_ANON=100000/minute"
            raise SystemExit(f"{url}: HTTP 429, {hint}") from exc
        raise
    return (time.perf_counter() - start) * 1000.0, status, len(body)


def measure(url: str, *, requests: int, concurrency: int, warmup: int) -> dict:
    first_ms, status, size = fetch(url)
    if status != 200:
        raise SystemExit(f"{url}: HTTP {status}")
    for _ in range(warmup):
        fetch(url)
    lock = threading.Lock()
    times: list[float] = []

    def one(_: int) -> None:
        ms, st, _size = fetch(url)
        if st != 200:
            raise RuntimeError(f"{url}: HTTP {st}")
        with lock:
            times.append(ms)

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(one, range(requests)))
    wall = time.perf_counter() - start
    times.sort()
    return {
        "first": first_ms,
        "median": statistics.median(times),
        "p95": times[max(0, int(len(times) * 0.95) - 1)],
        "max": times[-1],
        "rps": requests / wall,
        "bytes": size,
    }


def discover_inspector(base_url: str) -> str:
    with urllib.request.urlopen(base_url + "/", timeout=60) as response:
        html = response.read().decode()
    match = re.search(r"kernels(?:/|\\/|\\u002f)(\d+)", html)  # the heat map's JSON escapes "/"
    if not match:
        raise SystemExit("no kernel link found on the leaderboard: seed data first or pass --inspector-path")
    return f"/kernels/{match.group(1)}/"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8001")
    parser.add_argument("--requests", type=int, default=200, help="timed requests per URL")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--inspector-path", default="", help="e.g. /kernels/123/ (default: found on the board)")
    parser.add_argument("--query", default="", help="query string for the board and API, e.g. hardware=synthetic-h200")
    args = parser.parse_args(argv)
    base = args.base_url.rstrip("/")
    query = f"?{args.query}" if args.query else ""
    cold_ms, _, _ = fetch(f"{base}/{query}")  # on a freshly started server: computes and caches the board
    urls = [
        ("page", "leaderboard /", f"{base}/{query}"),
        (
            "page",
            "leaderboard /?level=2&sort=-fast_1",
            f"{base}/?level=2&sort=-fast_1" + (f"&{args.query}" if args.query else ""),
        ),
        ("page", "inspector", base + (args.inspector_path or discover_inspector(base))),
        ("api", "GET /api/leaderboard/", f"{base}/api/leaderboard/{query}"),
    ]
    print(f"{args.requests} requests per URL, concurrency {args.concurrency}, {args.warmup} warm-up")
    print(f"first request to the board (cold cache on a fresh server): {cold_ms:.0f} ms\n")
    print("| URL | first (ms) | median (ms) | p95 (ms) | max (ms) | req/s | bytes | target | ok |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    failed = False
    for kind, label, url in urls:
        r = measure(url, requests=args.requests, concurrency=args.concurrency, warmup=args.warmup)
        ok = r["median"] < TARGETS_MS[kind]
        failed |= not ok
        print(
            f"| {label} | {r['first']:.1f} | {r['median']:.1f} | {r['p95']:.1f} | {r['max']:.1f} | {r['rps']:.0f} "
            f"| {r['bytes']} | < {TARGETS_MS[kind]:.0f} | {'yes' if ok else 'NO'} |"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
