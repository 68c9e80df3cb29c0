#include "site/stored_job.hpp"

#include "profiler/record/record.hpp"
#include "site/groups.hpp"
#include "site/job_collectives.hpp"
#include "site/job_pairs.hpp"
#include "site/mpi_t_index.hpp"
#include "site/parse.hpp"
#include "site/store.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <libdeflate.h>
#include <map>
#include <memory>
#include <mutex>
#include <pwd.h>
#include <simdjson.h>
#include <unistd.h>
#include <zlib.h>

namespace strata::site {
namespace {

std::string user_name(std::int64_t uid) {
  // Ingest asks for the same few owners again and again; NSS may ask a daemon each time.
  static std::mutex mutex;
  static std::map<std::int64_t, std::string> cache;
  const std::lock_guard lock(mutex);
  if (auto it = cache.find(uid); it != cache.end())
    return it->second;
  std::string& name = cache[uid];
  char buf[4096];
  passwd pw{};
  passwd* found = nullptr;
  if (::getpwuid_r(static_cast<uid_t>(uid), &pw, buf, sizeof buf, &found) == 0 && found != nullptr)
    name = found->pw_name;
  return name;
}

} // namespace

// Records are kept deflated (about a quarter of the JSON): "z1", the length as 4 bytes little
// endian, then zlib data. Anything else is taken as plain text (for hand-made rows). libdeflate
// writes the zlib format at a third of zlib's cost on records of a few kilobytes (one
// compressor per thread, no per-call set-up); zlib's uncompress reads it as before.
std::string pack_record(const std::string& json) {
  struct compressor_deleter {
    void operator()(libdeflate_compressor* c) const { libdeflate_free_compressor(c); }
  };
  thread_local const std::unique_ptr<libdeflate_compressor, compressor_deleter> compressor(
      libdeflate_alloc_compressor(1));
  if (!compressor || json.size() > UINT32_MAX)
    return json;
  // Deflated into this thread's buffer, then copied at its size: a string of the bound's size
  // (more than the text's) would be zeroed and kept whole by every job until its commit.
  thread_local std::string buffer;
  const size_t bound = libdeflate_zlib_compress_bound(compressor.get(), json.size());
  if (buffer.size() < bound)
    buffer.resize(bound);
  const size_t size =
      libdeflate_zlib_compress(compressor.get(), json.data(), json.size(), buffer.data(), bound);
  if (size == 0)
    return json;
  std::string out;
  out.reserve(6 + size);
  out += 'z';
  out += '1';
  for (int i = 0; i < 4; ++i)
    out += static_cast<char>((json.size() >> (8 * i)) & 0xff);
  out.append(buffer, 0, size);
  return out;
}

std::string unpack_record(const std::string& stored) {
  if (stored.size() < 6 || stored[0] != 'z' || stored[1] != '1')
    return stored;
  uLongf size = 0;
  for (int i = 0; i < 4; ++i)
    size |= static_cast<uLongf>(static_cast<unsigned char>(stored[2 + i])) << (8 * i);
  std::string out(size, '\0');
  if (uncompress(reinterpret_cast<Bytef*>(out.data()), &size,
                 reinterpret_cast<const Bytef*>(stored.data() + 6),
                 static_cast<uLong>(stored.size() - 6)) != Z_OK)
    throw store_error("a stored record is damaged (zlib data does not inflate)");
  out.resize(size);
  return out;
}

stored_job make_stored_job(const record::job_record& record, std::string record_json,
                           std::int64_t owner_uid, std::string owner_name,
                           const std::vector<record::cvar_view>* cvars) {
  stored_job s;
  job_row& j = s.job;
  const record::job_facts& f = record.job;
  const auto start = parse_utc_time(f.start);
  const auto end = parse_utc_time(f.end);
  j.start_time = start.value_or(end.value_or(0));
  j.end_time = end.value_or(j.start_time);
  j.record_id = f.id;
  j.job_key = f.id + "@" + f.start;
  j.owner_uid = owner_uid;
  j.claimed_user = f.user;
  j.claimed_uid = static_cast<std::int64_t>(f.uid);
  j.owner_mismatch = j.claimed_uid != owner_uid;
  if (owner_name.empty())
    owner_name = user_name(owner_uid);
  if (owner_name.empty())
    owner_name = !j.owner_mismatch && !f.user.empty() ? f.user : "uid" + std::to_string(owner_uid);
  j.owner = std::move(owner_name);
  j.ranks = static_cast<std::int64_t>(f.ranks);
  j.ranks_reported = static_cast<std::int64_t>(f.ranks_reported);
  j.hosts = static_cast<std::int64_t>(f.hosts);
  j.executable = f.executable;
  j.language = f.language;
  j.mpi_flavor = f.mpi_flavor;
  j.status = std::string(record::status_name(f.status));
  if (f.slurm) {
    j.slurm_account = f.slurm->account;
    j.slurm_partition = f.slurm->partition;
  }
  if (f.exit_code)
    j.exit_code = *f.exit_code;
  j.partial = f.partial;
  j.wall_time_s = f.wall_time_s;
  j.cpu_time_s = f.wall_time_s * static_cast<double>(f.ranks_reported);
  j.mpi_time_s = f.mpi_time_s;
  j.mpi_percent = f.mpi_percent;
  j.overhead_s = f.profiler_overhead_s;
  j.cpu_class = j.cpu_time_s >= 1 ? static_cast<int>(std::floor(std::log10(j.cpu_time_s))) : 0;
  if (auto it = f.counters.find("instructions"); it != f.counters.end())
    j.instructions = static_cast<double>(it->second.outside_mpi);
  for (const record::routine& r : record.routines) {
    routine_row row;
    row.routine = r.name;
    row.calls = static_cast<std::int64_t>(std::min<std::uint64_t>(r.calls, INT64_MAX / 1024));
    row.time_s = r.time_s;
    // The store's integers are signed 64-bit: a figure beyond that is kept as the largest.
    row.bytes = static_cast<std::int64_t>(std::min<std::uint64_t>(r.bytes(), INT64_MAX / 1024));
    row.count_sum =
        static_cast<std::int64_t>(std::min<std::uint64_t>(r.count_sum, INT64_MAX / 1024));
    j.mpi_calls = std::min(j.mpi_calls, INT64_MAX - row.calls) + row.calls;
    j.mpi_bytes = std::min(j.mpi_bytes, INT64_MAX - row.bytes) + row.bytes;
    if (r.calls > 0)
      if (const auto g = group_of(r.name))
        j.routine_groups |= std::int64_t{1} << static_cast<int>(*g);
    s.routines.push_back(std::move(row));
  }
  s.record_json = std::move(record_json);
  s.arguments = argument_line(f.argv);
  if (record.mpi_t)
    s.mpi_t = cvars ? mpi_t_rows_of(*record.mpi_t, *cvars) : mpi_t_rows_of(*record.mpi_t);
  if (record.communication) {
    s.pairs = pair_rows_of(*record.communication);
    if (record.communication->collectives)
      s.collectives = collective_rows_of(*record.communication->collectives);
  }
  return s;
}

bool complete_run(const job_row& j) {
  return !j.partial && j.ranks_reported == j.ranks && j.status == "finalized";
}

std::string argument_line(const std::vector<std::string>& argv) {
  std::string line;
  for (size_t a = 1; a < argv.size(); ++a) {
    const std::string& arg = argv[a];
    if (a > 1)
      line += ' ';
    if (!arg.empty() && arg.find_first_of(" \t\n'\"\\") == std::string::npos) {
      line += arg;
      continue;
    }
    line += '\'';
    for (const char c : arg)
      line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += '\'';
  }
  return line;
}

std::string arguments_of_record(const std::string& json) {
  thread_local simdjson::ondemand::parser parser;
  const simdjson::padded_string padded(json);
  simdjson::ondemand::document doc;
  if (parser.iterate(padded).get(doc) != simdjson::SUCCESS)
    return {};
  simdjson::ondemand::array argv;
  if (doc["job"]["argv"].get_array().get(argv) != simdjson::SUCCESS)
    return {};
  std::vector<std::string> args;
  for (auto element : argv) {
    std::string_view text;
    if (element.get_string().get(text) != simdjson::SUCCESS)
      return {};
    args.emplace_back(text);
  }
  return argument_line(args);
}

} // namespace strata::site
