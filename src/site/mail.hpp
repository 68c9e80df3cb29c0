// The weekly user mail (section VI of the automatic counter profiling paper, with the text and
// HTML parts its users asked for in section X): one MIME multipart/alternative message per user
// with jobs in the period, handed to `sendmail -t` or written into an outbox directory.
#pragma once

#include "site/report.hpp"

#include <string>
#include <vector>

namespace strata::site {

struct mail_options {
  std::string from;      // default "strata@HOSTNAME"
  std::string domain;    // recipient: user@domain; empty: the bare user name (local delivery)
  std::string outbox;    // write files here instead of sending
  std::string sendmail;  // command, default "sendmail"; run as `sendmail -t`
  std::int64_t date = 0; // the Date header (seconds since the epoch); 0: now
};

// The whole message, CRLF line ends, both parts quoted-printable (UTF-8).
std::string build_mail(const user_report& user, const report_options& report,
                       const mail_options& options);

// RFC 2045 quoted-printable, lines of at most 76 characters, CRLF line ends.
std::string quoted_printable(std::string_view text);

struct mail_result {
  int sent = 0;
  std::vector<std::string> problems; // one line each; the other users' mail still goes out
};

// One message per user in `r` (users without jobs are not in a report).
mail_result send_mails(const report& r, const mail_options& options);

} // namespace strata::site
