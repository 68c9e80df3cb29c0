"""`strata site mpi-t`: the control variables real jobs ran with and their performance
variables, across jobs, from records of real profiled runs ingested into SQLite and into a real
PostgreSQL server that the test starts. Under Open MPI (an eager limit of its shared-memory
transport; performance variables among them) and MPICH (its eager size; Debian's build exposes
no performance variables)."""
import glob
import json
import os
import statistics
import unittest

from site_postgres import PostgresStores, postgres_bindir
from strata_testlib import FLAVOR, STRATA, StrataTestCase, base_env, program, run, strata_run

# A control variable each MPI reads from the environment, and two values of it: the default
# and a larger one (larger, so that no message of the program turns from eager to rendezvous).
EAGER = {
    "openmpi": ("OMPI_MCA_btl_vader_eager_limit", "btl_vader_eager_limit", "4096", "8192"),
    "mpich": ("MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE", "MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE", "131072",
              "262144"),
}


class SiteMpiTTests:
    """The runs are made once per class; every test ingests them into a store of its own."""
    records = None

    @classmethod
    def make_runs(cls, out):
        if SiteMpiTTests.records is not None:
            return
        env_name, _, default, larger = EAGER[FLAVOR]
        spool = os.path.join(out, "runs")
        for value in (default, default, larger):
            # The default stack: a job this short has its variables read because the program asks
            # for them (MPI_Pcontrol(4)).
            env = base_env(STRATA_SPOOL=spool, HOME=out, **{env_name: value})
            proc = strata_run("profile", [program("mpi_t_traffic_c")], ranks=2, env=env)
            if proc.returncode != 0:
                raise AssertionError(proc.stdout + proc.stderr)
        texts = {}
        for path in sorted(glob.glob(os.path.join(spool, "*.json"))):
            with open(path) as f:
                texts[os.path.basename(path)] = f.read()
        SiteMpiTTests.records = texts

    def setUp(self):
        super().setUp()
        self.make_runs(self.out)
        self.assertEqual(len(self.records), 3)
        self.spool = os.path.join(self.out, "spool")
        os.makedirs(self.spool)
        for name, text in self.records.items():
            with open(os.path.join(self.spool, name), "w") as f:
                f.write(text)
        self.db = self.new_db()
        proc = run([STRATA, "site", "ingest", "--db", self.db, self.spool])
        self.assertRan(proc)

    def new_db(self):
        raise NotImplementedError

    def mpi_t(self, *args):
        proc = run([STRATA, "site", "mpi-t", "--db", self.db, *args])
        self.assertRan(proc)
        return proc.stdout

    def parsed(self):
        return [json.loads(t) for t in self.records.values()]

    def per_launch(self):
        """The control variables whose values differ between the two runs of the same settings."""
        _, cvar, default, _ = EAGER[FLAVOR]
        a, b = [r["mpi_t"]["cvars"] for r in self.parsed() if r["mpi_t"]["cvars"][cvar] == default]
        return {n for n in a if a[n] != b.get(n)}

    def test_each_value_with_its_jobs_and_median_mpi_time(self):
        _, cvar, default, larger = EAGER[FLAVOR]
        doc = json.loads(self.mpi_t("--format", "json"))
        self.assertEqual(doc["jobs"], 3)
        self.assertEqual(doc["settings"], 2, "one set per eager limit")
        # A launch's identity (Open MPI's job id, daemon addresses, session directory) differs
        # between runs of the same settings: it stays out of the index, everything else is in.
        self.assertEqual(doc["cvar_names"], len(self.parsed()[0]["mpi_t"]["cvars"]) - len(self.per_launch()))
        if FLAVOR == "openmpi":
            self.assertIn("ess_base_jobid", self.per_launch())
        # The eager limit is the one variable that differs; any other differing one would be
        # listed too, so the list is exactly it.
        self.assertEqual([c["name"] for c in doc["cvars"]], [cvar])
        values = {v["value"]: v for v in doc["cvars"][0]["values"]}
        self.assertEqual(set(values), {default, larger})
        for value, count in ((default, 2), (larger, 1)):
            jobs = [r for r in self.parsed() if r["mpi_t"]["cvars"][cvar] == value]
            self.assertEqual(values[value]["jobs"], count)
            self.assertEqual(values[value]["from_environment"], count)
            self.assertEqual(sorted(values[value]["record_ids"]), sorted(r["job"]["id"] for r in jobs))
            expected = statistics.median(r["job"]["mpi_time_s"] / r["job"]["ranks"] for r in jobs)
            self.assertAlmostEqual(values[value]["median_mpi_s_per_rank"], expected, places=9)
        text = self.mpi_t()
        self.assertIn(cvar, text)
        self.assertIn("median MPI s/rank", text)

    def test_performance_variables_across_jobs(self):
        doc = json.loads(self.mpi_t("--format", "json"))
        if FLAVOR == "mpich":
            self.assertEqual(doc["pvars"], [], "Debian's MPICH exposes no performance variables")
            self.assertIn("No performance variables", self.mpi_t())
            return
        pvars = {p["name"]: p for p in doc["pvars"]}
        queue = pvars["pml_ob1_unexpected_msgq_length"]
        self.assertEqual((queue["jobs"], queue["class"]), (3, "size"))
        self.assertEqual(queue["total_sum"], 0, "drained before MPI_Finalize")
        self.assertNotIn("osc_rdma_put_retry_count", pvars, "bound to a window: not read")
        only = json.loads(self.mpi_t("--name", "pml_ob1_*", "--format", "json"))
        self.assertEqual(sorted(p["name"] for p in only["pvars"]),
                         ["pml_ob1_posted_recvq_length", "pml_ob1_unexpected_msgq_length"])
        self.assertEqual(only["cvars"], [])

    def test_one_variable_every_variable_and_filters(self):
        _, cvar, default, _ = EAGER[FLAVOR]
        some = self.parsed()[0]["mpi_t"]["cvars"]
        same = next(n for n in sorted(some)
                    if all(r["mpi_t"]["cvars"][n] == some[n] for r in self.parsed()))
        doc = json.loads(self.mpi_t("--name", same, "--format", "json"))
        self.assertEqual([c["name"] for c in doc["cvars"]], [same])
        self.assertEqual([(v["value"], v["jobs"]) for v in doc["cvars"][0]["values"]], [(some[same], 3)])
        doc = json.loads(self.mpi_t("--all", "--format", "json"))
        self.assertEqual(len(doc["cvars"]), len(some) - len(self.per_launch()))
        user = self.parsed()[0]["job"]["user"]
        self.assertEqual(json.loads(self.mpi_t("--user", "nobody-here", "--format", "json"))["jobs"], 0)
        doc = json.loads(self.mpi_t("--user", user, "--since", "1d", "--jobs", "1", "--format", "json"))
        self.assertEqual(doc["jobs"], 3)
        self.assertEqual([len(v["record_ids"]) for v in doc["cvars"][0]["values"]], [1, 1])
        doc = json.loads(self.mpi_t("--executable", "/no/such/program", "--format", "json"))
        self.assertEqual(doc["jobs"], 0)

    def test_bad_input_gets_one_clear_message(self):
        for args, code, fragment in ((["--since", "7x"], 2, "strata site mpi-t: --since: "),
                                     (["--name", "no_such_variable"], 1,
                                      "no MPI_T variable named 'no_such_variable'"),
                                     (["--format", "xml"], 2, "--format"),
                                     (["--jobs", "-1"], 2, "--jobs")):
            proc = run([STRATA, "site", "mpi-t", "--db", self.db, *args])
            self.assertEqual(proc.returncode, code, proc.stdout + proc.stderr)
            self.assertIn(fragment, proc.stderr)
            self.assertEqual(proc.stdout, "")
        proc = run([STRATA, "site", "mpi-t", "--db", "mysql://x"])
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("neither sqlite:PATH", proc.stderr)
        self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)


class SqliteSiteMpiT(SiteMpiTTests, StrataTestCase):
    def new_db(self):
        return "sqlite:" + os.path.join(self.out, "store", "site.db")


@unittest.skipIf(postgres_bindir() is None,
                 "PostgreSQL server binaries (initdb, pg_ctl) are not installed: "
                 "scripts/setup.sh installs them")
class PostgresSiteMpiT(PostgresStores, SiteMpiTTests, StrataTestCase):
    """The same on a PostgreSQL server."""


if __name__ == "__main__":
    unittest.main()
