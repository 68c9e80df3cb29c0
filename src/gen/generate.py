#!/usr/bin/env python3
"""Generates Strata's MPI entry points from the castxml dump of one MPI implementation's mpi.h.

The list of functions and their exact prototypes come from the header; only the semantic role of
parameters comes from roles.txt. Outputs (into --out):
  strata_functions.hpp  function ids and names
  strata_entries.cpp    function names, the real-function table and its resolvers
  strata_entries_K.cpp  for K below --shards: the MPI_X / PMPI_X / ZMPI_X entry points and
                        decoders of one run of functions (compiled apart: one translation unit
                        of them all took minutes and gigabytes)
  strata_real_functions.hpp  the real-function table's type, for all of them
  strata/zmpi.h         ZMPI_X prototypes for wrapper modules ("call the next layer")
  empty_module.cpp      the `empty` wrapper module: every function forwards to the next layer
"""
import argparse
import io
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from asm_entries import timed_in_place, write_asm_entry, write_asm_entry_layout  # noqa: E402
from tables import matches, parse_roles, read_sections, stem  # noqa: E402

# Functions the core writes by hand: a variadic one, and the one that must see every level.
HAND_WRITTEN = {"MPI_Pcontrol"}
# Functions whose entry runs core hooks around the chain: (before, after) in src/core/lifecycle.
# The "after" hooks get the call's result. MPI-4 Sessions start and end the tools as MPI_Init
# and MPI_Finalize do (the application's first start and last end, over both models).
LIFECYCLE_HOOKS = {
    "MPI_Init": ("load_modules_once", "after_init"),
    "MPI_Init_thread": ("load_modules_once", "after_init"),
    "MPI_Finalize": ("before_finalize", "after_finalize"),
    "MPI_Session_init": ("load_modules_once", "after_session_init"),
    "MPI_Session_finalize": ("before_session_finalize", "after_session_finalize"),
}


class Header:
    def __init__(self, xml_path):
        root = ET.parse(xml_path).getroot()
        self.ids = {e.get("id"): e for e in root}
        self.functions = {}
        for e in root:
            name = e.get("name", "")
            if e.tag == "Function" and name.startswith("PMPI_"):
                self.functions[name[1:]] = e

    def split_id(self, tid):
        """(unqualified type id, "const "/"volatile " prefix) for a castxml type id."""
        quals = ""
        while True:
            e = self.ids.get(tid)
            if e is not None and e.tag == "CvQualifiedType":
                quals += ("c" if e.get("const") == "1" else "") + ("v" if e.get("volatile") == "1" else "")
                tid = e.get("type")
            elif e is None and tid and tid[-1] in "cv":
                quals += tid[-1]
                tid = tid[:-1]
            else:
                break
        return tid, ("const " if "c" in quals else "") + ("volatile " if "v" in quals else "")

    def render(self, tid, decl):
        """C declaration of `decl` with castxml type id `tid`."""
        base, quals = self.split_id(tid)
        e = self.ids[base]
        if e.tag in ("FundamentalType", "Typedef"):
            return f"{quals}{e.get('name')} {decl}".rstrip()
        if e.tag == "PointerType":
            inner = "*" + (" " + quals.strip() + " " if quals else "") + decl
            target = self.ids[self.split_id(e.get("type"))[0]]
            if target.tag in ("ArrayType", "FunctionType"):
                inner = "(" + inner + ")"
            return self.render(e.get("type"), inner)
        if e.tag == "ArrayType":
            size = e.get("max", "")
            size = str(int(size.rstrip("u")) + 1) if size not in ("", "0xffffffffffffffff") else ""
            return self.render(e.get("type"), f"{decl}[{size}]")
        raise SystemExit(f"generate.py: unsupported type {e.tag} in mpi.h")

    def type_name(self, tid):
        """Spelling of a by-value typedef or fundamental type, or None."""
        base, _ = self.split_id(tid)
        e = self.ids[base]
        return e.get("name") if e.tag in ("FundamentalType", "Typedef") else None

    def pointee_name(self, tid):
        base, _ = self.split_id(tid)
        e = self.ids[base]
        if e.tag != "PointerType":
            return None
        return self.type_name(e.get("type"))


class Function:
    def __init__(self, header, name, elem):
        self.name = name
        self.ret = header.render(elem.get("returns"), "")
        self.params = []  # (name, declaration, by-value type name, pointee type name)
        self.variadic = False
        for i, arg in enumerate(elem):
            if arg.tag == "Ellipsis":
                self.variadic = True
                continue
            pname = arg.get("name") or f"arg{i}"
            self.params.append(
                (pname, header.render(arg.get("type"), pname), header.type_name(arg.get("type")),
                 header.pointee_name(arg.get("type"))))

    def names(self):
        return [p[0] for p in self.params]

    def proto(self, symbol):
        args = ", ".join(p[1] for p in self.params) or "void"
        return f"{self.ret} {symbol}({args})"

    def param_type(self, pname):
        for p in self.params:
            if p[0] == pname:
                return p
        return None


