#include "site/web/reply.hpp"
#include "site/web/sessions.hpp"
#include "site/web/tokens.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

namespace strata::web {
namespace {

TEST(Tokens, Sha256KnownValue) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

class TokenStore : public ::testing::Test {
protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("strata-web-test-" + std::to_string(::getpid()) + ".db");
    std::filesystem::remove(path_);
    db_ = site::store::open("sqlite:" + path_.string());
  }
  void TearDown() override {
    db_.reset();
    std::filesystem::remove(path_);
  }
  std::filesystem::path path_;
  std::unique_ptr<site::store> db_;
};

TEST_F(TokenStore, IssuedTokenIsStoredOnlyHashedAndChecks) {
  const identity who{4242, "someone"};
  const issued_token t = issue_token(*db_, who, 1, 1000);
  EXPECT_EQ(t.expires, 1000 + 86400);
  EXPECT_EQ(t.token.rfind("strata_", 0), 0U);
  const auto found = check_token(*db_, t.token, 2000);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->uid, 4242);
  EXPECT_EQ(found->user, "someone");
  int rows = 0;
  db_->query("SELECT token_hash FROM web_tokens", {}, [&](const site::store::row& r) {
    ++rows;
    EXPECT_EQ(r.text(0), sha256_hex(t.token));
    EXPECT_EQ(r.text(0).find(t.token), std::string::npos);
  });
  EXPECT_EQ(rows, 1);
  EXPECT_FALSE(check_token(*db_, t.token + "x", 2000));
  EXPECT_FALSE(check_token(*db_, "", 2000));
}

TEST_F(TokenStore, ExpiredAndRevokedTokensFail) {
  const identity who{7, "u7"};
  const issued_token t = issue_token(*db_, who, 1, 1000);
  EXPECT_FALSE(check_token(*db_, t.token, 1000 + 86400));
  const issued_token u = issue_token(*db_, who, 30, 1000);
  const issued_token other = issue_token(*db_, identity{8, "u8"}, 30, 1000);
  const std::int64_t later = 1000 + 86400 + 1;
  EXPECT_EQ(revoke_tokens(*db_, 7, later), 1); // the expired one is not counted
  EXPECT_FALSE(check_token(*db_, u.token, later));
  EXPECT_TRUE(check_token(*db_, other.token, later));
}

TEST(Reply, GzipOnlyWhereTheClientAcceptsIt) {
  EXPECT_TRUE(accepts_gzip("gzip, deflate, br, zstd")); // Chromium
  EXPECT_TRUE(accepts_gzip("br;q=1.0, GZIP;q=0.5"));
  EXPECT_TRUE(accepts_gzip("*"));
  EXPECT_FALSE(accepts_gzip(""));
  EXPECT_FALSE(accepts_gzip("br"));
  EXPECT_FALSE(accepts_gzip("identity"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0, br"));
  EXPECT_FALSE(accepts_gzip("gzip ; q=0.000"));
  EXPECT_FALSE(accepts_gzip("*, gzip;q=0"));
  EXPECT_FALSE(accepts_gzip("xgzip"));
}

TEST(Reply, GzipIsTheGzipFormat) {
  const std::string text(5000, 'a');
  const std::string packed = gzip(text, 1);
  ASSERT_GE(packed.size(), 18U);
  EXPECT_EQ(static_cast<unsigned char>(packed[0]), 0x1f); // the gzip magic
  EXPECT_EQ(static_cast<unsigned char>(packed[1]), 0x8b);
  EXPECT_LT(packed.size(), text.size() / 10);
}

TEST(Sessions, CookieHoldsAnIdThatEndsAtLogout) {
  session_table sessions;
  const std::string id = sessions.open("hash-of-token", 1000);
  EXPECT_EQ(id.find("hash-of-token"), std::string::npos);
  EXPECT_EQ(sessions.token_hash_of(id, 1001), "hash-of-token");
  EXPECT_FALSE(sessions.token_hash_of(id + "x", 1001));
  EXPECT_FALSE(sessions.token_hash_of(id, 1000 + session_table::lifetime_s));
  const std::string other = sessions.open("hash-of-token", 1000);
  EXPECT_NE(other, id);
  sessions.close(id);
  EXPECT_FALSE(sessions.token_hash_of(id, 1001));
  EXPECT_EQ(sessions.token_hash_of(other, 1001), "hash-of-token");
}

TEST(Sessions, PastedTokensAndTheBearerScheme) {
  EXPECT_EQ(trim_token(" strata_ab \r\n"), "strata_ab");
  EXPECT_EQ(trim_token("\t\n"), "");
  EXPECT_EQ(bearer_token("Bearer strata_ab"), "strata_ab");
  EXPECT_EQ(bearer_token("bearer strata_ab"), "strata_ab");
  EXPECT_EQ(bearer_token("BEARER   strata_ab \n"), "strata_ab");
  EXPECT_EQ(bearer_token("Bearerstrata_ab"), "");
  EXPECT_EQ(bearer_token("Basic dXNlcjpwYXNz"), "");
  EXPECT_EQ(bearer_token("Bearer "), "");
  EXPECT_EQ(bearer_token(""), "");
}

TEST(Groups, RootIsInItsPrimaryGroupAndNotInAMissingOne) {
  EXPECT_TRUE(in_group("root", "root"));
  EXPECT_FALSE(in_group("root", "no-such-group-strata"));
  EXPECT_FALSE(in_group("no-such-user-strata", "root"));
}

} // namespace
} // namespace strata::web
