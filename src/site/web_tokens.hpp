// The web interface's login tokens in the store (table web_tokens, schema version 2). The store
// sees only a token's SHA-256 hash, never the token (site/web/tokens.hpp issues and hashes
// them), so a copy of the database lets nobody log in.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace strata::site {

class store;

struct token_holder {
  std::int64_t uid = 0;
  std::string user;
};

// Keeps a new token's hash for `holder`, valid from `created` until `expires`.
void add_web_token(store& db, const std::string& token_hash, const token_holder& holder,
                   std::int64_t created, std::int64_t expires);

// Revokes every token of `uid`; returns how many were still valid at `now`.
std::int64_t revoke_web_tokens(store& db, std::int64_t uid, std::int64_t now);

// The holder of a known, unrevoked token that is still valid at `now`.
std::optional<token_holder> web_token_holder(store& db, const std::string& token_hash,
                                             std::int64_t now);

} // namespace strata::site
