// The MPI library's own variables through the MPI tool information interface (MPI_T): the
// performance variables of every rank, read in a session of the module's own from the end of
// MPI_Init to MPI_Finalize (and at MPI_Pcontrol(4)), reduced over the ranks at finalize, and
// the control variables rank 0's library reports. Nothing on the call path: the variables are
// read only when the profile's figures are. Every MPI_T call is made from a callback of the
// module, so it reaches MPI directly and no layer sees it as the program's.
#pragma once

#include <mpi.h>

#include "profiler/mpi_t_totals.hpp"
#include "profiler/record/mpi_t_record.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata::profiler {

struct module_state;

struct mpi_t_state {
  bool wanted = true;       // the option mpi_t (mpi_t=0 turns the reading off)
  bool automatic = false;   // mpi_t=auto: read only where the job is long enough
  bool asked = false;       // the program asked for the variables (MPI_Pcontrol 2 or 4)
  std::string not_read;     // mpi_t=auto on a short job: why the variables were not read
  bool started = false;     // MPI_T_init_thread succeeded
  bool tried = false;       // MPI_T_init_thread was called (once)
  bool initialized = false; // MPI_T_init_thread succeeded in load, before MPI_Init (Open MPI)
  std::string problem;      // one line when MPI_T could not be used on this rank
  MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL;
  std::vector<mpi_t::pvar_description> pvars;
  std::vector<MPI_T_pvar_handle> handles; // MPI_T_PVAR_HANDLE_NULL where not read
  std::vector<MPI_Datatype> types;
  std::vector<uint64_t> baseline; // what accumulated before MPI_Pcontrol(2)
  uint64_t pvars_exposed = 0, cvars_exposed = 0;
  std::optional<uint64_t> events_exposed;
};

// With mpi_t=auto (the default) the variables are read only where the program asks for them
// (MPI_Pcontrol 2 or 4) or at MPI_Finalize of a job that ran at least min_job_s_for_mpi_t
// (1000 times what starting and reading MPI_T costs: under 0.1 %); otherwise the record says why
// they were not read, and under Open MPI, MPI_T is never started. mpi_t=1 reads them in any job.
double min_job_s_for_mpi_t();

// In the module's load, before MPI_Init reaches MPI, under Open MPI only, with mpi_t=1:
// MPI_T_init_thread.
// Open MPI's opens every component of every framework to list their variables; before MPI_Init
// that work is shared with MPI_Init, which opens those components anyway (after MPI_Init it
// loads again the transport libraries MPI_Init unloaded, about 200 ms). The components are
// loaded ahead in scopes of their own (open_mpi_components.hpp), which spares most of the
// dynamic linker's work. MPI_Init then closes (and unloads) the components it does not select,
// whose control variables live in their own memory: the components MPI_T_init_thread loaded (and
// so the libraries they need) stay loaded until the process exits, so that reading those
// variables at finalize reads memory that is still there. (Letting them go after MPI_Finalize
// would cost about 2.5 ms of unmapping per job, for nothing: no code of theirs runs once Open
// MPI has closed them.)
void mpi_t_load(module_state& s);

// In mpi_ready, after the profile's own start: under MPICH, MPI_T, the session and one handle per
// variable, whatever the option but 0 (see mpi_t.cpp). Under Open MPI at the first reading
// instead (MPI_Pcontrol 2 or 4, or MPI_Finalize): its variables are all kept continuously, so
// nothing is lost.
void mpi_t_start(module_state& s);

// MPI_Pcontrol(2): what accumulated so far is left out of later readings.
void mpi_t_reset(module_state& s);

// This rank's words of the ranks' agreement on the variables (mpi_t_totals.hpp), which the
// figures' MPI_Allreduce carries (starting MPI_T at the first need, see min_job_s_for_mpi_t);
// zeros when the reading is off.
mpi_t::agreement_layout mpi_t_agreement(module_state& s, bool at_finalize);

// This rank's performance variables packed (mpi_t_totals.hpp) to go up the figures' tree, given
// the agreement words reduced over the ranks: as many words on every rank, none when the
// reading is off or the ranks do not agree.
std::vector<uint64_t> mpi_t_packed(module_state& s, const mpi_t::agreement_layout& reduced);

// Rank 0: the section from every rank's packed variables combined (nullopt on the other ranks,
// and when the reading is off). At finalize also the control variables, and MPI_T is closed on
// every rank.
std::optional<record::mpi_t_section> mpi_t_section(module_state& s,
                                                   const mpi_t::agreement_layout& reduced,
                                                   const std::vector<uint64_t>& combined,
                                                   bool at_finalize);

} // namespace strata::profiler
