// The dynamic linking facts of an ELF file, read with libelf (loaded at the first read), and
// the MPI implementation its libraries name: what the launcher decides a program's MPI and
// core by, and what the core checks a patched PMPI tool with. No MPI here.
#pragma once

#include <string>
#include <vector>

namespace strata::common {

// The dynamic linking facts of an ELF file: its DT_NEEDED entries and the names of the symbols
// it imports (undefined) and exports (defined) in .dynsym; or an error. Also whether the file
// itself defines MPI's start (MPI_Init, MPI_Init_thread or MPI_Session_init, in .dynsym or in a
// .symtab that was not stripped) and Strata's (ZMPI_Init): a program with its MPI library linked
// in, ahead of which no preloaded core can be placed, unless Strata is linked in with it.
struct elf_dynamic {
  std::vector<std::string> libraries;
  std::vector<std::string> imported;
  std::vector<std::string> exported;
  bool statically_linked = false; // no dynamic section (then also the error)
  bool defines_mpi_start = false;
  bool defines_strata = false;
  // Stripped (no .symtab), no MPI library needed, and MPI's own messages in its read-only data:
  // an MPI library linked in that no symbol shows.
  bool carries_mpi_library = false;
  std::string error;
};
elf_dynamic read_elf_dynamic(const std::string& path);

// The MPI flavor an ELF file needs ("openmpi", "mpich"), from its DT_NEEDED entries; "" if none.
std::string flavor_of_libraries(const std::vector<std::string>& libraries);

// "openmpi" or "mpich" from a library soname, or "" when it is neither.
std::string flavor_of_library(const std::string& soname);

} // namespace strata::common
