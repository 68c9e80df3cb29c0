#include "analyzer/xml_export.hpp"

#include "analyzer/trace_reader.hpp"
#include "common/markup.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <vector>

namespace strata::analyze {
namespace fs = std::filesystem;

std::string hiera_operation_name(const std::string& mpi_function) {
  std::string name = mpi_function.rfind("MPI_", 0) == 0 ? mpi_function.substr(4) : mpi_function;
  for (char& c : name)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (name == "bcast")
    return "broadcast";
  if (name == "recv")
    return "receive";
  return name;
}

namespace {

// Pass 1: the finish time of every operation that has children, in enter order, and each rank's
// first and last event time.
class finish_times final : public event_handler {
public:
  explicit finish_times(size_t ranks) : ranks_(ranks) {}
  struct rank_state {
    struct open {
      bool parent = false;
      size_t ordinal = 0;
    };
    std::vector<open> stack;
    std::vector<uint64_t> finish;
    uint64_t first = UINT64_MAX, last = 0;
  };
  std::vector<rank_state>& ranks() { return ranks_; }

  void enter(uint32_t rank, uint64_t t, uint32_t, uint32_t) override {
    rank_state& s = seen(rank, t);
    if (!s.stack.empty() && !s.stack.back().parent) {
      s.stack.back().parent = true;
      s.stack.back().ordinal = s.finish.size();
      s.finish.push_back(0);
    }
    s.stack.push_back({});
  }
  void leave(uint32_t rank, uint64_t t, uint32_t) override {
    rank_state& s = seen(rank, t);
    if (s.stack.empty())
      return;
    if (s.stack.back().parent)
      s.finish[s.stack.back().ordinal] = t;
    s.stack.pop_back();
  }
  void send(uint32_t rank, uint64_t t, uint32_t, uint32_t, uint32_t, uint64_t) override {
    seen(rank, t);
  }
  void isend(uint32_t rank, uint64_t t, uint32_t, uint32_t, uint32_t, uint64_t, uint64_t) override {
    seen(rank, t);
  }
  void isend_complete(uint32_t rank, uint64_t t, uint64_t) override { seen(rank, t); }
  void irecv_request(uint32_t rank, uint64_t t, uint64_t) override { seen(rank, t); }
  void recv(uint32_t rank, uint64_t t, uint32_t, uint32_t, uint32_t, uint64_t) override {
    seen(rank, t);
  }
  void irecv(uint32_t rank, uint64_t t, uint32_t, uint32_t, uint32_t, uint64_t, uint64_t) override {
    seen(rank, t);
  }
  void request_cancelled(uint32_t rank, uint64_t t, uint64_t) override { seen(rank, t); }
  void collective_end(uint32_t rank, uint64_t t, uint32_t, uint32_t, uint32_t, uint64_t,
                      uint64_t) override {
    seen(rank, t);
  }
  // HieraAnalyses' init and finalize times: the program's begin and end when the trace has them.
  void program_event(uint32_t rank, uint64_t t) override { seen(rank, t); }

private:
  rank_state& seen(uint32_t rank, uint64_t t) {
    rank_state& s = ranks_[rank];
    s.first = std::min(s.first, t);
    s.last = std::max(s.last, t);
    return s;
  }
  std::vector<rank_state> ranks_;
};

struct file_closer {
  void operator()(std::FILE* f) const {
    if (f)
      std::fclose(f);
  }
};

// Pass 2: writes the elements. An Enter is held until the next event on its rank says whether
// the operation has children (then its opening tag is written) or not (a single empty element
// with everything the operation recorded).
class xml_writer final : public event_handler {
public:
  // Writes the files of ranks [first, last).
  xml_writer(const definitions& defs, std::vector<finish_times::rank_state>& times,
             const std::string& dir, uint32_t first, uint32_t last)
      : defs_(defs), times_(times), first_(first), ranks_(last - first) {
    for (uint32_t r = first; r < last; ++r) {
      const fs::path path = fs::path(dir) / fmt::format("trace{}.xml", r);
      state(r).file.reset(std::fopen(path.c_str(), "w"));
      if (!state(r).file)
        throw std::runtime_error(path.string() + ": cannot write");
      const auto& t = times_[r];
      out(r, fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                         "<!DOCTYPE processor SYSTEM \"trace.dtd\">\n"
                         "<processor rank=\"P{}\" init=\"{:.9f}\" finalize=\"{:.9f}\">\n",
                         r, t.first == UINT64_MAX ? 0.0 : defs.seconds(t.first),
                         t.first == UINT64_MAX ? 0.0 : defs.seconds(t.last)));
    }
  }

