// `strata site serve`: the web interface over the site store. cpp-httplib serves a few HTML
// shells, one bundled script (page/: Chart.js and the page code, built by esbuild) and the JSON
// API the pages fetch; every string from a job reaches the browser either HTML-escaped by the
// server or as JSON that the page inserts as text. Who may see what is decided here, in the
// queries: a user's requests are restricted to their own jobs, admins (a Unix group) see all.
#pragma once

#include <cstdint>
#include <string>

namespace strata::web {

struct server_options {
  std::string db_url;
  std::string bind = "127.0.0.1";
  int port = 8080;
  std::string admin_group = "strata-admin";
  std::string asset_path;       // the bundled strata-web.js
  int site_cache_seconds = 300; // between recomputations of the site page's figures
  bool secure_cookie = false;   // behind a TLS proxy: mark the session cookie Secure
};

// Serves until SIGINT/SIGTERM. Returns the exit status; prints one line on failure.
int serve(const server_options& options);

} // namespace strata::web