def byte_expr(fn, spec, what):
    """C++ expression for bytes sent or received, from a roles.txt spec like count:type*size@root."""
    mods = spec.split("@")
    base, flags = mods[0], set(mods[1:])
    times_size = base.endswith("*size")
    base = base.removesuffix("*size")
    count, _, dtype = base.partition(":")
    for pname in (count, dtype):
        if fn.param_type(pname) is None:
            raise SystemExit(f"roles.txt: {fn.name} has no parameter '{pname}' ({what})")
    if "sum" in flags:
        expr = f"dec::summed_bytes({count}, {dtype}, ev.comm_size)"
    else:
        expr = f"dec::type_bytes({count}, {dtype})"
        if times_size:
            expr = f"{expr} * ev.comm_size"
    if "root" in flags:
        expr = f"(ev.is_root ? {expr} : 0)"
    if "nonroot" in flags:
        expr = f"(ev.is_root ? 0 : {expr})"
    return expr


def count_expr(spec):
    """The count argument of a roles.txt byte spec, summed over peers for the v-variants."""
    count = spec.split("@")[0].removesuffix("*size").partition(":")[0]
    if "@sum" in spec:
        return f"dec::summed_count({count}, ev.comm_size)"
    return f"static_cast<int64_t>({count})"


# Calls that make a request but have no roles.txt line are found by their MPI_Request* parameter
# (file I/O, one-sided R* operations, persistent collectives, ...): not a receive's. These take an
# MPI_Request* and make none.
TAKES_REQUEST_MAKES_NONE = {"MPI_Request_free", "MPI_Cancel"}
# Receives' requests of MPI-4 routines that not both MPIs declare, so that roles.txt cannot name
# them (a status of their completion says what arrived).
RECEIVE_REQUEST_MAKERS = {"MPI_Isendrecv": "request", "MPI_Isendrecv_replace": "request"}


def resolve_roles(fn, spec):
    """The spec with each parameter named as this header names it: a role may give alternatives
    (index|indx) where the MPIs' headers name a parameter differently."""
    out = {}
    for key, value in spec.items():
        parts = []
        for part in value.split(":"):
            names = part.split("|")
            found = next((n for n in names if fn.param_type(n.split("*")[0].split("@")[0])), names[0])
            parts.append(found)
        out[key] = ":".join(parts)
    if fn.name.removesuffix("_c") in RECEIVE_REQUEST_MAKERS and "recv_request" not in out:
        out["recv_request"] = RECEIVE_REQUEST_MAKERS[fn.name.removesuffix("_c")]
        out.pop("request", None)
    if not any(k in out for k in ("request", "recv_request", "wait", "requests")) and \
            fn.name.removesuffix("_c") not in TAKES_REQUEST_MAKES_NONE:
        made = [p[0] for p in fn.params if p[3] == "MPI_Request" and not p[1].endswith("]")]
        if len(made) == 1:
            out["made_request"] = made[0]
    return out


def decoder(fn, roles):
    """Body of the enter decoder: fills the strata_event from the arguments, once per call.

    Each line as (field group, C++ line): the core decodes only the groups the segment's modules
    read (module.h, strata_module_fields_v1)."""
    spec = resolve_roles(fn, roles.get(fn.name.removesuffix("_c"), {}))
    lines = []
    comm = spec.get("comm")
    if comm is None:
        comm = next((p[0] for p in fn.params if p[2] == "MPI_Comm"), None)
    if comm is not None:
        lines.append(("COMM", f"dec::set_comm_info(ev, scratch, {comm});"))
    if "root" in spec:
        lines.append(("PEER", f"dec::set_root(ev, scratch, {spec['root']});"))
    if "peer" in spec:
        lines.append(("PEER", f"dec::set_peer(ev, scratch, {spec['peer']});"))
    if "tag" in spec:
        lines.append(("TAG", f"ev.tag = {spec['tag']};"))
    if "send" in spec or "recv" in spec:
        lines.append(("BYTES", f"ev.count = {count_expr(spec.get('send') or spec['recv'])};"))
    if "send" in spec:
        lines.append(("BYTES", f"ev.bytes_sent = {byte_expr(fn, spec['send'], 'send')};"))
    if "recv" in spec:
        lines.append(("BYTES", f"ev.bytes_expected = {byte_expr(fn, spec['recv'], 'recv')};"))
    if "wait" in spec:
        lines.append(("REQUESTS", f"dec::set_request(ev, {spec['wait']});"))
    if "requests" in spec:
        count, _, array = spec["requests"].partition(":")
        lines.append(("REQUESTS", f"dec::set_requests(ev, {count}, {array});"))
    for line in received_enter_lines(spec):
        lines.append(("RECEIVED", f"if ({line}) ev.flags |= STRATA_EVENT_STATUS_FROM_CORE;"))
    for key in spec:
        if key in ("send", "recv"):
            continue
        for pname in spec[key].split(":"):
            if fn.param_type(pname) is None:
                raise SystemExit(f"roles.txt: {fn.name} has no parameter '{pname}' ({key})")
    return lines, spec


def received_enter_lines(spec):
    """Before the call, for the bytes received: each a C++ expression, true when it substituted a
    status of the core's for one the application ignores (completions.hpp). A completion notes
    which of its requests are receives' and substitutes only then; another call with a status
    (a receive, a probe) substitutes whenever it is ignored."""
    if "status" in spec and "wait" in spec:
        return [f"dec::note_completion(scratch, {spec['wait']}, {spec['status']})"]
    if "requests" in spec and ("status" in spec or "statuses" in spec):
        count, _, array = spec["requests"].partition(":")
        note = f"(dec::note_completions(scratch, {count}, {array}), "
        if "statuses" in spec:
            return [note + f"dec::substitute_statuses(scratch, {spec['statuses']}))"]
        return [note + f"dec::substitute_status_of_any(scratch, {spec['status']}))"]
    if "status" in spec:
        return [f"dec::substitute_ignored(scratch, {spec['status']})"]
    return []


