#include "strata/patch/patch.hpp"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <set>
#include <string_view>
#include <system_error>
#include <utility>

namespace strata::patch {
namespace {

// A module is dlopen()ed into the tool process, so only objects for this very machine make sense.
#if defined(__x86_64__)
constexpr unsigned host_machine = EM_X86_64;
constexpr std::string_view host_machine_name = "x86_64";
#elif defined(__aarch64__)
constexpr unsigned host_machine = EM_AARCH64;
constexpr std::string_view host_machine_name = "aarch64";
#else
#error "strata patch: unsupported host architecture"
#endif

constexpr unsigned char host_data =
    std::endian::native == std::endian::little ? ELFDATA2LSB : ELFDATA2MSB;
constexpr GElf_Versym versym_index_mask = 0x7fff; // the top bit only marks hidden symbols

struct byte_edit {
  std::uint64_t offset;
  unsigned char value;
};

// Lets the parser bail out from any depth with the one message the user will see.
struct analysis_error {
  std::string message;
};

[[noreturn]] void fail(std::string message) {
  throw analysis_error{std::move(message)};
}

[[noreturn]] void fail_libelf(std::string_view what) {
  fail("corrupt ELF: cannot read " + std::string(what) + " (libelf: " + elf_errmsg(-1) + ")");
}

std::string num(std::uint64_t v) {
  return std::to_string(v);
}

// Names from a hostile file must not put control bytes into a terminal.
std::string printable(std::string_view text) {
  std::string out;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f) {
      out += ch;
    } else {
      constexpr std::string_view digits = "0123456789abcdef";
      out += {'\\', 'x', digits[c >> 4], digits[c & 0xf]};
    }
  }
  return out;
}

std::string type_name(unsigned type) {
  switch (type) {
  case ET_REL:
    return "a relocatable object file (.o)";
  case ET_EXEC:
    return "an executable";
  case ET_CORE:
    return "a core dump";
  default:
    return "ELF type " + num(type);
  }
}

// Everything before libelf sees the bytes: these checks give precise messages, and libelf quietly
// treats an out-of-file section header table as "no sections", which would hide truncation.
void check_header(std::span<const unsigned char> image) {
  if (image.size() < SELFMAG || std::memcmp(image.data(), ELFMAG, SELFMAG) != 0)
    fail("not an ELF file");
  if (image.size() < sizeof(Elf64_Ehdr))
    fail("truncated ELF file: only " + num(image.size()) + " bytes, the ELF header is incomplete");
  if (image[EI_CLASS] == ELFCLASS32)
    fail("32-bit ELF (ELFCLASS32) is not supported; expected a 64-bit " +
         std::string(host_machine_name) + " shared object");
  if (image[EI_CLASS] != ELFCLASS64)
    fail("invalid ELF class " + num(image[EI_CLASS]));
  if (image[EI_DATA] != host_data)
    fail("ELF byte order differs from this host's");

  Elf64_Ehdr eh;
  std::memcpy(&eh, image.data(), sizeof eh);
  if (eh.e_type != ET_DYN)
    fail("not a shared object: it is " + type_name(eh.e_type));
  if (eh.e_machine != host_machine)
    fail("built for ELF machine " + num(eh.e_machine) + ", but this host is " +
         std::string(host_machine_name) + " (machine " + num(host_machine) + ")");
  if (eh.e_shoff == 0)
    fail("no section headers (cannot locate .dynsym)");
  if (eh.e_shentsize != sizeof(Elf64_Shdr))
    fail("corrupt ELF: section header entry size is " + num(eh.e_shentsize));
  const std::uint64_t room = eh.e_shoff <= image.size() ? image.size() - eh.e_shoff : 0;
  std::uint64_t count = eh.e_shnum;
  if (count == 0 && room >= sizeof(Elf64_Shdr)) { // extended numbering keeps the count in shdr 0
    Elf64_Shdr first;
    std::memcpy(&first, image.data() + eh.e_shoff, sizeof first);
    count = first.sh_size;
  }
  if (count == 0 || count > room / sizeof(Elf64_Shdr))
    fail("truncated or corrupt ELF: the section header table (offset " + num(eh.e_shoff) + ", " +
         num(count) + " entries) extends past the end of the file (" + num(image.size()) +
         " bytes)");
}

struct section {
  Elf_Scn* scn = nullptr;
  GElf_Shdr hdr{};
  Elf_Data* data = nullptr;
  explicit operator bool() const { return scn != nullptr; }
};

