"""Strata through a real Slurm (scripts/slurm-sandbox.sh: munged, slurmctld and two slurmd on
this machine) with the SPANK plugin strata_spank.so: jobs profiled from `--strata`, tasks that
are not MPI programs left alone, Slurm's facts in the record, a job killed at its time limit,
and the epilog's collection into SQLite and PostgreSQL."""
import glob
import json
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
import time
import unittest

from site_postgres import PostgresServer, postgres_bindir
from strata_testlib import BUILD, FLAVOR, STRATA, base_env, program, run_until_ranks_are_gone

SANDBOX = os.path.join(os.path.dirname(__file__), "../../scripts/slurm-sandbox.sh")
PLUGIN = os.path.join(BUILD, "lib", "strata", "slurm", "strata_spank.so")
EPILOG = os.path.join(BUILD, "lib", "strata", "slurm", "strata-slurm-epilog")
# Debian's Slurm 22.05 starts Open MPI's ranks through PMIx and MPICH's through PMI-2.
SRUN_MPI = "--mpi=pmix" if FLAVOR == "openmpi" else "--mpi=pmi2"
MPIRUN = "mpirun.openmpi --allow-run-as-root" if FLAVOR == "openmpi" else "mpiexec.mpich"
# Each flavor's sandbox on ports of its own, so that both suites may run at once.
PORT = {"openmpi": 16917, "mpich": 16937}[FLAVOR]
ITER = 12


