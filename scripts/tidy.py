#!/usr/bin/env python3
"""clang-tidy over the given sources, skipping those already found clean with the same input.

A file's input is its preprocessed text (every header it includes, expanded), its compile
flags, clang-tidy's version and the project's .clang-tidy, with the checkout's own path taken
out so that another clone of the same tree finds the same key. Only clean results are kept
(in $STRATA_TIDY_CACHE, default ~/.cache/strata/clang-tidy); a file with findings is checked
again every time. Usage: tidy.py BUILD_DIR LOG FILE...; exit status 1 when any file has findings.

In a unity build (CMakeLists.txt, STRATA_UNITY) the compilation database lists the batches
(CMakeFiles/T.dir/Unity/unity_N_cxx.cxx, each including some of the target's sources): a batch
whose sources are all among FILE... is checked as one translation unit, its headers parsed and
matched once for all of them (.clang-tidy's HeaderFilterRegex takes in the included sources,
which are under src/), and its key is the batch's preprocessed text. Every other file is checked
alone, with its batch's compile command (BUILD_DIR/tidy/compile_commands.json).

The files that build commands include CLI11, which takes clang-tidy about 12 s a translation unit
to match: each in a target of its own, they are checked together as one more unit
(BUILD_DIR/tidy/joint_cli.cpp, including them and the other sources of their batches, under
their commands' -I and -D flags together), CLI11 matched once. So are the other files that would
be checked alone, one unit per folder (BUILD_DIR/tidy/joint_<folder>.cpp: the core's files,
built file by file, and the one-file targets), their headers matched once. A joint unit with any
finding (or that does not compile: two definitions of one name) is checked again file by file,
and those results stand: a joint unit can find what its files apart do not (the core's weak
declarations tested beside their definitions).
"""
import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys

TIDY = "clang-tidy-14"
UNITY = re.compile(r"/Unity/unity_\d+_(c|cxx)\.(c|cxx)$")
# A batch includes .cpp files by design.
BATCH_ARGS = ["--checks=-bugprone-suspicious-include"]


def preprocess_command(entry):
    """The file's compile command with -E -P (no line markers) in place of -c/-o."""
    words = shlex.split(entry["command"])
    if "ccache" in os.path.basename(words[0]):
        words = words[1:]
    out, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word == "-o":
            skip = True
        elif word != "-c":
            out.append(word)
    return out + ["-E", "-P"]


def cache_key(entry, root, tidy_version, config, extra):
    words = preprocess_command(entry)
    expanded = subprocess.run(words, cwd=entry["directory"], capture_output=True, check=True).stdout
    digest = hashlib.sha256()
    for part in (tidy_version, config, " ".join(words[1:] + extra).encode(), expanded):
        digest.update(part.replace(root, b"@ROOT@"))
        digest.update(b"\0")
    return digest.hexdigest()


def check(path, entry, root, tidy_version, config, cache, database, extra):
    """(path, findings, cached): findings is empty when clean."""
    try:
        key = cache_key(entry, root, tidy_version, config, extra) if entry else None
    except subprocess.CalledProcessError:
        key = None  # clang-tidy itself says what does not compile
    if key and os.path.exists(os.path.join(cache, key)):
        return path, "", True
    run = subprocess.run([TIDY, "-p", database, "--quiet", "--extra-arg=-Wno-unknown-warning-option"]
                         + extra + [path], capture_output=True, text=True)
    findings = "" if run.returncode == 0 else run.stdout + run.stderr
    if not findings and key:
        open(os.path.join(cache, key), "w").close()
    return path, findings, False


def batch_sources(entry):
    """The sources a unity batch includes, as real paths."""
    with open(os.path.join(entry["directory"], entry["file"])) as f:
        return [os.path.realpath(m) for m in re.findall(r'^#include "(.*)"', f.read(), re.M)]


def database(build):
    """{source: entry} for every file, a batch's sources under the batch's command, and
    {batch: its sources}; both written to BUILD/tidy/compile_commands.json for clang-tidy."""
    with open(os.path.join(build, "compile_commands.json")) as f:
        listed = json.load(f)
    entries, batches = {}, {}
    for e in listed:
        path = os.path.realpath(os.path.join(e["directory"], e["file"]))
        entries[path] = e
        if UNITY.search(path):
            batches[path] = batch_sources(e)
            for source in batches[path]:
                entries[source] = dict(e, file=source, command=e["command"].replace(e["file"], source))
    # A target built once per MPI has the same batches twice: one of them, as for a file.
    chosen = {}
    for batch, sources in batches.items():
        chosen[tuple(sources)] = batch
    directory = os.path.join(build, "tidy")
    os.makedirs(directory, exist_ok=True)
    return entries, {batch: list(sources) for sources, batch in chosen.items()}, directory


def write_database(entries, directory):
    with open(os.path.join(directory, "compile_commands.json"), "w") as f:
        json.dump(list(entries.values()), f, indent=0)


JOINT_HEADER = re.compile(r'^#include <CLI/CLI\.hpp>', re.M)


# A source that defines what include/strata/annotate.h declares weak (libstrata's annotation
# entry points): after another source included the header, clang finds each definition following
# a weak declaration, and the header's tests of them always true. Checked alone.
WEAK_DEFINITION = re.compile(r"\bstrata_annotate_\w+\([^;{)]*\)\s*\{")


