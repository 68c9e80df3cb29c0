"""Installation: `cmake --install` gives the command, its modules and what an out-of-tree module
needs (headers, the CMake package, pkg-config files). The prefix is moved after installing, so
nothing may point at the build tree or at where it was installed; a module built against it alone,
with CMake's find_package and with pkg-config, runs in a chain with the profile under real mpirun
on each MPI; a prefix that lacks a flavor says which, in one line."""
import glob
import json
import os
import re
import tempfile
import unittest

from strata_testlib import BUILD, base_env, run

CMAKE = os.environ.get("STRATA_CMAKE", "cmake")
SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "install")
FLAVORS = [f for f in ("openmpi", "mpich")
           if os.path.exists(os.path.join(BUILD, "lib", "strata", f, "libstrata.so"))]
ITER = 7
RANKS = 2


def checked(args, **kwargs):
    proc = run(args, timeout=600, **kwargs)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def installed_env(**extra):
    """The environment of a user of the installed prefix: nothing that names the build tree."""
    env = base_env(**extra)
    for key in ("STRATA_MODULE_PATH", "STRATA_BUILD", "STRATA_FLAVOR"):
        env.pop(key, None)
    env.update(extra)
    return env


def pkg_config(prefix, *args):
    # Only this prefix's pkg-config files, none of the system's.
    return run(["pkg-config", *args], env=installed_env(PKG_CONFIG_LIBDIR=os.path.join(prefix, "lib", "pkgconfig")))


def ring_checksum():
    return sum(((r - 1) % RANKS) * 1000 + it for r in range(RANKS) for it in range(ITER))


