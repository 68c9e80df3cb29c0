#include "site/web/tokens.hpp"

#include "site/web_tokens.hpp"

#include <grp.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pwd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <vector>

namespace strata::web {
namespace {

std::string hex(const unsigned char* bytes, std::size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
  }
  return out;
}

std::optional<passwd> lookup_user(const std::string& name, std::vector<char>& buf) {
  passwd pw{};
  passwd* found = nullptr;
  buf.resize(16384);
  if (::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr)
    return std::nullopt;
  return pw;
}

} // namespace

identity calling_user() {
  identity who;
  who.uid = ::getuid();
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (::getpwuid_r(static_cast<uid_t>(who.uid), &pw, buf.data(), buf.size(), &found) == 0 &&
      found != nullptr)
    who.user = found->pw_name;
  else
    who.user = "uid" + std::to_string(who.uid); // the name ingest gives such an owner
  return who;
}

std::optional<identity> user_named(const std::string& name) {
  std::vector<char> buf;
  const std::optional<passwd> pw = lookup_user(name, buf);
  if (!pw)
    return std::nullopt;
  return identity{pw->pw_uid, pw->pw_name};
}

std::string sha256_hex(std::string_view text) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_Digest(text.data(), text.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1)
    throw site::store_error("SHA-256 failed (OpenSSL)");
  return hex(digest.data(), length);
}

std::string random_hex(std::size_t bytes) {
  std::vector<unsigned char> random(bytes);
  if (RAND_bytes(random.data(), static_cast<int>(random.size())) != 1)
    throw site::store_error("no random bytes for a token (OpenSSL RAND_bytes)");
  return hex(random.data(), random.size());
}

issued_token issue_token(site::store& db, const identity& who, int ttl_days, std::int64_t now) {
  issued_token t;
  t.token = "strata_" + random_hex(32);
  t.expires = now + std::int64_t{ttl_days} * 86400;
  site::add_web_token(db, sha256_hex(t.token), {who.uid, who.user}, now, t.expires);
  return t;
}

std::int64_t revoke_tokens(site::store& db, std::int64_t uid, std::int64_t now) {
  return site::revoke_web_tokens(db, uid, now);
}

std::optional<identity> check_token(site::store& db, std::string_view token, std::int64_t now) {
  if (token.empty() || token.size() > 200)
    return std::nullopt;
  return check_token_hash(db, sha256_hex(token), now);
}

std::optional<identity> check_token_hash(site::store& db, const std::string& token_hash,
                                         std::int64_t now) {
  const std::optional<site::token_holder> holder = site::web_token_holder(db, token_hash, now);
  if (!holder)
    return std::nullopt;
  return identity{holder->uid, holder->user};
}

bool in_group(const std::string& user, const std::string& group) {
  if (group.empty())
    return false;
  std::vector<char> buf;
  const std::optional<passwd> pw = lookup_user(user, buf);
  if (!pw)
    return false;
  std::vector<char> gbuf(16384);
  ::group gr{};
  ::group* found = nullptr;
  while (::getgrnam_r(group.c_str(), &gr, gbuf.data(), gbuf.size(), &found) == ERANGE &&
         gbuf.size() < (std::size_t{1} << 20))
    gbuf.resize(gbuf.size() * 2);
  if (found == nullptr)
    return false;
  const gid_t wanted = found->gr_gid;
  int n = 64;
  std::vector<gid_t> groups(static_cast<std::size_t>(n));
  while (::getgrouplist(user.c_str(), pw->pw_gid, groups.data(), &n) == -1)
    groups.resize(static_cast<std::size_t>(n));
  groups.resize(static_cast<std::size_t>(n));
  for (const gid_t g : groups)
    if (g == wanted)
      return true;
  return false;
}

} // namespace strata::web