def exit_decoder(spec):
    lines = []
    if "request" in spec or "recv_request" in spec:
        lines.append(("REQUESTS",
                      f"dec::set_request(ev, {spec.get('recv_request') or spec['request']});"))
    # Every call that makes a request says of what kind (completions.hpp), under the bytes
    # received, which are what the kinds are kept for.
    made = spec.get("recv_request") or spec.get("request") or spec.get("made_request")
    if made is not None:
        receive = "true" if "recv_request" in spec else "false"
        lines.append(("RECEIVED", f"dec::note_request_made(ev, {made}, {receive});"))
    done = (f"*{spec['flag']} != 0" if "flag" in spec else
            f"*{spec['done']} != 0" if "done" in spec else "true")
    if "requests" in spec and ("status" in spec or "statuses" in spec):
        count = spec["requests"].partition(":")[0]
        if "outcount" in spec:
            read = (f"dec::read_some_completions(ev, scratch, {count}, *{spec['outcount']}, "
                    f"{spec['indices']}, {spec['statuses']})")
        elif "index" in spec:
            read = (f"dec::read_indexed_completion(ev, scratch, {count}, *{spec['index']}, "
                    f"{spec['status']})")
        else:
            read = f"dec::read_all_completions(ev, scratch, {count}, {spec['statuses']})"
        lines.append(("RECEIVED", f"if ({done}) {read};"))
    elif "status" in spec and "wait" in spec:
        lines.append(("RECEIVED",
                      f"if ({done}) dec::read_completion(ev, scratch, fields, {spec['status']});"))
    elif "status" in spec:
        lines.append(("RECEIVED",
                      f"if ({done}) dec::read_status(ev, scratch, fields, {spec['status']});"))
    return lines


# Field groups that the usual stacks read of few calls (decode::rare_fields): a decoder with
# more than one of them tests them together first.
RARE_GROUPS = ("PEER", "TAG", "REQUESTS", "STATUS")


def write_decoder_lines(c, lines):
    """The lines of one decoder, adjacent lines of one field group under one test; with two rare
    groups or more, those under one test of decode::rare_fields, after the communicator (which a
    rooted peer reads) and before the bytes (which may read the root)."""
    rare = [line for line in lines if line[0] in RARE_GROUPS]
    if len({group for group, _ in rare}) < 2:
        write_group_tests(c, lines, "    ")
        return
    write_group_tests(c, [line for line in lines if line[0] == "COMM"], "    ")
    c.write("    if ((fields & dec::rare_fields) != 0) {\n")
    write_group_tests(c, rare, "      ")
    c.write("    }\n")
    write_group_tests(c, [line for line in lines
                          if line[0] != "COMM" and line[0] not in RARE_GROUPS], "    ")


def write_group_tests(c, lines, indent):
    i = 0
    while i < len(lines):
        group = lines[i][0]
        j = i
        while j < len(lines) and lines[j][0] == group:
            j += 1
        c.write(f"{indent}if ((fields & STRATA_FIELD_{group}) != 0) {{\n")
        for _, line in lines[i:j]:
            c.write(f"{indent}  {line}\n")
        c.write(f"{indent}}}\n")
        i = j


class EntryShards(io.StringIO):
    """strata_entries.cpp and its shards: what is written before the first start_function() goes
    to strata_entries.cpp; the functions' entry points, in order, are cut into `shards` runs of
    about equal size, each written to strata_entries_K.cpp after the same preamble."""

    def __init__(self, out, flavor, shards):
        super().__init__()
        self.out, self.flavor, self.shards = out, flavor, shards
        self.starts = []  # (offset, function name)

    def start_function(self, name):
        self.starts.append((self.tell(), name))

    def __exit__(self, *exc):
        if exc[0] is None:
            self.write_files()
        return super().__exit__(*exc)

    def preamble(self, first, last):
        c = io.StringIO()
        c.write(f"// Generated by src/gen/generate.py from {self.flavor}'s mpi.h. Do not edit.\n"
                f"// The entry points of {first} to {last} (strata_entries.cpp has the rest).\n")
        c.write("#include \"core/dispatch.hpp\"\n#include \"core/completions.hpp\"\n"
                "#include \"core/decode.hpp\"\n#include \"strata_real_functions.hpp\"\n\n")
        c.write("using namespace strata;\nusing namespace strata::gen;\n"
                "namespace dec = strata::decode;\n\n")
        write_asm_entry_layout(c)
        return c.getvalue()

    def write_files(self):
        text = self.getvalue()
        bounds = [start for start, _ in self.starts] + [len(text)]
        write_file(os.path.join(self.out, "strata_entries.cpp"), text[:bounds[0]])
        # Runs of whole functions, cut where the text passes each K/shards of the whole.
        cuts = [0]
        for k in range(1, self.shards):
            target = bounds[0] + (len(text) - bounds[0]) * k // self.shards
            cuts.append(max(cuts[-1], next(i for i, b in enumerate(bounds) if b >= target)))
        cuts.append(len(self.starts))
        for k in range(self.shards):
            first, last = cuts[k], cuts[k + 1]
            names = ((self.starts[first][1], self.starts[last - 1][1]) if last > first
                     else ("no function", "none"))
            write_file(os.path.join(self.out, f"strata_entries_{k}.cpp"),
                       self.preamble(*names) + text[bounds[first]:bounds[last]])


