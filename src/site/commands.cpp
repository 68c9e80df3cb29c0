// `strata site ...`: the store's commands (store_commands.cpp) and the web interface's
// (web_commands) under one `site` command.
#include "site/commands.hpp"

#include "site/store_commands.hpp"
#include "site/web/commands.hpp"

#include <CLI/CLI.hpp>

namespace strata::site {
namespace {
class site_wing final : public cli::wing_commands {
public:
  explicit site_wing(CLI::App& strata)
      : site_(strata.add_subcommand("site", "site store: ingest job records, reports, mail")),
        store_(*site_), web_(*site_) {}

  [[nodiscard]] std::optional<int> run() const override {
    if (!site_->parsed())
      return std::nullopt;
    return web_.chosen() ? web_.run() : store_.run();
  }

private:
  CLI::App* site_;
  store_commands store_;
  web::web_commands web_;
};
} // namespace

std::unique_ptr<cli::wing_commands> add_site_commands(CLI::App& strata) {
  return std::make_unique<site_wing>(strata);
}

} // namespace strata::site
