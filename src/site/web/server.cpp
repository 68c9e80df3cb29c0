#include "site/web/server.hpp"
#include "common/http_server.hpp"
#include "common/markup.hpp"

#include "profiler/record/record.hpp"
#include "profiler/record/render.hpp"
#include "site/health.hpp"
#include "site/job_pairs.hpp"
#include "site/queries.hpp"
#include "site/report.hpp"
#include "site/store.hpp"
#include "site/web/reply.hpp"
#include "site/web/sessions.hpp"
#include "site/web/tokens.hpp"
#include "site/web/views.hpp"
#include "site/web/waste.hpp"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace strata::web {
namespace {

using nlohmann::json;
constexpr const char* session_cookie = "strata_session";
constexpr std::int64_t day = 86400;
constexpr std::int64_t count_bound = 10000; // jobs lists say "at least" beyond this

std::int64_t now() {
  return static_cast<std::int64_t>(std::time(nullptr));
}

// The last `days` UTC days up to `t`, the day of `t` included: whole days, which the store
// answers from its per-day tables without reading job rows.
site::period whole_days(std::int64_t days, std::int64_t t) {
  std::int64_t today = t / day * day;
  if (t < 0 && t % day != 0)
    today -= day;
  return {today + day - days * day, today + day};
}

// A request parameter that does not parse is the client's mistake: 400 with this message.
class bad_request : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// One store connection per concurrent request (a store is not shared between threads).
class store_pool {
public:
  explicit store_pool(std::string url) : url_(std::move(url)) {}
  class lease {
  public:
    lease(store_pool& pool, std::unique_ptr<site::store> s) : pool_(pool), store_(std::move(s)) {}
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;
    ~lease() { pool_.give_back(std::move(store_)); }
    site::store& operator*() { return *store_; }
    site::store* operator->() { return store_.get(); }

  private:
    store_pool& pool_;
    std::unique_ptr<site::store> store_;
  };
  lease take() {
    {
      const std::lock_guard lock(mutex_);
      if (!free_.empty()) {
        auto s = std::move(free_.back());
        free_.pop_back();
        return {*this, std::move(s)};
      }
    }
    return {*this, site::store::open(url_)};
  }

private:
  void give_back(std::unique_ptr<site::store> s) {
    const std::lock_guard lock(mutex_);
    free_.push_back(std::move(s));
  }
  std::string url_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<site::store>> free_;
};

struct viewer {
  identity who;
  bool admin = false;
};

std::optional<std::string> cookie_value(const httplib::Request& req, std::string_view name) {
  const std::string header = req.get_header_value("Cookie");
  std::size_t at = 0;
  while (at < header.size()) {
    std::size_t end = header.find(';', at);
    if (end == std::string::npos)
      end = header.size();
    std::string_view part(header.data() + at, end - at);
    while (!part.empty() && part.front() == ' ')
      part.remove_prefix(1);
    if (part.size() > name.size() && part.substr(0, name.size()) == name &&
        part[name.size()] == '=')
      return std::string(part.substr(name.size() + 1));
    at = end + 1;
  }
  return std::nullopt;
}

std::optional<std::int64_t> int_param(const httplib::Request& req, const std::string& name,
                                      std::int64_t min, std::int64_t max) {
  if (!req.has_param(name))
    return std::nullopt;
  const std::string v = req.get_param_value(name);
  if (v.empty())
    return std::nullopt;
  std::size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(v, &used);
  } catch (...) {
    used = 0;
  }
  if (used != v.size() || n < min || n > max)
    throw bad_request("parameter " + name + " must be an integer from " + std::to_string(min) +
                      " to " + std::to_string(max) + ", not \"" + v + "\"");
  return n;
}

// A bound as a person writes it: 0, 100, 0.5 (not 0.000000).
std::string shortest(double d) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", d);
  return text;
}

std::optional<double> number_param(const httplib::Request& req, const std::string& name, double min,
                                   double max) {
  if (!req.has_param(name) || req.get_param_value(name).empty())
    return std::nullopt;
  const std::string v = req.get_param_value(name);
  std::size_t used = 0;
  double d = 0;
  try {
    d = std::stod(v, &used);
  } catch (...) {
    used = 0;
  }
  if (used != v.size() || !(d >= min && d <= max))
    throw bad_request("parameter " + name + " must be a number from " + shortest(min) + " to " +
                      shortest(max) + ", not \"" + v + "\"");
  return d;
}