void check_range(const GElf_Shdr& hdr, std::string_view name, std::uint64_t file_size) {
  if (hdr.sh_offset > file_size || hdr.sh_size > file_size - hdr.sh_offset)
    fail("truncated or corrupt ELF: section " + std::string(name) + " (offset " +
         num(hdr.sh_offset) + ", size " + num(hdr.sh_size) +
         ") extends past the end of the file (" + num(file_size) + " bytes)");
}

void load(section& s, std::string_view name, std::uint64_t file_size) {
  check_range(s.hdr, name, file_size);
  s.data = elf_getdata(s.scn, nullptr);
  if (s.data == nullptr)
    fail_libelf(name);
  // The gelf accessors take int indices and offsets.
  if (s.data->d_size > INT_MAX)
    fail("section " + std::string(name) + " is too large");
}

struct string_table {
  std::span<const unsigned char> bytes;
  std::uint64_t file_offset;

  [[nodiscard]] std::string_view at(std::uint64_t off, std::string_view user,
                                    std::uint64_t index) const {
    if (off >= bytes.size())
      fail("corrupt ELF: " + std::string(user) + " " + num(index) + " has name offset " + num(off) +
           " outside .dynstr (" + num(bytes.size()) + " bytes)");
    const auto rest = bytes.subspan(off);
    const auto nul = std::find(rest.begin(), rest.end(), 0);
    if (nul == rest.end())
      fail("corrupt ELF: the name of " + std::string(user) + " " + num(index) +
           " runs past the end of .dynstr");
    return {reinterpret_cast<const char*>(rest.data()),
            static_cast<std::size_t>(nul - rest.begin())};
  }
};

// Any user of a .dynstr string; renaming must not change a string it does not own.
struct string_ref {
  std::uint64_t start;
  const char* kind;
  bool renamed;
};

// The .dynamic tags whose value is a .dynstr offset.
constexpr std::array<std::pair<GElf_Sxword, const char*>, 9> dynamic_strings{{
    {DT_NEEDED, "DT_NEEDED entry"},
    {DT_SONAME, "DT_SONAME entry"},
    {DT_RPATH, "DT_RPATH entry"},
    {DT_RUNPATH, "DT_RUNPATH entry"},
    {DT_AUXILIARY, "DT_AUXILIARY entry"},
    {DT_FILTER, "DT_FILTER entry"},
    {DT_CONFIG, "DT_CONFIG entry"},
    {DT_DEPAUDIT, "DT_DEPAUDIT entry"},
    {DT_AUDIT, "DT_AUDIT entry"},
}};

// Walks a version section's linked lists. Real files never revisit an entry, so capping the total
// number of entries at what fits in the section keeps malicious cycles/overlaps linear.
class version_walker {
public:
  version_walker(const section& s, std::string_view name)
      : s_(s), name_(name), budget_(s.data->d_size) {}
  int next(std::uint64_t off, std::uint64_t entry_size) {
    if (off >= s_.data->d_size || entry_size > s_.data->d_size - off || budget_ < entry_size)
      fail("corrupt ELF: " + std::string(name_) + " has an entry at offset " + num(off) +
           " outside the section or a cyclic entry chain");
    budget_ -= entry_size;
    return static_cast<int>(off);
  }

private:
  const section& s_;
  std::string_view name_;
  std::uint64_t budget_;
};

struct candidate {
  std::size_t index;
  std::uint64_t name;
  std::string_view text;
};

// The C binding: PMPI_ and a mixed-case name (PMPI_Send, PMPI_T_cvar_read). These bind to the
// core's ZMPI_ aliases of its entry points.
bool is_c_pmpi_name(std::string_view name) {
  return name.starts_with("PMPI_") &&
         std::any_of(name.begin() + 5, name.end(), [](char c) { return c >= 'a' && c <= 'z'; });
}

// Fortran manglings: pmpi_send_, pmpi_send__, pmpi_send, PMPI_SEND. They stay as they are: both
// MPIs' Fortran PMPI bindings convert the handles and call the C MPI_/PMPI_ function, which is
// the core's entry point, and that dispatches from the calling tool's layer to the next one.
bool is_fortran_pmpi_name(std::string_view name) {
  return name.starts_with("pmpi_") || (name.starts_with("PMPI_") && !is_c_pmpi_name(name));
}

