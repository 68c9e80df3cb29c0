"""Python call sites (src/python_sites) inside the real interpreter that runs this file.

The probe module (python_sites_probe.cpp) is the library without MPI: ctypes calls it from the
Python code below, through CDLL (the GIL released around the call, as mpi4py does around its
blocking calls) or PyDLL (the GIL kept, as around MPI_Comm_rank), and it answers with the site it
captured as "file:line in function". Lines are found by their "# site:" marks.
"""
import ctypes
import os
import subprocess
import sys
import textwrap
import threading
import time
import unittest

PROBE = os.environ["STRATA_PYTHON_SITES_PROBE"]
released = ctypes.CDLL(PROBE, mode=ctypes.RTLD_GLOBAL)
held = ctypes.PyDLL(PROBE, mode=ctypes.RTLD_GLOBAL)
for lib in (released, held):
    lib.probe_call_site.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    lib.probe_in_extension.argtypes = [ctypes.c_void_p]
    lib.probe_check_after_exit.argtypes = [ctypes.c_void_p]
    lib.probe_key.argtypes = [ctypes.c_long]
    lib.probe_key.restype = ctypes.c_uint64
    lib.probe_foreign_thread.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.probe_wait_for.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]
    lib.probe_other_thread_site.argtypes = [ctypes.c_int64, ctypes.c_char_p, ctypes.c_int]

ACCESS = ["none", "unchecked", "direct", "public_api"]
KNOWN_LAYOUTS = {(3, 11), (3, 12), (3, 13)}
THIS = os.path.abspath(__file__)


def marked(mark, path=THIS):
    with open(path, encoding="utf-8") as f:
        lines = [i + 1 for i, text in enumerate(f) if text.rstrip().endswith(f"# site: {mark}")]
    assert len(lines) == 1, (mark, lines)
    return lines[0]


def site(gil=True, skip=1):
    """The site `skip` frames out from this helper (1: the caller's line)."""
    buf = ctypes.create_string_buffer(4096)
    (held if gil else released).probe_site(skip, buf, len(buf))
    return buf.value.decode("utf-8")


def address_in_extension():
    """An address in the code of a loaded extension module (_ctypes's init function)."""
    import _ctypes
    return ctypes.cast(ctypes.CDLL(_ctypes.__file__).PyInit__ctypes, ctypes.c_void_p).value


def address_in_libc():
    return ctypes.cast(ctypes.CDLL("libc.so.6").abs, ctypes.c_void_p).value


class Outer:
    class Inner:
        def method(self, gil):
            return site(gil)  # site: method


def generator(gil):
    yield site(gil)  # site: generator


