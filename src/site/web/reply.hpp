// How `strata site serve` sends a body. cpp-httplib compresses a body left in the response
// itself, with Brotli at its slowest level whenever the client accepts it (every browser sends
// `Accept-Encoding: br, gzip`): 1.3 MB of JSON then took seconds to compress where sending it
// plain took milliseconds. Every body leaves through reply() instead: gzip at a fast level when
// the client accepts gzip, else as it is; httplib sends a body given this way untouched.
#pragma once

#include <httplib.h>

#include <memory>
#include <string>
#include <string_view>

namespace strata::web {

// Whether an Accept-Encoding header value admits gzip: named (or "*") without q=0.
bool accepts_gzip(std::string_view accept_encoding);

// `data` in gzip's format, at zlib `level` (1 fastest to 9 smallest).
std::string gzip(std::string_view data, int level);

// A body that is sent often and never changes (the script bundle): compressed once, smallest.
struct fixed_body {
  explicit fixed_body(std::string text);
  std::string plain;
  std::string gzipped;
};

// Sends `body` as `content_type`, gzipped at a fast level when the client accepts it and it is
// large enough to gain.
void reply(const httplib::Request& req, httplib::Response& res, std::string body,
           const std::string& content_type);
void reply(const httplib::Request& req, httplib::Response& res,
           const std::shared_ptr<const fixed_body>& body, const std::string& content_type);

// The site's icon (16 x 16, three white bars on the pages' dark blue) in the .ico format that
// browsers ask for at /favicon.ico.
std::string favicon_ico();

} // namespace strata::web
