"""Strata annotations for Python programs: the program's own levels of abstraction.

    import strata

    with strata.region("solver"):
        ...

    @strata.function
    def step(state):
        ...

Under Strata (``strata run``, ``strata exec``, or libstrata preloaded) these are the same regions
as the C, C++ and Fortran annotations (``strata/annotate.h``): the trace module records them as
levels that nest the MPI calls made inside them, and the analyzer shows them per level, operation
and call site. A region's call site is the Python line that entered it: the ``with`` line, or the
line that called the decorated function.

Without Strata they cost next to nothing: ``function`` gives back the function itself, and
``region`` a shared context manager that does nothing. ``loaded`` says which case this is.
"""
import ctypes

__all__ = ["region", "function", "monitor_dump", "loaded"]


def _entry_points():
    """The core's entry points for Python, if libstrata is in this process."""
    try:
        # The process's own symbols; PyDLL keeps the GIL across the call (the core reads the
        # caller's frame for the call site, and the call is short).
        process = ctypes.PyDLL(None)
        calls = process.strata_python_region_calls
        begin = process.strata_python_region_begin
        end = process.strata_python_region_end
        dump = process.strata_annotate_monitor_dump
    except (OSError, AttributeError):
        return None
    calls.argtypes = [ctypes.py_object, ctypes.c_int]
    calls.restype = ctypes.py_object
    for entry, args in ((begin, [ctypes.c_char_p]), (end, [ctypes.c_char_p]), (dump, [])):
        entry.argtypes = args
        entry.restype = None
    return calls, begin, end, dump


_core = _entry_points()
loaded = _core is not None


class _Nothing:
    """What ``region`` gives without Strata: enters and leaves nothing."""

    __slots__ = ()

    def __enter__(self):
        return None  # as under Strata, whose built-in enter gives nothing to bind

    def __exit__(self, *exc):
        return False


_NOTHING = _Nothing()

if loaded:
    _calls, _begin, _end, _dump = _core

    def _region_calls(encoded, in_function):
        """(enter, leave) of the region named ``encoded``: two built-ins of the core bound to the
        name, as cheap as any built-in call; None where the core cannot make them (the ctypes
        entry points then, one Python frame left out for the call site)."""
        try:
            return _calls(encoded, 1 if in_function else 0)
        except ValueError:
            return None

    _regions = {}

    def region(name):
        """A context manager for a region called ``name`` (a level of the program)."""
        entry = _regions.get(name)
        if entry is None:
            encoded = str(name).encode("utf-8", "replace")
            calls = _region_calls(encoded, False)
            if calls is not None:
                # The built-ins are the class's __enter__ and __exit__ themselves: built-ins do
                # not bind to an instance, so `with` calls them as they are, from the block.
                methods = {"__enter__": calls[0], "__exit__": calls[1]}
            else:
                methods = {"__enter__": lambda self: _begin(encoded),
                           "__exit__": lambda self, *exc: _end(encoded)}
            entry = _regions[name] = type("region", (), {"__slots__": (), **methods})()
        return entry

    def function(fn):
        """Decorator: every call of ``fn`` is a region named after it (its qualified name).

        Generator and coroutine functions are given back as they are: their region would end
        when the call returns the generator, before any of their code runs."""
        import functools
        import inspect
        if inspect.isgeneratorfunction(fn) or inspect.iscoroutinefunction(fn) or \
                inspect.isasyncgenfunction(fn):
            return fn
        name = getattr(fn, "__qualname__", getattr(fn, "__name__", "function"))
        encoded = str(name).encode("utf-8", "replace")
        calls = _region_calls(encoded, True)
        # partial objects are no Python frames either: the ctypes call's site is the same.
        enter, leave = calls or (functools.partial(_begin, encoded),
                                 functools.partial(_end, encoded))

        @functools.wraps(fn)
        def in_region(*args, **kwargs):
            enter()
            try:
                return fn(*args, **kwargs)
            finally:
                leave()
        return in_region

    def monitor_dump():
        """Asks the monitor module (if loaded) to offload this rank's profile now."""
        _dump()
else:
    def region(name):  # noqa: ARG001 (the name matters only under Strata)
        """A context manager for a region called ``name``; without Strata it does nothing."""
        return _NOTHING

    def function(fn):
        """Decorator for a region named after ``fn``; without Strata, ``fn`` itself."""
        return fn

    def monitor_dump():
        """Asks the monitor module to offload this rank's profile now; without Strata, nothing."""
