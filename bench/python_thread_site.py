"""What the hang diagnosis pays to read a waiting thread's Python line (docs/hang.md, "Python
programs"; docs/PERFORMANCE.md): python_sites::other_thread_site, through the probe library
(src/python_sites/python_sites_probe.cpp), on a thread that waits inside a call that released
the GIL, at a few Python stack depths, minus a probe call that does nothing.

    python3 bench/python_thread_site.py [BUILD_DIR]      (default ./build; a few seconds)
"""
import ctypes
import os
import sys
import threading
import time

build = sys.argv[1] if len(sys.argv) > 1 else "build"
probe = os.path.join(build, "src", "python_sites", "libstrata_python_sites_probe.so")
released = ctypes.CDLL(probe, mode=ctypes.RTLD_GLOBAL)
held = ctypes.PyDLL(probe, mode=ctypes.RTLD_GLOBAL)
released.probe_wait_for.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]
released.probe_other_thread_site.argtypes = [ctypes.c_int64, ctypes.c_char_p, ctypes.c_int]
held.probe_start()
READS = 2000


def waiting(depth, entered, go):
    if depth == 0:
        released.probe_wait_for(ctypes.byref(entered), ctypes.byref(go))
    else:
        waiting(depth - 1, entered, go)


def per_call(function, *args):
    start = time.perf_counter()
    for _ in range(READS):
        function(*args)
    return (time.perf_counter() - start) / READS


for depth in (0, 100):
    entered, go = ctypes.c_int(0), ctypes.c_int(0)
    thread = threading.Thread(target=waiting, args=(depth, entered, go))
    thread.start()
    while entered.value == 0:
        time.sleep(0.001)
    buf = ctypes.create_string_buffer(4096)
    try:
        read = per_call(released.probe_other_thread_site, thread.native_id, buf, len(buf))
        empty = per_call(released.probe_other_threads_readable)
    finally:
        go.value = 1
        thread.join()
    print(f"{depth + 3} Python frames on its stack: {1e6 * (read - empty):.1f} us per read "
          f"({buf.value.decode() or 'not read'})")
