"""`strata monitor serve`'s /metrics: a real monitored job (4 ranks, a tree of tool ranks, the
histogram filter) leaves its rounds; the latest round in the Prometheus text format is read with
the Prometheus project's own parser and checked against the format's rules and the round."""
import json
import os
import re
import subprocess
import urllib.request

from strata_testlib import STRATA, StrataTestCase, base_env, program, strata_run
from test_web import prometheus_parser

P, ITER = 4, 30
SAMPLE_LINE = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*"'
                         r'(,[a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*")*\})? \S+$')


class MonitorMetrics(StrataTestCase):
    def scrape(self, rounds):
        server = subprocess.Popen([STRATA, "monitor", "serve", rounds, "--port", "0"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            url = re.search(r"serving (\S+)", server.stdout.readline()).group(1)
            with urllib.request.urlopen(url.rstrip("/") + "/metrics", timeout=30) as r:
                return r.headers["Content-Type"], r.read().decode()
        finally:
            server.terminate()
            server.communicate(timeout=30)

    def test_latest_round_in_the_prometheus_format(self):
        rounds = os.path.join(self.out, "job42.jsonl")
        proc = strata_run("monitor:bins=5:period=0.05:fanout=2", [program("monitor_app"),
                                                                  str(ITER)],
                          ranks=P, env=base_env(STRATA_MONITOR_OUT=rounds))
        self.assertRan(proc)
        with open(rounds) as f:
            lines = [json.loads(line) for line in f]
        last = lines[-1]
        content_type, text = self.scrape(rounds)
        self.assertTrue(content_type.startswith("text/plain; version=0.0.4"))
        # The format's rules: each line a comment or a sample, each family typed before its
        # samples and its lines together.
        typed, done = set(), set()
        current = None
        for line in text.splitlines():
            if line.startswith("# TYPE "):
                name = line.split()[2]
                self.assertNotIn(name, typed)
                typed.add(name)
                if current:
                    done.add(current)
                current = name
            elif not line.startswith("#"):
                self.assertRegex(line, SAMPLE_LINE)
                name = re.split(r"[{ ]", line)[0]
                self.assertTrue(name == current or name.startswith(current + "_"), line)
                self.assertNotIn(name, done)
        families = {f.name: f for f in prometheus_parser()(text)}
        samples = lambda name: [s for f in families.values() for s in f.samples if s.name == name]
        self.assertEqual(samples("strata_monitor_rounds_total")[0].value, len(lines))
        self.assertEqual(samples("strata_monitor_rounds_total")[0].labels, {"job": "job42"})
        self.assertEqual(samples("strata_monitor_ranks")[0].value, P)
        calls = {s.labels["routine"]: s.value for s in samples("strata_monitor_calls_total")}
        for name, event in last["events"].items():
            self.assertEqual(calls[name], event["calls"]["sum"], name)
        self.assertEqual(calls["MPI_Allreduce"], P * ITER)
        # The histogram filter's bins as a Prometheus histogram: cumulative, +Inf = ranks.
        hist = families["strata_monitor_rank_time_seconds"]
        self.assertEqual(hist.type, "histogram")
        for name, event in last["events"].items():
            if "hist" not in event:
                continue
            buckets = [s for s in hist.samples if s.name.endswith("_bucket")
                       and s.labels["routine"] == name]
            self.assertEqual(len(buckets), len(event["hist"]["bins"]))
            values = [s.value for s in buckets]
            self.assertEqual(values, sorted(values))
            self.assertEqual(buckets[-1].labels["le"], "+Inf")
            self.assertEqual(values[-1], sum(event["hist"]["bins"]))
        if len(lines) > 1:
            self.assertIn("strata_monitor_mpi_percent", families)
            self.assertIn("strata_monitor_call_rate", families)

    def test_no_rounds_yet_is_a_count_of_zero(self):
        rounds = os.path.join(self.out, "empty.jsonl")
        with open(rounds, "w") as f:
            f.write('{"round":0,"ranks":4')  # still being written
        _, text = self.scrape(rounds)
        families = {f.name: f for f in prometheus_parser()(text)}
        self.assertEqual(families["strata_monitor_rounds"].samples[0].value, 0)
        self.assertEqual(len(families), 1)
