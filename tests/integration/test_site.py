"""The site store: ingest, reports and mail on SQLite and on a real PostgreSQL server that the
test starts. Flavor-independent except for one real profiled MPI run whose record is ingested
beside hand-made records with known figures."""
import copy
import email
import email.policy
import glob
import json
import math
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
import time
import unittest

from site_postgres import PostgresStores, postgres_bindir
from strata_testlib import (BUILD, FLAVOR, STRATA, StrataTestCase, base_env, program, run,
                            run_until_ranks_are_gone, strata_run)

SAMPLE = os.path.join(os.path.dirname(__file__), "../../src/profiler/record/testdata/sample.json")
DAY = 86400
# Extra-P's exponents of p in the normal form c0 + c1 * p^i * log2(p)^j.
EXPONENTS_I = (0, 1 / 4, 1 / 3, 1 / 2, 2 / 3, 3 / 4, 1, 5 / 4, 4 / 3, 3 / 2, 5 / 3, 7 / 4, 2, 9 / 4,
               7 / 3, 5 / 2, 8 / 3, 11 / 4, 3)

# Owners are real accounts of the test machine so that uid -> name is the system's answer.
ALICE, ALICE_UID = "daemon", 1
BOB, BOB_UID = "nobody", 65534
CAROL, CAROL_UID = "games", 5


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def make_record(job_id, user, uid, ranks, wall, routines, end, language="C/C++",
                executable="/home/app"):
    """A valid strata.job/1 record with the given figures; routines: name -> (calls, time, bytes)."""
    with open(SAMPLE) as f:
        rec = json.load(f)
    job = rec["job"]
    mpi = sum(t for _, t, _ in routines.values())
    job.update({"id": job_id, "user": user, "uid": uid, "ranks": ranks, "ranks_reported": ranks,
                "wall_time_s": wall, "mpi_time_s": mpi, "mpi_percent": 100 * mpi / (wall * ranks),
                "language": language, "executable": executable, "start": iso(end - wall),
                "end": iso(end), "profiler_overhead_s": 0.001})
    job["mpi_percent_by_rank"] = {"min": 1, "mean": 2, "max": 3, "min_rank": 0, "max_rank": 0}
    job.pop("counters", None)
    template = rec["routines"]["MPI_Send"]
    rec["routines"] = {}
    for name, (calls, t, nbytes) in routines.items():
        r = copy.deepcopy(template)
        r.update({"calls": calls, "time_s": t, "bytes_sent": nbytes, "bytes_received": 0,
                  "count_sum": nbytes // 4, "size_histogram": [], "comm_size_histogram": []})
        r["per_rank"]["calls"]["max_rank"] = 0
        r["per_rank"]["time_s"]["max_rank"] = 0
        rec["routines"][name] = r
    return rec


class SiteTests:
    """Every test runs against self.db; the TestCase classes below choose the backend."""

    def setUp(self):
        super().setUp()
        self.spool = os.path.join(self.out, "spool")
        os.makedirs(self.spool)
        self.db = self.new_db()
        self.now = int(time.time())

    def new_db(self):
        raise NotImplementedError

    def strata(self, *args, env=None):
        return run([STRATA, *args], env=env)

    def put(self, name, rec, owner_uid, text=None):
        path = os.path.join(self.spool, name)
        with open(path, "w") as f:
            f.write(text if text is not None else json.dumps(rec, indent=1))
        os.chown(path, owner_uid, -1)
        return path

    def ingest(self, *spools):
        proc = self.strata("site", "ingest", "--db", self.db, *(spools or (self.spool,)))
        self.assertRan(proc)
        return proc

    def report_json(self, *args):
        proc = self.strata("site", "report", "--db", self.db, "--since", "30d", "--format", "json",
                           *args)
        self.assertRan(proc)
        return json.loads(proc.stdout)

    def known_set(self):
        """Three hand-made jobs with known figures, two users, one critical job."""
        end = self.now - DAY
        self.put("a1.json", make_record("test:a1", ALICE, ALICE_UID, 4, 100.0,
                                        {"MPI_Send": (1000, 10.0, 4000),
                                         "MPI_Allreduce": (100, 30.0, 800)},
                                        end, language="Fortran"), ALICE_UID)
        self.put("a2.json", make_record("test:a2", ALICE, ALICE_UID, 2, 50.0,
                                        {"MPI_Send": (500, 20.0, 2000)}, end,
                                        executable="/home/<script>x</script>"), ALICE_UID)
        self.put("b1.json", make_record("test:b1", BOB, BOB_UID, 8, 10.0,
                                        {"MPI_Recv": (10, 4.0, 100)}, end), BOB_UID)

    def test_known_figures_exact(self):
        self.known_set()
        # A real job, profiled under mpirun, in the same spool.
        env = base_env(STRATA_SPOOL=self.spool, HOME=self.out)
        self.assertRan(strata_run("profile", [program("ring_c"), "9"], ranks=2, env=env))
        real_files = [f for f in glob.glob(os.path.join(self.spool, "*.json"))
                      if os.path.basename(f) not in ("a1.json", "a2.json", "b1.json")]
        self.assertEqual(len(real_files), 1)
        with open(real_files[0]) as f:
            real = json.load(f)
        real_owner = os.stat(real_files[0]).st_uid
        proc = self.ingest()
        self.assertIn("4 records read, 4 stored, 0 already stored", proc.stdout)
        self.assertEqual(glob.glob(os.path.join(self.spool, "*.json")), [], "moved into the store")

        rep = self.report_json()
        users = {u["user"]: u for u in rep["users"]}
        alice = users[ALICE]
        self.assertEqual(alice["totals"]["jobs"], 2)
        self.assertEqual(alice["totals"]["pes"], 6)
        self.assertAlmostEqual(alice["totals"]["cpu_time_s"], 500.0)
        self.assertAlmostEqual(alice["totals"]["mpi_time_s"], 60.0)
        self.assertAlmostEqual(alice["totals"]["mpi_percent"], 12.0)  # of the CPU time
        self.assertAlmostEqual(alice["mpi_percent"], 12.0)
        self.assertEqual(alice["c_jobs"], 1)
        self.assertEqual(alice["fortran_jobs"], 1)
        self.assertEqual(alice["critical_jobs"], 1, "a2 has 20 % MPI")
        routines = {r["routine"]: r for r in alice["routines"]}
        self.assertEqual(routines["MPI_Send"]["calls"], 1500)
        self.assertEqual(routines["MPI_Send"]["bytes"], 6000)
        self.assertAlmostEqual(routines["MPI_Send"]["time_s"], 30.0)
        self.assertAlmostEqual(routines["MPI_Send"]["time_per_call_us"], 20000.0)
        self.assertAlmostEqual(routines["MPI_Send"]["calls_per_pe"], 250.0)
        self.assertEqual(routines["MPI_Allreduce"]["jobs"], 1)
        bob = users[BOB]
        self.assertEqual(bob["totals"]["jobs"], 1)
        self.assertAlmostEqual(bob["mpi_percent"], 5.0)
        # The real job belongs to whoever ran it (the owner of its spool file).
        import pwd
        real_name = pwd.getpwuid(real_owner).pw_name
        self.assertIn(real_name, users)
        site = rep["site"]
        self.assertEqual(site["totals"]["jobs"], 4)
        self.assertEqual(site["totals"]["pes"], 4 + 2 + 8 + real["job"]["ranks"])
        self.assertEqual(site["users"], 3)
        site_routines = {r["routine"]: r for r in site["routines"]}
        self.assertEqual(site_routines["MPI_Send"]["calls"],
                         1500 + real["routines"]["MPI_Send"]["calls"])
        self.assertEqual(site_routines["MPI_Recv"]["calls"],
                         10 + real["routines"]["MPI_Recv"]["calls"])
        real_critical = real["job"]["mpi_percent"] > 15  # a real run: its MPI share varies
        self.assertEqual(site["critical_job_count"], 1 + real_critical)
        self.assertIn("test:a2", [j["record_id"] for j in site["critical_jobs"]])
        sizes = {b["label"]: b["jobs"] for b in site["by_size"]}
        self.assertEqual(sizes["4"], 1)
        self.assertEqual(sizes["8"], 1)
        self.assertEqual(sizes["2"], 1 + (real["job"]["ranks"] == 2))
        groups = {g["group"]: g for g in site["groups"]}
        self.assertAlmostEqual(groups["collective communication"]["jobs_percent"],
                               100 * (1 + ("MPI_Allreduce" in real["routines"])) / 4)
        refs = {r["name"]: r for r in alice["references"]}
        mpi = refs["MPI time / CPU time"]
        self.assertAlmostEqual(mpi["value"], 12.0)
        self.assertAlmostEqual(mpi["site_max"], max(12.0, 5.0, mpi["site_max"]))
        self.assertEqual(mpi["of"], 3)
        self.assertAlmostEqual(mpi["site_min"], min(5.0, mpi["site_min"]))

        # With a machine model: the latency / transfer / synchronisation estimate per routine.
        model = os.path.join(self.out, "model.json")
        with open(model, "w") as f:
            json.dump({"schema": "strata.model/1",
                       "routines": {"MPI_Send": {"latency_s": 1e-3, "bytes_per_s": 1e3}}}, f)
        est = {r["routine"]: r for r in
               self.report_json("--user", ALICE, "--model", model)["users"][0]["routines"]}
        self.assertAlmostEqual(est["MPI_Send"]["estimate"]["latency_s"], 1.5)   # 1500 calls
        self.assertAlmostEqual(est["MPI_Send"]["estimate"]["transfer_s"], 6.0)  # 6000 bytes
        self.assertAlmostEqual(est["MPI_Send"]["estimate"]["sync_s"], 22.5)     # the rest of 30 s
        self.assertNotIn("estimate", est["MPI_Allreduce"], "not in the model")

        # The same report for one user, in text and HTML.
        text = self.strata("site", "report", "--db", self.db, "--since", "30d", "--user", ALICE)
        self.assertRan(text)
        self.assertIn(f"MPI usage of {ALICE}", text.stdout)
        self.assertIn("* critical jobs (MPI % above threshold):", text.stdout)
        self.assertIn("test:a2", text.stdout)
        self.assertNotIn(BOB, text.stdout.split("Where you stand")[0])
        html = self.strata("site", "report", "--db", self.db, "--since", "30d", "--format", "html")
        self.assertRan(html)
        self.assertNotIn("<script>x", html.stdout)
        self.assertIn("&lt;script&gt;x", html.stdout)
        self.assertIn("Fig. 11", html.stdout)

    def test_ingest_twice_stores_once(self):
        self.known_set()
        backup = os.path.join(self.out, "backup")
        shutil.copytree(self.spool, backup)
        self.ingest()
        first = self.report_json()
        for name in os.listdir(backup):  # the same records spooled again
            shutil.copy2(os.path.join(backup, name), self.spool)
            os.chown(os.path.join(self.spool, name), os.stat(os.path.join(backup, name)).st_uid, -1)
        proc = self.ingest()
        self.assertIn("3 records read, 0 stored, 3 already stored", proc.stdout)
        self.assertEqual(self.report_json()["site"]["totals"], first["site"]["totals"])
        self.assertEqual(glob.glob(os.path.join(self.spool, "*.json")), [])

    def test_bad_records_are_quarantined_and_ingest_goes_on(self):
        self.known_set()
        good = json.dumps(make_record("test:q", ALICE, ALICE_UID, 2, 1.0, {"MPI_Send": (1, 0.1, 8)},
                                      self.now - DAY))
        self.put("truncated.json", None, ALICE_UID, text=good[: len(good) // 2])
        self.put("schema.json", None, ALICE_UID, text=good.replace("strata.job/1", "strata.job/9"))
        self.put("garbage.json", None, ALICE_UID, text="\x00\xff garbage")
        self.put("missing.json", None, ALICE_UID, text=good.replace('"ranks": 2,', ""))
        proc = self.ingest()
        self.assertIn("7 records read, 3 stored", proc.stdout)
        self.assertIn("4 quarantined", proc.stdout)
        qdir = os.path.join(self.spool, "quarantine")
        reasons = {}
        for name in ("truncated.json", "schema.json", "garbage.json", "missing.json"):
            self.assertTrue(os.path.exists(os.path.join(qdir, name)), name)
            with open(os.path.join(qdir, name + ".reason")) as f:
                reasons[name] = f.read()
            self.assertIn(name, proc.stderr)
        self.assertIn("truncated", reasons["truncated.json"])
        self.assertIn("strata.job/9", reasons["schema.json"])
        self.assertIn("not JSON", reasons["garbage.json"])
        self.assertIn("ranks is missing", reasons["missing.json"])
        self.assertEqual(self.report_json()["site"]["totals"]["jobs"], 3)
        self.assertEqual(glob.glob(os.path.join(self.spool, "*.json")), [])

    def test_owner_is_the_spool_files_owner(self):
        # A record claiming to be ALICE's, in a file that belongs to CAROL.
        self.put("claim.json", make_record("test:claim", ALICE, ALICE_UID, 2, 10.0,
                                           {"MPI_Send": (5, 1.0, 40)}, self.now - DAY), CAROL_UID)
        proc = self.ingest()
        self.assertIn("1 claiming another user than their file's owner", proc.stdout)
        self.assertIn(f"names user {ALICE} (uid {ALICE_UID}), the file belongs to uid {CAROL_UID}",
                      proc.stderr)
        users = [u["user"] for u in self.report_json()["users"]]
        self.assertEqual(users, [CAROL])
        self.assertEqual(self.report_json("--user", ALICE)["users"], [])

    def test_store_failure_keeps_the_spool(self):
        self.known_set()
        bad = "sqlite:/proc/strata-no-such-dir/site.db" if self.db.startswith("sqlite:") \
            else self.db.replace("/site", "/no_such_database").replace("/t", "/no_such_database_t")
        proc = self.strata("site", "ingest", "--db", bad, self.spool)
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)
        self.assertEqual(len(glob.glob(os.path.join(self.spool, "*.json"))), 3)

    def test_mail_only_for_users_with_jobs(self):
        self.known_set()
        # CAROL's only job ended 60 days ago: no mail this period.
        self.put("old.json", make_record("test:old", CAROL, CAROL_UID, 2, 10.0,
                                         {"MPI_Send": (5, 1.0, 40)}, self.now - 60 * DAY),
                 CAROL_UID)
        self.ingest()
        outbox = os.path.join(self.out, "outbox")
        proc = self.strata("site", "report", "--db", self.db, "--since", "30d", "--format", "mail",
                           "--outbox", outbox, "--mail-domain", "example.org")
        self.assertRan(proc)
        self.assertEqual(sorted(os.listdir(outbox)), sorted([f"{ALICE}.eml", f"{BOB}.eml"]))
        with open(os.path.join(outbox, f"{ALICE}.eml"), "rb") as f:
            msg = email.message_from_binary_file(f, policy=email.policy.default)
        self.assertEqual(msg["To"], f"{ALICE}@example.org")
        self.assertEqual(msg.get_content_type(), "multipart/alternative")
        parts = {p.get_content_type(): p.get_content() for p in msg.iter_parts()}
        self.assertEqual(set(parts), {"text/plain", "text/html"})
        self.assertIn(f"MPI usage of {ALICE}", parts["text/plain"])
        self.assertIn("MPI_Allreduce", parts["text/plain"])
        self.assertIn("<b>", parts["text/html"])  # critical values in bold
        self.assertIn("1 critical job", msg["Subject"])

        # Through a sendmail on PATH: a real program that keeps what it is given.
        bindir = os.path.join(self.out, "bin")
        got = os.path.join(self.out, "sent")
        os.makedirs(bindir)
        os.makedirs(got)
        fake = os.path.join(bindir, "sendmail")
        with open(fake, "w") as f:
            f.write(f'#!/bin/sh\nn=$(ls {got} | grep -c eml)\necho "$@" > {got}/$n.args\n'
                    f'cat > {got}/$n.eml\n')
        os.chmod(fake, 0o755)
        env = base_env(PATH=bindir + ":" + os.environ["PATH"])
        proc = self.strata("site", "report", "--db", self.db, "--since", "30d", "--format", "mail",
                           env=env)
        self.assertRan(proc)
        self.assertIn("mail: 2 sent", proc.stdout)
        recipients = set()
        for n in range(2):
            with open(os.path.join(got, f"{n}.args")) as f:
                self.assertIn("-t", f.read().split())
            with open(os.path.join(got, f"{n}.eml"), "rb") as f:
                recipients.add(email.message_from_binary_file(f, policy=email.policy.default)["To"])
        self.assertEqual(recipients, {ALICE, BOB})
        # A sendmail that fails is reported per user, with a non-zero status.
        with open(fake, "w") as f:
            f.write("#!/bin/sh\ncat >/dev/null\nexit 75\n")
        proc = self.strata("site", "report", "--db", self.db, "--since", "30d", "--format", "mail",
                           env=env)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("exited with 75", proc.stderr)

    def test_recovered_rank_files_are_ingested(self):
        # A job killed before MPI_Finalize leaves per-rank files; ingest merges them.
        env = base_env(STRATA_SPOOL=self.spool, HOME=self.out, STRATA_WRITE_TIMEOUT_MS="2000")
        strata_run("profile", [program("crash_c"), "abort"], ranks=2, env=env)
        self.assertEqual(len(glob.glob(os.path.join(self.spool, "*.prof"))), 2)
        proc = run_until_ranks_are_gone([STRATA, "site", "ingest", "--db", self.db, self.spool], None)
        self.assertRan(proc)
        self.assertIn("1 merged from per-rank files", proc.stdout)
        self.assertEqual(glob.glob(os.path.join(self.spool, "*.prof")), [])
        rep = self.report_json()
        self.assertEqual(rep["site"]["totals"]["jobs"], 1)

    # ---- scaling models and regressions ----

    def models_json(self, *args):
        proc = self.strata("site", "models", "--db", self.db, "--format", "json", *args)
        self.assertRan(proc)
        return json.loads(proc.stdout)

    def law_records(self, executable, sizes, runs, start, partial=()):
        """Records of a program whose time per rank follows known laws: MPI_Allreduce
        0.004 + 0.0021 p log2 p, MPI_Send 0.5 s, the wall time 2 s more than the MPI time."""
        n = 0
        for p in sizes:
            for r in range(runs):
                allreduce = 0.004 + 0.0021 * p * math.log2(p)
                mpi = allreduce + 0.5
                rec = make_record(f"law:{executable}:{p}:{r}", ALICE, ALICE_UID, p, 2 + mpi,
                                  {"MPI_Allreduce": (100 * p, allreduce * p, 800 * p),
                                   "MPI_Send": (10 * p, 0.5 * p, 80 * p)},
                                  start + n * 60, executable=executable)
                if (p, r) in partial:
                    rec["job"]["partial"] = True
                    rec["job"]["ranks_reported"] = p - 1 if p > 1 else 1
                self.put(f"law-{os.path.basename(executable)}-{p}-{r}.json", rec, ALICE_UID)
                n += 1

    def test_models_of_known_laws_too_few_sizes_and_partial_runs(self):
        start = self.now - 5 * DAY
        self.law_records("/home/law", [1, 2, 4, 8, 16, 32, 64], 3, start, partial={(8, 0)})
        self.law_records("/home/small", [4, 8], 3, start)
        self.ingest()
        out = self.models_json("--user", ALICE)
        programs = {p["executable"]: p for p in out["programs"]}
        law = programs["/home/law"]
        self.assertTrue(law["modelled"])
        self.assertEqual(law["ranks"], [1, 2, 4, 8, 16, 32, 64])
        self.assertEqual(law["runs"], 20)
        self.assertEqual(law["left_out"], 1, "the partial run")
        self.assertEqual([x["ranks"] for x in law["predictions"]], [128, 256])
        self.assertEqual(law["predictions"][1]["dominant"], "MPI_Allreduce")
        models = {m["routine"]: m for m in out["models"] if m["executable"] == "/home/law"}
        self.assertEqual(set(models), {"wall", "MPI", "MPI_Allreduce", "MPI_Send"})
        allreduce = models["MPI_Allreduce"]
        self.assertEqual((allreduce["i"], allreduce["j"]), (1, 1))
        self.assertAlmostEqual(allreduce["c0"], 0.004, places=9)
        self.assertAlmostEqual(allreduce["c1"], 0.0021, places=12)
        self.assertEqual(allreduce["formula"], "0.004 + 0.0021 * p * log2(p)")
        self.assertEqual(allreduce["ranks"], [1, 2, 4, 8, 16, 32, 64])
        self.assertEqual(allreduce["runs"], 20)
        self.assertLess(allreduce["error"], 1e-9)
        self.assertAlmostEqual(allreduce["predictions"][0]["seconds"], 0.004 + 0.0021 * 128 * 7)
        send = models["MPI_Send"]
        self.assertEqual((send["i"], send["j"], send["formula"]), (0, 0, "0.5"))
        self.assertFalse(programs["/home/small"]["modelled"])
        self.assertFalse([m for m in out["models"] if m["executable"] == "/home/small"])
        text = self.strata("site", "models", "--db", self.db, "--user", ALICE).stdout
        self.assertIn("MPI_Allreduce: 0.004 + 0.0021 * p * log2(p) s per rank, from 7 sizes, "
                      "20 runs", text)
        self.assertIn("1 partial or unfinished run left out", text)
        self.assertIn("at 256 ranks:", text)
        self.assertIn("MPI_Allreduce dominates", text)
        small = [line for line in text.splitlines() if "/home/small" in line]
        self.assertEqual(len(small), 1, text)
        self.assertIn("no model: measured at 2 sizes (4, 8 ranks); a model needs 3 or more",
                      small[0])
        # Another user's view: nothing of ALICE's; one executable alone.
        self.assertEqual(self.models_json("--user", BOB)["programs"], [])
        only = self.models_json("--executable", "/home/small")["programs"]
        self.assertEqual([p["executable"] for p in only], ["/home/small"])

    def test_models_of_real_runs_of_an_example(self):
        env = base_env(STRATA_SPOOL=self.spool, HOME=self.out)
        sweep = os.path.join(BUILD, "examples", FLAVOR, "sweep")
        for ranks in (1, 2, 4, 8):
            for _ in range(2):
                self.assertRan(strata_run("profile", [sweep, "4", "16", "50"], ranks=ranks,
                                          env=env, extra=["--mpi", FLAVOR]))
        self.ingest()
        owner = pwd.getpwuid(os.getuid()).pw_name
        out = self.models_json("--executable", sweep)
        self.assertEqual(len(out["programs"]), 1, out)
        prog = out["programs"][0]
        self.assertEqual((prog["owner"], prog["arguments"]), (owner, "4 16 50"))
        self.assertEqual(prog["ranks"], [1, 2, 4, 8])
        self.assertEqual(prog["runs"], 8)
        self.assertTrue(prog["modelled"])
        models = {m["routine"]: m for m in out["models"]}
        for name in ("wall", "MPI", "MPI_Send", "MPI_Recv"):
            self.assertIn(name, models)
            m = models[name]
            self.assertIn(m["i"], EXPONENTS_I)
            self.assertIn(m["j"], (0, 1, 2))
            medians = m["medians"]
            self.assertEqual([x["ranks"] for x in medians], [1, 2, 4, 8])
            for x in medians:
                self.assertLessEqual(x["low"], x["median"])
                self.assertLessEqual(x["median"], x["high"])
        self.assertEqual([x["ranks"] for x in prog["predictions"]], [16, 32])
        text = self.strata("site", "models", "--db", self.db, "--executable", sweep).stdout
        self.assertIn("4 sizes (1, 2, 4, 8 ranks), 8 runs", text)
        self.assertRegex(text, r"MPI_Recv: .* s per rank, from 4 sizes, 8 runs")

    def history_record(self, n, wall_scale=1.0, allreduce_scale=1.0, sites=True):
        """Run n of a program at 4 ranks: 10 s of wall per rank, 1 % noise."""
        noise = 1 + 0.01 * ((n * 7919) % 21 - 10) / 10
        allreduce = 2.0 * noise * allreduce_scale
        wall = (8.0 * noise + allreduce) * wall_scale
        rec = make_record(f"hist:{n}", ALICE, ALICE_UID, 4, wall,
                          {"MPI_Allreduce": (400, 4 * allreduce, 3200),
                           "MPI_Send": (40, 4 * 0.5 * noise, 320)},
                          self.now - 3 * DAY + n * 600, executable="/home/solver")
        if sites:
            rec["callsites"] = [
                {"function": "MPI_Allreduce", "file": "/src/solve.c", "line": 42,
                 "caller": "solve", "calls": 400, "time_s": 4 * allreduce, "bytes": 3200,
                 "wasted_s": 0, "ranks": 4},
                {"function": "MPI_Send", "file": "/src/halo.c", "line": 7, "caller": "halo",
                 "calls": 40, "time_s": 4 * 0.5 * noise, "bytes": 320, "wasted_s": 0,
                 "ranks": 4}]
            rec["callsites_dropped"] = 0
        return rec

    def test_regression_flagged_in_report_mail_and_store(self):
        # The history in one ingest, the new runs in the next: their history comes from the store.
        for n in range(8):
            self.put(f"hist{n}.json", self.history_record(n), ALICE_UID)
        self.assertNotIn("flagged", self.ingest().stdout)
        self.put("slow.json", self.history_record(8, allreduce_scale=2.0), ALICE_UID)
        self.put("fine.json", self.history_record(9), ALICE_UID)
        proc = self.ingest()
        self.assertIn("2 records read, 2 stored", proc.stdout)
        self.assertIn("1 flagged as regressions", proc.stdout)
        rep = self.report_json()
        alice = {u["user"]: u for u in rep["users"]}[ALICE]
        self.assertEqual(alice["regression_count"], 1)
        g = alice["regressions"][0]
        self.assertEqual(g["record_id"], "hist:8")
        self.assertEqual((g["executable"], g["ranks"]), ("/home/solver", 4))
        self.assertIn(g["metric"], ("wall", "MPI", "MPI_Allreduce"))
        self.assertGreaterEqual(g["history_runs"], 5)
        self.assertEqual(g["moved"][0]["routine"], "MPI_Allreduce")
        self.assertAlmostEqual(g["moved"][0]["value_s"], 4.0 * (1 + 0.01 * (((8 * 7919) % 21) - 10) / 10), places=6)
        self.assertEqual(g["call_sites"][0]["file"], "/src/solve.c")
        self.assertEqual(g["call_sites"][0]["line"], 42)
        self.assertEqual(rep["site"]["regression_count"], 1)
        self.assertEqual([x["record_id"] for x in rep["site"]["regressions"]], ["hist:8"])
        text = self.strata("site", "report", "--db", self.db, "--since", "30d", "--user",
                           ALICE).stdout
        self.assertIn("Regressions (slower than the same program's earlier runs", text)
        self.assertIn("MPI_Allreduce +", text)
        self.assertIn("MPI_Allreduce at /src/solve.c:42 +", text)
        outbox = os.path.join(self.out, "outbox")
        self.assertRan(self.strata("site", "report", "--db", self.db, "--since", "30d",
                                   "--format", "mail", "--outbox", outbox))
        with open(os.path.join(outbox, f"{ALICE}.eml"), "rb") as f:
            msg = email.message_from_binary_file(f, policy=email.policy.default)
        self.assertIn("1 regression", msg["Subject"])
        plain = [p.get_content() for p in msg.iter_parts() if p.get_content_type() == "text/plain"]
        self.assertIn("hist:8", plain[0])

    def test_bad_arguments_say_what_is_wrong(self):
        for args, fragment in ((["--db", self.db, "--since", "7x"], "needs one unit"),
                               (["--db", self.db, "--from", "2026-13-01"], "is not YYYY-MM-DD"),
                               (["--week", "--db", "mysql://x"], "neither sqlite:PATH")):
            proc = self.strata("site", "report", *args)
            self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
            self.assertIn(fragment, proc.stderr)
        # A malformed --since, told by the subcommand that was given it (mpi-t:
        # test_site_mpi_t.py).
        for command in ("report", "models"):
            proc = self.strata("site", command, "--db", self.db, "--since", "7x")
            self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
            self.assertTrue(proc.stderr.startswith(f"strata site {command}: --since: "), proc.stderr)
            self.assertEqual(proc.stdout, "")


class SqliteSite(SiteTests, StrataTestCase):
    def new_db(self):
        return "sqlite:" + os.path.join(self.out, "store", "site.db")


class CommandStart(StrataTestCase):
    def test_libpq_is_loaded_only_for_a_postgresql_store(self):
        # libpq and the twenty libraries it needs cost every strata command's start, strata run's
        # among them: a command that opens no PostgreSQL store does not load it (PostgresSite
        # below uses it).
        proc = run([STRATA, "--version"], env=dict(os.environ, LD_DEBUG="files"))
        self.assertRan(proc)
        self.assertIn("libsqlite3", proc.stderr, "LD_DEBUG names what is loaded")
        self.assertNotIn("libpq", proc.stderr)


@unittest.skipIf(postgres_bindir() is None,
                 "PostgreSQL server binaries (initdb, pg_ctl) are not installed: "
                 "scripts/setup.sh installs them")
class PostgresSite(PostgresStores, SiteTests, StrataTestCase):
    def test_store_unit_tests_on_postgresql(self):
        """The store's C++ unit tests, run against this server."""
        proc = run([os.path.join(BUILD, "bin", "strata_site_test"), "--gtest_filter=StoreBackend.*:MpiTIndex.*"],
                   env=dict(os.environ, STRATA_SITE_TEST_POSTGRESQL=self.db))
        self.assertRan(proc)
        self.assertIn("PASSED", proc.stdout)


if __name__ == "__main__":
    unittest.main()
