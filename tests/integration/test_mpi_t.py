"""The MPI library's own variables (MPI_T) in the profile: every rank's performance variables
reduced over the ranks, the control variables, the subtotal of MPI_Pcontrol(4), the report, and
a library whose MPI_T cannot start. Under Open MPI 4.1 (which exposes the ob1 queue lengths
among its performance variables) and MPICH 4.0 (which, as Debian builds it, exposes none)."""
import glob
import os
import re
import tempfile

from strata_testlib import BUILD, FLAVOR, PROGRAMS, STRATA, program, run
from test_profile import ProfileTestCase

# A control variable each MPI reads from the environment, set to its default so that the run
# is not changed by it.
SET_CVAR = {
    "openmpi": ("OMPI_MCA_btl_vader_eager_limit", "btl_vader_eager_limit", "4096"),
    "mpich": ("MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE", "MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE", "131072"),
}


def made(proc):
    line = next(l for l in proc.stdout.splitlines() if l.startswith("mpi_t_traffic:"))
    return {k: int(v) for k, v in (kv.split("=") for kv in line.split()[1:])}


def pvar_row(report, name):
    """The figures of a variable's row in a text report: sum, min, min rank, max, max rank, ranks."""
    for line in report.splitlines():
        parts = line.split()
        if parts and parts[0] == name and len(parts) > 9 and parts[3].lstrip("-").isdigit():
            return [int(x) for x in parts[3:9]]
    raise AssertionError(f"no row for {name} in\n{report}")