  unsigned long long finish() {
    for (uint32_t r = first_; r < first_ + ranks_.size(); ++r) {
      rank_state& s = state(r);
      flush_pending(r, times_[r].last, false);
      while (s.depth > 0) {
        --s.depth;
        out(r, indent(s.depth + 1) + "</" + s.open_tags.back() + ">\n");
        s.open_tags.pop_back();
      }
      out(r, "</processor>\n");
      if (std::ferror(s.file.get()) || std::fclose(s.file.release()) != 0)
        throw std::runtime_error(fmt::format("trace{}.xml: write failed", r));
    }
    return operations_;
  }

  void enter(uint32_t rank, uint64_t t, uint32_t region, uint32_t site) override {
    rank_state& s = state(rank);
    flush_pending(rank, 0, true);
    s.pending = true;
    s.region = region;
    s.site = site;
    s.start = t;
    s.attrs.clear();
  }
  void leave(uint32_t rank, uint64_t t, uint32_t) override {
    rank_state& s = state(rank);
    if (s.pending) {
      flush_pending(rank, t, false);
      return;
    }
    if (s.depth == 0)
      return;
    --s.depth;
    out(rank, indent(s.depth + 1) + "</" + s.open_tags.back() + ">\n");
    s.open_tags.pop_back();
  }
  void send(uint32_t rank, uint64_t, uint32_t dest, uint32_t comm, uint32_t tag,
            uint64_t bytes) override {
    attr(rank, "dest", std::to_string(dest));
    message(rank, comm, tag, bytes);
  }
  void isend(uint32_t rank, uint64_t, uint32_t dest, uint32_t comm, uint32_t tag, uint64_t bytes,
             uint64_t request) override {
    attr(rank, "dest", std::to_string(dest));
    message(rank, comm, tag, bytes);
    attr(rank, "request", std::to_string(request));
  }
  void isend_complete(uint32_t rank, uint64_t, uint64_t request) override {
    attr(rank, "request", std::to_string(request));
  }
  void irecv_request(uint32_t rank, uint64_t, uint64_t request) override {
    attr(rank, "request", std::to_string(request));
  }
  void recv(uint32_t rank, uint64_t, uint32_t source, uint32_t comm, uint32_t tag,
            uint64_t bytes) override {
    attr(rank, "rem", std::to_string(source));
    message(rank, comm, tag, bytes);
  }
  void irecv(uint32_t rank, uint64_t, uint32_t source, uint32_t comm, uint32_t tag, uint64_t bytes,
             uint64_t request) override {
    attr(rank, "rem", std::to_string(source));
    message(rank, comm, tag, bytes);
    attr(rank, "request", std::to_string(request));
  }
  void request_cancelled(uint32_t rank, uint64_t, uint64_t request) override {
    attr(rank, "cancelled", std::to_string(request));
  }
  void collective_end(uint32_t rank, uint64_t, uint32_t, uint32_t comm, uint32_t root,
                      uint64_t sent, uint64_t received) override {
    if (root != no_root)
      attr(rank, "root", std::to_string(root));
    attr(rank, "comm", defs_.comms[comm].name);
    attr(rank, "sent", std::to_string(sent));
    attr(rank, "received", std::to_string(received));
  }

private:
  struct rank_state {
    std::unique_ptr<std::FILE, file_closer> file;
    bool pending = false;
    uint32_t region = 0, site = 0;
    uint64_t start = 0;
    std::vector<std::pair<std::string, std::string>> attrs;
    size_t next_parent = 0;
    unsigned depth = 0;
    std::vector<std::string> open_tags;
  };

  static std::string indent(unsigned depth) { return std::string(2 * size_t{depth}, ' '); }

  void out(uint32_t rank, const std::string& text) {
    std::fwrite(text.data(), 1, text.size(), state(rank).file.get());
  }
  // The handler hears only of the ranks it writes (the reader opens only theirs).
  rank_state& state(uint32_t rank) { return ranks_[rank - first_]; }

  // A Waitall completing several requests records each; repeated attributes become lists.
  void attr(uint32_t rank, const std::string& name, const std::string& value) {
    rank_state& s = state(rank);
    if (!s.pending)
      return;
    for (auto& [n, v] : s.attrs)
      if (n == name) {
        v += " " + value;
        return;
      }
    s.attrs.emplace_back(name, value);
  }
  void message(uint32_t rank, uint32_t comm, uint32_t tag, uint64_t bytes) {
    attr(rank, "tag", std::to_string(tag));
    attr(rank, "comm", defs_.comms[comm].name);
    attr(rank, "bytes", std::to_string(bytes));
  }