std::vector<byte_edit> compute_edits(std::span<const unsigned char> image,
                                     std::vector<renamed_symbol>& renamed,
                                     std::vector<std::string>& fortran_kept) {
  check_header(image);
  static const bool libelf_ready = elf_version(EV_CURRENT) != EV_NONE;
  if (!libelf_ready)
    fail("libelf is unusable: " + std::string(elf_errmsg(-1)));

  // libelf wants a mutable buffer; a private copy guarantees the caller's bytes are never touched.
  std::vector<char> copy(image.begin(), image.end());
  auto closer = [](Elf* e) { elf_end(e); };
  std::unique_ptr<Elf, decltype(closer)> elf(elf_memory(copy.data(), copy.size()), closer);
  if (!elf || elf_kind(elf.get()) != ELF_K_ELF)
    fail_libelf("the file");

  section dynsym;
  section dynamic;
  section versym;
  section verneed;
  section verdef;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf.get(), scn)) != nullptr;) {
    GElf_Shdr hdr;
    if (gelf_getshdr(scn, &hdr) == nullptr)
      fail_libelf("a section header");
    section* slot = hdr.sh_type == SHT_DYNSYM        ? &dynsym
                    : hdr.sh_type == SHT_DYNAMIC     ? &dynamic
                    : hdr.sh_type == SHT_GNU_versym  ? &versym
                    : hdr.sh_type == SHT_GNU_verneed ? &verneed
                    : hdr.sh_type == SHT_GNU_verdef  ? &verdef
                                                     : nullptr;
    if (slot != nullptr && !*slot)
      *slot = {scn, hdr, nullptr};
  }
  if (!dynamic)
    fail("no .dynamic section: not a dynamically linked shared object");
  if (!dynsym)
    fail("no .dynsym section (dynamic symbol table)");

  const auto strndx = dynsym.hdr.sh_link;
  GElf_Shdr strhdr;
  Elf_Scn* strscn = elf_getscn(elf.get(), strndx);
  if (strscn == nullptr || gelf_getshdr(strscn, &strhdr) == nullptr || strhdr.sh_type != SHT_STRTAB)
    fail("no .dynstr section: .dynsym links to section " + num(strndx) +
         ", which is not a string table");
  check_range(strhdr, ".dynstr", image.size());
  const string_table dynstr{image.subspan(strhdr.sh_offset, strhdr.sh_size), strhdr.sh_offset};

  std::vector<string_ref> refs;
  auto add_ref = [&](std::uint64_t off, const char* kind, std::uint64_t index) {
    (void)dynstr.at(off, kind, index); // validates it
    refs.push_back({off, kind, false});
  };
  std::vector<candidate> candidates;
  bool already_patched = false;
  load(dynsym, ".dynsym", image.size());
  const std::size_t nsyms = dynsym.data->d_size / sizeof(Elf64_Sym);
  for (std::size_t i = 1; i < nsyms; ++i) { // entry 0 is the reserved null symbol
    GElf_Sym sym;
    if (gelf_getsym(dynsym.data, static_cast<int>(i), &sym) == nullptr)
      fail_libelf(".dynsym");
    const auto name = dynstr.at(sym.st_name, "dynamic symbol", i);
    if (name.empty())
      continue;
    const bool imported = sym.st_shndx == SHN_UNDEF;
    const bool rename = imported && is_c_pmpi_name(name);
    refs.push_back({sym.st_name, "dynamic symbol", rename});
    if (rename)
      candidates.push_back({i, sym.st_name, name});
    else if (imported && is_fortran_pmpi_name(name))
      fortran_kept.emplace_back(name);
    already_patched = already_patched || (imported && name.starts_with("ZMPI_"));
  }

  load(dynamic, ".dynamic", image.size());
  for (std::size_t i = 0; i < dynamic.data->d_size / sizeof(Elf64_Dyn); ++i) {
    GElf_Dyn dyn;
    if (gelf_getdyn(dynamic.data, static_cast<int>(i), &dyn) == nullptr)
      fail_libelf(".dynamic");
    if (dyn.d_tag == DT_NULL)
      break;
    // A PIE is ET_DYN too, but cannot be dlopen()ed as a module.
    if (dyn.d_tag == DT_FLAGS_1 && (dyn.d_un.d_val & DF_1_PIE) != 0)
      fail("not a shared object: it is a position-independent executable");
    // Sections linked to another string table cannot share bytes with .dynstr.
    if (dynamic.hdr.sh_link != strndx)
      continue;
    for (const auto& [tag, kind] : dynamic_strings)
      if (dyn.d_tag == tag)
        add_ref(dyn.d_un.d_val, kind, i);
  }

  std::set<GElf_Versym> needed_versions; // version indices that bind to another library
  if (verneed && verneed.hdr.sh_link == strndx) {
    load(verneed, ".gnu.version_r", image.size());
    version_walker walk(verneed, ".gnu.version_r");
    std::uint64_t off = 0;
    for (std::uint64_t n = 0; n < verneed.hdr.sh_info; ++n) {
      GElf_Verneed vn;
      if (gelf_getverneed(verneed.data, walk.next(off, sizeof(Elf64_Verneed)), &vn) == nullptr)
        fail_libelf(".gnu.version_r");
      add_ref(vn.vn_file, "version dependency", n);
      std::uint64_t aux = off + vn.vn_aux;
      for (unsigned k = 0; k < vn.vn_cnt; ++k) {
        GElf_Vernaux vna;
        if (gelf_getvernaux(verneed.data, walk.next(aux, sizeof(Elf64_Vernaux)), &vna) == nullptr)
          fail_libelf(".gnu.version_r");
        add_ref(vna.vna_name, "needed version", k);
        needed_versions.insert(static_cast<GElf_Versym>(vna.vna_other & versym_index_mask));
        if (vna.vna_next == 0)
          break;
        aux += vna.vna_next;
      }
      if (vn.vn_next == 0)
        break;
      off += vn.vn_next;
    }
  }

  if (verdef && verdef.hdr.sh_link == strndx) {
    load(verdef, ".gnu.version_d", image.size());
    version_walker walk(verdef, ".gnu.version_d");
    std::uint64_t off = 0;
    for (std::uint64_t n = 0; n < verdef.hdr.sh_info; ++n) {
      GElf_Verdef vd;
      if (gelf_getverdef(verdef.data, walk.next(off, sizeof(Elf64_Verdef)), &vd) == nullptr)
        fail_libelf(".gnu.version_d");
      std::uint64_t aux = off + vd.vd_aux;
      for (unsigned k = 0; k < vd.vd_cnt; ++k) {
        GElf_Verdaux vda;
        if (gelf_getverdaux(verdef.data, walk.next(aux, sizeof(Elf64_Verdaux)), &vda) == nullptr)
          fail_libelf(".gnu.version_d");
        add_ref(vda.vda_name, "defined version", k);
        if (vda.vda_next == 0)
          break;
        aux += vda.vda_next;
      }
      if (vd.vd_next == 0)
        break;
      off += vd.vd_next;
    }
  }

  if (versym) {
    load(versym, ".gnu.version", image.size());
    if (versym.hdr.sh_size / sizeof(GElf_Versym) < nsyms ||
        versym.data->d_size / sizeof(GElf_Versym) < nsyms)
      fail("corrupt ELF: .gnu.version has fewer entries than .dynsym");
  }

  if (candidates.empty() && already_patched)
    fail("already patched: it imports ZMPI_* functions and no PMPI_* one");
  if (candidates.empty() && fortran_kept.empty())
    fail("imports no PMPI functions (no undefined PMPI_* or pmpi_* symbol in .dynsym); nothing "
         "to patch");

  std::sort(refs.begin(), refs.end(), [](auto& a, auto& b) { return a.start < b.start; });
  std::vector<byte_edit> edits;
  for (const auto& c : candidates) {
    // Strings sharing the byte we change start between the preceding NUL and our first byte
    // (GNU ld tail-merges .dynstr); other symbols starting exactly here get the same rename.
    std::uint64_t run = c.name;
    while (run > 0 && dynstr.bytes[run - 1] != 0)
      --run;
    auto it = std::lower_bound(refs.begin(), refs.end(), run,
                               [](const string_ref& r, std::uint64_t v) { return r.start < v; });
    for (; it != refs.end() && it->start <= c.name; ++it) {
      if (it->start == c.name && it->renamed)
        continue;
      fail("cannot rename " + printable(c.text) + ": the first byte of its name is shared with " +
           it->kind + " \"" + printable(dynstr.at(it->start, it->kind, 0)) +
           "\" in .dynstr, which would be renamed too");
    }

    renamed_symbol r{std::string(c.text), std::string(c.text), false};
    r.to[0] = c.text[0] == 'P' ? 'Z' : 'z';
    edits.push_back({dynstr.file_offset + c.name, static_cast<unsigned char>(r.to[0])});

    GElf_Versym ver = 0;
    if (versym && gelf_getversym(versym.data, static_cast<int>(c.index), &ver) == nullptr)
      fail_libelf(".gnu.version");
    ver &= versym_index_mask;
    // ZMPI_X@MPI_1.0 exists nowhere, so the loader would refuse a versioned reference.
    if (ver >= 2 && needed_versions.contains(ver)) {
      const GElf_Versym global = VER_NDX_GLOBAL;
      unsigned char bytes[sizeof global];
      std::memcpy(bytes, &global, sizeof global);
      const std::uint64_t at = versym.hdr.sh_offset + c.index * sizeof global;
      for (std::uint64_t b = 0; b < sizeof global; ++b)
        edits.push_back({at + b, bytes[b]});
      r.version_cleared = true;
    }
    renamed.push_back(std::move(r));
  }
  return edits;
}

