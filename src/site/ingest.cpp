#include "site/ingest.hpp"

#include "common/atomic_file.hpp"
#include "profiler/record/record.hpp"
#include "profiler/record/record_fast.hpp"
#include "profiler/spool.hpp"
#include "site/health.hpp"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <deque>
#include <dirent.h>
#include <exception>
#include <fcntl.h>
#include <fmt/format.h>
#include <future>
#include <malloc.h>
#include <map>
#include <mutex>
#include <sys/resource.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <utility>

namespace strata::site {

namespace {

struct pending {
  std::string path;
  stored_job job;
};

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The owner of each job's per-rank files, so that a record merged from them (written by the
// ingesting user) is handed back to the user who ran the job.
std::map<std::string, uid_t> rank_file_owners(const std::string& spool) {
  std::map<std::string, uid_t> owners;
  DIR* d = ::opendir(spool.c_str());
  if (d == nullptr)
    return owners;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    const size_t rank = name.rfind(".rank");
    if (!ends_with(name, ".prof") || rank == std::string::npos)
      continue;
    struct stat st {};
    if (::fstatat(::dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
      owners.emplace(name.substr(0, rank), st.st_uid);
  }
  ::closedir(d);
  return owners;
}

struct read_file_result {
  std::string text;
  uid_t owner = 0;
  std::string error;
};

read_file_result read_record_file(const std::string& path) {
  read_file_result r;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    r.error = std::strerror(errno);
    return r;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    r.error = "not a regular file";
    return r;
  }
  constexpr off_t limit = 64 << 20;
  if (st.st_size > limit) {
    ::close(fd);
    r.error = fmt::format("{} bytes, more than a job record can be ({} bytes)", st.st_size, limit);
    return r;
  }
  r.owner = st.st_uid;
  r.text.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < r.text.size()) {
    const ssize_t n = ::read(fd, r.text.data() + done, r.text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    done += static_cast<size_t>(n);
  }
  r.text.resize(done);
  ::close(fd);
  return r;
}

struct parsed_file {
  std::string path;
  bool gone = false; // removed meanwhile (another ingest took it)
  std::string read_error, parse_error;
  stored_job job;
};

parsed_file parse_file(std::string path) {
  parsed_file f;
  f.path = std::move(path);
  read_file_result file = read_record_file(f.path);
  if (!file.error.empty()) {
    f.gone = file.error == std::strerror(ENOENT);
    f.read_error = std::move(file.error);
    return f;
  }
  // The control variables are needed only as the index's text: read as views, not copied.
  record::lean_parse_result lean = record::parse_record_lean(file.text);
  if (!lean.parsed.ok()) {
    f.parse_error = std::move(lean.parsed.error);
    return f;
  }
  f.job = make_stored_job(*lean.parsed.record, std::move(file.text), file.owner, {}, &lean.cvars);
  f.job.record_packed = pack_record(f.job.record_json);
  // The store takes the packed form: free the text here. Assigning an empty string would keep
  // the buffer (libstdc++ reuses it), and every record in flight would hold its whole text.
  std::string().swap(f.job.record_json);
  return f;
}

void quarantine(const std::string& dir, const std::string& path, const std::string& reason,
                ingest_summary& s) {
  ++s.quarantined;
  const std::string base = path.substr(path.rfind('/') + 1);
  if (!common::make_writable_dir(dir)) {
    s.problems.push_back(path + ": " + reason + "; left in the spool (cannot write " + dir + ")");
    return;
  }
  const std::string target = dir + "/" + base;
  if (::rename(path.c_str(), target.c_str()) != 0) {
    s.problems.push_back(path + ": " + reason + "; left in the spool (" + std::strerror(errno) +
                         ")");
    return;
  }
  common::write_atomically(target + ".reason", reason + "\n");
  s.problems.push_back(path + ": " + reason + " (moved to " + dir + ")");
}

// Removes committed files from the spool on a thread of its own, so that the store's thread
// goes on with the next batch meanwhile. Only paths whose transaction has committed come here.
// It also frees the batch's jobs: most of their memory came from the workers' malloc arenas,
// and freeing it is work the store's thread need not do.
class spool_remover {
public:
  spool_remover() : thread_([this] { run(); }) {}
  spool_remover(const spool_remover&) = delete;
  spool_remover& operator=(const spool_remover&) = delete;
  ~spool_remover() {
    try {
      finish();     // an ingest cut short still removes what it committed
    } catch (...) { // nothing to report from a destructor
    }
  }