std::optional<std::string> text_param(const httplib::Request& req, const std::string& name) {
  if (!req.has_param(name) || req.get_param_value(name).empty())
    return std::nullopt;
  std::string v = req.get_param_value(name);
  if (v.size() > 256)
    throw bad_request("parameter " + name + " is longer than 256 characters");
  return v;
}

std::string page(const std::string& title, const std::string& page_name, const viewer* v,
                 const std::string& main_html, const std::string& data_attributes = {}) {
  std::string nav;
  if (v) {
    nav = "<nav><a href=\"/jobs\">Jobs</a> <a href=\"/waste\">Waste</a> <a "
          "href=\"/flagged\">Flagged</a> <a href=\"/user\">My trends</a>";
    if (v->admin)
      nav += " <a href=\"/site\">Site</a>";
    nav += " <span class=\"who\">" + escape_markup(v->who.user) + (v->admin ? " (admin)" : "") +
           "</span> <form method=\"post\" action=\"/logout\" class=\"inline\"><button>Log "
           "out</button></form></nav>";
  }
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" +
         escape_markup(title) +
         " - Strata</title>\n<link rel=\"icon\" href=\"/favicon.ico\"><link rel=\"stylesheet\" "
         "href=\"/assets/strata-web.css\">"
         "<script defer src=\"/assets/strata-web.js\"></script></head>\n<body data-page=\"" +
         escape_markup(page_name) + "\"" +
         (v ? " data-self=\"" + escape_markup(v->who.user) + "\"" : std::string()) +
         data_attributes + ">\n" + nav + "\n<main>\n<h1>" + escape_markup(title) + "</h1>\n" +
         main_html + "\n</main></body></html>\n";
}

