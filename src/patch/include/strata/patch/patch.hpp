// Turns a binary PMPI tool (a shared object that wraps MPI_X and calls PMPI_X) into a Strata
// module: its imported PMPI_X references (the C binding) are renamed to ZMPI_X so they bind to
// the next layer exported by Strata's core instead of the MPI library. Imported Fortran
// manglings (pmpi_x_, pmpi_x__, pmpi_x, PMPI_X in capitals) are kept: the MPI's Fortran PMPI
// binding calls the C function, which is the core's entry point and goes to the next layer
// from the calling tool's.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace strata::patch {

struct renamed_symbol {
  std::string from, to;
  // True when the import was bound to a version of another library (e.g. PMPI_Send@MPI_1.0);
  // the binding is dropped because no library defines ZMPI_Send at that version.
  bool version_cleared = false;
};

struct patch_result {
  bool ok = false;
  std::string error; // one human-readable sentence; empty when ok
  std::vector<renamed_symbol> renamed;
  std::vector<std::string> fortran_kept; // imported Fortran PMPI manglings, left as they are
};

// Decides what patching `image` (the bytes of an ELF shared object) would rename. Pure: no I/O,
// never throws, safe on arbitrary bytes. Fails when the file imports no PMPI function at all.
patch_result analyze(std::span<const unsigned char> image);

// Writes a patched copy of in_path to out_path (atomically, with in_path's permission bits).
// in_path is never modified; out_path is left untouched on failure. Errors name the file.
patch_result patch_file(const std::string& in_path, const std::string& out_path);

} // namespace strata::patch