  void remove(std::vector<std::string> paths, std::vector<stored_job> jobs) {
    {
      const std::lock_guard lock(mutex_);
      queue_.push_back({std::move(paths), std::move(jobs)});
    }
    wake_.notify_one();
  }

  // Waits until every path handed over is gone; returns the files that could not be removed.
  std::vector<std::string> finish() {
    {
      const std::lock_guard lock(mutex_);
      done_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable())
      thread_.join();
    return std::move(problems_);
  }

private:
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return done_ || !queue_.empty(); });
      if (queue_.empty())
        return;
      handed_over done = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      done.jobs.clear();
      for (const std::string& path : done.paths)
        if (::unlink(path.c_str()) != 0 && errno != ENOENT)
          problems_.push_back(path +
                              ": stored, but not removed from the spool: " + std::strerror(errno));
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  struct handed_over {
    std::vector<std::string> paths;
    std::vector<stored_job> jobs;
  };
  std::deque<handed_over> queue_;
  bool done_ = false;
  std::vector<std::string> problems_; // written by the thread only, read after join
  std::thread thread_;
};

// Runs each batch's transaction on a writer thread of its own: the store itself and, where
// the backend gains from it (store::another_writer: PostgreSQL, whose one backend process per
// connection was the bound), a second connection. Each batch is one transaction on one
// connection; its files leave the spool after its commit. Batches commit in any order, which
// only the day tables' sums notice (their additions' order) and job ids.
class batch_writers {
public:
  batch_writers(store& db, unsigned writers, spool_remover& remover) : remover_(remover) {
    stores_.push_back(&db);
    if (writers > 1)
      if (std::unique_ptr<store> other = db.another_writer()) {
        stores_.push_back(other.get());
        owned_ = std::move(other);
      }
    for (store* st : stores_)
      threads_.emplace_back([this, st] { run(*st); });
  }
  batch_writers(const batch_writers&) = delete;
  batch_writers& operator=(const batch_writers&) = delete;
  ~batch_writers() {
    try {
      stop();
    } catch (...) { // nothing to report from a destructor
    }
  }

  // Hands a batch over, waiting while each writer already has one queued (memory stays
  // bounded); throws the first writer's error, after which nothing more is taken.
  void submit(std::vector<pending> batch) {
    std::unique_lock lock(mutex_);
    room_.wait(lock, [this] { return queue_.size() < stores_.size() || error_; });
    if (error_)
      std::rethrow_exception(error_);
    queue_.push_back(std::move(batch));
    work_.notify_one();
  }

  // Waits until every batch handed over is committed (or one failed); adds the counts to s;
  // throws the first writer's error.
  void finish(ingest_summary& s) {
    stop();
    s.stored += stored_;
    s.duplicates += duplicates_;
    if (error_)
      std::rethrow_exception(error_);
  }

private:
  void stop() {
    {
      const std::lock_guard lock(mutex_);
      done_ = true;
    }
    work_.notify_all();
    for (std::thread& t : threads_)
      if (t.joinable())
        t.join();
  }

  void run(store& db) {
    std::unique_lock lock(mutex_);
    for (;;) {
      work_.wait(lock, [this] { return done_ || error_ || !queue_.empty(); });
      if (error_ || queue_.empty())
        return;
      std::vector<pending> batch = std::move(queue_.front());
      queue_.pop_front();
      room_.notify_one();
      lock.unlock();
      std::vector<stored_job> jobs;
      std::vector<std::string> paths;
      jobs.reserve(batch.size());
      paths.reserve(batch.size());
      for (pending& p : batch) {
        jobs.push_back(std::move(p.job));
        paths.push_back(std::move(p.path));
      }
      batch.clear();
      std::exception_ptr failed;
      insert_result r;
      try {
        r = db.insert(jobs); // throws: nothing of this batch stored, its files stay spooled
      } catch (...) {
        failed = std::current_exception();
      }
      if (!failed)
        remover_.remove(std::move(paths), std::move(jobs));
      lock.lock();
      if (failed) {
        if (!error_)
          error_ = failed;
        room_.notify_all();
        work_.notify_all();
        return;
      }
      stored_ += r.inserted;
      duplicates_ += r.duplicates;
    }
  }