def write_file(path, text):
    with open(path, "w") as f:
        f.write(text)


def generate(header, roles, tables_of, flavor, out, fortran_exported=frozenset(), shards=1):
    functions = [Function(header, n, e) for n, e in sorted(header.functions.items())]
    functions = [f for f in functions if f.name not in HAND_WRITTEN and not f.variadic]
    known = {f.name for f in functions} | HAND_WRITTEN
    for name in roles:
        if name not in known:
            raise SystemExit(f"roles.txt names {name}, which {flavor}'s mpi.h does not declare")
    all_names = [f.name for f in functions] + sorted(HAND_WRITTEN)
    os.makedirs(os.path.join(out, "strata"), exist_ok=True)

    with open(os.path.join(out, "strata_functions.hpp"), "w") as h:
        h.write(f"// Generated by src/gen/generate.py from {flavor}'s mpi.h. Do not edit.\n")
        h.write("#pragma once\n\nnamespace strata::gen {\n")
        h.write(f"inline constexpr const char* mpi_flavor = \"{flavor}\";\n")
        h.write(f"inline constexpr int function_count = {len(all_names)};\n")
        h.write("enum function_id : int {\n")
        for i, n in enumerate(all_names):
            h.write(f"  fid_{n} = {i},\n")
        h.write("};\nextern const char* const function_names[function_count];\n")
        h.write("} // namespace strata::gen\n")

    with open(os.path.join(out, "strata", "zmpi.h"), "w") as h:
        h.write(f"/* Generated from {flavor}'s mpi.h. ZMPI_X calls the next layer below the\n"
                " * calling module; a wrapper module (or a patched PMPI tool) uses it as PMPI_X. */\n")
        h.write("#pragma once\n#include <mpi.h>\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n")
        for f in functions:
            h.write(f.proto("ZMPI_" + f.name[4:]) + ";\n")
        h.write("int ZMPI_Pcontrol(const int level, ...);\n")
        h.write("#ifdef __cplusplus\n}\n#endif\n")

    with open(os.path.join(out, "empty_module.cpp"), "w") as c:
        c.write("// Generated: the `empty` wrapper module. Each function calls the next layer.\n")
        c.write("#include <strata/module.h>\n#include <strata/zmpi.h>\n\n")
        c.write("extern \"C\" {\n")
        for f in functions:
            args = ", ".join(f.names())
            c.write(f"STRATA_MODULE_EXPORT {f.proto(f.name)} {{ return ZMPI_{f.name[4:]}({args}); }}\n")
        c.write("}\n")

    write_fortran_entries(out, flavor, functions, {n: i for i, n in enumerate(all_names)},
                          fortran_exported)

    with open(os.path.join(out, "strata_real_functions.hpp"), "w") as h:
        h.write(f"// Generated by src/gen/generate.py from {flavor}'s mpi.h. Do not edit.\n")
        h.write("#pragma once\n#include \"core/dispatch.hpp\"\n\nnamespace strata::gen {\n")
        h.write("// MPI's own functions (strata_entries.cpp).\nstruct real_functions {\n")
        for f in functions:
            h.write(f"  {f.proto('(*' + f.name + ')')};\n")
        h.write("};\nextern STRATA_HIDDEN real_functions real;\n} // namespace strata::gen\n")

    with EntryShards(out, flavor, shards) as c:
        c.write(f"// Generated by src/gen/generate.py from {flavor}'s mpi.h. Do not edit.\n")
        c.write("#include \"core/dispatch.hpp\"\n#include \"core/completions.hpp\"\n"
                "#include \"core/decode.hpp\"\n#include \"strata_real_functions.hpp\"\n\n")
        c.write("namespace strata::gen {\n")
        c.write("const char* const function_names[function_count] = {\n")
        for n in all_names:
            c.write(f"    \"{n}\",\n")
        c.write("};\n\n")
        # Every pointer starts at a resolver of its own, set by the dynamic linker's relocations
        # before any constructor runs: a library's static constructor may call MPI through an
        # entry point before libstrata's constructor has run (Open MPI's C++ bindings do), and
        # the entry point stays one load and one branch. The resolver looks up its own function
        # only, at its first call: resolving all of them at load took 421 dlsym calls (Open MPI)
        # in every process, most for functions the program never calls.
        c.write("namespace {\n")
        for f in functions:
            c.write(f"{f.proto('resolve_then_' + f.name)};\n")
        c.write("} // namespace\n")
        c.write("STRATA_HIDDEN real_functions real = {\n")
        for f in functions:
            c.write(f"    resolve_then_{f.name},\n")
        c.write("};\n")
        c.write("namespace {\n")
        for f in functions:
            args = ", ".join(f.names())
            c.write(f"{f.proto('resolve_then_' + f.name)} {{\n"
                    f"  core::resolve_real_once();\n"
                    f"  if (real.{f.name} == resolve_then_{f.name}) {{\n"
                    f"    void* fn = core::find_real(\"P{f.name}\");\n"
                    f"    if (fn == nullptr)\n"
                    f"      core::missing_real(\"P{f.name}\");\n"
                    f"    __atomic_store_n(&real.{f.name}, "
                    f"reinterpret_cast<decltype(real.{f.name})>(fn), __ATOMIC_RELAXED);\n"
                    f"  }}\n"
                    f"  return real.{f.name}({args});\n}}\n")
        c.write("} // namespace\n\n")
        c.write("bool takes_communicator(int fid) {\n  switch (fid) {\n")
        for f in functions:
            if any(p[2] == "MPI_Comm" for p in f.params):
                c.write(f"  case fid_{f.name}:\n")
        c.write("    return true;\n  default:\n    return false;\n  }\n}\n")
        # Polls (a completion flag in roles.txt): the core may count the empty ones.
        c.write("bool is_poll_function(int fid) {\n  switch (fid) {\n")
        for f in functions:
            if "flag" in roles.get(f.name.removesuffix("_c"), {}):
                c.write(f"  case fid_{f.name}:\n")
        c.write("    return true;\n  default:\n    return false;\n  }\n}\n")
        # What the byte fields of a function read of the other groups (byte_expr): the
        # communicator's size for a count per peer, whether this rank is the root for a rooted
        # count; nothing for most (a point-to-point call's bytes are its count and datatype).
        c.write("uint32_t bytes_prerequisites(int fid) {\n  switch (fid) {\n")
        for f in functions:
            spec = roles.get(f.name.removesuffix("_c"), {})
            byte_specs = [spec[k] for k in ("send", "recv") if k in spec]
            needs = set()
            for b in byte_specs:
                if "*size" in b or "@sum" in b:
                    needs.add("STRATA_FIELD_COMM")
                if "@root" in b or "@nonroot" in b:
                    needs |= {"STRATA_FIELD_COMM", "STRATA_FIELD_PEER"}
            if needs:
                c.write(f"  case fid_{f.name}:\n    return {' | '.join(sorted(needs))};\n")
        c.write("  default:\n    return 0;\n  }\n}\n")
        # Who notes a request's kind and who reads it (core/completions.hpp).
        decoded = [(f, decoder(f, roles)[1]) for f in functions]
        for question, keys in (("makes_request", ("request", "recv_request", "made_request")),
                               ("completes_requests", ("status", "statuses"))):
            c.write(f"bool {question}(int fid) {{\n  switch (fid) {{\n")
            for f, spec in decoded:
                if any(k in spec for k in keys) and (question == "makes_request" or
                                                     "wait" in spec or "requests" in spec):
                    c.write(f"  case fid_{f.name}:\n")
            c.write("    return true;\n  default:\n    return false;\n  }\n}\n")
        c.write("} // namespace strata::gen\n")
        for index, f in enumerate(functions):
            c.start_function(f.name)
            n = f.name
            args = ", ".join(f.names())
            params = ", ".join(p[1] for p in f.params)
            lines, spec = decoder(f, roles)
            exits = exit_decoder(spec)
            # The wrapped path lives in its own function taking the arguments by value, so the
            # unwrapped path stays a load, a test and a tail call (no spilled arguments). Where
            # the entry point ends in it (tail_call), it is entered by a jump with the entry's
            # own arguments: nothing moves, and its return address is the application's.
            # Without optimisation there are no tail calls: the entry passes chain and address.
            tail_call = n not in LIFECYCLE_HOOKS and n != "MPI_Group_from_session_pset"
            # An entry point in assembly (write_asm_entry), where wrapped_X and counted_X go by
            # the names it jumps to: every function but the polls (whose entry point counts and
            # jumps into MPI itself, core::lean_poll), the handle conversions and the life cycle.
            asm_entry = (tail_call and "flag" not in spec
                         and not matches(tables_of["handle_conversion"], stem(n)))
            # strata_timed_X and strata_summed_X: jumped to by enter_sole_exit where the
            # arguments would not all fit in registers, else only by the assembly entry point.
            timed_entries = timed_in_place(f) or asm_entry
            asm_only = "" if timed_in_place(f) else "#if defined(__OPTIMIZE__) && defined(__x86_64__)\n"
            if timed_entries:
                c.write(asm_only)
                c.write(f"extern \"C\" STRATA_HIDDEN {f.proto('strata_timed_' + n)};\n")
                c.write(f"extern \"C\" STRATA_HIDDEN {f.proto('strata_summed_' + n)};\n")
                c.write("#endif\n" if asm_only else "")
            c.write(f"namespace {{\nstruct decoder_{n} {{\n")
            if timed_in_place(f):
                c.write(f"  static constexpr auto timed_in_place = strata_timed_{n};\n")
                c.write(f"  static constexpr auto summed_in_place = strata_summed_{n};\n")
            # The real function, for the event path that reads it again (invoke_sole_exit_in_place).
            c.write(f"  static auto real_function() {{ return real.{n}; }}\n")
            # Arguments by reference: the status substitution rewrites an argument before the call.
            ref_list = ", ".join("[[maybe_unused]] " + ref_decl(p) for p in f.params)
            for side, body in (("enter", lines), ("exit", exits)):
                c.write(f"  static void {side}([[maybe_unused]] strata_event& ev, "
                        f"[[maybe_unused]] dec::scratch& scratch, [[maybe_unused]] uint32_t fields"
                        f"{', ' if ref_list else ''}{ref_list}) {{\n")
                write_decoder_lines(c, body)
                c.write("  }\n")
            # The application's communicators as a module replaced them (MPI_COMM_WORLD by a
            # sub-communicator when extra tool ranks run beside the application).
            comms = [p[0] for p in f.params if p[2] == "MPI_Comm"]
            c.write(f"  static constexpr bool has_comm = {'true' if comms else 'false'};\n")
            # The enter decoder sets the communicator's fields whenever they are read, so the
            # core need not set them to "none" first (start_event).
            sets_comm = any(group == "COMM" for group, _ in lines)
            c.write(f"  static constexpr bool sets_comm = {'true' if sets_comm else 'false'};\n")
            # The same for the byte fields, where the decoder sets all three whenever they are read.
            bytes_set = [line for group, line in lines if group == "BYTES"]
            sets_bytes = all(any(line.startswith(f"ev.{name} = ") for line in bytes_set)
                             for name in ("count", "bytes_sent", "bytes_expected"))
            c.write(f"  static constexpr bool sets_bytes = {'true' if sets_bytes else 'false'};\n")
            # The routine a Fortran binding's entry point notes (fortran_entries.cpp): a call of
            # the large-count twin takes the note of its base routine.
            base = n[:-2] if n.endswith("_c") and n[:-2] in known else n
            c.write(f"  static constexpr int fortran_fid = fid_{base};\n")
            # Calls with a completion flag: the core may time only a sample of them (module.h).
            # An untimed poll substitutes the status before the call and decodes the rest only
            # when the poll completed something.
            c.write(f"  static constexpr bool is_poll = {'true' if 'flag' in spec else 'false'};\n")
            # Calls that name a peer: the only ones whose sums per peer the core may keep.
            c.write(f"  static constexpr bool has_peer = {'true' if 'peer' in spec else 'false'};\n")
            if "flag" in spec:
                # Before an untimed poll: what the enter decoder does for the bytes received
                # (which the core then leaves out of the enter decoder it runs after the call).
                c.write(f"  static bool prepare_untimed([[maybe_unused]] dec::scratch& scratch, "
                        f"{ref_list}) {{\n")
                prepared = received_enter_lines(spec)
                c.write(f"    return {' || '.join(prepared) if prepared else 'false'};\n  }}\n")
                c.write(f"  static bool completed({ref_list}) {{ return *{spec['flag']} != 0; }}\n")
                # Whether the status passed to MPI was the stand-in (substituted, see above).
                c.write(f"  static bool status_is([[maybe_unused]] const dec::scratch& scratch, "
                        f"{ref_list}) {{\n")
                if "status" in spec:
                    c.write(f"    return {spec['status']} == &scratch.status;\n  }}\n")
                else:
                    c.write("    return false;\n  }\n")
            c.write(f"  static void remap_comms([[maybe_unused]] MPI_Comm world"
                    f"{', ' if ref_list else ''}{ref_list}) {{\n")
            for comm in comms:
                c.write(f"    if ({comm} == MPI_COMM_WORLD)\n      {comm} = world;\n")
            c.write("  }\n};\n} // namespace\n")
            if timed_entries:
                c.write(asm_only)
                c.write(f"extern \"C\" __attribute__((noinline)) {f.proto('strata_timed_' + n)} {{\n"
                        f"  return core::sole_exit_in_place<fid_{n}, decoder_{n}>({args});\n}}\n")
                c.write(f"extern \"C\" __attribute__((noinline)) {f.proto('strata_summed_' + n)} {{\n"
                        f"  return core::count_timed_in_place<fid_{n}, decoder_{n}>({args});\n}}\n")
                c.write("#endif\n" if asm_only else "")
            if asm_entry:
                c.write("#if defined(__OPTIMIZE__)\n")
                for kind in ("wrapped", "counted"):
                    c.write(f"__attribute__((used)) {f.proto(kind + '_' + n)} "
                            f"asm(\"strata_{kind}_{n}\");\n")
                c.write("#endif\n")
            with_site = (f"__attribute__((noinline)) {f.ret} wrapped_{n}(const core::chain* chain, "
                         f"const void* site{', ' if params else ''}{params}) {{\n"
                         f"  return core::dispatch<fid_{n}, decoder_{n}>(chain, site, real.{n}"
                         f"{', ' if args else ''}{args});\n}}\n")
            wrapped = f"wrapped_{n}(chain, __builtin_return_address(0){', ' if args else ''}{args})"
            if tail_call:
                c.write("#if defined(__OPTIMIZE__)\n")
                c.write(f"__attribute__((noinline)) {f.proto('wrapped_' + n)} {{\n"
                        f"  return core::dispatch<fid_{n}, decoder_{n}>(core::chains[fid_{n}], "
                        f"__builtin_return_address(0), real.{n}{', ' if args else ''}{args});\n}}\n")
                c.write("#else\n" + with_site + "#endif\n")
                jumped = f"wrapped_{n}({args})"
            else:
                c.write(with_site)
            if tail_call:
                # A chain that only counts: the entry point jumps here with its own arguments
                # (a tail call: no frame of its own on the entry's wrapped path), so the return
                # address is the application's. Without optimisation there is no tail call and
                # the entry point takes wrapped_X, which counts as well (dispatch.hpp).
                c.write("#if defined(__OPTIMIZE__)\n")
                c.write(f"__attribute__((noinline)) {f.proto('counted_' + n)} {{\n")
                c.write(f"  return core::counted<fid_{n}, decoder_{n}>(real.{n}, wrapped_{n}"
                        f"{', ' if args else ''}{args});\n}}\n#endif\n")
                if "flag" in spec:
                    # The lean path's way out for the poll due for timing and for calls that
                    # are not the application's: a tail call with the entry's own arguments,
                    # so that the entry point needs no frame on its counted path (GCC had put
                    # a stack adjustment around the poll's jump into MPI; docs/PERFORMANCE.md,
                    # "Lean polls"). It reads the chain again, having no argument for it.
                    c.write("#if defined(__OPTIMIZE__)\n")
                    c.write(f"__attribute__((noinline, cold)) {f.proto('lean_fallback_' + n)} {{\n")
                    c.write(f"  if (core::chains[fid_{n}] == nullptr)\n    return real.{n}({args});\n")
                    c.write(f"  return {jumped};\n}}\n#endif\n")
            if asm_entry:
                c.write("#if defined(__OPTIMIZE__) && defined(__x86_64__)\n")
                write_asm_entry(c, f, index)
                c.write("#else\n")
            c.write(f"extern \"C\" STRATA_EXPORT {f.proto(n)} {{\n")
            c.write(f"  const core::chain* chain = core::chains[fid_{n}];\n")
            if n in LIFECYCLE_HOOKS:
                # Life-cycle hooks run whether or not a module wraps the call. The "after" hook
                # runs when the application's own call returns, not when a wrapper's call to
                # the next layer does: a PMPI tool (mpiP) sets itself up after its PMPI_Init
                # returns, and must be ready before other modules' mpi_ready make MPI calls
                # through it (and must not be unloaded inside its own MPI_Finalize).
                before, after = LIFECYCLE_HOOKS[n]
                # A session's hooks get its handle (the last parameter): the core keeps the
                # application's sessions open.
                handle = f", {f.names()[-1]}" if "Session" in n else ""
                c.write("  const bool from_application = core::tls.layer < 0;\n")
                if before == "load_modules_once":
                    c.write(f"  core::{before}();\n")
                else:
                    c.write(f"  if (from_application)\n    core::{before}({handle[2:]});\n")
                c.write(f"  chain = core::chains[fid_{n}];\n")
                c.write(f"  auto result = chain == nullptr ? real.{n}({args}) : {wrapped};\n")
                c.write(f"  if (from_application)\n    core::{after}(result{handle});\n"
                        "  return result;\n}\n")
            elif n == "MPI_Group_from_session_pset":
                # With tool ranks taken out of the application's world, its "mpi://WORLD" is the
                # application's processes only (the Sessions model's MPI_COMM_WORLD).
                c.write(f"  auto result = chain == nullptr ? real.{n}({args}) : {wrapped};\n")
                c.write("  if (__builtin_expect(core::world_replaced(), 0) && core::tls.layer < 0)\n"
                        f"    core::narrow_world_pset({', '.join(f.names()[1:])});\n"
                        "  return result;\n}\n")
            else:
                c.write("  if (__builtin_expect(chain == nullptr, 1))\n")
                c.write(f"    return real.{n}({args});\n")
                if matches(tables_of["handle_conversion"], stem(n)):
                    # The Fortran bindings' own handle conversions are the library's business,
                    # not the program's calls: straight to MPI, seen by no layer.
                    c.write("  if (core::called_from_mpi_library(__builtin_return_address(0)))\n")
                    c.write(f"    return real.{n}({args});\n")
                if "flag" in spec:
                    # A poll counted without a look at what it completed: counted here and
                    # handed to MPI by a jump (dispatch.hpp, lean_poll).
                    c.write("  if (uint64_t* counter = chain->untimed_poll_counter; counter != nullptr) {\n")
                    c.write("    if (__builtin_expect(core::lean_poll(counter), 1))\n")
                    c.write(f"      return real.{n}({args});\n")
                    c.write(f"#if defined(__OPTIMIZE__)\n    return lean_fallback_{n}({args});\n"
                            f"#else\n    return {wrapped};\n#endif\n  }}\n")
                # A chain that only counts: counted_X, above.
                c.write("#if defined(__OPTIMIZE__)\n")
                c.write("  if (chain->direct_counter != nullptr)\n")
                c.write(f"    return counted_{n}({args});\n")
                c.write(f"  return {jumped};\n#else\n  return {wrapped};\n#endif\n}}\n")
            for prefix in ("P", "Z"):
                c.write(f"extern \"C\" STRATA_EXPORT {f.proto(prefix + n if prefix == 'P' else 'ZMPI_' + n[4:])}"
                        f" __attribute__((alias(\"{n}\")));\n")
            if asm_entry:
                c.write("#endif\n")
            c.write("\n")


