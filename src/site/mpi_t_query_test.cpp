// The store's MPI_T index and `strata site mpi-t`'s query, on SQLite (and on PostgreSQL when
// tests/integration/test_site.py runs the StoreBackend tests against its server).
#include "site/mpi_t_index.hpp"
#include "site/mpi_t_query.hpp"
#include "site/store_test_fixture.hpp"
#include "site/synth.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace strata::site {
namespace {

using store_testing::StoreBackend;

class MpiTIndex : public StoreBackend {
protected:
  void SetUp() override {
    StoreBackend::SetUp();
    const std::string text =
        store_testing::read_file(std::string(STRATA_RECORD_TESTDATA) + "/mpi_t.json");
    auto parsed = record::parse_record(text);
    ASSERT_TRUE(parsed.ok()) << parsed.error;
    with_mpi_t_ = *parsed.record;
    ASSERT_TRUE(with_mpi_t_.mpi_t);
  }
  // A job of the MPI_T sample with its own id, eager limit, MPI time and ranks; `unexpected`
  // is its unexpected-queue variable's sum.
  stored_job job(int n, const std::string& eager_limit, double mpi_s, std::uint64_t ranks,
                 std::uint64_t unexpected, const std::string& user = "alice") {
    record::job_record r = with_mpi_t_;
    // Its own ids and executable per test: on PostgreSQL the tests share one database.
    r.job.id = executable_ + ":" + std::to_string(n);
    r.job.executable = executable_;
    r.job.start = "2026-11-2" + std::to_string(n % 10) + "T07:50:09Z";
    r.job.end = "2026-11-2" + std::to_string(n % 10) + "T08:00:00Z";
    r.job.ranks = r.job.ranks_reported = ranks;
    r.job.mpi_time_s = mpi_s;
    r.job.user = user;
    r.mpi_t->cvars["btl_vader_eager_limit"] = eager_limit;
    for (record::mpi_t_pvar& p : r.mpi_t->pvars)
      if (p.name == "pml_ob1_unexpected_msgq_length") {
        p.sum.value = unexpected;
        p.max.value = unexpected;
      }
    return make_stored_job(r, record::to_json(r), 1000, user);
  }
  // Every query of a test is over its own jobs.
  mpi_t_query mine() const {
    mpi_t_query q;
    q.executable = executable_;
    return q;
  }
  record::job_record with_mpi_t_;
  std::string executable_ =
      std::string("/mpi_t/") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
};

TEST(MpiTSettings, TextRoundTripsAndKeepsSeparatorsOut) {
  const std::vector<setting> in = {{"b", "2", true}, {"a", "x\x1fy\x1e", false}, {"c", "", false}};
  const std::vector<setting> out = settings_of_text(settings_text(in));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].name, "a");
  EXPECT_EQ(out[0].value, "x?y?");
  EXPECT_EQ(out[1].name, "b");
  EXPECT_TRUE(out[1].from_environment);
  EXPECT_EQ(out[2].value, "");
  EXPECT_FALSE(out[2].from_environment);
  // Lines in name order appended at once: the same text, separators inside replaced too.
  for (const std::vector<setting>& settings :
       {std::vector<setting>{{"a", "1", false}, {"b", "", true}, {"c", "x y", false}},
        std::vector<setting>{{"a", "x\x1fy\x1e", false}, {"b", "2", true}},
        std::vector<setting>{{"a\x1e", "1", true}}, std::vector<setting>{},
        std::vector<setting>{{"abcdefgh",
                              "\x1f\x1e\x1f"
                              "abcdefghijklmno",
                              false}}}) {
    std::string text = "before";
    append_setting_lines(text, [&](auto line) {
      for (const setting& v : settings)
        line(v.name, v.value, v.from_environment);
    });
    EXPECT_EQ(text, "before" + settings_text(settings));
  }
}