  spool_remover& remover_;
  std::vector<store*> stores_;
  std::unique_ptr<store> owned_;
  std::mutex mutex_;
  std::condition_variable work_, room_;
  std::deque<std::vector<pending>> queue_;
  bool done_ = false;
  std::exception_ptr error_;
  std::int64_t stored_ = 0, duplicates_ = 0;
  std::vector<std::thread> threads_; // last: started once the members above exist
};

} // namespace

void lower_this_threads_priority() {
  // Linux keeps a nice value per thread (inherited from the creating thread); PRIO_PROCESS
  // with a thread id changes only that one. Raising it needs no privilege; a failure would
  // only leave the old speed, so it is not reported.
  const auto self = static_cast<id_t>(::gettid());
  errno = 0;
  const int current = ::getpriority(PRIO_PROCESS, self);
  if (errno == 0)
    (void)::setpriority(PRIO_PROCESS, self, std::min(current + parse_worker_niceness_step, 19));
}

std::string ingest_summary::summary_line() const {
  std::string line = fmt::format("ingest: {} records read, {} stored, {} already stored", records,
                                 stored, duplicates);
  if (recovered > 0)
    line += fmt::format(", {} merged from per-rank files", recovered);
  if (quarantined > 0)
    line += fmt::format(", {} quarantined", quarantined);
  if (owner_mismatches > 0)
    line += fmt::format(", {} claiming another user than their file's owner", owner_mismatches);
  if (flagged > 0)
    line += fmt::format(", {} flagged as regressions", flagged);
  return line;
}

