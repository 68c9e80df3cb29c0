#include "site/web_tokens.hpp"

#include "site/store.hpp"

namespace strata::site {

void add_web_token(store& db, const std::string& token_hash, const token_holder& holder,
                   std::int64_t created, std::int64_t expires) {
  db.query("INSERT INTO web_tokens (token_hash, uid, user_name, created, expires, revoked) "
           "VALUES ($1, $2, $3, $4, $5, 0) RETURNING uid",
           {token_hash, holder.uid, holder.user, created, expires}, [](const store::row&) {});
}

std::int64_t revoke_web_tokens(store& db, std::int64_t uid, std::int64_t now) {
  std::int64_t n = 0;
  db.query("UPDATE web_tokens SET revoked = 1 WHERE uid = $1 AND revoked = 0 AND expires > $2 "
           "RETURNING uid",
           {uid, now}, [&](const store::row&) { ++n; });
  return n;
}

std::optional<token_holder> web_token_holder(store& db, const std::string& token_hash,
                                             std::int64_t now) {
  std::optional<token_holder> holder;
  db.query("SELECT uid, user_name FROM web_tokens WHERE token_hash = $1 AND revoked = 0 AND "
           "expires > $2",
           {token_hash, now}, [&](const store::row& r) {
             holder = token_holder{r.i64(0), r.text(1)};
           });
  return holder;
}

} // namespace strata::site
