#include "site/web/commands.hpp"

#include "launch/launch.hpp"
#include "site/store_commands.hpp"
#include "site/web/tokens.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace strata::web {
namespace {

// The bundle beside the program: <prefix>/share/strata/web/site, where the build puts it in the
// build tree and `cmake --install` in an installed tree.
std::string default_asset_path() {
  return launch::find_layout(launch::self_executable()).prefix +
         "/share/strata/web/site/strata-web.js";
}

} // namespace

web_commands::web_commands(CLI::App& site) {
  token_ = site.add_subcommand("token", "issue a login token for the web interface to you");
  token_->add_option("--db", token_db_, "store URL (default: $STRATA_SITE_DB or the install's)");
  token_->add_option("--ttl", ttl_days_, "days the token stays valid")->check(CLI::Range(1, 3650));
  token_->add_flag("--revoke", revoke_, "revoke all your tokens instead");
  token_->add_option("--user", for_user_, "root only: issue (or revoke) for this user instead");

  serve_ = site.add_subcommand("serve", "the web interface: jobs, job reports, trends, site");
  serve_->add_option("--db", serve_options_.db_url, "store URL");
  serve_->add_option("--port", serve_options_.port, "TCP port")->check(CLI::Range(1, 65535));
  serve_->add_option("--bind", serve_options_.bind, "address to listen on");
  serve_->add_option("--admin-group", serve_options_.admin_group,
                     "Unix group whose members see every job");
  serve_->add_option("--assets", serve_options_.asset_path,
                     "the bundled strata-web.js (default: PREFIX/share/strata/web/site)");
  serve_
      ->add_option("--site-cache", serve_options_.site_cache_seconds,
                   "seconds the site page's figures stay fresh")
      ->check(CLI::Range(0, 86400));
  serve_->add_flag("--secure-cookie", serve_options_.secure_cookie,
                   "mark the session cookie Secure (behind an HTTPS proxy)");
}

bool web_commands::chosen() const {
  return token_->parsed() || serve_->parsed();
}

int web_commands::run() const {
  if (serve_->parsed()) {
    server_options o = serve_options_;
    if (o.db_url.empty())
      o.db_url = site::default_db_url();
    if (o.asset_path.empty()) {
      const char* env = std::getenv("STRATA_WEB_ASSET");
      o.asset_path = env != nullptr && *env != '\0' ? env : default_asset_path();
    }
    return serve(o);
  }
  const std::string url = token_db_.empty() ? site::default_db_url() : token_db_;
  try {
    auto db = site::store::open(url);
    identity who = calling_user();
    if (!for_user_.empty()) {
      if (who.uid != 0) {
        std::fprintf(stderr, "strata site token: only root may use --user (you are %s)\n",
                     who.user.c_str());
        return 2;
      }
      const std::optional<identity> named = user_named(for_user_);
      if (!named) {
        std::fprintf(stderr, "strata site token: no user named \"%s\"\n", for_user_.c_str());
        return 2;
      }
      who = *named;
    }
    const auto t = static_cast<std::int64_t>(std::time(nullptr));
    if (revoke_) {
      const std::int64_t n = revoke_tokens(*db, who.uid, t);
      std::printf("revoked %lld token%s of %s\n", static_cast<long long>(n), n == 1 ? "" : "s",
                  who.user.c_str());
      return 0;
    }
    const issued_token token = issue_token(*db, who, ttl_days_, t);
    char until[32] = "";
    const std::time_t expires = token.expires;
    std::tm tm{};
    ::gmtime_r(&expires, &tm);
    std::strftime(until, sizeof until, "%Y-%m-%d %H:%M UTC", &tm);
    std::fprintf(stderr, "token for %s (uid %lld), valid until %s; it is shown only once:\n",
                 who.user.c_str(), static_cast<long long>(who.uid), until);
    std::printf("%s\n", token.token.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata site token: %s\n", e.what());
    return 1;
  }
}

} // namespace strata::web
