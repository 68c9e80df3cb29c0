#!/usr/bin/env python3
"""Generates the one table of MPI routines (routines_table.cpp, read through routines.hpp).

Its rows are every routine that any of the given MPI headers declares (as castxml dumps); what a
routine is comes from routines.txt (groups, collective kinds, local and cheap routines, handle
conversions) and roles.txt (argument roles, polls, completions). No MPI is needed to read it.
"""
import argparse
import os
import re
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tables import first_match, matches, parse_roles, read_sections  # noqa: E402

GROUPS = ["blocking_p2p", "nonblocking_p2p", "persistent_p2p", "pack_unpack", "collective",
          "derived_datatype", "group_subcomm", "intercomm", "attribute_inquiry", "error_handler",
          "topology", "wtime", "one_sided", "io", "other", "none"]
COLLECTIVES = ["none", "barrier", "bcast", "gather", "gatherv", "scatter", "scatterv", "allgather",
               "allgatherv", "alltoall", "alltoallv", "alltoallw", "reduce", "allreduce",
               "reduce_scatter", "reduce_scatter_block", "scan", "exscan", "neighbor_allgather",
               "neighbor_allgatherv", "neighbor_alltoall", "neighbor_alltoallv",
               "neighbor_alltoallw"]
ROLES = ["send", "recv", "peer", "tag", "comm", "root", "request", "wait", "requests", "status",
         "flag"]
NONBLOCKING_WITHOUT_ROLES = {"imrecv", "isendrecv", "isendrecv_replace", "rput", "rget",
                             "raccumulate", "rget_accumulate", "comm_idup", "comm_idup_with_info"}
COMPLETIONS = {"wait", "waitall", "waitany", "waitsome", "test", "testall", "testany", "testsome"}


def header_routines(xml_path):
    root = ET.parse(xml_path).getroot()
    return {e.get("name")[1:] for e in root
            if e.tag == "Function" and e.get("name", "").startswith("PMPI_")}


def describe(name, sections, roles):
    large_count = name.endswith("_c")
    base_name = name[:-2] if large_count else name
    stem = base_name[4:].lower()
    group = first_match(sections["group"], stem)
    if group not in GROUPS:
        raise SystemExit(f"routines.txt: group '{group}' of {name} is not one of {GROUPS}")
    spec = roles.get(base_name, {})
    persistent = stem.endswith("_init") and group in ("persistent_p2p", "collective")
    partitioned = stem in ("psend_init", "precv_init", "pready", "pready_range", "pready_list",
                           "parrived")
    op = "none"
    # Nonblocking: returns before the operation completes, with a request to complete it.
    nonblocking = ("request" in spec or stem in NONBLOCKING_WITHOUT_ROLES
                   or stem.startswith("file_i") or stem.startswith("ineighbor_"))
    if group == "collective":
        base = stem[:-5] if persistent else stem
        if base not in dict(sections["collective"]) and base.startswith("i"):
            base = base[1:]
            nonblocking = True
        op = first_match(sections["collective"], base) or "none"
        if op not in COLLECTIVES:
            raise SystemExit(f"routines.txt: collective '{op}' of {name} is unknown")
    if group in ("blocking_p2p", "nonblocking_p2p", "persistent_p2p"):
        sends, receives, peer = "send" in spec, "recv" in spec, "peer" in spec
        if stem in COMPLETIONS:
            kind = "completion"
        elif persistent or partitioned or not peer:
            kind = "p2p_other"
        elif sends and receives:
            kind = "sendrecv" if "request" not in spec else "p2p_other"
        elif sends:
            kind = "isend" if "request" in spec else "send"
        elif receives:
            kind = "irecv" if "request" in spec else "recv"
        else:
            kind = "p2p_other"  # probes
    elif group == "collective" and op != "none" and stem != "reduce_local":
        kind = "collective"
    elif group in ("one_sided", "io"):
        kind = group
    else:
        kind = "other"
    local = matches(sections["local"], stem)
    cheap = matches(sections["cheap"], stem)
    if cheap and not local:
        raise SystemExit(f"routines.txt: {name} is cheap but not local")
    mask = 0
    for i, role in enumerate(ROLES):
        if role in spec:
            mask |= 1 << i
    return dict(name=name, group=group, kind=kind, op=op, nonblocking=nonblocking,
                persistent=persistent, partitioned=partitioned, large_count=large_count,
                local=local, cheap=cheap, poll="flag" in spec,
                conversion=matches(sections["handle_conversion"], stem), roles=mask)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--xml", action="append", required=True, help="castxml dump of one mpi.h")
    ap.add_argument("--roles", required=True)
    ap.add_argument("--routines", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    sections = read_sections(a.routines)
    roles = parse_roles(a.roles)
    names = set()
    for xml in a.xml:
        names |= header_routines(xml)
    names.discard("MPI_Pcontrol")
    names.add("MPI_Pcontrol")
    rows = [describe(n, sections, roles) for n in sorted(names)]
    b = lambda v: "true" if v else "false"  # noqa: E731
    with open(a.out, "w") as out:
        out.write("// Generated by src/gen/routines.py from routines.txt, roles.txt and the MPI "
                  "headers. Do not edit.\n#include \"gen/routines.hpp\"\n\n"
                  "namespace strata::routines {\n"
                  "extern const info table[];\nextern const std::size_t table_size;\n"
                  "const info table[] = {\n")
        for r in rows:
            out.write(f"    {{\"{r['name']}\", group::{r['group']}, kind::{r['kind']}, "
                      f"collective_op::{r['op']}, {b(r['nonblocking'])}, {b(r['persistent'])}, "
                      f"{b(r['partitioned'])}, {b(r['large_count'])}, {b(r['local'])}, "
                      f"{b(r['cheap'])}, {b(r['poll'])}, {b(r['conversion'])}, {r['roles']}u}},\n")
        out.write(f"}};\nconst std::size_t table_size = {len(rows)};\n"
                  "} // namespace strata::routines\n")


if __name__ == "__main__":
    sys.exit(main())