class Install(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="strata-install-")
        top = cls.tmp.name
        staged = os.path.join(top, "staged")
        checked([CMAKE, "--install", BUILD, "--prefix", staged])
        cls.staged = staged
        cls.prefix = os.path.join(top, "moved", "strata")
        os.makedirs(os.path.dirname(cls.prefix))
        os.rename(staged, cls.prefix)
        cls.strata = os.path.join(cls.prefix, "bin", "strata")
        # A program of each flavor, built with the MPI compiler wrapper and the installed
        # strata/annotate.h (pkg-config's flags).
        cls.apps = {}
        for flavor in FLAVORS:
            cflags = pkg_config(cls.prefix, "--cflags", f"strata-{flavor}").stdout.split()
            app = os.path.join(top, f"regions_ring_{flavor}")
            checked([f"mpicc.{flavor}", *cflags, os.path.join(SOURCE, "regions_ring.c"), "-o", app])
            cls.apps[flavor] = app
        # The module with CMake's find_package, for every flavor, and once more for the flavor
        # Strata_MPI_FLAVOR picks (the last).
        cls.cmake_build = os.path.join(top, "cmake-build")
        checked([CMAKE, "-S", SOURCE, "-B", cls.cmake_build, f"-DCMAKE_PREFIX_PATH={cls.prefix}",
                 f"-DSENDCOUNT_FLAVORS={';'.join(FLAVORS)}", f"-DStrata_MPI_FLAVOR={FLAVORS[-1]}"],
                env=installed_env())
        checked([CMAKE, "--build", cls.cmake_build], env=installed_env())
        # The module with pkg-config and the C compiler, one directory per flavor.
        cls.pkg_build = os.path.join(top, "pkg-config-build")
        for flavor in FLAVORS:
            flags = pkg_config(cls.prefix, "--cflags", "--libs", f"strata-{flavor}").stdout.split()
            out = os.path.join(cls.pkg_build, flavor, "sendcount.so")
            os.makedirs(os.path.dirname(out))
            checked(["cc", "-shared", "-fPIC", "-o", out, os.path.join(SOURCE, "sendcount.c"), *flags])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_chain(self, flavor, tools, module_path=None):
        spool = tempfile.mkdtemp(prefix="spool-", dir=self.tmp.name)
        env = installed_env(STRATA_SPOOL=spool, HOME=self.tmp.name)
        if module_path:
            env["STRATA_MODULE_PATH"] = module_path
        proc = run([self.strata, "run", "-np", str(RANKS), "--tools", tools, "--",
                    self.apps[flavor], str(ITER)], env=env, cwd=self.tmp.name, timeout=180)
        self.assertEqual(proc.returncode, 0, f"{tools}:\n{proc.stdout}\n{proc.stderr}")
        return proc, spool

    def assertModuleCounted(self, proc, label):
        """Each rank's line from the module: exact counts of what the ring did."""
        version = run([self.strata, "--version"], env=installed_env()).stdout.split()[-1]
        for rank in range(RANKS):
            self.assertIn(f"strata: sendcount: {label} rank {rank}: {ITER} MPI_Send, {ITER} MPI_Recv, "
                          f"{ITER} regions (Strata {version})", proc.stderr)
        self.assertIn(f"regions_ring: ranks={RANKS} iterations={ITER} checksum={ring_checksum()}",
                      proc.stdout)

    def assertProfiled(self, spool, flavor):
        records = glob.glob(os.path.join(spool, "*.json"))
        self.assertEqual(len(records), 1, os.listdir(spool))
        with open(records[0]) as f:
            record = json.load(f)
        self.assertEqual(record["job"]["mpi_flavor"], flavor)
        self.assertEqual(record["routines"]["MPI_Send"]["calls"], RANKS * ITER)
        self.assertEqual(record["routines"]["MPI_Recv"]["calls"], RANKS * ITER)

    def test_the_prefix_has_headers_package_and_pkg_config_files(self):
        p = self.prefix
        for name in ("module.h", "annotate.h", "version.h", "option_binder.hpp"):
            self.assertTrue(os.path.isfile(os.path.join(p, "include", "strata", name)), name)
        self.assertTrue(os.path.isfile(os.path.join(p, "lib", "strata", "libstrata_option_binder.a")))
        self.assertTrue(os.path.isfile(os.path.join(p, "lib", "cmake", "Strata", "StrataConfig.cmake")))
        zmpi = {}
        for flavor in FLAVORS:
            for path in (f"include/strata/{flavor}/strata/zmpi.h", f"lib/pkgconfig/strata-{flavor}.pc",
                         f"lib/cmake/Strata/StrataFlavor-{flavor}.cmake",
                         f"lib/strata/{flavor}/libstrata.so", f"lib/strata/{flavor}/modules/profile.so"):
                self.assertTrue(os.path.isfile(os.path.join(p, path)), path)
            with open(os.path.join(p, f"include/strata/{flavor}/strata/zmpi.h")) as f:
                zmpi[flavor] = f.read()
        if {"openmpi", "mpich"} <= set(FLAVORS):
            # Each flavor's own: MPICH 4 has MPI-4 Sessions, Open MPI 4.1 has not.
            self.assertIn("ZMPI_Session_init", zmpi["mpich"])
            self.assertNotIn("ZMPI_Session_init", zmpi["openmpi"])

    def test_nothing_installed_points_at_the_build_or_the_first_prefix(self):
        for root, _, files in os.walk(self.prefix):
            for name in files:
                path = os.path.join(root, name)
                if name.endswith((".pc", ".cmake")):
                    with open(path) as f:
                        text = f.read()
                elif name.endswith(".so") or os.access(path, os.X_OK):
                    text = run(["readelf", "-d", path]).stdout
                else:
                    continue
                self.assertNotIn(BUILD, text, path)
                self.assertNotIn(self.staged, text, path)

    def test_module_built_with_cmake_runs_below_the_profile(self):
        for flavor in FLAVORS:
            with self.subTest(flavor=flavor):
                module = os.path.join(self.cmake_build, flavor, "sendcount.so")
                # Beside it, a C++ module whose options the installed option binder reads.
                bound = os.path.join(self.cmake_build, flavor, "bound_options.so")
                proc, spool = self.run_chain(
                    flavor, f"profile,{module}:label=cmake,{bound}:every=250ms:bytes=64K")
                self.assertModuleCounted(proc, "cmake")
                self.assertProfiled(spool, flavor)
                for rank in range(RANKS):  # given, given, the declared default
                    self.assertIn(f"strata: bound_options: bound rank {rank}: every=0.25 s "
                                  f"bytes=65536 count=3", proc.stderr)

    def test_module_options_through_the_installed_binder(self):
        """Declared through the binder: listed by `strata modules`, a value out of its range
        refused in the core's words before the program starts."""
        flavor = FLAVORS[-1]
        bound = os.path.join(self.cmake_build, flavor, "bound_options.so")
        listed = run([self.strata, "modules", "--mpi", flavor, "bound_options"],
                     env=installed_env(STRATA_MODULE_PATH=os.path.dirname(bound)))
        self.assertEqual(listed.returncode, 0, listed.stderr)
        self.assertRegex(listed.stdout, r"every\s+duration\s+default 1s")
        self.assertRegex(listed.stdout, r"count\s+uint\s+default 3")
        proc = run([self.strata, "run", "-np", str(RANKS), "--tools", f"{bound}:count=11", "--",
                    self.apps[flavor], str(ITER)], env=installed_env(HOME=self.tmp.name),
                   cwd=self.tmp.name, timeout=180)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("option 'count': '11' is not from 1 to 10", proc.stderr)
        self.assertNotIn("regions_ring:", proc.stdout)

    def test_module_built_with_pkg_config_runs_above_the_profile_found_by_name(self):
        for flavor in FLAVORS:
            with self.subTest(flavor=flavor):
                proc, spool = self.run_chain(flavor, "sendcount:label=pkgconfig,profile",
                                             module_path=os.path.join(self.pkg_build, flavor))
                self.assertModuleCounted(proc, "pkgconfig")
                self.assertProfiled(spool, flavor)

    def test_strata_mpi_flavor_picks_the_flavor_of_strata_module(self):
        chosen = FLAVORS[-1]
        env = installed_env(STRATA_MODULE_PATH=os.path.join(self.cmake_build, "chosen"))
        proc = run([self.strata, "modules", "--mpi", chosen, "sendcount"], env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("counts sends (wrapper), receives (events) and regions", proc.stdout)
        self.assertIn("label", proc.stdout)
        self.assertNotIn("cannot load", proc.stdout)


@unittest.skipUnless(len(FLAVORS) == 2, "needs both MPI flavors built")
class PrefixMissingAFlavor(unittest.TestCase):
    """A packager's split: the common part and one flavor's part installed, the other not."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="strata-install-")
        cls.have, cls.lacking = FLAVORS
        cls.prefix = os.path.join(cls.tmp.name, "prefix")
        for component in ("common", cls.have):
            checked([CMAKE, "--install", BUILD, "--prefix", cls.prefix, "--component", component])
        cls.strata = os.path.join(cls.prefix, "bin", "strata")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_installed_flavor_works_and_the_other_is_absent(self):
        self.assertFalse(os.path.exists(os.path.join(self.prefix, "lib", "strata", self.lacking)))
        proc = run([self.strata, "modules", "--mpi", self.have, "profile"], env=installed_env())
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("profile", proc.stdout)
        self.assertEqual(pkg_config(self.prefix, "--exists", f"strata-{self.have}").returncode, 0)

    def test_find_package_names_the_missing_flavor(self):
        build = os.path.join(self.tmp.name, "cmake-build")
        proc = run([CMAKE, "-S", SOURCE, "-B", build, f"-DCMAKE_PREFIX_PATH={self.prefix}",
                    f"-DSENDCOUNT_FLAVORS={self.lacking}"], env=installed_env(), timeout=300)
        self.assertNotEqual(proc.returncode, 0, proc.stdout)
        message = re.sub(r"\s+", " ", proc.stderr)
        self.assertIn(f"Strata in {self.prefix} has no build for the MPI flavor '{self.lacking}' "
                      f"(installed: {self.have}); install its {self.lacking} part, or build Strata "
                      f"where mpicc.{self.lacking} is found", message)

    def test_pkg_config_names_the_missing_flavor(self):
        proc = pkg_config(self.prefix, "--cflags", f"strata-{self.lacking}")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn(f"strata-{self.lacking}", proc.stderr)

    def test_strata_run_and_modules_say_the_flavor_is_missing(self):
        app = os.path.join(self.tmp.name, "regions_ring")
        checked([f"mpicc.{self.lacking}", f"-I{self.prefix}/include",
                 os.path.join(SOURCE, "regions_ring.c"), "-o", app])
        why = (f"this Strata ({self.prefix}) was built without {self.lacking} (it has {self.have}): "
               f"build Strata where mpicc.{self.lacking} is found, or install its {self.lacking} part")
        for tools in ("profile", None):
            with self.subTest(tools=tools):
                args = [self.strata, "run", "-np", str(RANKS)]
                args += ["--tools", tools] if tools else []
                proc = run(args + ["--", app, str(ITER)], env=installed_env())
                self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
                self.assertEqual(proc.stderr.strip().splitlines(),
                                 [f"strata: error: {app} uses {self.lacking}, but {why}"])
                self.assertNotIn("regions_ring:", proc.stdout)
        proc = run([self.strata, "modules", "--mpi", self.lacking], env=installed_env())
        self.assertEqual(proc.returncode, 2)
        self.assertEqual(proc.stderr.strip().splitlines(),
                         [f"strata: error: --mpi {self.lacking}: {why}"])


if __name__ == "__main__":
    unittest.main()