def fortran_symbols(libraries):
    """The functions the MPI's Fortran libraries export (nm -D), for their entry points."""
    names = set()
    for lib in libraries:
        if not os.path.basename(lib).startswith("libmpi"):
            continue  # the wrapper's other libraries (libm, libgfortran, ...)
        out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"nm -D {lib}: {out.stderr.strip()}")
        for line in out.stdout.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TtWw":
                names.add(parts[2])
    return names


# The Fortran bindings' names of a routine, for gfortran: `use mpi` and mpif.h (both MPIs), and
# `use mpi_f08` (Open MPI's _f08_, MPICH's _f08_ and, for routines with choice buffers, _f08ts_).
FORTRAN_SUFFIXES = ("_", "_f08_", "_f08ts_")

# Bindings that return at once for a count of 0, without the C call that the program's call is
# counted by: Open MPI's (4.1, 5.0) completions of many requests, to spare a malloc(0). Their
# entry points make that call first (fortran.cpp, strata_fortran_zero_count). MPICH's call C.
ZERO_COUNT_SHORTCUTS = {
    "openmpi": {"MPI_Waitall", "MPI_Waitany", "MPI_Waitsome", "MPI_Testall", "MPI_Testany",
                "MPI_Testsome"},
    "mpich": set(),
}


