// libFuzzer target for the analyzer's reading of OTF2 archives. We parse no bytes by hand (the
// OTF2 library does), so the input damages one file of a valid archive — overwrites bytes at an
// offset, truncates it, or replaces it whole — and the analysis and the XML export must then
// either succeed or throw one trace_error with a one-line message; never crash, hang or throw
// anything else.
#include "analyzer/analysis.hpp"
#include "analyzer/trace_builder.hpp"
#include "analyzer/xml_export.hpp"

#include <otf2/OTF2_Events.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;
using namespace strata::analyze;

namespace {

const fs::path& pristine() {
  static const fs::path dir = [] {
    const fs::path d =
        fs::temp_directory_path() / ("strata_analyze_fuzz_" + std::to_string(getpid()));
    fs::remove_all(d);
    fs::create_directories(d);
    trace_builder b((d / "trace").string(), 2);
    const uint32_t step = b.region("step", false);
    for (uint64_t i = 0; i < 50; ++i) {
      const uint64_t t = 1000 * i;
      for (uint32_t r = 0; r < 2; ++r)
        b.enter(r, t, step, b.site("f.c", 10));
      b.mpi_isend(0, t + 10, t + 20, 1, 3, 8, i, b.site("f.c", 11));
      b.mpi_irecv(1, t + 5, t + 15, i, b.site("f.c", 12));
      b.mpi_wait(0, t + 30, t + 40, {{false, i}});
      b.mpi_wait(1, t + 30, t + 50, {{true, i, 0, 3, 8}});
      for (uint32_t r = 0; r < 2; ++r) {
        b.mpi_collective(r, "MPI_Bcast", OTF2_COLLECTIVE_OP_BCAST, t + 60 + r, t + 70, 0);
        b.leave(r, t + 80, step);
      }
    }
    b.close();
    return d / "trace";
  }();
  return dir;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3)
    return 0;
  const fs::path& good = pristine();
  const fs::path work = good.parent_path() / "work";
  fs::remove_all(work);
  fs::copy(good, work, fs::copy_options::recursive);
  const char* files[] = {"traces.otf2", "traces.def", "traces/0.evt", "traces/1.evt",
                         "traces/0.def"};
  const fs::path victim = work / files[data[0] % 5];
  const unsigned mode = (data[0] / 5) % 3;
  std::string bytes;
  {
    std::ifstream in(victim, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t offset = bytes.empty() ? 0 : (data[1] | (size_t{data[2]} << 8)) % bytes.size();
  const std::string payload(reinterpret_cast<const char*>(data + 3), size - 3);
  if (mode == 0) {
    bytes.replace(offset, std::min(payload.size(), bytes.size() - offset), payload);
  } else if (mode == 1) {
    bytes.resize(offset);
  } else {
    bytes = payload;
  }
  std::ofstream(victim, std::ios::binary | std::ios::trunc) << bytes;

  for (int pass = 0; pass < 2; ++pass) {
    try {
      if (pass == 0)
        analyze_trace(work.string());
      else
        export_xml(work.string(), (work.parent_path() / "xml").string());
    } catch (const trace_error& e) {
      const std::string what = e.what();
      if (what.empty() || what.find('\n') != std::string::npos)
        std::abort();
    }
  }
  return 0;
}
