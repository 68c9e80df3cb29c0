// Three abstraction levels, as in the HieraAnalyses paper's OOPS example: TopologyGrid::bcast
// (level 0, called by main) calls Group::bcast (level 1), which calls MPI_Bcast (level 2). ITER
// times, then one MPI_Barrier called directly (level 0).
#include <strata/annotate.h>

#include <mpi.h>

#include <cstdlib>

namespace {
class Group {
public:
  void bcast(int& value) {
    STRATA_REGION("Group::bcast");
    MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD); /* MPI BCAST */
  }
};

class TopologyGrid {
public:
  void bcast(int& value) {
    STRATA_REGION("TopologyGrid::bcast");
    group_.bcast(value);
  }

private:
  Group group_;
};
} // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 5;
  MPI_Init(&argc, &argv);
  TopologyGrid grid;
  int value = 0;
  for (int i = 0; i < iterations; ++i)
    grid.bcast(value);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
