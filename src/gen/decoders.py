"""The decoders of the generated entry points: what an event's fields are, computed from a
function's arguments by the roles roles.txt gives its parameters (generate.py writes them)."""
from tables import argument_positions


# How many peers a byte spec's count is for: "*size" or "*outdegree" times one count, "@sum" an
# array of that many counts (of "@outdegree" or "@indegree" peers: a topology's neighbours).
PEER_COUNTS = {"size": "ev.comm_size", "outdegree": "dec::neighbor_degree({comm}, true)",
               "indegree": "dec::neighbor_degree({comm}, false)"}


def split_byte_spec(spec):
    """(count, type, the peers' count multiplied or None, flags) of a spec such as
    count:type*size@root or counts:types@sum@types@outdegree."""
    mods = spec.split("@")
    base, flags = mods[0], set(mods[1:])
    base, _, times = base.partition("*")
    count, _, dtype = base.partition(":")
    return count, dtype, times or None, flags


def peers_expr(fn, times, flags):
    """The number of peers a count is for (multiplied, or the length of a summed array); a
    parameter of the function named after "*" is that argument (a partitioned request's
    partitions, each of the count)."""
    if times and times not in PEER_COUNTS and fn.param_type(times) is not None:
        return f"static_cast<int64_t>({times})"
    degree = times or next((f for f in ("outdegree", "indegree") if f in flags), "size")
    if degree not in PEER_COUNTS:
        raise SystemExit(f"roles.txt: {fn.name}: unknown peer count '{degree}'")
    comm = next((p[0] for p in fn.params if p[2] == "MPI_Comm"), None)
    return PEER_COUNTS[degree].format(comm=comm)


def byte_expr(fn, spec, what):
    """C++ expression for bytes sent or received, from a roles.txt spec like count:type*size@root.

    @types: the type is an array, one per peer, as the counts (MPI_Alltoallw); in place
    (MPI_IN_PLACE as the send buffer) its arrays are not read, and it sends nothing counted."""
    count, dtype, times, flags = split_byte_spec(spec)
    for pname in (count, dtype):
        if pname.isdigit():  # a fixed count: MPI_Fetch_and_op's one element
            continue
        if fn.param_type(pname) is None:
            raise SystemExit(f"roles.txt: {fn.name} has no parameter '{pname}' ({what})")
    peers = peers_expr(fn, times, flags)
    if "types" in flags:
        expr = f"dec::summed_typed_bytes({count}, {dtype}, {peers})"
        if what == "send" and fn.param_type("sendbuf") is not None:
            expr = f"(sendbuf == MPI_IN_PLACE ? 0 : {expr})"
    elif "sum" in flags:
        expr = f"dec::summed_bytes({count}, {dtype}, {peers})"
    else:
        expr = f"dec::type_bytes({count}, {dtype})"
        if times:
            expr = f"{expr} * {peers}"
    if "root" in flags:
        expr = f"(ev.is_root ? {expr} : 0)"
    if "nonroot" in flags:
        expr = f"(ev.is_root ? 0 : {expr})"
    return expr


def count_expr(fn, spec):
    """The count argument of a roles.txt byte spec, summed over peers for the v-variants."""
    count, _, times, flags = split_byte_spec(spec)
    if "sum" in flags:
        return f"dec::summed_count({count}, {peers_expr(fn, times, flags)})"
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
    if "target" in spec:
        # The window's group, not a communicator: read only for the target's world rank, so
        # the event's communicator fields stay those of no communicator.
        lines.append(("PEER", f"dec::set_window(scratch, {spec['win']});"))
        lines.append(("PEER", f"dec::set_peer(ev, scratch, {spec['target']});"))
    if "tag" in spec:
        lines.append(("TAG", f"ev.tag = {spec['tag']};"))
    if "send" in spec or "recv" in spec:
        lines.append(("BYTES", f"ev.count = {count_expr(fn, spec.get('send') or spec['recv'])};"))
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


def exit_decoder(fn, spec):
    lines = []
    if "request" in spec or "recv_request" in spec:
        lines.append(("REQUESTS",
                      f"dec::set_request(ev, {spec.get('recv_request') or spec['request']});"))
    # Every call that makes a request says of what kind (completions.hpp), under the bytes
    # received, which are what the kinds are kept for.
    made = spec.get("recv_request") or spec.get("request") or spec.get("made_request")
    if made is not None:
        receive = "true" if "recv_request" in spec else "false"
        # Where its peer (a collective's root), tag and communicator are among the arguments,
        # for the thread's table of requests (the hang state's message queue).
        at = argument_positions([(p[0], p[2]) for p in fn.params], spec)
        peer = at["peer"] if at["peer"] >= 0 else at["root"]
        lines.append(("RECEIVED", f"dec::note_request_made<fid_{fn.name}, {peer}, {at['tag']}, "
                                  f"{at['comm']}, where_noted>(ev, {made}, {receive});"))
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