def run_snippet(code, **env):
    """`code` in a fresh interpreter with the probe started (for settings read at start)."""
    prelude = textwrap.dedent(f"""
        import ctypes, sys
        sys.path.insert(0, {os.path.dirname(THIS)!r})
        import python_sites_test as t
    """)
    proc = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)],
                          env=dict(os.environ, **env), capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise AssertionError(f"snippet failed:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


SUPPORTED = sys.version_info >= (3, 11)  # PyFrame_GetLasti, Py_Version


@unittest.skipIf(SUPPORTED, "an interpreter Python call sites support")
class OlderInterpreters(unittest.TestCase):
    def test_no_sites_and_no_harm(self):
        self.assertEqual(ACCESS[held.probe_start()], "none")
        self.assertEqual(site(True), "")
        self.assertEqual(site(False), "")


@unittest.skipUnless(SUPPORTED, "Python call sites need Python 3.11 or later")
class PythonSites(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.access = ACCESS[held.probe_start()]

    def test_known_layouts_are_read_directly(self):
        expected = "direct" if sys.version_info[:2] in KNOWN_LAYOUTS else "public_api"
        self.assertEqual(self.access, expected)

    def test_calls_take_the_known_layouts_capture(self):
        expected = 1 if self.access == "direct" else 0
        self.assertEqual(held.probe_known_layout_capture(), expected)

    def test_the_thread_state_is_read_from_the_runtime_where_its_fields_are_known(self):
        site(True)  # the layout is compared on a call with the GIL held
        expected = 1 if self.access == "direct" and sys.version_info[:2] == (3, 11) else 0
        self.assertEqual(held.probe_reads_runtime_fields(), expected)

    def test_with_and_without_the_gil(self):
        want = f"{THIS}:{marked('method')} in Outer.Inner.method"
        self.assertEqual(Outer.Inner().method(True), want)
        if self.access == "direct":
            self.assertEqual(Outer.Inner().method(False), want)
        else:
            self.assertEqual(Outer.Inner().method(False), "", "no frames without the GIL")

    def test_generator_and_module_level_frames(self):
        self.assertEqual(next(generator(True)), f"{THIS}:{marked('generator')} in generator")
        namespace = {"site": site}
        exec(compile("\n\nwhere = site()\n", "/virtual/module.py", "exec"), namespace)
        self.assertEqual(namespace["where"], "/virtual/module.py:3 in <module>")

    def test_skipped_frames_and_frozen_modules(self):
        self.assertEqual(site(True, skip=2).rsplit(" in ", 1)[1], "TestCase._callTestMethod")
        # Frames of the interpreter's frozen modules stand for the line that ran them.
        namespace = {"site": site}
        exec(compile("def frozen():\n    return site()\n", "<frozen fake>", "exec"), namespace)
        self.assertEqual(namespace["frozen"](), f"{THIS}:{marked('frozen')} in "  # site: frozen
                         "PythonSites.test_skipped_frames_and_frozen_modules")

    def test_names_outside_ascii(self):
        namespace = {"site": site, "gil": self.access != "direct"}
        exec(compile("def ünïcode_π():\n    return site(gil)\n", "/tmp/dïr/ñamé.py", "exec"),
             namespace)
        self.assertEqual(namespace["ünïcode_π"](), "/tmp/dïr/ñamé.py:2 in ünïcode_π")

    def test_code_compiled_again_at_a_freed_address_is_named_anew(self):
        gil = self.access != "direct"
        for i in range(300):
            namespace = {"site": site, "gil": gil}
            exec(compile("\n" * (i % 7) + "def f():\n    return site(gil)\n", "/gen/same.py",
                         "exec"), namespace)
            self.assertEqual(namespace["f"](), f"/gen/same.py:{i % 7 + 2} in f")

    def test_a_repeated_call_at_a_freed_code_objects_address_is_named_anew(self):
        # A call's fast path (the same return address and instruction as the thread's last
        # call) must tell a new code object at a freed one's address from the last one.
        ext = address_in_extension()
        lib = released if self.access == "direct" else held
        buf = ctypes.create_string_buffer(4096)
        for i in range(300):
            namespace = {"call": lib.probe_call_site, "ext": ext, "buf": buf}
            exec(compile("\n" * (i % 7) + "def f():\n    call(ext, buf, 4096)\n"
                         "    return buf.value.decode()\n", "/gen/again.py", "exec"), namespace)
            for _ in range(2):  # the second: the same place again
                self.assertEqual(namespace["f"](), f"/gen/again.py:{i % 7 + 2} in f")
            namespace.clear()  # f and its code object freed before the next one is made

    def test_threads_calling_from_one_address_each_see_their_own_line(self):
        ext = address_in_extension()
        results = {}

        def worker(name, lib):
            buf = ctypes.create_string_buffer(4096)
            seen = set()
            for _ in range(3000):
                if name == "a":
                    lib.probe_call_site(ext, buf, len(buf))  # site: call a
                else:
                    lib.probe_call_site(ext, buf, len(buf))  # site: call b
                seen.add(buf.value.decode())
            results[name] = seen

        prefix = (f"{THIS}:{{}} in PythonSites."
                  "test_threads_calling_from_one_address_each_see_their_own_line.<locals>.worker")
        want = {"a": {prefix.format(marked("call a"))}, "b": {prefix.format(marked("call b"))}}
        for gil_a, gil_b in ((True, True), (False, False), (True, False)):
            if self.access != "direct" and not (gil_a and gil_b):
                continue
            threads = [threading.Thread(target=worker, args=("a", held if gil_a else released)),
                       threading.Thread(target=worker, args=("b", held if gil_b else released))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual(results, want)

    def test_one_line_is_one_site_however_its_call_runs(self):
        # list() runs map(), which calls the probe for each item, from this frame; after a few
        # runs the interpreter specialises the call of list (3.11: it then runs inside PRECALL,
        # not CALL: another instruction of the same line).
        keys = set()
        for _ in range(100):
            keys.update(list(map(held.probe_key, [1, 2])))  # site: specialised
        self.assertEqual(len(keys), 1, keys)
        self.assertNotEqual(keys, {0})

    def test_a_thread_state_is_watched_only_with_the_gil_and_only_while_it_lives(self):
        # The fast path reads a thread's state from its last call while a watch says it lives:
        # armed by a call with the GIL held, never without it, and dead once the thread state
        # is cleared (here: ctypes' callbacks on a thread Python did not start each take a new
        # thread state and release it).
        if self.access != "direct":
            self.skipTest("the watch serves the known layouts' fast path")
        ext = address_in_extension()
        buf = ctypes.create_string_buffer(4096)
        seen = []

        def released_only():
            for _ in range(2):
                released.probe_call_site(ext, buf, len(buf))  # site: released only
            seen.append((held.probe_thread_state_watched(), buf.value.decode()))
            held.probe_call_site(ext, buf, len(buf))
            seen.append((held.probe_thread_state_watched(), buf.value.decode()))

        t = threading.Thread(target=released_only)
        t.start()
        t.join()
        where = f"{THIS}:{{}} in PythonSites.{self._testMethodName}.<locals>.{{}}"
        self.assertEqual(seen, [(0, where.format(marked("released only"), "released_only")),
                                (1, where.format(marked("released only") + 2, "released_only"))])

        def callback():
            before = held.probe_thread_state_watched()
            for _ in range(2):
                held.probe_call_site(ext, buf, len(buf))  # site: foreign thread
            seen.append((before, held.probe_thread_state_watched(), buf.value.decode()))

        seen.clear()
        self.assertEqual(released.probe_foreign_thread(ctypes.CFUNCTYPE(None)(callback), 3), 1,
                         "the thread Python did not start ended within a minute")
        line = where.format(marked("foreign thread"), "callback")
        self.assertEqual([before for before, _, _ in seen], [0, 0, 0], "each a new thread state")
        self.assertEqual(seen[0][1], 1, "armed by the first call, the GIL held")
        self.assertEqual([where for _, _, where in seen], [line] * 3)

    def test_threads_each_see_their_own_line(self):
        results = {}

        def worker_a(gil):
            seen = set()
            for _ in range(3000):
                seen.add(site(gil))  # site: thread a
            results["a"] = seen

        def worker_b(gil):
            seen = set()
            for _ in range(3000):
                seen.add(site(gil))  # site: thread b
            results["b"] = seen

        prefix = f"{THIS}:{{}} in PythonSites.test_threads_each_see_their_own_line.<locals>."
        want = {"a": {prefix.format(marked("thread a")) + "worker_a"},
                "b": {prefix.format(marked("thread b")) + "worker_b"}}
        for gil_a, gil_b in ((True, True), (False, False), (True, False)):
            if self.access != "direct" and not (gil_a and gil_b):
                continue
            threads = [threading.Thread(target=worker_a, args=(gil_a,)),
                       threading.Thread(target=worker_b, args=(gil_b,))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual(results, want)

    def test_another_threads_line_while_it_waits_in_a_call(self):
        """As the hang diagnosis reads a thread blocked in MPI: the line of its call, found by
        its OS thread id, read without the GIL and without that thread's help."""
        def waiter(entered, go):
            released.probe_wait_for(ctypes.byref(entered), ctypes.byref(go))  # site: waiter

        # A frozen module's frame stands for the line that called it, as in a capture.
        namespace = {"released": released, "ctypes": ctypes}
        exec(compile("def frozen(entered, go):\n"
                     "    released.probe_wait_for(ctypes.byref(entered), ctypes.byref(go))\n",
                     "<frozen fake>", "exec"), namespace)

        def frozen_caller(entered, go):
            namespace["frozen"](entered, go)  # site: frozen caller

        prefix = f"{THIS}:{{}} in PythonSites.test_another_threads_line_while_it_waits_in_a_call"
        cases = [(waiter, prefix.format(marked("waiter")) + ".<locals>.waiter"),
                 (frozen_caller, prefix.format(marked("frozen caller")) + ".<locals>.frozen_caller")]
        for target, want in cases:
            entered, go = ctypes.c_int(0), ctypes.c_int(0)
            thread = threading.Thread(target=target, args=(entered, go))
            thread.start()
            try:
                while entered.value == 0:
                    time.sleep(0.001)
                buf = ctypes.create_string_buffer(4096)
                found = [lib.probe_other_thread_site(thread.native_id, buf, len(buf)) and
                         buf.value.decode() for lib in (held, released)]
            finally:
                go.value = 1
                thread.join()
            if self.access == "direct":
                self.assertEqual(released.probe_other_threads_readable(), 1)
                self.assertEqual(found, [want, want])
            else:
                self.assertEqual(found, [0, 0], "other threads only with the layout checked")
        # A thread that is gone, and an id no thread has: nothing.
        buf = ctypes.create_string_buffer(4096)
        self.assertEqual(released.probe_other_thread_site(thread.native_id, buf, len(buf)), 0)
        self.assertEqual(released.probe_other_thread_site(1 << 40, buf, len(buf)), 0)

    def test_calls_from_an_extension_module_only(self):
        ext = address_in_extension()
        self.assertEqual(released.probe_in_extension(ext), 1)
        self.assertEqual(released.probe_in_extension(address_in_libc()), 0)
        self.assertEqual(released.probe_in_extension(ctypes.cast(ctypes.pythonapi.Py_IsInitialized,
                                                                  ctypes.c_void_p).value), 0)
        buf = ctypes.create_string_buffer(4096)
        self.assertEqual(held.probe_call_site(ext, buf, len(buf)), 1)  # site: extension
        self.assertEqual(buf.value.decode(), f"{THIS}:{marked('extension')} in "
                         "PythonSites.test_calls_from_an_extension_module_only")
        self.assertEqual(held.probe_call_site(address_in_libc(), buf, len(buf)), 0)
        # From one instruction: an extension's address, then another address twice. The repeat
        # of an address outside the extensions keeps it, though the frame is the one the
        # extension's call was named from (the fast path is for extension addresses only).
        libc = address_in_libc()
        found = [held.probe_call_site(where, buf, len(buf)) for where in (ext, libc, libc)]
        self.assertEqual(found, [1, 0, 0])

    def test_a_module_loaded_later_is_found(self):
        self.assertEqual(released.probe_in_extension(address_in_extension()), 1)
        import _json  # noqa: F401  (lib-dynload or built in; either way not an error)
        import _decimal
        if getattr(_decimal, "__file__", "").endswith(".so"):
            addr = ctypes.cast(ctypes.CDLL(_decimal.__file__).PyInit__decimal, ctypes.c_void_p).value
            self.assertEqual(released.probe_in_extension(addr), 1)


@unittest.skipUnless(SUPPORTED, "Python call sites need Python 3.11 or later")
class Settings(unittest.TestCase):
    def test_public_api_only(self):
        out = run_snippet("""
            import inspect
            print(t.ACCESS[t.held.probe_start()])
            print(t.site(True), inspect.currentframe().f_lineno)
            print(repr(t.site(False)))
        """, STRATA_PYTHON_SITES="public")
        lines = out.splitlines()
        self.assertEqual(lines[0], "public_api")
        where, line = lines[1].rsplit(" ", 1)
        self.assertEqual(where, f"<string>:{line} in <module>")
        self.assertEqual(lines[2], "''", "without the GIL the public API is not used")

    def test_off(self):
        out = run_snippet("""
            print(t.ACCESS[t.held.probe_start()], repr(t.site(True)))
        """, STRATA_PYTHON_SITES="0")
        self.assertEqual(out.strip(), "none ''")

    def test_a_full_table_gives_the_address(self):
        out = run_snippet("""
            t.held.probe_start()
            named, kept = 0, []
            for i in range(5000):
                code = compile("def f():\\n    return site(True)\\n", f"/gen/{i}.py", "exec")
                ns = {"site": t.site}
                exec(code, ns)
                kept.append(ns)
                named += ns["f"]() == f"/gen/{i}.py:2 in f"
            print(named)
        """)
        named = int(out.strip())
        if sys.version_info[:2] in KNOWN_LAYOUTS:
            self.assertGreater(named, 3000)
        self.assertLessEqual(named, 4096)

    def test_after_the_interpreter_has_finalized(self):
        out = run_snippet("""
            t.held.probe_start()
            assert t.held.probe_check_after_exit(t.address_in_extension()) == 1
        """)
        self.assertEqual(out.strip(), "after exit: address none")


if __name__ == "__main__":
    unittest.main()