patch_result run(std::span<const unsigned char> image, std::vector<byte_edit>* edits) {
  patch_result result;
  try {
    auto e = compute_edits(image, result.renamed, result.fortran_kept);
    if (edits != nullptr)
      *edits = std::move(e);
    result.ok = true;
  } catch (const analysis_error& err) {
    result.renamed.clear();
    result.fortran_kept.clear();
    result.error = err.message;
  } catch (const std::bad_alloc&) {
    result.renamed.clear();
    result.fortran_kept.clear();
    result.error = "out of memory";
  }
  return result;
}

std::string sys_error() {
  return std::error_code(errno, std::generic_category()).message();
}

struct fd_closer {
  int fd;
  explicit fd_closer(int f) : fd(f) {}
  fd_closer(const fd_closer&) = delete;
  fd_closer& operator=(const fd_closer&) = delete;
  fd_closer(fd_closer&&) = delete;
  fd_closer& operator=(fd_closer&&) = delete;
  ~fd_closer() { ::close(fd); }
};

bool write_all(int fd, const std::vector<unsigned char>& bytes) {
  for (std::size_t done = 0; done < bytes.size();) {
    const auto n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return false;
    if (n == 0) {
      errno = EIO;
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

} // namespace

patch_result analyze(std::span<const unsigned char> image) {
  return run(image, nullptr);
}

patch_result patch_file(const std::string& in_path, const std::string& out_path) {
  patch_result failure;
  auto failed = [&failure](std::string message) {
    failure.error = std::move(message);
    return failure;
  };

  const int in_fd = ::open(in_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (in_fd < 0)
    return failed(in_path + ": cannot open: " + sys_error());
  const fd_closer in_guard{in_fd};
  struct stat in_stat;
  if (::fstat(in_fd, &in_stat) != 0)
    return failed(in_path + ": cannot stat: " + sys_error());
  if (!S_ISREG(in_stat.st_mode))
    return failed(in_path + ": not a regular file");

  std::vector<unsigned char> bytes(static_cast<std::size_t>(in_stat.st_size));
  std::size_t got = 0;
  while (got < bytes.size()) {
    const auto n = ::read(in_fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return failed(in_path + ": cannot read: " + sys_error());
    if (n == 0)
      break;
    got += static_cast<std::size_t>(n);
  }
  bytes.resize(got);

  struct stat out_stat;
  if (::stat(out_path.c_str(), &out_stat) == 0 && out_stat.st_dev == in_stat.st_dev &&
      out_stat.st_ino == in_stat.st_ino)
    return failed(out_path + ": is the input file itself; refusing to patch in place");

  std::vector<byte_edit> edits;
  patch_result result = run(bytes, &edits);
  if (!result.ok)
    return failed(in_path + ": " + result.error);
  for (const auto& e : edits)
    bytes[e.offset] = e.value; // offsets were range-checked

  // A unique temporary next to the output keeps rename() atomic and never clobbers another file.
  std::string tmp = out_path + ".tmp.XXXXXX";
  const int out_fd = ::mkstemp(tmp.data());
  if (out_fd < 0)
    return failed(out_path + ": cannot create a temporary file: " + sys_error());
  bool ok = write_all(out_fd, bytes) && ::fchmod(out_fd, in_stat.st_mode & 0777) == 0;
  int saved = errno;
  if (::close(out_fd) != 0 && ok) { // close() may report a delayed write error
    ok = false;
    saved = errno;
  }
  if (ok && ::rename(tmp.c_str(), out_path.c_str()) != 0) {
    ok = false;
    saved = errno;
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    errno = saved;
    return failed(out_path + ": cannot write: " + sys_error());
  }
  return result;
}

} // namespace strata::patch