def write_fortran_entries(out, flavor, functions, fids, exported):
    """fortran_entries.cpp: an entry point for each Fortran binding of the MPI, which notes the
    program's return address and the routine in this thread's state (thread_state::fortran_site
    and fortran_fid) and jumps to the binding with every argument untouched. The C entry point the
    binding then calls takes that address as the call site: the program's own line, not the
    binding's. x86-64 only: elsewhere the call sites stay the bindings' addresses."""
    entries = []
    for f in functions:
        if f.name.endswith("_c"):
            continue
        stem = f.name[4:].lower()
        for suffix in FORTRAN_SUFFIXES:
            symbol = f"mpi_{stem}{suffix}"
            if symbol in exported:
                entries.append((symbol, f.name))
    with open(os.path.join(out, "fortran_entries.cpp"), "w") as c:
        c.write(f"// Generated by src/gen/generate.py from {flavor}'s Fortran libraries. Do not edit.\n")
        c.write("#include \"core/dispatch.hpp\"\n\n#include <cstddef>\n\n")
        c.write("namespace strata::core {\n")
        c.write(f"extern \"C\" STRATA_HIDDEN void* strata_fortran_real[{max(len(entries), 1)}];\n")
        c.write(f"void* strata_fortran_real[{max(len(entries), 1)}];\n")
        c.write("extern const char* const fortran_entry_names[];\n")
        c.write("const char* const fortran_entry_names[] = {\n")
        for symbol, _ in entries:
            c.write(f"    \"{symbol}\",\n")
        c.write("    nullptr};\n")
        c.write("static_assert(offsetof(thread_state, fortran_site) == 24 && "
                "offsetof(thread_state, fortran_fid) == 32 && mark_fortran == 1, "
                "\"the entries below write them\");\n")
        c.write("} // namespace strata::core\n\n#if defined(__x86_64__)\n")
        for i, (symbol, cname) in enumerate(entries):
            fid = fids[cname]
            c.write(f"static_assert(strata::gen::fid_{cname} == {fid});\n")
            c.write('asm(".text\\n.globl ' + symbol + '\\n.type ' + symbol + ', @function\\n' +
                    symbol + ':\\n'
                    '  movq (%rsp), %r11\\n'
                    '  movq _ZN6strata4core3tlsE@gottpoff(%rip), %r10\\n'
                    '  movq %r11, %fs:24(%r10)\\n'
                    f'  movl $' + str(fid) + ', %fs:32(%r10)\\n'
                    # The mark that sends the C entry points' calls their long way, which takes
                    # the note (dispatch.hpp, strata_call_marks): set once, then only read (a
                    # store on every call would take its cache line from the other threads).
                    '  cmpb $0, strata_call_marks+1(%rip)\\n'
                    '  jne 2f\\n'
                    '  movb $1, strata_call_marks+1(%rip)\\n'
                    '2: ' + zero_count_check(flavor, cname, fid) +
                    f'movq strata_fortran_real+{8 * i}(%rip), %r11\\n'
                    '  testq %r11, %r11\\n'
                    '  jz 1f\\n'
                    '  jmp *%r11\\n'
                    f'1: movl ${i}, %r11d\\n'
                    '  jmp strata_fortran_resolve\\n'
                    '.size ' + symbol + ', .-' + symbol + '\\n");\n')
        c.write("#endif\n")


