#include "common/markup.hpp"

#include <array>

namespace strata {

std::string escape_markup(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default: {
      const auto byte = static_cast<unsigned char>(c);
      if ((byte < 0x20 && c != '\n' && c != '\t') || byte == 0x7f) {
        static constexpr std::array<char, 16> hex = {'0', '1', '2', '3', '4', '5', '6', '7',
                                                     '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
        out += "\\x";
        out += hex[byte >> 4];
        out += hex[byte & 0xf];
      } else {
        out += c;
      }
    }
    }
  }
  return out;
}

} // namespace strata
