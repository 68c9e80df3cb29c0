#include "site/web/reply.hpp"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

namespace strata::web {
namespace {

// Below this a body fits a packet or two: compressing it gains nothing.
constexpr std::size_t smallest_to_compress = 1024;
// zlib's fastest level: 1.3 MB of JSON in about 10 ms, a fifth of its size.
constexpr int answer_level = 1;

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

bool same_word(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// The q of one coding's parameters ("q=0.5"): 1 when absent.
double quality(std::string_view parameters) {
  std::size_t at = 0;
  while (at <= parameters.size()) {
    std::size_t end = parameters.find(';', at);
    if (end == std::string_view::npos)
      end = parameters.size();
    const std::string_view p = trimmed(parameters.substr(at, end - at));
    if (p.size() >= 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=')
      return std::strtod(std::string(p.substr(2)).c_str(), nullptr);
    at = end + 1;
  }
  return 1;
}

// Sends `data` (kept alive by `owner`) as it is: a content provider, which httplib does not
// compress again.
template <typename Owner>
void send_as_is(httplib::Response& res, const std::string& data, Owner owner,
                const std::string& content_type) {
  if (data.empty()) {
    res.set_content(std::string(), content_type);
    return;
  }
  res.set_content_provider(
      data.size(), content_type,
      [owner, &data](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
        sink.write(data.data() + offset, length);
        return true;
      });
}

} // namespace

bool accepts_gzip(std::string_view accept_encoding) {
  bool gzip_q = false, any_q = false, gzip_named = false;
  std::size_t at = 0;
  while (at < accept_encoding.size()) {
    std::size_t end = accept_encoding.find(',', at);
    if (end == std::string_view::npos)
      end = accept_encoding.size();
    const std::string_view item = trimmed(accept_encoding.substr(at, end - at));
    const std::size_t semicolon = item.find(';');
    const std::string_view coding = trimmed(item.substr(0, semicolon));
    const double q = semicolon == std::string_view::npos ? 1 : quality(item.substr(semicolon + 1));
    if (same_word(coding, "gzip") || same_word(coding, "x-gzip")) {
      gzip_named = true;
      gzip_q = q > 0;
    } else if (coding == "*")
      any_q = q > 0;
    at = end + 1;
  }
  return gzip_named ? gzip_q : any_q;
}

std::string gzip(std::string_view data, int level) {
  z_stream z{};
  // 15 window bits + 16: the gzip wrapper.
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("zlib: deflateInit2 failed");
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int status = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (status != Z_STREAM_END)
    throw std::runtime_error("zlib: deflate did not finish");
  return out;
}

fixed_body::fixed_body(std::string text) : plain(std::move(text)), gzipped(gzip(plain, 9)) {}

void reply(const httplib::Request& req, httplib::Response& res, std::string body,
           const std::string& content_type) {
  res.set_header("Vary", "Accept-Encoding");
  if (body.size() >= smallest_to_compress &&
      accepts_gzip(req.get_header_value("Accept-Encoding"))) {
    body = gzip(body, answer_level);
    res.set_header("Content-Encoding", "gzip");
  }
  auto owned = std::make_shared<const std::string>(std::move(body));
  send_as_is(res, *owned, owned, content_type);
}

void reply(const httplib::Request& req, httplib::Response& res,
           const std::shared_ptr<const fixed_body>& body, const std::string& content_type) {
  res.set_header("Vary", "Accept-Encoding");
  if (accepts_gzip(req.get_header_value("Accept-Encoding"))) {
    res.set_header("Content-Encoding", "gzip");
    send_as_is(res, body->gzipped, body, content_type);
  } else
    send_as_is(res, body->plain, body, content_type);
}

std::string favicon_ico() {
  constexpr int side = 16;
  constexpr std::uint32_t pixels = side * side * 4, mask = side * 4; // mask rows: 32 bits
  std::string out;
  const auto put = [&out](std::uint32_t value, int bytes) { // little-endian
    for (int i = 0; i < bytes; ++i)
      out += static_cast<char>((value >> (8 * i)) & 0xff);
  };
  put(0, 2), put(1, 2), put(1, 2);                               // an icon directory of one image
  put(side, 1), put(side, 1), put(0, 1), put(0, 1);              // 16 x 16, no palette
  put(1, 2), put(32, 2), put(40 + pixels + mask, 4), put(22, 4); // 32 bits, size, offset
  put(40, 4), put(side, 4), put(2 * side, 4), put(1, 2), put(32, 2); // the bitmap's header
  put(0, 4), put(pixels + mask, 4), put(0, 4), put(0, 4), put(0, 4), put(0, 4);
  for (int y = 0; y < side; ++y) // bottom row first
    for (int x = 0; x < side; ++x) {
      const int bar = x >= 3 && x <= 4 ? 5 : x >= 7 && x <= 8 ? 9 : x >= 11 && x <= 12 ? 12 : 0;
      const bool white = y >= 2 && y < 2 + bar;
      put(white ? 0xffffffffU : 0xff223344U, 4); // bytes B, G, R, A: #223344
    }
  out.append(mask, '\0'); // every pixel shown (the alpha decides)
  return out;
}

} // namespace strata::web