def zero_count_check(flavor, cname, fid):
    """Assembly for an entry point whose binding skips the C call for a count of 0 (its first
    argument, a pointer in %rdi): that call made first, through strata_fortran_zero_count_stub,
    which keeps every argument register."""
    if cname not in ZERO_COUNT_SHORTCUTS[flavor]:
        return ""
    return ("cmpl $0, (%rdi)\\n  jne 3f\\n"
            f"  movl ${fid}, %r11d\\n  call strata_fortran_zero_count_stub\\n3: ")


def ref_decl(param):
    """The parameter's declaration with its name made a reference (arrays stay pointers)."""
    pname, decl, _, _ = param
    if decl.endswith(f"{pname}[]"):
        # An array of one dimension, as the pointer it is: a completion substitutes statuses.
        return decl.removesuffix(f"{pname}[]").rstrip() + f"*& {pname}"
    if decl.endswith("]") or "(*" in decl:
        return decl  # arrays of more dimensions and function pointers: never rewritten
    return re.sub(rf"\b{re.escape(pname)}$", f"&{pname}", decl)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--xml", required=True, help="castxml --castxml-output=1 dump of mpi.h")
    ap.add_argument("--roles", required=True)
    ap.add_argument("--flavor", required=True, choices=["openmpi", "mpich"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--routines", required=True, help="routines.txt")
    ap.add_argument("--fortran-libs", nargs="*", default=[],
                    help="the MPI's Fortran libraries, for the Fortran entry points")
    ap.add_argument("--shards", type=int, default=1,
                    help="how many files the entry points are written to (strata_entries_K.cpp)")
    a = ap.parse_args()
    if a.shards < 1:
        ap.error("--shards must be at least 1")
    generate(Header(a.xml), parse_roles(a.roles), read_sections(a.routines), a.flavor, a.out,
             fortran_symbols(a.fortran_libs), a.shards)


if __name__ == "__main__":
    sys.exit(main())
