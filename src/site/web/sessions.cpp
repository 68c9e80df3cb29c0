#include "site/web/sessions.hpp"

#include "site/web/tokens.hpp"

#include <cctype>

namespace strata::web {

std::string session_table::open(const std::string& token_hash, std::int64_t now) {
  std::string id = "session_" + random_hex(32);
  const std::lock_guard lock(mutex_);
  for (auto it = by_id_hash_.begin(); it != by_id_hash_.end();)
    it = it->second.ends <= now ? by_id_hash_.erase(it) : std::next(it);
  by_id_hash_[sha256_hex(id)] = {token_hash, now + lifetime_s};
  return id;
}

std::optional<std::string> session_table::token_hash_of(std::string_view id, std::int64_t now) {
  if (id.empty() || id.size() > 200)
    return std::nullopt;
  const std::string key = sha256_hex(id);
  const std::lock_guard lock(mutex_);
  const auto it = by_id_hash_.find(key);
  if (it == by_id_hash_.end() || it->second.ends <= now)
    return std::nullopt;
  return it->second.token_hash;
}

void session_table::close(std::string_view id) {
  if (id.empty() || id.size() > 200)
    return;
  const std::string key = sha256_hex(id);
  const std::lock_guard lock(mutex_);
  by_id_hash_.erase(key);
}

std::string_view trim_token(std::string_view text) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!text.empty() && blank(text.front()))
    text.remove_prefix(1);
  while (!text.empty() && blank(text.back()))
    text.remove_suffix(1);
  return text;
}

std::string_view bearer_token(std::string_view authorization) {
  authorization = trim_token(authorization);
  constexpr std::string_view scheme = "bearer";
  if (authorization.size() <= scheme.size())
    return {};
  for (std::size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != scheme[i])
      return {};
  const char after = authorization[scheme.size()];
  if (after != ' ' && after != '\t')
    return {};
  return trim_token(authorization.substr(scheme.size()));
}

} // namespace strata::web
