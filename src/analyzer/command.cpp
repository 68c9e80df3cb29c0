#include "analyzer/command.hpp"

#include "analyzer/analysis.hpp"
#include "analyzer/render.hpp"
#include "analyzer/xml_export.hpp"

#include <cstdio>
#include <exception>
#include <filesystem>

namespace strata::analyze {

int analyze_command(const std::string& trace, const std::string& format) {
  try {
    const report r = analyze_trace(trace);
    const std::string text = format == "json"  ? render_json(r)
                             : format == "csv" ? render_csv(r)
                                               : render_text(r);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata analyze: %s\n", e.what());
    return 1;
  }
}

int export_xml_command(const std::string& trace, const std::string& out_dir) {
  try {
    std::string dir = out_dir;
    if (dir.empty()) {
      std::filesystem::path base(trace);
      if (!base.has_filename())
        base = base.parent_path();
      if (base.extension() == ".otf2") // the anchor file: its directory is the archive
        base = base.parent_path();
      dir = base.string() + "-xml";
    }
    const xml_export_result x = export_xml(trace, dir);
    std::printf("%s: %u ranks, %llu operations\n", x.config.c_str(), x.ranks, x.operations);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata trace export: %s\n", e.what());
    return 1;
  }
}

} // namespace strata::analyze