def why_no_slurm():
    if os.geteuid() != 0:
        return "needs root (slurmd starts tasks as the job's user)"
    for tool in ("munged", "slurmctld", "slurmd", "srun"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (scripts/setup.sh installs Debian's Slurm)"
    if not os.path.exists(PLUGIN):
        return f"no {PLUGIN} (Slurm's spank.h was missing at build time)"
    return None


def submit(args, env, cwd):
    """sbatch ARGS: the job's id."""
    proc = subprocess.run(["sbatch", "--parsable", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=60)
    if proc.returncode != 0:
        raise AssertionError(f"sbatch failed: {proc.stderr}")
    return proc.stdout.strip().split(";")[0]


@unittest.skipIf(why_no_slurm() is not None, why_no_slurm() or "")
class SlurmJobs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix=f"strata-slurm-{FLAVOR}-")
        os.chmod(cls.dir, 0o755)
        cls.sandbox_env = dict(os.environ, STRATA_SLURM_DIR=os.path.join(cls.dir, "slurm"),
                               STRATA_SLURM_PORT=str(PORT))
        start = subprocess.run(["bash", SANDBOX, "start", "--plugin", PLUGIN],
                               env=cls.sandbox_env, capture_output=True, text=True, timeout=120)
        if start.returncode != 0:
            shutil.rmtree(cls.dir, ignore_errors=True)
            raise unittest.SkipTest("the Slurm sandbox did not start: " + start.stderr.strip())
        try:
            cls.start_jobs()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def start_jobs(cls):
        cls.slurm_conf = os.path.join(cls.dir, "slurm", "slurm.conf")
        cls.spool = os.path.join(cls.dir, "spool")
        cls.epilog_spool = os.path.join(cls.dir, "epilog-spool")
        cls.limit_spool = os.path.join(cls.dir, "limit-spool")
        for d in (cls.spool, cls.epilog_spool, cls.limit_spool):
            os.makedirs(d)
            os.chmod(d, 0o1777)
        cls.write_collection(cls, "sqlite:" + os.path.join(cls.dir, "site.db"))
        # The job that runs into its time limit (a minute, Slurm's smallest, checked by slurmctld
        # every 30 s) runs beside the other tests, on half of each node's CPUs: 4 ranks that
        # would sleep outside MPI for 20 minutes after a barrier (asleep, not waiting in MPI,
        # which would spin a core for the minute and a half). What a time limit does is Slurm's
        # and the plugin's, not the MPI's: under Open MPI only.
        cls.limit_job = None
        if FLAVOR != "openmpi":
            return
        cls.limit_job = cls.sbatch(cls, "-N", "2", "-n", "4", "--ntasks-per-node=2", "-t", "1", "--strata=profile",
                                   script=f"srun {SRUN_MPI} {program('hang_c')} compute 600\n",
                                   env=cls.env(cls, STRATA_SPOOL=cls.limit_spool), wait=False)

    @classmethod
    def tearDownClass(cls):
        subprocess.run(["bash", SANDBOX, "stop"], env=cls.sandbox_env, capture_output=True,
                       timeout=120)
        shutil.rmtree(cls.dir, ignore_errors=True)

    # -- helpers -------------------------------------------------------------------------------

    def env(self, **extra):
        return base_env(**{"SLURM_CONF": self.slurm_conf, "STRATA_SPOOL": self.spool, **extra})

    def srun(self, *args, env=None):
        proc = subprocess.run(["srun", "-N", "2", "-n", "4", "--ntasks-per-node=2", SRUN_MPI, *args],
                              env=env or self.env(), cwd=self.dir, capture_output=True,
                              text=True, timeout=120)
        return proc

    def sbatch(self, *options, script, env=None, wait=True):
        path = tempfile.mktemp(suffix=".sh", dir=self.dir)
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + script)
        out = path + ".out"
        job = submit(["-o", out, *options, path], env or self.env(), self.dir)
        if not wait:
            return job
        self.wait_for_batch_job(job)
        with open(out) as f:
            return job, f.read()

    def wait_for_batch_job(self, job):
        """What `sbatch --wait` does, without its sleeps of 2, 8 and 32 s: until the job has ended
        (wait_for_job_end); fails unless each of its components or elements exited 0."""
        self.wait_for_job_end(job, 150)
        q = subprocess.run(["scontrol", "-o", "show", "job", job], env=self.env(),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(q.returncode, 0, q.stderr)
        self.assertTrue(q.stdout.strip(), f"slurmctld no longer knows job {job}")
        for line in q.stdout.splitlines():
            state = dict(re.findall(r"(\w+)=(\S+)", line))
            if state.get("JobState") != "COMPLETED" or state.get("ExitCode") != "0:0":
                raise AssertionError(f"job {state.get('JobId')}: {state.get('JobState')}, "
                                     f"exit {state.get('ExitCode')}")

    def write_collection(self, db):
        """The sandbox's epilog collects the epilog spool into `db`."""
        d = os.path.join(self.dir, "slurm", "epilog.d")
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "collect")
        with open(path + ".new", "w") as f:
            f.write(f"#!/bin/sh\nexec {EPILOG} STRATA_SPOOL={self.epilog_spool} "
                    f"STRATA_SITE_DB='{db}' STRATA_EPILOG_LOG={self.dir}/epilog.log\n")
        os.chmod(path + ".new", 0o755)
        os.replace(path + ".new", path)

    def records(self, spool=None):
        out = []
        for path in sorted(glob.glob(os.path.join(spool or self.spool, "*.json"))):
            with open(path) as f:
                out.append(json.load(f))
        return out

    def clear(self, spool=None):
        for path in glob.glob(os.path.join(spool or self.spool, "*")):
            if os.path.isfile(path):
                os.remove(path)

    def wait_for_job_end(self, job, limit_s):
        """Until squeue no longer lists the job (its epilog done), at most limit_s."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            q = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], env=self.env(),
                               capture_output=True, text=True)
            if q.returncode == 0 and q.stdout.strip() == "":
                return
            if q.returncode != 0 and "Invalid job id" in q.stderr:
                return
            time.sleep(0.5)
        self.fail(f"job {job} still listed after {limit_s} s")

    def check_ring(self, record, job, iterations):
        j, routines = record["job"], record["routines"]
        self.assertTrue(j["id"].startswith(f"slurm:{job}."), j["id"])
        self.assertEqual(j["resource_manager"], "slurm")
        self.assertEqual((j["ranks"], j["ranks_reported"]), (4, 4))
        self.assertEqual(j["status"], "finalized")
        self.assertEqual(j["mpi_flavor"], FLAVOR)
        self.assertEqual(routines["MPI_Send"]["calls"], 4 * iterations)
        self.assertEqual(routines["MPI_Send"]["bytes_sent"], 4 * iterations * 400)
        self.assertEqual(routines["MPI_Recv"]["calls"], 4 * iterations)
        self.assertEqual(routines["MPI_Allreduce"]["calls"], 4)
        self.assertEqual(routines["MPI_Barrier"]["per_rank"]["calls"]["min"], 1)
        s = j["slurm"]
        self.assertEqual(s["job_id"], job)
        self.assertEqual(s["nodes"], 2)
        self.assertEqual(s["partition"], "debug")
        self.assertEqual(s["user"], "root")
        self.assertEqual(s["cluster"], "strata")
        self.assertFalse(s["ended_by_time_limit"])

    # -- tests ---------------------------------------------------------------------------------

    def test_srun_profiles_c_and_fortran_programs(self):
        for prog, language in (("ring_c", "C/C++"), ("ring_f90", "Fortran")):
            with self.subTest(prog=prog):
                self.clear()
                proc = self.srun("-t", "5", "--strata=profile", program(prog), str(ITER))
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertIn(f"ranks=4 iterations={ITER}", proc.stdout)
                [record] = self.records()
                job = record["job"]["slurm"]["job_id"]
                self.check_ring(record, job, ITER)
                self.assertEqual(record["job"]["id"], f"slurm:{job}.0")
                self.assertEqual(record["job"]["language"], language)
                s = record["job"]["slurm"]
                self.assertEqual(s["step"], "0")
                self.assertEqual(s["tasks_per_node"], "2(x2)")
                self.assertEqual(s["time_limit_s"], 300)  # from slurmctld, through the plugin
                # No accounting storage (slurmdbd) here, so no QOS: absent, with the reason.
                self.assertNotIn("qos", s)
                self.assertEqual(s["qos_unknown"], "slurmctld gave the job no QOS (Slurm keeps "
                                 "QOS only with accounting storage, slurmdbd)")

    # Slurm 22.05's srun may hang after a heterogeneous step under --mpi=pmix, Strata or not: its
    # PMIx abort agent is started per component and stopped once (docs/slurm.md).
    @unittest.skipIf(SRUN_MPI == "--mpi=pmix", "Slurm 22.05's srun may hang after a heterogeneous "
                     "step under --mpi=pmix (docs/slurm.md); covered under MPICH's pmi2")
    def test_a_heterogeneous_job_is_one_mpi_job_with_one_record(self):
        # srun A : B, a component per node, one MPI_COMM_WORLD over both (Slurm combines a het
        # step's components); --strata before the first ':' is the whole step's.
        self.clear()
        part = ["-N", "1", "-n", "2", SRUN_MPI, program("ring_c"), str(ITER)]
        proc = subprocess.run(["srun", "-t", "5", "--strata=profile", *part, ":", *part],
                              env=self.env(), cwd=self.dir, capture_output=True, text=True,
                              timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(f"ranks=4 iterations={ITER}", proc.stdout)
        [record] = self.records()
        j, routines = record["job"], record["routines"]
        leader = re.search(r"srun: job (\d+) ", proc.stderr).group(1)  # the het job's id
        self.assertEqual(j["id"], f"slurm:{leader}.0")
        self.assertEqual((j["slurm"]["job_id"], j["slurm"]["nodes"]), (leader, 2))
        self.assertEqual((j["ranks"], j["ranks_reported"], j["status"]), (4, 4, "finalized"))
        self.assertEqual(routines["MPI_Send"]["calls"], 4 * ITER)
        self.assertEqual(routines["MPI_Recv"]["calls"], 4 * ITER)
        self.assertEqual(routines["MPI_Allreduce"]["calls"], 4)

    def test_steps_in_components_of_a_heterogeneous_batch_job_name_their_component(self):
        # sbatch A : B, each srun in one component (--het-group): a record per step named
        # <leader>+<offset> (Slurm tells the step's tasks only the leader's id).
        self.clear()
        ring = program("ring_c")
        script = (f"srun --het-group=1 {SRUN_MPI} {ring} 6\n"
                  f"srun --het-group=0 {SRUN_MPI} {ring} 5\n")
        leader, out = self.sbatch("-t", "5", "--strata=profile", "-N", "1", "-n", "2", ":",
                                  "-N", "1", "-n", "2", script=script)
        self.assertIn("ranks=2 iterations=6", out)
        self.assertIn("ranks=2 iterations=5", out)
        records = sorted(self.records(), key=lambda r: r["job"]["argv"][-1])
        self.assertEqual([(r["job"]["id"], r["job"]["slurm"]["job_id"], r["job"]["ranks"],
                           r["routines"]["MPI_Send"]["calls"]) for r in records],
                         [(f"slurm:{leader}+0.1", f"{leader}+0", 2, 2 * 5),
                          (f"slurm:{leader}+1.0", f"{leader}+1", 2, 2 * 6)], out)

    def test_a_bad_strata_argument_is_one_line_and_no_job(self):
        # The plugin's one line reaches srun's and sbatch's stderr, Slurm adds its own and starts
        # nothing.
        self.clear()
        ring = program("ring_c")
        for command in (["srun", "-n", "1", SRUN_MPI, "--strata=profile:usec", ring, "3"],
                        ["sbatch", "--strata=profile:usec", "--wrap", f"{ring} 3"]):
            with self.subTest(command=command[0]):
                proc = subprocess.run(command, env=self.env(), cwd=self.dir,
                                      capture_output=True, text=True, timeout=60)
                self.assertNotEqual(proc.returncode, 0, proc.stdout)
                self.assertEqual(proc.stdout, "")  # no "Submitted batch job", no rank's output
                ours = [line for line in proc.stderr.splitlines() if "strata: " in line]
                self.assertEqual(ours, [f"{command[0]}: error: strata: --strata=profile:usec: "
                                        "expected KEY=VALUE after module 'profile', got 'usec'"],
                                 proc.stderr)
                self.assertIn("Invalid --strata argument: profile:usec", proc.stderr)  # Slurm's
        self.assertEqual(self.records(), [])

    def test_sbatch_covers_srun_and_mpirun_in_the_script(self):
        self.clear()
        script = (f"srun {SRUN_MPI} {program('ring_c')} 7\n"
                  f"{MPIRUN} -np 4 {program('ring_c')} 9\n")
        job, out = self.sbatch("-N", "2", "-n", "4", "--ntasks-per-node=2", "-t", "5",
                               "--strata=profile", script=script)
        self.assertIn("ranks=4 iterations=7", out)
        self.assertIn("ranks=4 iterations=9", out)
        records = sorted(self.records(), key=lambda r: r["job"]["argv"][-1])
        self.assertEqual([r["job"]["argv"][-1] for r in records], ["7", "9"], out)
        self.check_ring(records[0], job, 7)
        self.check_ring(records[1], job, 9)
        # mpirun's ranks have no task of the plugin's: the job's facts reach them through the
        # batch shell's environment, as srun's tasks get them.
        for r in records:
            self.assertEqual(r["job"]["slurm"]["time_limit_s"], 300, r["job"]["argv"])
            self.assertIn("slurmctld gave", r["job"]["slurm"]["qos_unknown"], r["job"]["argv"])

    def test_array_elements_carry_their_ids(self):
        self.clear()
        path = os.path.join(self.dir, "array.sh")
        with open(path, "w") as f:
            f.write(f"#!/bin/sh\nsrun {SRUN_MPI} {program('ring_c')} 3\n")
        array = submit(["--array=0-1", "-N", "1", "-n", "2", "-o",
                        os.path.join(self.dir, "array-%a.out"), "--strata=profile", path],
                       self.env(), self.dir)
        self.wait_for_batch_job(array)
        ids = sorted((r["job"]["slurm"]["job_id"], r["job"]["id"]) for r in self.records())
        self.assertEqual([i for i, _ in ids], [f"{array}_0", f"{array}_1"])
        self.assertEqual([j for _, j in ids], [f"slurm:{array}_0.0", f"slurm:{array}_1.0"])

    def test_off_and_strata_disable_leave_no_record(self):
        self.clear()
        proc = self.srun("--strata=off", program("ring_c"), "3")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("ranks=4 iterations=3", proc.stdout)
        proc = self.srun("--strata=profile", program("ring_c"), "3",
                         env=self.env(STRATA_DISABLE="1"))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("ranks=4 iterations=3", proc.stdout)
        job, out = self.sbatch("-N", "2", "-n", "4", "--ntasks-per-node=2", "--strata=off",
                               script=f"{MPIRUN} -np 4 {program('ring_c')} 3\n")
        self.assertIn("ranks=4 iterations=3", out)
        self.assertEqual(self.records(), [])

    def test_tasks_that_are_not_mpi_programs_run_untouched(self):
        static = os.path.join(self.dir, "static_env")
        source = static + ".c"
        with open(source, "w") as f:
            f.write('#include <stdio.h>\n#include <stdlib.h>\nint main(void) {\n'
                    '  const char* p = getenv("LD_PRELOAD"), *t = getenv("STRATA_TOOLS");\n'
                    '  printf("static LD_PRELOAD=%s STRATA_TOOLS=%s\\n", p ? p : "", t ? t : "");\n'
                    '  return 0;\n}\n')
        subprocess.run(["cc", "-static", "-o", static, source], check=True)
        shell = os.path.join(self.dir, "task.sh")
        with open(shell, "w") as f:
            f.write('#!/bin/sh\necho "script LD_PRELOAD=$LD_PRELOAD STRATA_TOOLS=$STRATA_TOOLS"\n')
        os.chmod(shell, 0o755)
        python = os.path.join(self.dir, "task.py")
        with open(python, "w") as f:
            f.write("import os\nprint('python LD_PRELOAD=' + os.environ.get('LD_PRELOAD', '') + "
                    "' STRATA_TOOLS=' + os.environ.get('STRATA_TOOLS', ''))\n")
        script = (f"srun -n 1 sh -c 'echo elf LD_PRELOAD=$LD_PRELOAD STRATA_TOOLS=$STRATA_TOOLS'\n"
                  f"srun -n 1 {shell}\n"
                  f"srun -n 1 python3 {python}\n"
                  f"srun -n 1 {static}\n"
                  f"srun -n 2 {SRUN_MPI} {program('ring_c')} 2\n")
        self.clear()
        job, out = self.sbatch("-N", "1", "-n", "2", "--strata=profile", script=script)
        lines = {line.split()[0]: line for line in out.splitlines() if "LD_PRELOAD=" in line}
        self.assertEqual(sorted(lines), ["elf", "python", "script", "static"], out)
        for kind, line in lines.items():
            self.assertNotIn("libstrata", line, kind)
            self.assertIn("STRATA_TOOLS=", line)
            self.assertTrue(line.rstrip().endswith("STRATA_TOOLS="), line)
        # The MPI program of the same job was profiled: only its record is there.
        [record] = self.records()
        self.assertEqual(record["job"]["ranks"], 2)
        self.assertEqual(record["job"]["slurm"]["job_id"], job)

    def test_epilog_ingests_into_sqlite_postgresql_and_keeps_records_of_a_store_that_is_down(self):
        db = os.path.join(self.dir, "site.db")
        self.write_collection("sqlite:" + db)
        proc = self.srun("--strata=profile", program("ring_c"), "4",
                         env=self.env(STRATA_SPOOL=self.epilog_spool))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        deadline = time.monotonic() + 60
        rows = []
        while time.monotonic() < deadline and not rows:
            if os.path.exists(db):
                with sqlite3.connect(db) as c:
                    try:
                        rows = c.execute("SELECT record_id, ranks, slurm_partition FROM jobs").fetchall()
                    except sqlite3.OperationalError:
                        rows = []
            time.sleep(0.3)
        self.assertEqual(len(rows), 1, rows)
        self.assertTrue(rows[0][0].startswith("slurm:"), rows)
        self.assertEqual(rows[0][1:], (4, "debug"))
        report = subprocess.run([STRATA, "site", "report", "--db", "sqlite:" + db, "--since", "1d",
                                 "--by", "partition", "--format", "json"],
                                capture_output=True, text=True, env=self.env())
        self.assertEqual(report.returncode, 0, report.stderr)
        self.assertEqual(json.loads(report.stdout)["debug"]["jobs"], 1)
        self.assertEqual(glob.glob(os.path.join(self.epilog_spool, "*.json")), [])

        # A store that is down: the epilog's ingest fails, the record stays in the spool.
        self.write_collection(f"postgresql://strata@/site?host={self.dir}/no-server")
        proc = self.srun("--strata=profile", program("ring_c"), "5",
                         env=self.env(STRATA_SPOOL=self.epilog_spool))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        log = os.path.join(self.dir, "epilog.log")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if os.path.exists(log):
                with open(log) as f:
                    if "the records stay in" in f.read():
                        break
            time.sleep(0.3)
        with open(log) as f:
            self.assertIn("the records stay in", f.read())
        kept = self.records(self.epilog_spool)
        self.assertEqual([r["job"]["argv"][-1] for r in kept], ["5"])

        if postgres_bindir() is None:
            self.skipTest("PostgreSQL is not installed")
        server = PostgresServer()
        url = server.start()
        try:
            # The store is back: the next job's epilog moves both records into it.
            self.write_collection(url)
            proc = self.srun("--strata=profile", program("ring_c"), "6",
                             env=self.env(STRATA_SPOOL=self.epilog_spool))
            self.assertEqual(proc.returncode, 0, proc.stderr)
            deadline = time.monotonic() + 60
            stored = []
            while time.monotonic() < deadline and len(stored) < 2:
                q = subprocess.run(["psql", url, "-At", "-c",
                                    "SELECT ranks, slurm_partition FROM jobs ORDER BY job_id"],
                                   capture_output=True, text=True)
                stored = q.stdout.split()
                time.sleep(0.3)
            self.assertEqual(stored, ["4|debug", "4|debug"])
            self.assertEqual(glob.glob(os.path.join(self.epilog_spool, "*.json")), [])
        finally:
            server.stop()

    def test_time_limit_ends_the_job_with_a_partial_record(self):
        if self.limit_job is None:
            self.skipTest("a time limit's end is checked under Open MPI (the same plugin and "
                          "Slurm; its shortest limit costs this suite a minute)")
        self.wait_for_job_end(self.limit_job, 150)
        # Slurm may call the job ended while its ranks are still being killed: recover leaves a
        # live job alone, as a cron job would try again.
        proc = run_until_ranks_are_gone([STRATA, "recover", self.limit_spool], self.env())
        self.assertEqual(proc.returncode, 0, proc.stderr)
        records = self.records(self.limit_spool)
        self.assertEqual(len(records), 1, proc.stderr)
        [record] = records
        j = record["job"]
        self.assertTrue(j["partial"])
        self.assertNotEqual(j["status"], "finalized")
        self.assertEqual(j["ranks"], 4)
        self.assertEqual(j["slurm"]["job_id"], self.limit_job)
        self.assertEqual(j["slurm"]["time_limit_s"], 60)
        self.assertTrue(j["slurm"]["ended_by_time_limit"], j)
        self.assertEqual(record["routines"]["MPI_Barrier"]["calls"], 4)


if __name__ == "__main__":
    unittest.main()