class MpiT(ProfileTestCase):
    def traffic(self, ranks=3, **extra):
        # mpi_t=1: read in any job, as a long job does by default (a short one does not, below).
        env_name, _, value = SET_CVAR[FLAVOR]
        env = dict(self.env, **{env_name: value, "STRATA_PROFILE_MPI_T": "1", **extra})
        proc = self.profile_run([program("mpi_t_traffic_c")], ranks=ranks, env=env)
        self.assertRan(proc)
        return proc

    def test_record_holds_the_variables_reduced_over_ranks(self):
        proc = self.traffic()
        counts = made(proc)
        record = self.only_record()
        t = record["mpi_t"]
        self.assertEqual(t["problem"], "")
        # What the program itself saw through MPI_T.
        # Open MPI lists one variable once more each time MPI_T starts again (the program started
        # and closed it before the profile did).
        self.assertGreaterEqual(t["pvars_exposed"], counts["pvars"])
        self.assertEqual(t["cvars_exposed"], counts["cvars"])
        # The program's own MPI_T calls are its calls; the profile's (sessions, handles, reads,
        # control variables) are not.
        routines = record["routines"]
        for name in ("MPI_T_init_thread", "MPI_T_pvar_get_num", "MPI_T_cvar_get_num", "MPI_T_finalize"):
            self.assertEqual(routines[name]["calls"], 3, name)
        for name in routines:
            self.assertNotRegex(name, r"MPI_T_(pvar_(session|handle|read|start|get_info)|cvar_(read|handle|get_info)|enum)")
        # The control variable the environment set, with its value.
        _, cvar, value = SET_CVAR[FLAVOR]
        self.assertIn(cvar, t["cvars_set"])
        self.assertEqual(t["cvars"][cvar], value)
        self.assertGreater(len(t["cvars"]), 100)
        report = run([STRATA, "report", self.records()[0]])
        self.assertRan(report)
        self.assertIn("MPI library variables (MPI_T)", report.stdout)
        self.assertIn(cvar, report.stdout)
        if FLAVOR == "mpich":
            # MPICH 4.0.2 declares MPI 4.0's events and sources none; Debian builds it without
            # performance variables.
            self.assertEqual(t["pvars_exposed"], 0)
            self.assertEqual(t["pvars"], [])
            self.assertEqual(t["events_exposed"], 0)
            self.assertIn("the MPI library exposes no performance variables", report.stdout)
            return
        # Open MPI 4.1 is an MPI 3.1 library: no events interface.
        self.assertNotIn("events_exposed", t)
        pvars = {p["name"]: p for p in t["pvars"]}
        self.assertEqual(len(pvars), len(t["pvars"]), "one entry per name")
        queue = pvars["pml_ob1_unexpected_msgq_length"]
        self.assertEqual((queue["class"], queue["binding"], queue["datatype"]), ("size", "communicator", "unsigned"))
        self.assertEqual(queue["elements"], 3, "one per peer of MPI_COMM_WORLD")
        self.assertEqual(queue["ranks"], 3)
        self.assertEqual((queue["sum"], queue["min"], queue["max"]), (0, 0, 0), "drained before MPI_Finalize")
        self.assertEqual((queue["min_rank"], queue["max_rank"]), (0, 0), "the lowest rank on ties")
        self.assertEqual(pvars["pml_ob1_posted_recvq_length"]["sum"], 0)
        window = pvars["osc_rdma_put_retry_count"]
        self.assertEqual((window["binding"], window["ranks"]), ("window", 0))
        self.assertIn("bound to a window", window["unread"])
        self.assertIn("Number of unexpected messages received by each peer", report.stdout)

    def test_subtotal_reads_the_queues_while_they_hold_messages(self):
        if FLAVOR == "mpich":
            self.skipTest("MPICH 4.0.2 as Debian builds it exposes no performance variables")
        proc = self.traffic()
        counts = made(proc)
        # MPI_Pcontrol(4): rank 1 holds rank 0's unexpected messages and its own posted
        # receives; ranks 0 and 2 hold none.
        self.assertEqual(pvar_row(proc.stderr, "pml_ob1_unexpected_msgq_length"),
                         [counts["unexpected"], 0, 0, counts["unexpected"], 1, 3])
        self.assertEqual(pvar_row(proc.stderr, "pml_ob1_posted_recvq_length"),
                         [counts["posted"], 0, 0, counts["posted"], 1, 3])

    def test_control_variables_of_components_mpi_init_closed_are_read(self):
        # Open MPI's MPI_T registers every component, MPI_Init then unloads those it does not
        # use (here the UCX and OFI ones, which Debian's configuration excludes), and their
        # control variables live in them: the profile keeps those components loaded, so that
        # rank 0 reads the values the environment set at finalize (without, it crashed there).
        if FLAVOR == "mpich":
            self.skipTest("MPICH loads no components")
        closed = {"OMPI_MCA_pml_ucx_verbose": "pml_ucx_verbose",
                  "OMPI_MCA_mtl_ofi_verbose": "mtl_ofi_verbose",
                  "OMPI_MCA_opal_common_ucx_verbose": "opal_common_ucx_verbose"}
        proc = self.traffic(ranks=2, **{env: "0" for env in closed})
        self.assertNotIn("Segmentation", proc.stderr)
        t = self.only_record()["mpi_t"]
        for cvar in closed.values():
            self.assertIn(cvar, t["cvars_set"])
            self.assertEqual(t["cvars"][cvar], "0", cvar)

    def test_components_are_loaded_ahead_of_open_mpis_own_loading(self):
        # The profile loads Open MPI's components in scopes of their own before
        # MPI_T_init_thread, whose own loading of them then only makes them global: the dynamic
        # linker says who loaded each (LD_DEBUG=files, a file per process), and in a rank it is
        # never Open MPI's libopen-pal (as it is in mpirun).
        if FLAVOR == "mpich":
            self.skipTest("MPICH loads no components")
        # The directory comes from the Open MPI Strata was built against, or from the variable
        # that names Open MPI's component directories (here the same one, found from a run).
        directory = None
        for named in (False, True):
            if named:
                self.assertIsNotNone(directory, "no component directory seen in the first run")
            extra = {"OMPI_MCA_mca_base_component_path": directory} if named else {}
            with self.subTest(**extra), tempfile.TemporaryDirectory() as tmp:
                for f in self.records():
                    os.remove(f)
                proc = self.traffic(ranks=2, LD_DEBUG="files", LD_DEBUG_OUTPUT=os.path.join(tmp, "ld"), **extra)
                ranks = []
                for path in glob.glob(os.path.join(tmp, "ld.*")):
                    with open(path, encoding="utf-8", errors="replace") as f:
                        text = f.read()
                    loaders = {}
                    pattern = r"file=(\S*)/(mca_\w+)\.so \[0\];\s+dynamically loaded by (\S+)"
                    for m in re.finditer(pattern, text):
                        loaders.setdefault(os.path.basename(m.group(3)), set()).add(m.group(2))
                        directory = m.group(1)
                    if re.search(r"needed by \S*/mpi_t_traffic_c \[0\]", text):
                        ranks.append(loaders)
                self.assertEqual(len(ranks), 2, "the two ranks' files")
                for loaders in ranks:
                    self.assertGreater(len(loaders.get("profile.so", ())), 100, "every component of the MPI's frameworks")
                    self.assertEqual({k: v for k, v in loaders.items() if k != "profile.so"}, {},
                                     "components Open MPI loaded itself")
                    # OpenSHMEM's frameworks, which MPI_T does not register, are not loaded at all.
                    self.assertFalse([c for c in loaders["profile.so"] if c.startswith(("mca_spml_", "mca_sshmem_"))])
                self.assertEqual(self.only_record()["mpi_t"]["cvars_exposed"], made(proc)["cvars"])

    def test_a_library_whose_mpi_t_cannot_start_gives_one_line(self):
        shim = glob.glob(os.path.join(PROGRAMS, "**", "libmpi_t_refuses.so"), recursive=True)
        self.assertTrue(shim, f"libmpi_t_refuses.so under {PROGRAMS}")
        proc = self.traffic(LD_PRELOAD=shim[0])
        self.assertEqual(made(proc)["pvars"], -1, "the program's own MPI_T_init_thread failed too")
        # One message (the subtotal of MPI_Pcontrol(4) repeats it in its report).
        lines = [l for l in proc.stderr.splitlines() if l.startswith("strata") and "MPI_T_init_thread failed" in l]
        self.assertEqual(len(lines), 1, proc.stderr)
        record = self.only_record()
        self.assertTrue(record["mpi_t"]["problem"].startswith("MPI_T_init_thread failed"))
        self.assertEqual(record["mpi_t"]["pvars"], [])
        self.assertEqual(record["job"]["status"], "finalized")
        self.assertEqual(record["routines"]["MPI_Barrier"]["calls"], 3)

    def test_a_short_job_does_not_read_them_and_says_why(self):
        # By default (mpi_t=auto) MPI_T is started only in a job long enough for it to cost
        # under 0.1 %: a hello of a few messages is not, and never starts it (under Open MPI no
        # component is loaded ahead by the profile: the dynamic linker says who loaded each).
        with tempfile.TemporaryDirectory() as tmp:
            # (MPICH loads no components; its mpiexec dies under LD_DEBUG.)
            ld_debug = {"LD_DEBUG": "files", "LD_DEBUG_OUTPUT": os.path.join(tmp, "ld")} if FLAVOR == "openmpi" else {}
            env = dict(self.env, **ld_debug)
            proc = self.profile_run([program("hello_cpp")], ranks=2, env=env)
            self.assertRan(proc)
            loaders = set()
            for path in glob.glob(os.path.join(tmp, "ld.*")):
                with open(path, encoding="utf-8", errors="replace") as f:
                    for m in re.finditer(r"file=\S*/mca_\w+\.so \[0\];\s+dynamically loaded by (\S+)", f.read()):
                        loaders.add(os.path.basename(m.group(1)))
        if FLAVOR == "openmpi":
            self.assertIn("libopen-pal.so.40", loaders, "Open MPI loads its components itself")
        self.assertNotIn("profile.so", loaders)
        t = self.only_record()["mpi_t"]
        self.assertRegex(t["not_read"], r"^not read: the job ran [0-9.e-]+ s, under the [0-9]+ s "
                                        r"from which starting MPI_T costs it less than 0\.1 % \(mpi_t=1")
        self.assertEqual((t["pvars"], t["cvars"], t["problem"]), ([], {}, ""))
        if FLAVOR == "openmpi":  # MPI_T never started: how many variables it has is not known
            self.assertNotIn("cvars_exposed", t)
        else:  # the profile holds MPICH's MPI_T from MPI_Init (it cannot start twice)
            self.assertGreater(t["cvars_exposed"], 100)
        report = run([STRATA, "report", self.records()[0]])
        self.assertRan(report)
        self.assertIn(t["not_read"], report.stdout)
        # MPI_Pcontrol(4) asks for the variables: under mpi_t=auto they are read then, in a
        # program that started and ended MPI_T itself before (MPICH crashed there when MPI_T was
        # started only at this first reading).
        for f in self.records():
            os.remove(f)
        env_name, _, value = SET_CVAR[FLAVOR]
        proc = self.profile_run([program("mpi_t_traffic_c")], ranks=2, env=dict(self.env, **{env_name: value}))
        self.assertRan(proc)
        t = self.only_record()["mpi_t"]
        self.assertNotIn("not_read", t)
        self.assertEqual(t["cvars_exposed"], made(proc)["cvars"])
        self.assertGreater(len(t["cvars"]), 0)

    def test_turned_off(self):
        # The module's option mpi_t, given in the stack or by its variable (as before it was an
        # option); a value that is no boolean stops the job before it starts.
        env_name, _, value = SET_CVAR[FLAVOR]
        env = dict(self.env, **{env_name: value})
        proc = self.profile_run([program("mpi_t_traffic_c")], ranks=2, tools="profile:mpi_t=0", env=env)
        self.assertRan(proc)
        self.assertNotIn("mpi_t", self.only_record())
        for f in self.records():
            os.remove(f)
        self.traffic(ranks=2, STRATA_PROFILE_MPI_T="0")
        self.assertNotIn("mpi_t", self.only_record())
        proc = self.profile_run([program("mpi_t_traffic_c")], ranks=2, tools="profile:mpi_t=sometimes", env=env)
        self.assertOneErrorLine(proc, "mpi_t")
        self.assertNotIn("mpi_t_traffic:", proc.stdout, "the program must not have run")
        listing = run([STRATA, "modules", "profile", "--mpi", FLAVOR])
        self.assertRan(listing)
        self.assertRegex(listing.stdout, r"(?m)^.*\bmpi_t\b.*$")
        self.assertIn("STRATA_PROFILE_MPI_T", listing.stdout)