TEST_F(MpiTIndex, EachValueWithItsJobsAndMedianAndThePvarsOverJobs) {
  auto s = store::open(url_);
  // Three jobs at 4096 (MPI s per rank 1, 2, 6: median 2), one at 65536 (0.5), one of bob's.
  std::vector<stored_job> jobs = {job(1, "4096", 4, 4, 3), job(2, "4096", 8, 4, 5),
                                  job(3, "4096", 24, 4, 0), job(4, "65536", 2, 4, 9),
                                  job(5, "65536", 1, 2, 1, "bob")};
  jobs.push_back(job(6, "4096", 1, 1, 0));
  jobs.back().mpi_t.reset(); // a job without MPI_T is not counted
  const insert_result r = s->insert(jobs);
  ASSERT_EQ(r.inserted, 6);
  EXPECT_EQ(query_mpi_t(*s, mine()).settings, 2) << "one set per distinct eager limit";

  const std::string id = executable_ + ":";
  mpi_t_query q = mine();
  q.owner = "alice";
  mpi_t_summary m = query_mpi_t(*s, q);
  EXPECT_EQ(m.jobs, 4);
  EXPECT_EQ(m.settings, 2);
  EXPECT_EQ(m.cvar_names, static_cast<std::int64_t>(with_mpi_t_.mpi_t->cvars.size()));
  EXPECT_EQ(m.differing_names, 1);
  ASSERT_EQ(m.cvars.size(), 1u);
  const cvar_summary& eager = m.cvars[0];
  EXPECT_EQ(eager.name, "btl_vader_eager_limit");
  ASSERT_EQ(eager.values.size(), 2u);
  EXPECT_EQ(eager.values[0].value, "4096");
  EXPECT_EQ(eager.values[0].jobs, 3);
  EXPECT_EQ(eager.values[0].from_environment, 3) << "the sample's environment set it";
  EXPECT_DOUBLE_EQ(eager.values[0].median_mpi_s_per_rank, 2.0);
  EXPECT_EQ(eager.values[0].record_ids, (std::vector<std::string>{id + "3", id + "2", id + "1"}));
  EXPECT_EQ(eager.values[1].value, "65536");
  EXPECT_DOUBLE_EQ(eager.values[1].median_mpi_s_per_rank, 0.5);
  const auto unexpected = std::find_if(m.pvars.begin(), m.pvars.end(), [](const pvar_summary& p) {
    return p.name == "pml_ob1_unexpected_msgq_length";
  });
  ASSERT_NE(unexpected, m.pvars.end());
  EXPECT_EQ(unexpected->jobs, 4);
  EXPECT_DOUBLE_EQ(unexpected->total_sum, 17);
  EXPECT_DOUBLE_EQ(unexpected->median_sum, 4);
  EXPECT_DOUBLE_EQ(unexpected->max, 9);
  EXPECT_EQ(unexpected->max_record_id, id + "4");
  for (const pvar_summary& p : m.pvars)
    EXPECT_NE(p.name, "osc_rdma_put_retry_count") << "not read: not indexed";

  // Every user, one variable by name; a prefix; a name nobody has.
  q = mine();
  q.name = "btl_vader_eager_limit";
  q.listed_jobs = 1;
  m = query_mpi_t(*s, q);
  ASSERT_EQ(m.cvars.size(), 1u);
  EXPECT_EQ(m.cvars[0].values[1].jobs, 2);
  EXPECT_DOUBLE_EQ(m.cvars[0].values[1].median_mpi_s_per_rank, 0.5); // 0.5 and 0.5
  EXPECT_EQ(m.cvars[0].values[0].record_ids.size(), 1u);
  EXPECT_TRUE(m.pvars.empty());
  q.name = "pml_ob1_*";
  m = query_mpi_t(*s, q);
  EXPECT_TRUE(m.cvars.empty());
  EXPECT_EQ(m.pvars.size(), 2u);
  q.name = "no_such_variable";
  m = query_mpi_t(*s, q);
  EXPECT_TRUE(m.cvars.empty() && m.pvars.empty());
  q = mine();
  q.all = true;
  EXPECT_EQ(query_mpi_t(*s, q).cvars.size(), with_mpi_t_.mpi_t->cvars.size());

  const nlohmann::json doc = nlohmann::json::parse(render_mpi_t_json(query_mpi_t(*s, mine())));
  EXPECT_EQ(doc["jobs"], 5);
  EXPECT_EQ(doc["cvars"][0]["values"][0]["jobs"], 3);
  const std::string text = render_mpi_t_text(query_mpi_t(*s, mine()), mine());
  EXPECT_NE(text.find("btl_vader_eager_limit"), std::string::npos) << text;
  EXPECT_NE(text.find("pml_ob1_unexpected_msgq_length"), std::string::npos) << text;
}

