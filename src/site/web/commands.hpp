// `strata site token` and `strata site serve`: the command-line side of the web interface.
// src/site/commands.cpp adds them to `strata site` and calls run() when one was given.
#pragma once

#include "common/wing_commands.hpp"
#include "site/web/server.hpp"

#include <string>

namespace strata::web {

class web_commands {
public:
  explicit web_commands(CLI::App& site);
  bool chosen() const; // token or serve was given
  int run() const;

private:
  CLI::App* token_ = nullptr;
  CLI::App* serve_ = nullptr;
  std::string token_db_;
  int ttl_days_ = 90;
  bool revoke_ = false;
  std::string for_user_; // root only
  server_options serve_options_;
};

} // namespace strata::web
