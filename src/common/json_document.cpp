#include "common/json_document.hpp"

#include <algorithm>
#include <exception>
#include <utility>

namespace strata::common {

std::string printable(std::string_view text, size_t limit) {
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    // Cut only at the start of a UTF-8 sequence so the message stays valid UTF-8.
    if (out.size() >= limit && (byte & 0xC0) != 0x80)
      return out + "...";
    if (byte < 0x20 || byte == 0x7F) {
      constexpr char hex[] = "0123456789abcdef";
      out += {'\\', 'x', hex[byte >> 4], hex[byte & 0xF]};
    } else {
      out += c;
    }
  }
  return out;
}

std::optional<nlohmann::json> parse_document(std::string_view text, std::string_view schema,
                                             describe_value describe, std::string& error) {
  using json = nlohmann::json;
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    error = "not JSON: the text is empty";
    return std::nullopt;
  }
  json doc;
  try {
    doc = json::parse(text.data(), text.data() + text.size());
  } catch (const json::parse_error& e) {
    if (e.byte > text.size()) {
      error =
          "not JSON: the text ends early at byte " + std::to_string(text.size()) + " (truncated?)";
    } else {
      const std::string_view before = text.substr(0, e.byte - 1);
      const size_t line_start = before.rfind('\n'); // npos + 1 == 0 on the first line
      error = "not JSON: syntax error at byte " + std::to_string(e.byte) + " (line " +
              std::to_string(1 + std::count(before.begin(), before.end(), '\n')) + ", column " +
              std::to_string(e.byte - (line_start + 1)) + ")";
    }
    return std::nullopt;
  } catch (const json::out_of_range&) {
    // nlohmann refuses a float literal beyond double's range this way.
    error = "not JSON: a number is out of range";
    return std::nullopt;
  } catch (const std::exception& e) {
    error = "not JSON: " + printable(e.what());
    return std::nullopt;
  }
  const auto it = doc.is_object() ? doc.find("schema") : doc.end();
  if (!doc.is_object())
    error = "top level: expected an object, got " + describe(doc);
  else if (it == doc.end())
    error = "schema is missing (expected \"" + std::string(schema) + "\")";
  else if (!it->is_string() || it->get<std::string>() != schema)
    error = "schema is " + describe(*it) + ", this Strata reads " + std::string(schema);
  return error.empty() ? std::optional(std::move(doc)) : std::nullopt;
}

} // namespace strata::common
