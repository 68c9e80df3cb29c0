// The facts of a job that its record carries besides the figures: who ran what, where, with
// which MPI and settings, and the one job id all ranks share. Read from this process; no MPI
// here (the module passes in what only MPI can say).
#pragma once

#include "profiler/rank_file.hpp"

#include <string>

namespace strata::profiler {

// This process's facts into the header: uid, pid, user, host, executable, argv, the MPI
// settings of the environment, the language, whether the program defines MPI functions itself.
// `mpi_library` is MPI_Get_library_version's text (its first line is kept); `init_language` the
// language the program started MPI from, as the core says it ("strata.init_language"; null when
// it does not).
void fill_process_facts(rank_header& h, const char* mpi_flavor, const std::string& mpi_library,
                        const char* init_language);

// The record's language, as rank_header::fortran holds it: 2 Python when a CPython interpreter
// runs the program (mpi4py; whatever Fortran its modules load), 1 Fortran when the program
// started MPI from Fortran, else 0 (C or C++: a C++ program that links a Fortran library is still
// a C++ program).
int32_t language_code(const char* init_language);

// The resource manager's job (and step) id, "slurm:123.0", "pbs:...", "lsf:...", "flux:...";
// empty when no resource manager started the job.
std::string job_id_from_environment();

// The job id without a resource manager, made by rank 0 and shared with the others.
std::string local_job_id(const std::string& host, long long pid, long long start_s);

// A file-name-safe key for a job id.
std::string job_key(const std::string& job_id);

// MPI settings the user or the site chose (OMPI_MCA_, MPICH_, UCX_, STRATA_, ...); not the
// launcher's own wiring (ranks, ports, session directories), which differs in every job and says
// nothing about how MPI was configured. `kv` is one "NAME=VALUE" of the environment.
bool is_mpi_variable(const char* kv);

// Whether the program itself defines MPI functions (its own PMPI layer): the first definition of
// MPI_Send in the global scope is in the main executable.
bool application_intercepts_pmpi();

} // namespace strata::profiler