  // Writes the held Enter: as an opening tag when a child follows, else as an empty element
  // ending at `leave`.
  void flush_pending(uint32_t rank, uint64_t leave, bool has_children) {
    rank_state& s = state(rank);
    if (!s.pending)
      return;
    s.pending = false;
    ++operations_;
    uint64_t finish = leave;
    if (has_children) {
      auto& f = times_[rank].finish;
      finish = s.next_parent < f.size() ? f[s.next_parent] : times_[rank].last;
      ++s.next_parent;
    }
    const region_info& region = defs_.regions[s.region];
    std::string file = region.file;
    uint32_t line = region.line;
    if (s.site != no_call_site) {
      file = defs_.call_sites[s.site].file;
      line = defs_.call_sites[s.site].line;
    }
    std::string tag;
    std::string text = indent(s.depth + 1);
    if (region.cat == category::mpi) {
      tag = "hieraMPI";
      text += "<hieraMPI operation=\"" + escape_markup(hiera_operation_name(region.name)) + "\"";
    } else {
      tag = "hieraOOPS";
      const size_t split = region.name.rfind("::");
      const std::string cls = split == std::string::npos ? "unknown" : region.name.substr(0, split);
      const std::string method =
          split == std::string::npos ? region.name : region.name.substr(split + 2);
      text += "<hieraOOPS name=\"" + escape_markup(region.name) + "\" class=\"" +
              escape_markup(cls) + "\" method=\"" + escape_markup(method) + "\"";
    }
    text += fmt::format(" file=\"{}\" line=\"{}\" start_time=\"{:.9f}\" finish_time=\"{:.9f}\"",
                        escape_markup(file), line, defs_.seconds(s.start), defs_.seconds(finish));
    for (const auto& [n, v] : s.attrs)
      text += " " + n + "=\"" + escape_markup(v) + "\"";
    if (has_children) {
      text += ">\n";
      s.open_tags.push_back(tag);
      ++s.depth;
    } else {
      text += "/>\n";
    }
    out(rank, text);
  }

  const definitions& defs_;
  std::vector<finish_times::rank_state>& times_;
  uint32_t first_;
  std::vector<rank_state> ranks_;
  unsigned long long operations_ = 0;
};

} // namespace

void create_xml_dir(const std::string& out_dir) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec)
    throw std::runtime_error(out_dir + ": cannot create directory (" + ec.message() + ")");
}

unsigned long long export_xml_ranks(const std::string& trace, const std::string& out_dir,
                                    uint32_t first, uint32_t last) {
  std::unique_ptr<finish_times> times;
  {
    trace_reader reader(trace);
    times = std::make_unique<finish_times>(reader.defs().ranks());
    reader.read_events(*times, first, last);
  }
  trace_reader reader(trace);
  xml_writer writer(reader.defs(), times->ranks(), out_dir, first, last);
  reader.read_events(writer, first, last);
  return writer.finish();
}

std::string write_xml_config(const definitions& defs, const std::string& out_dir) {
  std::string path = (fs::path(out_dir) / "hieraCollector.xml").string();
  std::unique_ptr<std::FILE, file_closer> config(std::fopen(path.c_str(), "w"));
  if (!config)
    throw std::runtime_error(path + ": cannot write");
  std::string app = fs::path(defs.archive).parent_path().filename().string();
  std::string text = fmt::format(
      "<?xml version=\"1.0\"?>\n<!DOCTYPE hieraCollector SYSTEM \"hieraCollector.dtd\">\n"
      "<hieraCollector application=\"{}\" count_proc=\"{}\">\n",
      escape_markup(app), defs.ranks());
  if (const std::string truncated =
          truncation_line(defs.notes, defs.global_offset, defs.timer_resolution);
      !truncated.empty())
    text += "  <!-- " + escape_markup(truncated) + " -->\n";
  for (size_t r = 0; r < defs.ranks(); ++r)
    text += fmt::format("  <collect_file rank=\"P{}\">trace{}.xml</collect_file>\n", r, r);
  text += "</hieraCollector>\n";
  if (std::fwrite(text.data(), 1, text.size(), config.get()) != text.size() ||
      std::fclose(config.release()) != 0)
    throw std::runtime_error(path + ": write failed");
  return path;
}

xml_export_result export_xml(const std::string& trace, const std::string& out_dir) {
  const definitions defs = trace_reader(trace).defs();
  create_xml_dir(out_dir);
  xml_export_result result;
  result.ranks = static_cast<unsigned>(defs.ranks());
  result.operations = export_xml_ranks(trace, out_dir, 0, static_cast<uint32_t>(defs.ranks()));
  result.config = write_xml_config(defs, out_dir);
  result.truncated = truncation_line(defs.notes, defs.global_offset, defs.timer_resolution);
  return result;
}

} // namespace strata::analyze
