// Writes DIR/seed.rank0.hang and DIR/seed.rank1.hang with the writer: two ranks, one receiving
// from the other with requests pending, the other (a Python rank) computing. The hang_state
// target's seeds.
#include "hang/state.hpp"

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: hang_state_seed DIR\n");
    return 2;
  }
  using namespace strata::hang;
  for (int32_t rank = 0; rank < 2; ++rank) {
    std::string error;
    auto w = state_writer::open(
        std::string(argv[1]) + "/seed.rank" + std::to_string(rank) + ".hang", rank, 2, 2, error);
    if (!w) {
      std::fprintf(stderr, "hang_state_seed: %s\n", error.c_str());
      return 1;
    }
    thread_state t;
    t.phase = rank == 0 ? thread_phase::in_mpi : thread_phase::outside_mpi;
    t.lang = language::c;
    t.routine = rank == 0 ? "MPI_Waitall" : "MPI_Allreduce";
    t.file = "halo.c";
    t.line = 40 + static_cast<uint32_t>(rank);
    t.function = "exchange";
    t.comm = {1, 2, 0, 1};
    t.since_ns = 1'000'000'000;
    t.pending = {{op_kind::recv, true, 1 - rank, 5, 64, t.comm},
                 {op_kind::send, false, 1 - rank, 6, 64, t.comm}};
    t.pending_total = 2;
    if (rank == 1) { // a Python rank: its site the script's line, its compiled caller beside it
      t.lang = language::python;
      t.file = "halo.py";
      t.function = "<module>";
      t.native_file = "mpi4py/MPI.c";
      t.native_line = 1200;
      t.native_function = "__pyx_pf_6mpi4py_3MPI_9Intracomm_allreduce";
    }
    w->write(0, t);
  }
  return 0;
}