// The synthetic section (`strata site synth --mpi-t`, for ingest benchmarks) is shaped like the
// real one and indexed like it: the launch's identity varies per job but splits no set.
TEST_F(MpiTIndex, SynthesizedSectionsAreShapedAndIndexedLikeARealJobs) {
  synth_options o;
  o.mpi_t = true;
  o.users = 1;
  std::vector<stored_job> jobs;
  std::vector<std::string> job_ids;
  for (std::int64_t i = 0; jobs.size() < 2 && i < 100; ++i) {
    record::job_record r = synth_record(o, i);
    if (r.job.ranks != 4)
      continue; // two jobs of the same size: the same settings
    ASSERT_TRUE(r.mpi_t);
    EXPECT_GT(r.mpi_t->cvars.size(), 250u);
    EXPECT_EQ(r.mpi_t->cvars_set.size(), 16u);
    EXPECT_EQ(r.mpi_t->pvars.size(), 18u);
    EXPECT_EQ(std::count_if(r.mpi_t->pvars.begin(), r.mpi_t->pvars.end(),
                            [](const record::mpi_t_pvar& p) { return p.ranks == 4; }),
              3);
    const std::string json = record::to_json(r);
    const auto again = record::parse_record(json);
    ASSERT_TRUE(again.ok()) << again.error;
    EXPECT_EQ(*again.record->mpi_t, *r.mpi_t);
    // The index writes the set's text straight from the section, the launch's identity left
    // out: the text settings_text gives for the same settings in any order.
    const std::vector<std::string> launch = {"ess_base_jobid", "orte_hnp_uri",
                                             "orte_local_daemon_uri", "orte_parent_uri",
                                             "orte_jobfam_session_dir"};
    std::vector<setting> settings;
    for (const auto& [name, value] : r.mpi_t->cvars)
      if (std::find(launch.begin(), launch.end(), name) == launch.end())
        settings.push_back({name, value,
                            std::find(r.mpi_t->cvars_set.begin(), r.mpi_t->cvars_set.end(), name) !=
                                r.mpi_t->cvars_set.end()});
    std::reverse(settings.begin(), settings.end());
    EXPECT_EQ(*mpi_t_rows_of(*r.mpi_t).settings, settings_text(settings));
    EXPECT_EQ(settings.size() + launch.size(), r.mpi_t->cvars.size());
    job_ids.push_back(r.mpi_t->cvars.at("ess_base_jobid"));
    r.job.id = executable_ + ":" + std::to_string(i);
    r.job.executable = executable_;
    jobs.push_back(make_stored_job(r, json, 1000, "alice"));
  }
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_NE(job_ids[0], job_ids[1]);
  auto s = store::open(url_);
  ASSERT_EQ(s->insert(jobs).inserted, 2);
  const mpi_t_summary m = query_mpi_t(*s, mine());
  EXPECT_EQ(m.jobs, 2);
  EXPECT_EQ(m.settings, 1);
  EXPECT_EQ(m.pvars.size(), 3u);
}

