#include "config.hpp"

#include <cctype>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace strata::config {
namespace {

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.' ||
         c == '/' || c == '+';
}

bool valid_module_name(std::string_view name) {
  if (name.empty())
    return false;
  for (char c : name)
    if (!is_name_char(c))
      return false;
  return true;
}

bool valid_key(std::string_view key) {
  if (key.empty() || std::isdigit(static_cast<unsigned char>(key[0])) != 0)
    return false;
  for (char c : key)
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '_' && c != '-' && c != '.')
      return false;
  return true;
}

std::string quoted(std::string_view s) {
  return "'" + std::string(s) + "'";
}

// Splits one config line into words; a word may contain a "quoted value" with \" and \\.
bool split_words(std::string_view line, std::vector<std::string>& words, std::string& error) {
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i])) != 0)
      ++i;
    if (i >= line.size() || line[i] == '#')
      break;
    std::string word;
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i])) == 0) {
      if (line[i] == '"') {
        ++i;
        bool closed = false;
        while (i < line.size()) {
          char c = line[i++];
          if (c == '"') {
            closed = true;
            break;
          }
          if (c == '\\' && i < line.size())
            c = line[i++];
          word.push_back(c);
        }
        if (!closed) {
          error = "unterminated quoted value";
          return false;
        }
      } else if (line[i] == '#') {
        break;
      } else {
        word.push_back(line[i++]);
      }
    }
    words.push_back(std::move(word));
  }
  return true;
}

bool parse_arg(std::string_view word, module_spec& spec, std::string& error) {
  const size_t eq = word.find('=');
  if (eq == std::string_view::npos) {
    error = "expected KEY=VALUE after module " + quoted(spec.name) + ", got " + quoted(word);
    return false;
  }
  std::string_view key = word.substr(0, eq);
  if (!valid_key(key)) {
    error = "bad argument name " + quoted(key) + " for module " + quoted(spec.name);
    return false;
  }
  spec.args.emplace_back(std::string(key), std::string(word.substr(eq + 1)));
  return true;
}

} // namespace

static std::string_view trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0)
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0)
    s.remove_suffix(1);
  return s;
}

stack parse_tool_list(std::string_view text, std::string_view origin) {
  stack result;
  result.origin = std::string(origin);
  if (trimmed(text).empty())
    return result;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    std::string_view item = trimmed(text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    module_spec spec;
    spec.origin = std::string(origin);
    size_t colon = item.find(':');
    spec.name = std::string(item.substr(0, colon));
    if (spec.name.empty()) {
      result.error = std::string(origin) + ": empty module name in " + quoted(text);
      return result;
    }
    if (!valid_module_name(spec.name)) {
      result.error = std::string(origin) + ": bad module name " + quoted(spec.name);
      return result;
    }
    while (colon != std::string_view::npos) {
      const size_t next = item.find(':', colon + 1);
      std::string_view word = item.substr(
          colon + 1, next == std::string_view::npos ? std::string_view::npos : next - colon - 1);
      std::string error;
      if (!parse_arg(word, spec, error)) {
        result.error = std::string(origin) + ": " + error;
        return result;
      }
      colon = next;
    }
    result.modules.push_back(std::move(spec));
    if (comma == std::string_view::npos)
      return result;
    start = comma + 1;
  }
}

stack parse_config(std::string_view text, std::string_view filename) {
  stack result;
  result.origin = std::string(filename);
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos)
      end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    const std::string where = std::string(filename) + ":" + std::to_string(line_no);
    if (line.find('\0') != std::string_view::npos) {
      result.error = where + ": NUL byte in line";
      return result;
    }
    std::vector<std::string> words;
    std::string error;
    if (!split_words(line, words, error)) {
      result.error = where + ": " + error;
      return result;
    }
    if (words.empty())
      continue;
    module_spec spec;
    spec.origin = where;
    spec.name = words[0];
    if (!valid_module_name(spec.name)) {
      result.error = where + ": bad module name " + quoted(spec.name);
      return result;
    }
    for (size_t i = 1; i < words.size(); ++i) {
      if (!parse_arg(words[i], spec, error)) {
        result.error = where + ": " + error;
        return result;
      }
    }
    result.modules.push_back(std::move(spec));
  }
  return result;
}

bool read_file(const std::string& path, std::string& contents) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  contents = buffer.str();
  return !in.bad();
}

stack select_stack(const getenv_fn& getenv, const std::string& site_config) {
  const char* disable = getenv("STRATA_DISABLE");
  if (disable != nullptr && disable[0] != '\0' && std::string_view(disable) != "0") {
    stack none;
    none.origin = "STRATA_DISABLE";
    return none;
  }
  if (const char* tools = getenv("STRATA_TOOLS"); tools != nullptr)
    return parse_tool_list(tools, "STRATA_TOOLS");
  std::vector<std::string> candidates;
  const char* explicit_file = getenv("STRATA_CONFIG");
  if (explicit_file != nullptr && explicit_file[0] != '\0') {
    std::string text;
    if (!read_file(explicit_file, text)) {
      stack failed;
      failed.error =
          std::string("STRATA_CONFIG names ") + quoted(explicit_file) + ", which cannot be read";
      return failed;
    }
    return parse_config(text, explicit_file);
  }
  candidates.emplace_back(".strata.conf");
  if (const char* home = getenv("HOME"); home != nullptr && home[0] != '\0')
    candidates.push_back(std::string(home) + "/.strata.conf");
  if (const char* site = getenv("STRATA_SITE_CONFIG"); site != nullptr && site[0] != '\0')
    candidates.emplace_back(site);
  else if (!site_config.empty())
    candidates.push_back(site_config);
  for (const std::string& path : candidates) {
    std::string text;
    if (::access(path.c_str(), F_OK) == 0 && read_file(path, text))
      return parse_config(text, path);
  }
  return {};
}

std::vector<std::string> module_dirs(const getenv_fn& getenv, const std::string& builtin_dir) {
  std::vector<std::string> dirs;
  if (const char* path = getenv("STRATA_MODULE_PATH"); path != nullptr) {
    std::string_view rest(path);
    while (!rest.empty()) {
      const size_t colon = rest.find(':');
      std::string_view dir = rest.substr(0, colon);
      if (!dir.empty())
        dirs.emplace_back(dir);
      if (colon == std::string_view::npos)
        break;
      rest.remove_prefix(colon + 1);
    }
  }
  if (!builtin_dir.empty())
    dirs.push_back(builtin_dir);
  return dirs;
}

std::string find_module(const std::string& name, const std::vector<std::string>& dirs) {
  if (name.find('/') != std::string::npos)
    return ::access(name.c_str(), F_OK) == 0 ? name : std::string();
  for (const std::string& dir : dirs) {
    std::string candidate = dir + "/" + name + ".so";
    if (::access(candidate.c_str(), F_OK) == 0)
      return candidate;
  }
  return {};
}

} // namespace strata::config