constexpr const char* stylesheet = R"css(
body{font-family:sans-serif;margin:0}nav{background:#234;color:#fff;padding:6px 12px}
nav a{color:#fff;margin-right:12px}nav .who{margin-left:24px}form.inline{display:inline}
main{padding:12px;overflow-wrap:anywhere}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:2px 6px}td.n{text-align:right}tr.chosen{background:#ffd}
.chart{position:relative;width:760px;max-width:100%;height:320px;margin:12px 0}
button.expand{font-size:smaller}p.png{margin:-8px 0 8px;font-size:smaller}
.error{color:#a00}fieldset{display:inline-block;border:0}label{margin-right:8px}
.worse{background:#fcc;font-weight:bold}.better{background:#cfc}
figure.zoomable-heatmap svg{user-select:none;cursor:crosshair}figure.zoomable-heatmap form{margin:6px 0}
table.member-bars{margin:8px 0}td.bar{width:320px}span.bar{display:inline-block;height:10px;background:#0072B2}
)css";

std::string login_form(const std::string& message) {
  std::string body;
  if (!message.empty())
    body += "<p class=\"error\">" + escape_markup(message) + "</p>";
  body += "<p>Get a token on a login node with <code>strata site token</code>.</p>"
          "<form method=\"post\" action=\"/login\"><label>Token <input name=\"token\" "
          "type=\"password\" autocomplete=\"off\" size=\"70\"></label> <button "
          "type=\"submit\">Log in</button></form>";
  return page("Log in", "login", nullptr, body);
}

class web_server {
public:
  explicit web_server(const server_options& o) : options_(o), pool_(o.db_url) {}

  bool load_asset() {
    std::ifstream in(options_.asset_path, std::ios::binary);
    if (!in)
      return false;
    std::ostringstream s;
    s << in.rdbuf();
    script_ = std::make_shared<const fixed_body>(s.str());
    return true;
  }

  void routes(httplib::Server& http) {
    http.set_default_headers(security_headers());
    http.set_payload_max_length(std::size_t{64} * 1024);
    http.set_exception_handler(
        [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
          std::string what = "internal error";
          try {
            std::rethrow_exception(std::move(ep));
          } catch (const std::exception& e) {
            what = e.what();
          } catch (...) {
          }
          std::fprintf(stderr, "strata site serve: %s\n", what.c_str());
          res.status = 500;
          reply(req, res, json({{"error", what}}).dump(), "application/json");
        });

    http.Get("/assets/strata-web.js", [this](const httplib::Request& req, httplib::Response& res) {
      res.set_header("Cache-Control", "max-age=3600");
      reply(req, res, script_, "text/javascript; charset=utf-8");
    });
    http.Get("/favicon.ico", [](const httplib::Request&, httplib::Response& res) {
      res.set_header("Cache-Control", "max-age=86400");
      res.set_content(favicon_ico(), "image/x-icon");
    });
    http.Get("/assets/strata-web.css", [](const httplib::Request& req, httplib::Response& res) {
      reply(req, res, stylesheet, "text/css; charset=utf-8");
    });
    http.Get("/login", [](const httplib::Request& req, httplib::Response& res) {
      reply(req, res, login_form({}), "text/html; charset=utf-8");
    });
    http.Post("/login", [this](const httplib::Request& req, httplib::Response& res) {
      const std::string token(
          trim_token(req.has_param("token") ? req.get_param_value("token") : ""));
      std::optional<identity> who;
      {
        auto db = pool_.take();
        who = check_token(*db, token, now());
      }
      if (!who) {
        res.status = 401;
        reply(req, res, login_form("Unknown, expired or revoked token."),
              "text/html; charset=utf-8");
        return;
      }
      std::string cookie = std::string(session_cookie) + "=" +
                           sessions_.open(sha256_hex(token), now()) +
                           "; Path=/; HttpOnly; SameSite=Strict";
      if (options_.secure_cookie)
        cookie += "; Secure";
      res.set_header("Set-Cookie", cookie);
      res.set_redirect("/jobs", 303);
    });
    http.Post("/logout", [this](const httplib::Request& req, httplib::Response& res) {
      if (const auto id = cookie_value(req, session_cookie))
        sessions_.close(*id);
      res.set_header("Set-Cookie", std::string(session_cookie) +
                                       "=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
      res.set_redirect("/login", 303);
    });
    http.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_redirect("/jobs", 303);
    });

    html_route(http, "/jobs", [](const httplib::Request&, const viewer& v) {
      return std::make_pair(200, page("Jobs", "jobs", &v, "<div id=\"app\"></div>"));
    });
    html_route(http, R"(/job/(\d+))", [this](const httplib::Request& req, const viewer& v) {
      const auto id = parse_id(req.matches[1]);
      std::optional<site::stored_job> sj;
      bool page_draws_pairs = false; // then the report's heat map would be a second one
      if (id) {
        auto db = pool_.take();
        sj = visible_job(*db, v, *id);
        page_draws_pairs = sj && site::has_pairs(*db, sj->job.job_id);
      }
      if (!sj)
        return std::make_pair(404, page("No such job", "error", &v,
                                        "<p class=\"error\">No job " +
                                            escape_markup(req.matches[1].str()) +
                                            " that you may see.</p>"));
      const std::string charts =
          "<h2>Time per rank (imbalance)</h2><div class=\"chart\"><canvas "
          "id=\"imbalance\"></canvas></div><h2>Message sizes</h2><div class=\"chart\"><canvas "
          "id=\"sizes\"></canvas></div>";
      return std::make_pair(
          200,
          page("Job " + sj->job.record_id, "job", &v,
               charts + "<h2>Report</h2>" +
                   job_report_html(sj->record_json, page_draws_pairs ? record::heat_map::left_out
                                                                     : record::heat_map::drawn),
               " data-job=\"" + std::to_string(sj->job.job_id) + "\""));
    });
    html_route(http, "/user", [](const httplib::Request& req, const viewer& v) {
      const std::string user = user_of(req, v);
      return std::make_pair(
          200, page("Trends of " + user, "user", &v,
                    "<div class=\"chart\"><canvas id=\"weeks-jobs\"></canvas></div><div "
                    "class=\"chart\"><canvas id=\"weeks-mpi\"></canvas></div><div "
                    "id=\"app\"></div>",
                    " data-user=\"" + escape_markup(user) + "\""));
    });
    html_route(http, "/site", [](const httplib::Request&, const viewer& v) {
      if (!v.admin)
        return std::make_pair(
            403, page("Site", "error", &v, "<p class=\"error\">The site page is for admins.</p>"));
      std::string charts;
      for (const char* id :
           {"by-size", "by-cpu-class", "by-user", "languages", "routines", "groups"})
        charts += std::string("<div class=\"chart\"><canvas id=\"") + id + "\"></canvas></div>";
      return std::make_pair(200, page("Site", "site", &v, charts + "<div id=\"app\"></div>"));
    });

    // Lists whose data the page fetches: jobs, users and programs by waste; flagged jobs and
    // regressions; two runs side by side.
    struct list_page {
      const char *path, *name, *title;
    };
    for (const list_page& p : {list_page{"/waste", "waste", "Waste: MPI time lost"},
                               list_page{"/flagged", "flagged", "Flagged jobs and regressions"},
                               list_page{"/compare", "compare", "Two runs compared"}})
      html_route(http, p.path, [p](const httplib::Request&, const viewer& v) {
        return std::make_pair(200, page(p.title, p.name, &v, "<div id=\"app\"></div>"));
      });

    api_route(http, "/api/waste", [this](const httplib::Request& req, const viewer& v) {
      site::job_filter f;
      f.owner = owner_param(req, v);
      const std::int64_t days = int_param(req, "days", 1, 36600).value_or(28);
      f.when = last_days(days);
      auto db = pool_.take();
      json out = waste_ranking(*db, f, waste_cache_);
      out["days"] = days;
      out["user"] = f.owner ? json(*f.owner) : json(nullptr);
      return out;
    });
    api_route(http, "/api/regressions", [this](const httplib::Request& req, const viewer& v) {
      const std::optional<std::string> owner = owner_param(req, v);
      const std::int64_t days = int_param(req, "days", 1, 36600).value_or(28);
      const site::period when = last_days(days);
      auto db = pool_.take();
      return json{
          {"regressions", site::regressions_json(site::regressions_in(*db, when, owner, 500))},
          {"count", site::count_regressions(*db, when, owner)},
          {"critical_mpi_percent", site::report_options{}.critical_mpi_percent},
          {"days", days},
          {"user", owner ? json(*owner) : json(nullptr)}};
    });
    api_route(http, "/api/me", [](const httplib::Request&, const viewer& v) {
      return json{{"user", v.who.user}, {"uid", v.who.uid}, {"admin", v.admin}};
    });
    api_route(http, "/api/jobs",
              [this](const httplib::Request& req, const viewer& v) { return jobs_json(req, v); });
    // Every match counted, where the list said "at least": the page asks for it after showing
    // the rows, so that the rows do not wait for it.
    api_route(http, "/api/jobs/count", [this](const httplib::Request& req, const viewer& v) {
      const site::job_filter f = jobs_filter(req, v);
      auto db = pool_.take();
      return json{{"total", site::count_jobs(*db, f)}};
    });
    api_route(http, R"(/api/job/(\d+))", [this](const httplib::Request& req, const viewer& v) {
      const auto id = parse_id(req.matches[1]);
      auto db = pool_.take();
      std::optional<site::stored_job> sj;
      if (id)
        sj = visible_job(*db, v, *id);
      if (!sj)
        throw not_found("no job " + std::string(req.matches[1]) + " that you may see");
      return job_detail_json(*db, *sj);
    });
    api_route(http, "/api/user/weeks", [this](const httplib::Request& req, const viewer& v) {
      const std::string user = user_of(req, v);
      const std::int64_t weeks = int_param(req, "weeks", 1, 520).value_or(12);
      const std::int64_t to = now() + 1;
      const site::period when{site::week_start(to) - (weeks - 1) * 7 * day, to};
      std::vector<site::owner_week_row> rows;
      {
        auto db = pool_.take();
        rows = site::owner_weeks(*db, when, user);
      }
      json a = json::array();
      for (const auto& r : rows) {
        json t = site::totals_json(r.totals);
        t["week_start"] = r.week_start;
        a.push_back(t);
      }
      return json{{"user", user}, {"weeks", a}};
    });
    api_route(http, "/api/user/models", [this](const httplib::Request& req, const viewer& v) {
      const std::string user = user_of(req, v);
      auto db = pool_.take();
      return models_json(*db, user);
    });
    // The trends page's data in one request: the models and the histories it draws.
    api_route(http, "/api/user/trends", [this](const httplib::Request& req, const viewer& v) {
      const std::string user = user_of(req, v);
      const auto chosen = int_param(req, "program", 1, INT64_MAX);
      const auto charts = int_param(req, "charts", 0, 100).value_or(8);
      const auto newest = int_param(req, "newest", 1, 100000).value_or(500);
      auto db = pool_.take();
      return trends_json(*db, user, chosen, static_cast<std::size_t>(charts),
                         static_cast<std::size_t>(newest));
    });
    api_route(http, "/api/user/history", [this](const httplib::Request& req, const viewer& v) {
      const std::string user = user_of(req, v);
      const std::int64_t program = int_param(req, "program", 1, INT64_MAX).value_or(0);
      auto db = pool_.take();
      const auto newest = int_param(req, "newest", 1, INT64_MAX);
      std::optional<json> h =
          history_json(*db, program, user, newest ? static_cast<std::size_t>(*newest) : SIZE_MAX);
      if (!h)
        throw not_found("no program " + std::to_string(program) + " of " + user);
      return *h;
    });
    // The store's health for Prometheus (aggregates only: no login, as scrapers have none).
    http.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
      site::store_health h;
      {
        auto db = pool_.take();
        h = site::read_health(*db);
      }
      res.set_header("Cache-Control", "no-store");
      reply(req, res, site::health_metrics(h, now()), "text/plain; version=0.0.4; charset=utf-8");
    });
    api_route(http, "/api/site", [this](const httplib::Request& req, const viewer& v) {
      if (!v.admin)
        throw forbidden("the site figures are for admins");
      const int days = static_cast<int>(int_param(req, "days", 1, 3660).value_or(28));
      json figures = *site_figures(days); // a copy: the flags are this request's
      if (figures.contains("critical_job_rows")) {
        auto db = pool_.take();
        mark_flagged(*db, figures["critical_job_rows"]);
      }
      return figures;
    });
  }

private:
  class not_found : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
  };
  class forbidden : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
  };

  static std::optional<std::int64_t> parse_id(const std::string& text) {
    if (text.size() > 18)
      return std::nullopt;
    return std::stoll(text);
  }

  // The job if this viewer may see it: its owner or an admin. Anyone else learns nothing,
  // not even that it exists.
  static std::optional<site::stored_job> visible_job(site::store& db, const viewer& v,
                                                     std::int64_t id) {
    std::optional<site::stored_job> sj = db.job(id);
    if (sj && !v.admin && sj->job.owner_uid != v.who.uid)
      return std::nullopt;
    return sj;
  }

  // Whose trends: yourself, or (admins) anyone named by ?user=.
  static std::string user_of(const httplib::Request& req, const viewer& v) {
    const std::optional<std::string> asked = text_param(req, "user");
    if (asked && *asked != v.who.user && !v.admin)
      throw forbidden("only admins may look at another user's jobs");
    return asked.value_or(v.who.user);
  }

  // Whose jobs a list shows: an admin's ?user= (everyone's without it), else the viewer's own.
  static std::optional<std::string> owner_param(const httplib::Request& req, const viewer& v) {
    std::optional<std::string> asked = text_param(req, "user");
    if (v.admin)
      return asked;
    if (asked && *asked != v.who.user)
      throw forbidden("only admins may list another user's jobs");
    return v.who.user;
  }

  // The period of a list's ?days=N: the last N days up to now.
  static site::period last_days(std::int64_t days) {
    const std::int64_t t = now() + 1;
    return {t - days * day, t};
  }

  std::optional<viewer> authenticate(const httplib::Request& req) {
    // A script's token, or the session of the browser's cookie and the token that opened it.
    std::string token_hash;
    const std::string authorization = req.get_header_value("Authorization");
    const std::string_view token = bearer_token(authorization);
    if (!token.empty())
      token_hash = sha256_hex(token);
    else if (auto id = cookie_value(req, session_cookie))
      token_hash = sessions_.token_hash_of(*id, now()).value_or("");
    if (token_hash.empty() || token.size() > 200)
      return std::nullopt;
    std::optional<identity> who;
    {
      auto db = pool_.take();
      who = check_token_hash(*db, token_hash, now());
    }
    if (!who)
      return std::nullopt;
    return viewer{*who, in_group(who->user, options_.admin_group)};
  }

  template <typename F> void html_route(httplib::Server& http, const char* pattern, F make) {
    http.Get(pattern, [this, make](const httplib::Request& req, httplib::Response& res) {
      const std::optional<viewer> v = authenticate(req);
      if (!v) {
        res.set_redirect("/login", 303);
        return;
      }
      try {
        auto [status, html] = make(req, *v);
        res.status = status;
        reply(req, res, std::move(html), "text/html; charset=utf-8");
      } catch (const bad_request& e) {
        res.status = 400;
        reply(req, res,
              page("Bad request", "error", &*v,
                   "<p class=\"error\">" + escape_markup(e.what()) + "</p>"),
              "text/html; charset=utf-8");
      } catch (const forbidden& e) {
        res.status = 403;
        reply(req, res,
              page("Forbidden", "error", &*v,
                   "<p class=\"error\">" + escape_markup(e.what()) + "</p>"),
              "text/html; charset=utf-8");
      }
    });
  }

  template <typename F> void api_route(httplib::Server& http, const char* pattern, F make) {
    http.Get(pattern, [this, make](const httplib::Request& req, httplib::Response& res) {
      res.set_header("Cache-Control", "no-store");
      auto fail = [&](int status, const std::string& message) {
        res.status = status;
        reply(req, res, json({{"error", message}}).dump(), "application/json");
      };
      const std::optional<viewer> v = authenticate(req);
      if (!v)
        return fail(401, "log in first: a valid token as cookie or Authorization: Bearer");
      try {
        reply(req, res, make(req, *v).dump(-1, ' ', false, json::error_handler_t::replace),
              "application/json");
      } catch (const bad_request& e) {
        fail(400, e.what());
      } catch (const forbidden& e) {
        fail(403, e.what());
      } catch (const not_found& e) {
        fail(404, e.what());
      }
    });
  }

  // The jobs a list request asks for, the viewer's restriction included.
  static site::job_filter jobs_filter(const httplib::Request& req, const viewer& v) {
    site::job_filter f;
    f.owner = owner_param(req, v); // a user's restriction lives in the query
    f.text = text_param(req, "q");
    f.language = text_param(req, "language");
    f.min_mpi_percent = number_param(req, "min_mpi", 0, 100);
    f.min_ranks = int_param(req, "min_ranks", 1, std::int64_t{1} << 40);
    f.max_ranks = int_param(req, "max_ranks", 1, std::int64_t{1} << 40);
    f.account = text_param(req, "account"); // Slurm's, as the site page names them
    f.partition = text_param(req, "partition");
    if (const auto exit = text_param(req, "exit")) {
      if (*exit != "nonzero")
        throw bad_request("parameter exit must be nonzero, not \"" + *exit + "\"");
      f.nonzero_exit = true;
    }
    if (const auto days = int_param(req, "days", 1, 36600))
      f.when = last_days(*days);
    static const std::map<std::string, site::job_order> orders = {
        {"end", site::job_order::end_desc},         {"end_asc", site::job_order::end_asc},
        {"mpi", site::job_order::mpi_percent_desc}, {"cpu", site::job_order::cpu_time_desc},
        {"ranks", site::job_order::ranks_desc},     {"mpi_hours", site::job_order::mpi_time_desc},
        {"exit", site::job_order::exit_code_desc}};
    if (const auto sort = text_param(req, "sort")) {
      const auto it = orders.find(*sort);
      if (it == orders.end())
        throw bad_request(
            "parameter sort must be one of end, end_asc, mpi, cpu, ranks, mpi_hours, exit, not \"" +
            *sort + "\"");
      f.order = it->second;
    }
    return f;
  }

  json jobs_json(const httplib::Request& req, const viewer& v) {
    site::job_filter f = jobs_filter(req, v);
    const std::int64_t per_page = int_param(req, "per_page", 1, 500).value_or(50);
    const std::int64_t page_no = int_param(req, "page", 1, 1000000).value_or(1);
    f.limit = per_page;
    f.offset = (page_no - 1) * per_page;
    json a = json::array();
    std::int64_t total = 0;
    {
      auto db = pool_.take();
      // Counting every match of a million jobs costs more than the page: count up to a bound.
      site::job_page found = site::jobs_and_count(*db, f, count_bound);
      total = found.matches;
      for (const auto& j : found.rows)
        a.push_back(job_json(j));
      mark_flagged(*db, a);
    }
    return {{"total", total},
            {"total_is_lower_bound", total >= count_bound},
            {"page", page_no},
            {"per_page", per_page},
            {"jobs", a}};
  }

  // The site figures of the last `days` whole UTC days, today's included: the site part of the
  // report from the day tables alone (milliseconds at a million jobs, where a period with
  // partial days read every job row of them: seconds). A period asked for once is kept and
  // recomputed by the refresher thread every site_cache_seconds.
  std::shared_ptr<const json> site_figures(int days) {
    {
      const std::lock_guard lock(cache_mutex_);
      if (auto it = site_cache_.find(days); it != site_cache_.end())
        return it->second;
    }
    return compute_site(days, false);
  }

  // `refresh` false: a value another request computed meanwhile will do.
  std::shared_ptr<const json> compute_site(int days, bool refresh) {
    const std::lock_guard compute(compute_mutex_); // one computation at a time
    if (!refresh) {
      const std::lock_guard lock(cache_mutex_);
      if (auto it = site_cache_.find(days); it != site_cache_.end())
        return it->second;
    }
    site::report_options o;
    o.when = whole_days(days, now());
    o.period_label = "last " + std::to_string(days) + " days";
    o.user_parts = false;
    site::report r;
    json figures;
    {
      auto db = pool_.take();
      r = site::build_report(*db, o);
      figures = site_json(r, days);
      // Slurm's accounts and partitions, from the job rows (as `strata site report --by`).
      figures["by_account"] = slurm_groups_json(site::slurm_totals(*db, o.when, false));
      figures["by_partition"] = slurm_groups_json(site::slurm_totals(*db, o.when, true));
    }
    auto kept = std::make_shared<const json>(std::move(figures));
    const std::lock_guard lock(cache_mutex_);
    if (site_cache_.size() >= 16 && site_cache_.count(days) == 0)
      site_cache_.erase(site_cache_.begin()); // a bound on what the refresher recomputes
    site_cache_[days] = kept;
    return kept;
  }

