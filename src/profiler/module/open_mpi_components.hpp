// Open MPI's components (shared objects named mca_<framework>_<component>.so) around the
// profile's MPI_T_init_thread, under Open MPI only.
//
// Open MPI 4.1's MPI_T_init_thread loads every component of every framework of its MPI, runtime
// and portability layers, each RTLD_GLOBAL. Each object it loads joins the process's global
// scope, so each symbol lookup of the next one walks past every component before it: about two
// thirds of MPI_T_init_thread's instructions were the dynamic linker's lookups. Loaded ahead
// with RTLD_LOCAL, each component is relocated against the program's own objects and its own
// dependencies only; Open MPI's dlopen then finds it loaded and only makes it global, so the
// process ends with the same objects in the same global scope as without the profile.
#pragma once

#include <set>
#include <string>

namespace strata::profiler::open_mpi {

// The paths of the components loaded now (dl_iterate_phdr; only those, not every object's name).
std::set<std::string> loaded_components();

// Loads, each with RTLD_LAZY | RTLD_LOCAL, the components that MPI_T_init_thread will load: the
// mca_<framework>_*.so files, in the directories Open MPI takes its components from, of the
// frameworks the process's Open MPI libraries define (ompi_, opal_ or orte_<framework>
// _base_framework: not OpenSHMEM's, which MPI_T does not register). Their handles are never
// closed: Open MPI's variables live in the components, and MPI_Init unloads those it does not
// select, which the profile still reads at finalize. Returns the paths it loaded; none where it
// cannot be sure which directories those are (this process's libmpi is not the one Strata was
// built against, and OMPI_MCA_mca_base_component_path does not name them).
std::set<std::string> load_ahead();

} // namespace strata::profiler::open_mpi
