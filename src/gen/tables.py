"""The two hand-kept tables of src/gen, read once for both generators: roles.txt (argument roles)
and routines.txt (what each routine is)."""
import fnmatch


def parse_roles(path):
    roles = {}
    for lineno, line in enumerate(open(path), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
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
    for needed in ("groups", "group", "collective", "local", "cheap", "handle_conversion"):
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