public:
  // Computes the default period at start, then keeps every cached period fresh until stop().
  void refresh_site_figures() {
    std::unique_lock lock(stop_mutex_);
    bool first = true;
    while (!stopping_) {
      std::vector<int> periods{28};
      if (!first) {
        const std::lock_guard cache(cache_mutex_);
        periods.clear();
        for (const auto& [days, figures] : site_cache_)
          periods.push_back(days);
      }
      first = false;
      lock.unlock();
      for (const int days : periods)
        try {
          (void)compute_site(days, true);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "strata site serve: site figures: %s\n", e.what());
        }
      lock.lock();
      stop_wait_.wait_for(lock, std::chrono::seconds(std::max(1, options_.site_cache_seconds)),
                          [this] { return stopping_; });
    }
  }
  void stop_refreshing() {
    const std::lock_guard lock(stop_mutex_);
    stopping_ = true;
    stop_wait_.notify_all();
  }

private:
  server_options options_;
  store_pool pool_;
  session_table sessions_;
  waste_cache waste_cache_;
  std::shared_ptr<const fixed_body> script_;
  std::mutex cache_mutex_, compute_mutex_;
  std::map<int, std::shared_ptr<const json>> site_cache_;
  std::mutex stop_mutex_;
  std::condition_variable stop_wait_;
  bool stopping_ = false;
};

