"""The two hand-kept tables of src/gen, read once for both generators: roles.txt (argument roles)
and routines.txt (what each routine is)."""
import fnmatch


class Roles(dict):
    """{function: {role: parameter}}; `declared_by_some` names the functions of a line marked
    `?` (MPI-4 routines that not every MPI declares), checked only where a header declares them."""

    def __init__(self):
        super().__init__()
        self.declared_by_some = set()


def parse_roles(path):
    roles = Roles()
    for lineno, line in enumerate(open(path), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        if fields[0].startswith("?"):
            fields[0] = fields[0][1:]
            roles.declared_by_some.add(fields[0])
        spec = {}
        for field in fields[1:]:
            key, sep, value = field.partition("=")
            if not sep:
                raise SystemExit(f"{path}:{lineno}: expected ROLE=PARAM, got '{field}'")
            spec[key] = value
        roles[fields[0]] = spec
    return roles


def read_sections(path):
    """{section: [(value, [patterns])]} in file order."""
    sections, current = {}, None
    for lineno, raw in enumerate(open(path), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], [])
            continue
        if current is None:
            raise SystemExit(f"{path}:{lineno}: a line before the first [section]")
        value, *patterns = line.split()
        if not patterns:
            raise SystemExit(f"{path}:{lineno}: '{value}' lists no patterns")
        current.append((value, patterns))
    for needed in ("groups", "group", "collective", "one_sided", "local", "cheap", "frequent",
                   "handle_conversion", "collective_setup"):
        if needed not in sections:
            raise SystemExit(f"{path}: no [{needed}] section")
    return sections


def first_match(rules, stem):
    for value, patterns in rules:
        if any(fnmatch.fnmatchcase(stem, p) for p in patterns):
            return value
    return None


def matches(rules, stem):
    return any(fnmatch.fnmatchcase(stem, p) for _, patterns in rules for p in patterns)


def stem(name):
    """A routine's stem as routines.txt matches it: no "MPI_", lower case, no "_c" suffix."""
    base = name[:-2] if name.endswith("_c") else name
    return base[4:].lower()


# The roles whose arguments a reader of a call's raw arguments needs (the hang state), in the
# order of routines::argument_positions.
POSITION_ROLES = ("peer", "tag", "comm", "root", "count", "type", "recv_peer", "recv_tag",
                  "requests", "request_count")


def argument_positions(params, spec):
    """{role: position} of one prototype, -1 where it has none.

    params: (name, by-value type name) of each parameter, in order; spec: its roles.txt line.
    A role may name alternatives (index|indx). count and type are those of the bytes sent, else
    received, where that is one count for the call (not an array summed over the peers); the
    communicator of a routine without comm= is its MPI_Comm argument, if it has one; requests
    is a completion's MPI_Request* (wait=) or array (requests=, with request_count its count)."""
    names = [name for name, _ in params]

    def position(value):
        for alternative in value.split("|"):
            name = alternative.split("*")[0].split("@")[0]
            if name in names:
                return names.index(name)
        return -1

    at = {role: -1 for role in POSITION_ROLES}
    for role in ("peer", "tag", "comm", "root", "recv_peer", "recv_tag"):
        if role in spec:
            at[role] = position(spec[role])
    # The requests a completion names: one MPI_Request* (wait=), or an array and its count
    # (requests=COUNT:ARRAY).
    if "wait" in spec:
        at["requests"] = position(spec["wait"])
    elif "requests" in spec:
        count, _, array = spec["requests"].partition(":")
        at["requests"], at["request_count"] = position(array), position(count)
    if "comm" not in spec:
        at["comm"] = next((i for i, (_, type_name) in enumerate(params) if type_name == "MPI_Comm"),
                          -1)
    for bytes_role in ("send", "recv"):
        value = spec.get(bytes_role)
        if value is None or "@sum" in value:
            continue
        count, _, dtype = value.split("@")[0].partition(":")
        at["count"], at["type"] = position(count), position(dtype)
        break
    return at
