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
        begin = process.strata_python_region_begin
        end = process.strata_python_region_end
        dump = process.strata_annotate_monitor_dump
    except (OSError, AttributeError):
        return None
    for entry, args in ((begin, [ctypes.c_char_p]), (end, [ctypes.c_char_p]), (dump, [])):
        entry.argtypes = args
        entry.restype = None
    return begin, end, dump


_core = _entry_points()
loaded = _core is not None


class _Nothing:
    """What ``region`` gives without Strata: enters and leaves nothing."""

    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NOTHING = _Nothing()

if loaded:
    _begin, _end, _dump = _core

    class _Region:
        """One named region; shared by every ``with`` of that name (it keeps no state)."""

        __slots__ = ("_name",)

        def __init__(self, name):
            self._name = name

        def __enter__(self):
            _begin(self._name)
            return self

        def __exit__(self, *exc):
            _end(self._name)
            return False

    _regions = {}

    def region(name):
        """A context manager for a region called ``name`` (a level of the program)."""
        entry = _regions.get(name)
        if entry is None:
            entry = _regions[name] = _Region(str(name).encode("utf-8", "replace"))
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

        @functools.wraps(fn)
        def in_region(*args, **kwargs):
            _begin(encoded)
            try:
                return fn(*args, **kwargs)
            finally:
                _end(encoded)
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
