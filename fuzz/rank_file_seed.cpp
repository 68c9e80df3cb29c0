// Writes a real rank file, as a killed job leaves it, to the path in argv[1]: a seed for
// rank_file_fuzz (scripts/fuzz.sh).
#include "profiler/rank_file.hpp"

int main(int argc, char** argv) {
  if (argc != 2)
    return 2;
  auto m = strata::profiler::create_rank_file(argv[1], {"MPI_Init", "MPI_Send"});
  m.slots[1].calls = 3;
  m.unmap();
}
