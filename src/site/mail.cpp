#include "site/mail.hpp"
#include "common/exec_argv.hpp"

#include "common/atomic_file.hpp"

#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <fmt/format.h>
#include <random>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace strata::site {

namespace {

std::string host_name() {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  return host[0] != '\0' ? host : "localhost";
}

// Header values come from user names and the command line: no line breaks may get through.
std::string header_safe(std::string_view v) {
  std::string out;
  for (const char c : v)
    out += (c == '\r' || c == '\n') ? ' ' : c;
  return out;
}

std::string rfc2822_date(std::int64_t t) {
  const std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S +0000", &tm);
  return buf;
}

} // namespace

std::string quoted_printable(std::string_view text) {
  std::string out;
  size_t line = 0;
  auto emit = [&](const std::string& piece) {
    if (line + piece.size() > 75) { // room for the soft break '='
      out += "=\r\n";
      line = 0;
    }
    out += piece;
    line += piece.size();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\r\n";
      line = 0;
      continue;
    }
    if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n')
      continue;
    const bool at_line_end = i + 1 == text.size() || text[i + 1] == '\n' || text[i + 1] == '\r';
    const bool plain =
        (c >= 33 && c <= 126 && c != '=') || ((c == ' ' || c == '\t') && !at_line_end);
    // A leading "." or "From " is harmless in QP but some relays mangle it: encode the dot.
    if (plain && !(c == '.' && line == 0))
      emit(std::string(1, static_cast<char>(c)));
    else
      emit(fmt::format("={:02X}", c));
  }
  return out;
}

std::string build_mail(const user_report& user, const report_options& report,
                       const mail_options& options) {
  const std::int64_t now =
      options.date != 0 ? options.date : static_cast<std::int64_t>(std::time(nullptr));
  const std::string from =
      options.from.empty() ? "strata@" + host_name() : header_safe(options.from);
  const std::string to =
      header_safe(options.domain.empty() ? user.owner : user.owner + "@" + options.domain);
  std::mt19937_64 random(static_cast<std::uint64_t>(now) ^ std::hash<std::string>{}(user.owner));
  const std::string boundary = fmt::format("=_strata_{:016x}", random());
  std::string subject =
      fmt::format("Your MPI jobs, {}: {} jobs, MPI {:.1f} %{}", report.period_label,
                  user.totals.jobs, user.mpi_percent, user.mpi_critical ? " (critical)" : "");
  if (user.critical_jobs > 0)
    subject +=
        fmt::format(", {} critical job{}", user.critical_jobs, user.critical_jobs == 1 ? "" : "s");
  if (user.regression_count > 0)
    subject += fmt::format(", {} regression{}", user.regression_count,
                           user.regression_count == 1 ? "" : "s");
  subject = header_safe(subject);
  std::string m;
  m += "From: " + from + "\r\n";
  m += "To: " + to + "\r\n";
  m += "Subject: " + subject + "\r\n";
  m += "Date: " + rfc2822_date(now) + "\r\n";
  m += fmt::format("Message-ID: <strata.{}.{:x}@{}>\r\n", now, random(), host_name());
  m += "MIME-Version: 1.0\r\n";
  m += "Auto-Submitted: auto-generated\r\n";
  m += "Content-Type: multipart/alternative; boundary=\"" + boundary + "\"\r\n\r\n";
  m += "This is a MIME message with a text and an HTML part.\r\n";
  m += "--" + boundary + "\r\n";
  m += "Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: "
       "quoted-printable\r\n\r\n";
  m += quoted_printable(user_text(user, report)) + "\r\n";
  m += "--" + boundary + "\r\n";
  m += "Content-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: "
       "quoted-printable\r\n\r\n";
  m += quoted_printable(html_page("MPI usage of " + user.owner, user_html(user, report))) + "\r\n";
  m += "--" + boundary + "--\r\n";
  return m;
}

namespace {

// Runs `sendmail -t` with the message on its standard input. Returns an error, empty on success.
std::string pipe_to_sendmail(const std::string& command, const std::string& message) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return std::string("pipe: ") + std::strerror(errno);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[0], 0);
  std::vector<std::string> args = {command, "-t", "-oi"};
  std::vector<char*> argv = exec_argv(args);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, command.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[0]);
  if (rc != 0) {
    ::close(fds[1]);
    return command + ": " + std::strerror(rc);
  }
  // A sendmail that exits early must not kill us with SIGPIPE.
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &old);
  std::string error;
  size_t done = 0;
  while (done < message.size()) {
    const ssize_t n = ::write(fds[1], message.data() + done, message.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      error = command + ": " + std::strerror(errno);
      break;
    }
    done += static_cast<size_t>(n);
  }
  ::close(fds[1]);
  ::sigaction(SIGPIPE, &old, nullptr);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (error.empty() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
    error = WIFEXITED(status) ? fmt::format("{} -t exited with {}", command, WEXITSTATUS(status))
                              : fmt::format("{} -t was killed by signal {}", command,
                                            WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return error;
}

std::string file_safe(std::string_view name) {
  std::string out;
  for (const char c : name)
    out += std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.'
               ? c
               : '_';
  return out.empty() || out[0] == '.' ? "_" + out : out;
}

} // namespace

mail_result send_mails(const report& r, const mail_options& options) {
  mail_result result;
  if (!options.outbox.empty() && !common::make_writable_dir(options.outbox)) {
    result.problems.push_back(options.outbox + ": cannot create or write the outbox");
    return result;
  }
  const std::string sendmail = options.sendmail.empty() ? "sendmail" : options.sendmail;
  for (const user_report& u : r.users) {
    if (u.totals.jobs == 0)
      continue;
    const std::string message = build_mail(u, r.options, options);
    std::string error;
    if (!options.outbox.empty())
      error = common::write_atomically(options.outbox + "/" + file_safe(u.owner) + ".eml", message);
    else
      error = pipe_to_sendmail(sendmail, message);
    if (error.empty())
      ++result.sent;
    else
      result.problems.push_back(u.owner + ": " + error);
  }
  return result;
}

} // namespace strata::site
