// What the analysis processes of one communicator agree on after each step of their work: whether
// any failed, and at process 0 the reason of the lowest-numbered one. Every step runs on every
// process and returns on every process, so a damaged archive seen by one never leaves the others
// waiting (the replay and the XML export over MPI).
#pragma once

#include <mpi.h>

#include <ctime>
#include <exception>
#include <string>

namespace strata::analyze {

struct comm_info {
  MPI_Comm comm;
  int size = 1, rank = 0;
  double* work_cpu_s = nullptr; // where the CPU time of the steps' own work adds up
};

inline comm_info comm_info_of(MPI_Comm comm) {
  comm_info c{comm};
  MPI_Comm_size(comm, &c.size);
  MPI_Comm_rank(comm, &c.rank);
  return c;
}

inline double process_cpu_s() {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// Every process learns whether any failed; process 0 gets the reason of the lowest-numbered one.
inline bool agree(const comm_info& c, const std::string& mine, std::string& error) {
  const int me = mine.empty() ? c.size : c.rank;
  int first = c.size;
  MPI_Allreduce(&me, &first, 1, MPI_INT, MPI_MIN, c.comm);
  if (first == c.size)
    return true;
  if (first == 0) {
    if (c.rank == 0)
      error = mine;
  } else if (c.rank == first) {
    MPI_Send(mine.data(), static_cast<int>(mine.size()), MPI_CHAR, 0, 0, c.comm);
  } else if (c.rank == 0) {
    MPI_Status status;
    MPI_Probe(first, 0, c.comm, &status);
    int length = 0;
    MPI_Get_count(&status, MPI_CHAR, &length);
    error.resize(static_cast<size_t>(length));
    MPI_Recv(error.data(), length, MPI_CHAR, first, 0, c.comm, MPI_STATUS_IGNORE);
  }
  return false;
}

// Runs `body` here, turning what it throws into this process's reason, then agrees.
template <class F> bool step(const comm_info& c, std::string& error, F&& body) {
  std::string mine;
  const double start = process_cpu_s();
  try {
    body();
  } catch (const std::exception& e) {
    mine = e.what();
    if (mine.empty())
      mine = "analysis failed";
  }
  if (c.work_cpu_s != nullptr)
    *c.work_cpu_s += process_cpu_s() - start;
  return agree(c, mine, error);
}

} // namespace strata::analyze
