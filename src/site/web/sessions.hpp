// The browser's sessions of `strata site serve`. Logging in with a token opens a session: the
// cookie holds a random session id, never the token, and the server keeps (in memory, by the
// id's hash) which token opened it. Logging out ends the session on the server, so a copied
// cookie is worth nothing afterwards; revoking or the expiry of the token ends its sessions at
// their next request (the token is checked then, as before); a restart of the server ends them
// all (users log in again).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace strata::web {

class session_table {
public:
  // Longest life of a session, whatever its token's: what the table holds stays bounded.
  static constexpr std::int64_t lifetime_s = std::int64_t{7} * 86400;

  // A new session for the token of this hash; returns its id (for the cookie).
  std::string open(const std::string& token_hash, std::int64_t now);
  // The hash of the token that opened session `id`, while the session lasts.
  std::optional<std::string> token_hash_of(std::string_view id, std::int64_t now);
  // Ends session `id` (nothing when there is none).
  void close(std::string_view id);

private:
  struct session {
    std::string token_hash;
    std::int64_t ends = 0;
  };
  std::mutex mutex_;
  std::unordered_map<std::string, session> by_id_hash_;
};

// A pasted token or one from an Authorization header without the spaces, tabs and line ends
// that copying leaves around it.
std::string_view trim_token(std::string_view text);

// The token of an `Authorization: Bearer <token>` header; the scheme's case does not matter
// (RFC 7235). Empty when the header is not of this scheme.
std::string_view bearer_token(std::string_view authorization);

} // namespace strata::web