httplib::Server* running = nullptr;

extern "C" void stop_serving(int) {
  if (running)
    running->stop();
}

} // namespace

int serve(const server_options& options) {
  web_server web(options);
  try {
    auto db = site::store::open(options.db_url); // fail now, not at the first request
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata site serve: %s\n", e.what());
    return 1;
  }
  if (!web.load_asset()) {
    std::fprintf(stderr,
                 "strata site serve: no web bundle at %s (build it: npm is needed at build "
                 "time, see docs/site-setup.md)\n",
                 options.asset_path.c_str());
    return 1;
  }
  httplib::Server http;
  web.routes(http);
  listen_exclusively(http);
  if (!http.bind_to_port(options.bind, options.port)) {
    std::fprintf(stderr, "strata site serve: cannot listen on %s:%d: %s\n", options.bind.c_str(),
                 options.port, why_not_listening(options.bind, options.port).c_str());
    return 1;
  }
  running = &http;
  std::signal(SIGINT, stop_serving);
  std::signal(SIGTERM, stop_serving);
  std::printf("strata site serve: http://%s:%d/\n", options.bind.c_str(), options.port);
  std::fflush(stdout);
  std::thread refresher([&web] { web.refresh_site_figures(); });
  const bool ok = http.listen_after_bind();
  web.stop_refreshing();
  refresher.join();
  running = nullptr;
  return ok ? 0 : 1;
}

} // namespace strata::web
