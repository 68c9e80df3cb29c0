#include "user_report.hpp"

#include "config/config.hpp"
#include "options.hpp"
#include "profiler/record/render.hpp"

#include <optional>

namespace strata::profiler {

std::string render_user_report(const record::job_record& job) {
  std::optional<strata::model::machine_model> model;
  std::string problem;
  if (const std::string& path = options::current().model; !path.empty()) {
    std::string text;
    if (!config::read_file(path, text)) {
      problem = std::string("STRATA_MODEL: cannot read ") + path + "\n";
    } else {
      strata::model::model_read_result m =
          strata::model::read_model(text, strata::model::model_parts::routines);
      if (m.ok())
        model = std::move(m.model);
      else
        problem = std::string("STRATA_MODEL: ") + path + ": " + m.error + "\n";
    }
  }
  return problem + record::render(job, record::report_format::text, model ? &*model : nullptr);
}

} // namespace strata::profiler
