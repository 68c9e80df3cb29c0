// Whether a return address lies in the code of a CPython extension module: a shared object
// that exports PyInit_<the first part of its file name>, as the interpreter requires of one.
#pragma once

#include <cstdint>

namespace strata::python_sites {

// Reads the loaded objects' code ranges (dl_iterate_phdr) and which of them are extension
// modules. Called once at start; an address in none of them (an object loaded since) makes
// in_extension_module read them again, when the set of loaded objects has changed.
void note_loaded_objects();

bool in_extension_module(uintptr_t address);

} // namespace strata::python_sites