def source_matches(path, pattern):
    with open(path) as f:
        return bool(pattern.search(f.read()))


def joint_entry(members, directory, unit_name):
    """One translation unit, BUILD_DIR/tidy/UNIT_NAME, including the members' sources, under the
    first member's command with the others' -I, -isystem and -D flags added; None when two -D
    give one macro two values. members: (entry, sources)."""
    words = shlex.split(members[0][0]["command"])
    flags, defined = [], {}
    for entry, _ in members:
        own = shlex.split(entry["command"])
        i = 0
        while i < len(own):
            flag = [own[i], own[i + 1]] if own[i] == "-isystem" else [own[i]]
            i += len(flag)
            if not flag[0].startswith(("-I", "-isystem", "-D")):
                continue
            if flag[0].startswith("-D"):
                name, _, value = flag[0][2:].partition("=")
                if defined.setdefault(name, value) != value:
                    return None
            if flag not in flags:
                flags.append(flag)
    # Absolute: its commands run in the build's directory (the preprocessing for the cache key too).
    path = os.path.abspath(os.path.join(directory, unit_name))
    with open(path, "w") as f:
        f.writelines(f'#include "{source}"\n' for _, sources in members for source in sources)
    first_file = members[0][0]["file"]
    command = [w for w in words if not w.startswith(("-I", "-D")) and w != first_file]
    command = [w for i, w in enumerate(command)
               if w != "-isystem" and (i == 0 or command[i - 1] != "-isystem")]
    at = command.index("-o") if "-o" in command else len(command)
    command[at:at] = [w for flag in flags for w in flag]
    command += ["-c", path] if "-c" not in command else [path]
    return path, dict(members[0][0], file=path, command=shlex.join(command))


def join_units(units, entries, directory):
    """The units whose sources include CLI11 made one (joint_entry), and the files checked alone
    one per folder; the others unchanged. Returns the units and {joint unit: its members}."""
    cli, alone, rest = [], {}, []
    for unit in units:
        path, entry = unit[0], unit[1]
        sources = batch_sources(entry) if UNITY.search(path) else [os.path.realpath(path)]
        if entry and any(source_matches(s, JOINT_HEADER) for s in sources):
            cli.append((unit, sources))
        elif entry and len(sources) == 1 and not source_matches(sources[0], WEAK_DEFINITION):
            alone.setdefault(os.path.dirname(sources[0]), []).append((unit, sources))
        else:
            rest.append(unit)
    groups = [("joint_cli.cpp", cli)]
    root = os.path.realpath(".")
    for folder, members in sorted(alone.items()):
        name = os.path.relpath(folder, root).replace(os.sep, "_")
        groups.append((f"joint_{name}.cpp", members))
    apart = {}
    for name, members in groups:
        made = joint_entry([(unit[1], sources) for unit, sources in members], directory, name) \
            if len(members) > 1 else None
        if made is None:
            rest += [unit for unit, _ in members]
            continue
        path, entry = made
        entries[path] = entry
        apart[path] = [unit for unit, _ in members]
        rest.append((path, entry, BATCH_ARGS, [p for unit, _ in members for p in unit[3]]))
    return rest, apart


def main():
    build, log, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
    root = os.getcwd().encode()
    cache = os.environ.get("STRATA_TIDY_CACHE", os.path.expanduser("~/.cache/strata/clang-tidy"))
    os.makedirs(cache, exist_ok=True)
    entries, batches, tidy_db = database(build)
    wanted = {os.path.realpath(p): p for p in paths}
    units = []  # (path to check, its entry, clang-tidy's further arguments, files it covers)
    for batch, sources in batches.items():
        if len(sources) > 1 and all(s in wanted for s in sources):
            units.append((batch, entries[batch], BATCH_ARGS, [wanted.pop(s) for s in sources]))
    units += [(p, entries.get(real), [], [p]) for real, p in wanted.items()]
    units, apart = join_units(units, entries, tidy_db)
    write_database(entries, tidy_db)
    tidy_version = subprocess.run([TIDY, "--version"], capture_output=True, check=True).stdout
    with open(".clang-tidy", "rb") as f:
        config = f.read()
    jobs = os.cpu_count() or 1

    def check_all(some):
        """(path, findings, cached, files covered) of each unit, as many at once as cores."""
        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            return list(pool.map(
                lambda u: check(u[0], u[1], root, tidy_version, config, cache, tidy_db, u[2]) + (len(u[3]),),
                some))

    # The largest first, so that no batch starts last and leaves a core idle.
    units.sort(key=lambda u: -len(u[3]))
    results = check_all(units)
    # A joint unit with findings: its files apart decide.
    again = [i for i, (u, r) in enumerate(zip(units, results)) if u[0] in apart and r[1]]
    members = [m for i in again for m in apart[units[i][0]]]
    for i in reversed(again):
        del units[i], results[i]
    units += members
    results += check_all(members)
    failed = [(p, text) for p, text, _, _ in results if text]
    cached = sum(n for _, _, hit, n in results if hit)
    batched = sum(1 for u in units if len(u[3]) > 1)
    print(f"clang-tidy: {len(paths) - cached} files checked ({batched} unity batches among the "
          f"{len(units)} translation units), {cached} known clean from the cache")
    with open(log, "w") as f:
        f.writelines(text for _, text in failed)
    for path, text in failed:
        sys.stdout.write("".join(line + "\n" for line in text.splitlines() if "warnings generated" not in line))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