TEST_F(MpiTIndex, MigrationNineIndexesTheRecordsStoredBefore) {
  auto s = store::open(url_);
  ASSERT_EQ(s->insert({job(1, "4096", 4, 4, 3), job(2, "8192", 8, 4, 5)}).inserted, 2);
  record::job_record without = sample_;
  without.job.executable = executable_;
  without.job.id = executable_ + ":plain";
  stored_job plain = make_stored_job(without, record::to_json(without), 1000, "alice");
  ASSERT_EQ(s->insert({plain}).inserted, 1);
  s->execute(std::string(store_testing::drop_version_9) +
             "DELETE FROM schema_version WHERE version >= 9");
  s.reset();
  s = store::open(url_);
  EXPECT_EQ(s->schema_version(), store_schema_version);
  const mpi_t_summary m = query_mpi_t(*s, mine());
  EXPECT_EQ(m.jobs, 2) << "the record without MPI_T is not indexed";
  ASSERT_EQ(m.cvars.size(), 1u);
  EXPECT_EQ(m.cvars[0].values.size(), 2u);
  EXPECT_FALSE(m.pvars.empty());
}

// A store of version 9 kept a set as a row per variable; version 10 moves them into the set's
// text, and every answer stays the same.
TEST_F(MpiTIndex, MigrationTenKeepsEachSetAsItsText) {
  auto s = store::open(url_);
  ASSERT_EQ(s->insert({job(1, "4096", 4, 4, 3), job(2, "8192", 8, 4, 5), job(3, "2048", 6, 8, 4)})
                .inserted,
            3);
  mpi_t_query every = mine();
  every.all = true;
  const std::string before = render_mpi_t_json(query_mpi_t(*s, every));
  const std::int64_t my_sets = query_mpi_t(*s, mine()).settings;
  ASSERT_EQ(my_sets, 3) << "one a value of the eager limit";
  // Back to version 9: the texts as rows, written as version 9 wrote them.
  std::vector<std::pair<std::int64_t, std::string>> sets;
  s->query("SELECT settings_id, settings FROM mpi_t_settings", {},
           [&](const store::row& r) { sets.emplace_back(r.i64(0), r.text(1)); });
  ASSERT_GE(sets.size(), 3u); // on PostgreSQL other tests' sets too
  s->execute("CREATE TABLE mpi_t_setting_values (settings_id BIGINT NOT NULL, name TEXT NOT NULL, "
             "value TEXT NOT NULL, from_environment INTEGER NOT NULL, PRIMARY KEY (settings_id, "
             "name)); ALTER TABLE mpi_t_settings DROP COLUMN settings; " +
             std::string(store_testing::drop_version_12) +
             "DELETE FROM schema_version WHERE version >= 10");
  size_t rows = 0;
  for (const auto& [id, text] : sets)
    for (const setting& v : settings_of_text(text)) {
      s->query("INSERT INTO mpi_t_setting_values VALUES ($1, $2, $3, $4)",
               {id, v.name, v.value, v.from_environment ? 1 : 0}, [](const store::row&) {});
      ++rows;
    }
  ASSERT_GT(rows, with_mpi_t_.mpi_t->cvars.size());
  s.reset();
  s = store::open(url_);
  EXPECT_EQ(s->schema_version(), store_schema_version);
  EXPECT_EQ(render_mpi_t_json(query_mpi_t(*s, every)), before);
  std::vector<std::pair<std::int64_t, std::string>> after;
  s->query("SELECT settings_id, settings FROM mpi_t_settings", {},
           [&](const store::row& r) { after.emplace_back(r.i64(0), r.text(1)); });
  std::sort(sets.begin(), sets.end());
  std::sort(after.begin(), after.end());
  EXPECT_EQ(after, sets) << "each set's text as the ingest wrote it";
  bool table_left = true;
  try {
    s->query("SELECT COUNT(*) FROM mpi_t_setting_values", {}, [](const store::row&) {});
  } catch (const std::exception&) {
    table_left = false;
  }
  EXPECT_FALSE(table_left) << "version 9's table of rows is dropped";
  // A job of a set the store holds names it; a new set is added.
  ASSERT_EQ(s->insert({job(4, "8192", 5, 4, 1), job(5, "1024", 5, 4, 1)}).inserted, 2);
  const mpi_t_summary m = query_mpi_t(*s, mine());
  EXPECT_EQ(m.jobs, 5);
  EXPECT_EQ(m.settings, my_sets + 1);
}

} // namespace
} // namespace strata::site
