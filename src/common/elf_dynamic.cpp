#include "common/elf_dynamic.hpp"

#include "common/on_demand_library.hpp"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cstring>
#include <string_view>

namespace strata::common {

namespace {

// libelf's functions, from the library loaded at the first read (src/common/CMakeLists.txt): the
// core reads ELF files only to load a patched PMPI tool, and linked, libelf took 0.14 ms of the
// start of every rank.
struct libelf_functions {
  decltype(&elf_version) version = nullptr;
  decltype(&elf_begin) begin = nullptr;
  decltype(&elf_end) end = nullptr;
  decltype(&elf_kind) kind = nullptr;
  decltype(&elf_nextscn) nextscn = nullptr;
  decltype(&elf_getdata) getdata = nullptr;
  decltype(&elf_strptr) strptr = nullptr;
  decltype(&gelf_getshdr) getshdr = nullptr;
  decltype(&gelf_getdyn) getdyn = nullptr;
  decltype(&gelf_getsym) getsym = nullptr;
};

// nullptr, with the reason in `problem`, when libelf cannot be loaded or is unusable.
const libelf_functions* libelf(std::string& problem) {
  static std::string why_not;
  static const libelf_functions* const loaded = []() -> const libelf_functions* {
    common::on_demand_library library(STRATA_LIBELF_SONAME);
    static libelf_functions f;
    library.bind("elf_version", f.version);
    library.bind("elf_begin", f.begin);
    library.bind("elf_end", f.end);
    library.bind("elf_kind", f.kind);
    library.bind("elf_nextscn", f.nextscn);
    library.bind("elf_getdata", f.getdata);
    library.bind("elf_strptr", f.strptr);
    library.bind("gelf_getshdr", f.getshdr);
    library.bind("gelf_getdyn", f.getdyn);
    library.bind("gelf_getsym", f.getsym);
    if (!library.ok()) {
      why_not = library.problem();
      return nullptr;
    }
    if (f.version(EV_CURRENT) == EV_NONE) {
      why_not = "libelf is unusable";
      return nullptr;
    }
    return &f;
  }();
  problem = why_not;
  return loaded;
}

// Whether a symbol the file defines starts MPI or Strata (elf_dynamic's two flags).
void note_start_symbol(const char* name, elf_dynamic& result) {
  if (name[0] == 'Z' && std::strcmp(name, "ZMPI_Init") == 0)
    result.defines_strata = true;
  else if (name[0] == 'M' &&
           (std::strcmp(name, "MPI_Init") == 0 || std::strcmp(name, "MPI_Init_thread") == 0 ||
            std::strcmp(name, "MPI_Session_init") == 0))
    result.defines_mpi_start = true;
}

// Whether a stripped program's read-only data holds the messages MPI libraries name their
// start routine in (MPICH: "MPI_Init_thread(argc=%p, ...) failed"; Open MPI: the routine's name
// as its FUNC_NAME): its MPI linked in, where no symbol says so.
bool holds_mpi_messages(const libelf_functions& lib, const std::vector<Elf_Scn*>& sections) {
  static constexpr std::string_view marker = "MPI_Init_thread";
  for (Elf_Scn* section : sections) {
    const Elf_Data* data = lib.getdata(section, nullptr);
    if (data == nullptr || data->d_buf == nullptr)
      continue;
    const std::string_view bytes(static_cast<const char*>(data->d_buf), data->d_size);
    if (bytes.find(marker) != std::string_view::npos)
      return true;
  }
  return false;
}

} // namespace

elf_dynamic read_elf_dynamic(const std::string& path) {
  elf_dynamic result;
  std::string problem;
  const libelf_functions* const elf_fn = libelf(problem);
  if (elf_fn == nullptr) {
    result.error = path + ": cannot be read: " + problem;
    return result;
  }
  const libelf_functions& lib = *elf_fn;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    result.error = path + ": cannot open";
    return result;
  }
  Elf* elf = lib.begin(fd, ELF_C_READ, nullptr);
  if (elf == nullptr || lib.kind(elf) != ELF_K_ELF) {
    result.error = path + ": not an ELF executable";
  } else {
    bool dynamic = false;
    bool has_symtab = false;
    std::vector<Elf_Scn*> read_only_data;
    Elf_Scn* scn = nullptr;
    while ((scn = lib.nextscn(elf, scn)) != nullptr) {
      GElf_Shdr shdr;
      if (lib.getshdr(scn, &shdr) == nullptr)
        continue;
      if (shdr.sh_type == SHT_PROGBITS && (shdr.sh_flags & SHF_ALLOC) != 0 &&
          (shdr.sh_flags & (SHF_WRITE | SHF_EXECINSTR)) == 0)
        read_only_data.push_back(scn);
      has_symtab = has_symtab || shdr.sh_type == SHT_SYMTAB;
      if (shdr.sh_entsize == 0)
        continue;
      Elf_Data* data = lib.getdata(scn, nullptr);
      const size_t count = shdr.sh_size / shdr.sh_entsize;
      if (shdr.sh_type == SHT_DYNAMIC) {
        dynamic = true;
        for (size_t i = 0; data != nullptr && i < count; ++i) {
          GElf_Dyn dyn;
          if (lib.getdyn(data, static_cast<int>(i), &dyn) == nullptr)
            break;
          if (dyn.d_tag != DT_NEEDED)
            continue;
          if (const char* name = lib.strptr(elf, shdr.sh_link, dyn.d_un.d_val))
            result.libraries.emplace_back(name);
        }
      } else if (shdr.sh_type == SHT_DYNSYM || shdr.sh_type == SHT_SYMTAB) {
        const bool dynsym = shdr.sh_type == SHT_DYNSYM;
        for (size_t i = 1; data != nullptr && i < count; ++i) {
          GElf_Sym sym;
          if (lib.getsym(data, static_cast<int>(i), &sym) == nullptr)
            break;
          const char* name = lib.strptr(elf, shdr.sh_link, sym.st_name);
          if (name == nullptr || name[0] == '\0')
            continue;
          const bool defined = sym.st_shndx != SHN_UNDEF;
          if (defined)
            note_start_symbol(name, result);
          if (dynsym)
            (defined ? result.exported : result.imported).emplace_back(name);
        }
      }
    }
    if (!has_symtab && !result.defines_mpi_start && flavor_of_libraries(result.libraries).empty())
      result.carries_mpi_library = holds_mpi_messages(lib, read_only_data);
    result.statically_linked = !dynamic;
    if (!dynamic)
      result.error = path + ": statically linked (no dynamic section); link it with -lstrata";
  }
  if (elf != nullptr)
    lib.end(elf);
  ::close(fd);
  return result;
}

std::string flavor_of_library(const std::string& soname) {
  auto starts = [&](const char* prefix) { return soname.rfind(prefix, 0) == 0; };
  if (starts("libmpi.so") || starts("libmpi_mpifh.so") || starts("libmpi_usempif08.so") ||
      starts("libmpi_cxx.so"))
    return "openmpi";
  if (starts("libmpich.so") || starts("libmpichfort.so") || starts("libmpichcxx.so") ||
      starts("libmpi.so.12"))
    return "mpich";
  return {};
}

std::string flavor_of_libraries(const std::vector<std::string>& libraries) {
  for (const std::string& lib : libraries)
    if (std::string flavor = flavor_of_library(lib); !flavor.empty())
      return flavor;
  return {};
}

} // namespace strata::common