ingest_summary ingest(store& db, const ingest_options& options) {
  // Worker threads allocate each chunk's texts and records and the store's thread frees them;
  // by default glibc hands freed heap back to the kernel after every chunk and faults it in
  // again for the next (a tenth of the ingest's CPU time under perf). Keep it instead.
  ::mallopt(M_TRIM_THRESHOLD, 256 << 20);
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20); // the largest glibc takes
  // The workers' arenas grow their heaps by what each allocation lacks, one mprotect call
  // each (two per record), and an arena whose newest heap fell empty unmapped it whole, only
  // to fault it in again for the next chunk; a top pad of a heap's size makes each new heap
  // usable at once and keeps the emptied one.
  ::mallopt(M_TOP_PAD, 64 << 20);
  ingest_summary s;
  const auto now = [] { return static_cast<std::int64_t>(std::time(nullptr)); };
  const std::int64_t started = now();
  std::vector<double> lags; // from each job's end to its ingest
  // Scored on this thread, in each chunk's end time order, before the batches go to the
  // writers; histories are read through a connection of the scorer's own.
  std::unique_ptr<regression_scorer> scorer;
  if (options.score)
    scorer = std::make_unique<regression_scorer>(db.another_connection(), options.regressions);
  std::vector<pending> batch;
  spool_remover remover; // before the writers: they hand it their committed files
  batch_writers writers(db, options.writers, remover);
  for (std::string spool : options.spools) {
    while (spool.size() > 1 && spool.back() == '/')
      spool.pop_back();
    const std::string qdir =
        options.quarantine.empty() ? spool + "/quarantine" : options.quarantine;
    if (options.recover) {
      const auto owners = rank_file_owners(spool);
      for (const profiler::recovery& r : profiler::recover_spool(spool)) {
        for (const std::string& p : r.problems)
          s.problems.push_back(p);
        if (r.record_path.empty())
          continue;
        ++s.recovered;
        if (auto it = owners.find(r.job_key); it != owners.end() && ::geteuid() == 0)
          if (::chown(r.record_path.c_str(), it->second, static_cast<gid_t>(-1)) != 0)
            s.problems.push_back(r.record_path + ": cannot hand back to uid " +
                                 std::to_string(it->second) + ": " + std::strerror(errno));
      }
    }
    DIR* d = ::opendir(spool.c_str());
    if (d == nullptr) {
      s.problems.push_back(spool + ": " + std::strerror(errno));
      continue;
    }
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (ends_with(name, ".json") && name[0] != '.')
        names.push_back(std::move(name));
    }
    ::closedir(d);
    // A job run with both the profile and the overhead module leaves two records of one job:
    // the profile's is the job's (it is measured as every other job is); the overhead
    // module's waits for the next ingest, where it is already stored. Alone, it is the job's.
    std::sort(names.begin(), names.end());
    const std::vector<std::string> listed = names;
    std::erase_if(names, [&](const std::string& name) {
      const std::string twin = profiler::profile_twin(name);
      return !twin.empty() && std::binary_search(listed.begin(), listed.end(), twin);
    });
    // Reading, parsing and compressing (most of the work) run on worker threads, up to two
    // chunks ahead of the inserts, so that the cores never wait for the store's thread;
    // quarantine, counting and the store stay on this thread, in file order.
    const size_t chunk = std::max<size_t>(1, options.batch);
    auto parse_chunk = [&](size_t begin) {
      const size_t end = std::min(names.size(), begin + chunk);
      std::vector<parsed_file> out(end - begin);
      const unsigned workers = std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, 8);
      std::vector<std::thread> threads;
      for (unsigned w = 0; w < workers; ++w)
        threads.emplace_back([&, w] {
          lower_this_threads_priority();
          for (size_t i = begin + w; i < end; i += workers)
            out[i - begin] = parse_file(spool + "/" + names[i]);
        });
      for (std::thread& t : threads)
        t.join();
      return out;
    };
    std::deque<std::future<std::vector<parsed_file>>> ahead;
    size_t next_chunk = 0;
    const auto start_next = [&] {
      if (next_chunk < names.size()) {
        ahead.push_back(std::async(std::launch::async, parse_chunk, next_chunk));
        next_chunk += chunk;
      }
    };
    start_next();
    start_next();
    while (!ahead.empty()) {
      std::vector<parsed_file> files = ahead.front().get();
      ahead.pop_front();
      start_next();
      if (scorer) {
        std::vector<stored_job*> jobs;
        for (parsed_file& f : files)
          if (!f.gone && f.read_error.empty() && f.parse_error.empty())
            jobs.push_back(&f.job);
        scorer->score(jobs);
      }
      const std::int64_t arrived = now();
      for (parsed_file& f : files) {
        if (f.gone)
          continue;
        if (!f.read_error.empty()) {
          quarantine(qdir, f.path, f.read_error, s);
          continue;
        }
        ++s.records;
        if (!f.parse_error.empty()) {
          quarantine(qdir, f.path, f.parse_error, s);
          continue;
        }
        if (f.job.job.owner_mismatch) {
          ++s.owner_mismatches;
          s.problems.push_back(fmt::format(
              "{}: the record names user {} (uid {}), the file belongs to uid {}: kept as {}",
              f.path, f.job.job.claimed_user, f.job.job.claimed_uid, f.job.job.owner_uid,
              f.job.job.owner));
        }
        lags.push_back(static_cast<double>(arrived - f.job.job.end_time));
        batch.push_back({std::move(f.path), std::move(f.job)});
        if (batch.size() >= options.batch)
          writers.submit(std::exchange(batch, {}));
      }
    }
  }
  if (!batch.empty())
    writers.submit(std::move(batch));
  writers.finish(s);
  for (std::string& problem : remover.finish())
    s.problems.push_back(std::move(problem));
  s.flagged = scorer ? scorer->flagged() : 0;
  ingest_record r{started,       now(),     s.records, s.stored, s.duplicates,
                  s.quarantined, s.flagged, 0,         0};
  if (!lags.empty()) {
    std::nth_element(lags.begin(), lags.begin() + static_cast<std::ptrdiff_t>(lags.size() / 2),
                     lags.end());
    r.lag_median_s = lags[lags.size() / 2];
    r.lag_max_s = *std::max_element(lags.begin(), lags.end());
  }
  record_ingest(db, r);
  return s;
}

} // namespace strata::site
