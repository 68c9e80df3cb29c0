#include "analyzer/command.hpp"

#include "analyzer/analysis.hpp"
#include "analyzer/render.hpp"
#include "analyzer/xml_export.hpp"

#include <CLI/CLI.hpp>

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

namespace {
class analyzer_commands final : public cli::wing_commands {
public:
  explicit analyzer_commands(CLI::App& strata) {
    analyze_ = strata.add_subcommand(
        "analyze", "event graph of an OTF2 trace: operations per level and call site, wait states");
    analyze_->add_option("TRACE", trace_, "OTF2 archive (directory or anchor file)")->required();
    auto* json_flag = analyze_->add_flag("--json", json_, "JSON instead of text tables");
    analyze_->add_flag("--csv", csv_, "CSV instead of text tables")->excludes(json_flag);
    CLI::App* trace = strata.add_subcommand("trace", "work with OTF2 traces");
    trace->require_subcommand(1);
    export_ = trace->add_subcommand("export", "convert a trace to another format");
    export_->add_flag("--xml", as_xml_, "the HieraAnalyses XML (one file per rank)")->required();
    export_->add_option("TRACE", export_trace_, "OTF2 archive")->required();
    export_->add_option("--out", export_out_, "output directory (default: TRACE-xml)");
  }

  [[nodiscard]] std::optional<int> run() const override {
    if (analyze_->parsed())
      return analyze_command(trace_, json_ ? "json" : csv_ ? "csv" : "text");
    if (export_->parsed())
      return export_xml_command(export_trace_, export_out_);
    return std::nullopt;
  }

private:
  std::string trace_, export_trace_, export_out_;
  bool json_ = false, csv_ = false, as_xml_ = false;
  CLI::App* analyze_ = nullptr;
  CLI::App* export_ = nullptr;
};
} // namespace

std::unique_ptr<cli::wing_commands> add_analyzer_commands(CLI::App& strata) {
  return std::make_unique<analyzer_commands>(strata);
}

} // namespace strata::analyze
