"""One MPI implementation's mpi.h as castxml dumps it: its PMPI_ functions and their
prototypes, spelled as the header spells them (generate.py)."""
import xml.etree.ElementTree as ET


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
