#include "gen/routines.hpp"
#include "profiler/record/record.hpp"
#include "site/groups.hpp"
#include "site/ingest.hpp"
#include "site/mail.hpp"
#include "site/parse.hpp"
#include "site/report.hpp"
#include "site/store.hpp"
#include "site/store_test_fixture.hpp"
#include "site/synth.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <set>
#include <sstream>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>
#include <zlib.h>

namespace strata::site {
namespace {

using namespace store_testing;

TEST(SiteParse, DatabaseUrls) {
  auto a = parse_db_url("sqlite:/var/lib/strata/site.db");
  ASSERT_TRUE(a.url);
  EXPECT_EQ(a.url->kind, backend::sqlite);
  EXPECT_EQ(a.url->target, "/var/lib/strata/site.db");
  EXPECT_EQ(parse_db_url("sqlite:///tmp/x.db").url->target, "/tmp/x.db");
  auto p = parse_db_url("postgresql://strata@db.example/site");
  ASSERT_TRUE(p.url);
  EXPECT_EQ(p.url->kind, backend::postgresql);
  EXPECT_EQ(p.url->target, "postgresql://strata@db.example/site");
  EXPECT_TRUE(parse_db_url("postgres://h/d").url);
  EXPECT_FALSE(parse_db_url("sqlite:").url);
  auto bad = parse_db_url("mysql://x");
  EXPECT_FALSE(bad.url);
  EXPECT_NE(bad.error.find("neither sqlite:PATH nor postgresql://"), std::string::npos);
}

TEST(SiteParse, Durations) {
  EXPECT_EQ(*parse_duration("7d").seconds, 7 * 86400);
  EXPECT_EQ(*parse_duration("36h").seconds, 36 * 3600);
  EXPECT_EQ(*parse_duration("2w").seconds, 14 * 86400);
  EXPECT_EQ(*parse_duration("90s").seconds, 90);
  EXPECT_EQ(*parse_duration("5m").seconds, 300);
  for (const char* bad : {"", "d", "7", "7x", "-3d", "0d", "7dd", "99999999999999999999d"}) {
    const auto r = parse_duration(bad);
    EXPECT_FALSE(r.seconds) << bad;
    EXPECT_FALSE(r.error.empty()) << bad;
  }
}

TEST(SiteParse, UtcTimes) {
  EXPECT_EQ(*parse_utc_time("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(*parse_utc_time("2026-11-22T01:27:18Z"), 1795310838);
  EXPECT_EQ(*parse_utc_time("2024-02-29"), 1709164800);
  EXPECT_FALSE(parse_utc_time("2023-02-29"));
  EXPECT_FALSE(parse_utc_time("2026-13-01"));
  EXPECT_FALSE(parse_utc_time("2026-11-22 01:27:18"));
  EXPECT_FALSE(parse_utc_time("2026-11-22T25:00:00Z"));
  EXPECT_EQ(format_utc_time(1795310838), "2026-11-22T01:27:18Z");
  EXPECT_EQ(format_utc_time(1795310838, true), "2026-11-22");
}

TEST(SiteGroups, GroupsOfThePaper) {
  EXPECT_EQ(group_of("MPI_Send"), routine_group::blocking_p2p);
  EXPECT_EQ(group_of("MPI_Irecv"), routine_group::nonblocking_p2p);
  EXPECT_EQ(group_of("MPI_Waitall"), routine_group::nonblocking_p2p);
  EXPECT_EQ(group_of("MPI_Send_init"), routine_group::persistent_p2p);
  EXPECT_EQ(group_of("MPI_Allreduce"), routine_group::collective);
  EXPECT_EQ(group_of("MPI_Iallreduce"), routine_group::collective);
  EXPECT_EQ(group_of("MPI_Type_vector"), routine_group::derived_datatype);
  EXPECT_EQ(group_of("MPI_Comm_split"), routine_group::group_subcomm);
  EXPECT_EQ(group_of("MPI_Intercomm_create"), routine_group::intercomm);
  EXPECT_EQ(group_of("MPI_Comm_get_attr"), routine_group::attribute_inquiry);
  EXPECT_EQ(group_of("MPI_Comm_set_errhandler"), routine_group::error_handler);
  EXPECT_EQ(group_of("MPI_Cart_create"), routine_group::topology);
  EXPECT_EQ(group_of("MPI_Wtime"), routine_group::wtime);
  EXPECT_EQ(group_of("MPI_Get_accumulate"), routine_group::one_sided);
  EXPECT_EQ(group_of("MPI_File_open"), routine_group::io);
  EXPECT_EQ(group_of("MPI_Pack"), routine_group::pack_unpack);
  EXPECT_FALSE(group_of("MPI_Init"));
  EXPECT_FALSE(group_of("MPI_Comm_rank"));
  // From the routine table, where the site's own list had them as "other" or left them out.
  EXPECT_FALSE(group_of("MPI_Session_init"));
  EXPECT_EQ(group_of("MPI_Isendrecv"), routine_group::nonblocking_p2p);
  EXPECT_EQ(group_of("MPI_Psend_init"), routine_group::persistent_p2p);
  EXPECT_EQ(group_of("MPI_Neighbor_alltoall"), routine_group::collective);
  EXPECT_EQ(group_of("MPI_Reduce_local"), routine_group::collective);
  EXPECT_EQ(group_of("MPI_Send_c"), routine_group::blocking_p2p);
  EXPECT_EQ(group_of("MPI_Not_in_any_header"), routine_group::other);
}

TEST(SiteReport, SizeClassesOfThePaper) {
  EXPECT_EQ(size_class_label(1), "1");
  EXPECT_EQ(size_class_label(64), "64");
  EXPECT_EQ(size_class_label(65), "65-127");
  EXPECT_EQ(size_class_label(127), "65-127");
  EXPECT_EQ(size_class_label(3), "3");
}

TEST(SiteMail, QuotedPrintable) {
  EXPECT_EQ(quoted_printable("plain text\n"), "plain text\r\n");
  EXPECT_EQ(quoted_printable("a=b"), "a=3Db");
  EXPECT_EQ(quoted_printable("trailing \n"), "trailing=20\r\n");
  EXPECT_EQ(quoted_printable("\xc3\xa4"), "=C3=A4");
  EXPECT_EQ(quoted_printable(".dot"), "=2Edot");
  const std::string long_line(200, 'x');
  const std::string encoded = quoted_printable(long_line);
  size_t start = 0;
  while (start < encoded.size()) {
    size_t end = encoded.find("\r\n", start);
    if (end == std::string::npos)
      end = encoded.size();
    EXPECT_LE(end - start, 76u);
    start = end + 2;
  }
}

TEST(SiteMail, MultipartWithBothParts) {
  user_report u;
  u.owner = "alice";
  u.totals.jobs = 3;
  u.mpi_percent = 40;
  u.mpi_critical = true;
  report_options o;
  o.period_label = "week of 2026-11-16";
  o.when = {*parse_utc_time("2026-11-16"), *parse_utc_time("2026-11-23")};
  mail_options m;
  m.domain = "example.org";
  m.from = "hpc@example.org\r\nBcc: victim@example.org"; // no header injection
  m.date = *parse_utc_time("2026-11-23");
  const std::string mail = build_mail(u, o, m);
  EXPECT_NE(mail.find("To: alice@example.org\r\n"), std::string::npos);
  EXPECT_EQ(mail.find("\r\nBcc:"), std::string::npos);
  EXPECT_NE(mail.find("Content-Type: multipart/alternative; boundary="), std::string::npos);
  EXPECT_NE(mail.find("Content-Type: text/plain; charset=utf-8"), std::string::npos);
  EXPECT_NE(mail.find("Content-Type: text/html; charset=utf-8"), std::string::npos);
  EXPECT_NE(mail.find("Date: Mon, 23 Nov 2026 00:00:00 +0000"), std::string::npos);
  EXPECT_NE(mail.find("(critical)"), std::string::npos);
}

TEST(SiteSynth, ValidDeterministicRecords) {
  synth_options o;
  o.seed = 5;
  o.from = *parse_utc_time("2026-11-01");
  o.to = *parse_utc_time("2026-11-29");
  for (std::int64_t i = 0; i < 300; ++i) {
    const record::job_record r = synth_record(o, i);
    const auto again = record::parse_record(record::to_json(r));
    ASSERT_TRUE(again.ok()) << again.error;
    EXPECT_EQ(record::to_json(synth_record(o, i)), record::to_json(r));
    const auto end = parse_utc_time(r.job.end);
    ASSERT_TRUE(end);
    EXPECT_GE(*end, o.from);
    EXPECT_LT(*end, o.to);
    double mpi = 0;
    for (const auto& routine : r.routines)
      mpi += routine.time_s;
    EXPECT_NEAR(mpi, r.job.mpi_time_s, 1e-9 * (1 + mpi));
  }
  o.seed = 6;
  EXPECT_NE(record::to_json(synth_record(o, 0)), record::to_json(synth_record({}, 0)));
}

// The ingest's parse workers lower only their own priority (Linux keeps nice per thread), by
TEST(SiteStore, WeekStartsMonday) {
  // 2026-11-22 is a Sunday; its week began Monday 2026-11-16.
  EXPECT_EQ(week_start(*parse_utc_time("2026-11-22T23:00:00Z")), *parse_utc_time("2026-11-16"));
  EXPECT_EQ(week_start(*parse_utc_time("2026-11-16")), *parse_utc_time("2026-11-16"));
}

TEST(SiteStore, PackedRecordsReadBackWhoeverPackedThem) {
  const std::string text = read_file(std::string(STRATA_RECORD_TESTDATA) + "/sample.json");
  const std::string packed = pack_record(text);
  ASSERT_EQ(packed.substr(0, 2), "z1");
  EXPECT_LT(packed.size(), text.size() / 2);
  // Ingest keeps every packed record of a batch until its commit: no room beyond its size.
  EXPECT_LT(packed.capacity(), text.size() / 2);
  EXPECT_EQ(unpack_record(packed), text);
  // Stores written before libdeflate hold zlib's own output, level 1, in the same frame.
  uLongf size = compressBound(static_cast<uLong>(text.size()));
  std::string old(6 + size, '\0');
  old[0] = 'z';
  old[1] = '1';
  for (int i = 0; i < 4; ++i)
    old[2 + i] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
  ASSERT_EQ(compress2(reinterpret_cast<Bytef*>(old.data() + 6), &size,
                      reinterpret_cast<const Bytef*>(text.data()), static_cast<uLong>(text.size()),
                      Z_BEST_SPEED),
            Z_OK);
  old.resize(6 + size);
  EXPECT_EQ(unpack_record(old), text);
  EXPECT_EQ(unpack_record("{\"hand\": \"made\"}"), "{\"hand\": \"made\"}");
  std::string damaged = packed;
  damaged[damaged.size() / 2] = static_cast<char>(damaged[damaged.size() / 2] ^ 0x5a);
  EXPECT_THROW(unpack_record(damaged), store_error);
}
} // namespace
} // namespace strata::site
