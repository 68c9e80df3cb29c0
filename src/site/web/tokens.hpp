// Login tokens of the web interface and who may see what. `strata site token` issues a random
// token to the calling Unix user; the store keeps only its SHA-256 hash (table web_tokens,
// schema version 2), so a copy of the database lets nobody log in. Admins are the members of a
// configured Unix group; they see every job, everyone else only their own.
#pragma once

#include "site/store.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace strata::web {

// A Unix user as the store names job owners (site/store.hpp: the spool file owner's name).
struct identity {
  std::int64_t uid = 0;
  std::string user;
};

// The real uid of this process and its name ("uid<N>" when the account has none).
identity calling_user();

// The account `name` (for root issuing a token to a user); nullopt when there is none.
std::optional<identity> user_named(const std::string& name);

// Lowercase hex SHA-256 of `text` (OpenSSL).
std::string sha256_hex(std::string_view text);

struct issued_token {
  std::string token; // shown once, never stored
  std::int64_t expires = 0;
};

// A new token for `who`, valid `ttl_days` from `now`. Throws site::store_error.
issued_token issue_token(site::store& db, const identity& who, int ttl_days, std::int64_t now);

// Revokes every token of `uid`; returns how many were still valid.
std::int64_t revoke_tokens(site::store& db, std::int64_t uid, std::int64_t now);

// The owner of a valid (known, not revoked, not expired) token.
std::optional<identity> check_token(site::store& db, std::string_view token, std::int64_t now);
// The same by the token's hash (a session keeps only that).
std::optional<identity> check_token_hash(site::store& db, const std::string& token_hash,
                                         std::int64_t now);

// `bytes` random bytes (OpenSSL) in lowercase hex.
std::string random_hex(std::size_t bytes);

// Whether `user` is a member of Unix group `group` (primary or supplementary).
bool in_group(const std::string& user, const std::string& group);

} // namespace strata::web
