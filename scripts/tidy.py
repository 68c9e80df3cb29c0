#!/usr/bin/env python3
"""clang-tidy over the given sources, skipping those already found clean with the same input.

A file's input is its preprocessed text (every header it includes, expanded), its compile
flags, clang-tidy's version and the project's .clang-tidy, with the checkout's own path taken
out so that another clone of the same tree finds the same key. Only clean results are kept
(in $STRATA_TIDY_CACHE, default ~/.cache/strata/clang-tidy); a file with findings is checked
again every time. Usage: tidy.py BUILD_DIR LOG FILE...; exit status 1 when any file has findings.
"""
import concurrent.futures
import hashlib
import json
import os
import shlex
import subprocess
import sys

TIDY = "clang-tidy-14"


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


def cache_key(entry, root, tidy_version, config):
    words = preprocess_command(entry)
    expanded = subprocess.run(words, cwd=entry["directory"], capture_output=True, check=True).stdout
    digest = hashlib.sha256()
    for part in (tidy_version, config, " ".join(words[1:]).encode(), expanded):
        digest.update(part.replace(root, b"@ROOT@"))
        digest.update(b"\0")
    return digest.hexdigest()


def check(path, entry, root, tidy_version, config, cache, build):
    """(path, findings, cached): findings is empty when clean."""
    try:
        key = cache_key(entry, root, tidy_version, config) if entry else None
    except subprocess.CalledProcessError:
        key = None  # clang-tidy itself says what does not compile
    if key and os.path.exists(os.path.join(cache, key)):
        return path, "", True
    run = subprocess.run([TIDY, "-p", build, "--quiet", "--extra-arg=-Wno-unknown-warning-option", path],
                         capture_output=True, text=True)
    findings = "" if run.returncode == 0 else run.stdout + run.stderr
    if not findings and key:
        open(os.path.join(cache, key), "w").close()
    return path, findings, False


def main():
    build, log, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
    root = os.getcwd().encode()
    cache = os.environ.get("STRATA_TIDY_CACHE", os.path.expanduser("~/.cache/strata/clang-tidy"))
    os.makedirs(cache, exist_ok=True)
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = {os.path.realpath(e["file"]): e for e in json.load(f)}
    tidy_version = subprocess.run([TIDY, "--version"], capture_output=True, check=True).stdout
    with open(".clang-tidy", "rb") as f:
        config = f.read()
    jobs = os.cpu_count() or 1
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(
            lambda p: check(p, entries.get(os.path.realpath(p)), root, tidy_version, config, cache, build),
            paths))
    failed = [(p, text) for p, text, _ in results if text]
    cached = sum(1 for _, _, hit in results if hit)
    print(f"clang-tidy: {len(paths) - cached} files checked, {cached} known clean from the cache")
    with open(log, "w") as f:
        f.writelines(text for _, text in failed)
    for path, text in failed:
        sys.stdout.write("".join(line + "\n" for line in text.splitlines() if "warnings generated" not in line))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
