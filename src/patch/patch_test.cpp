#include "strata/patch/patch.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

namespace fs = std::filesystem;
using strata::patch::analyze;
using strata::patch::patch_file;
using bytes = std::vector<unsigned char>;

std::string fixture(const char* name) {
  return std::string(STRATA_PATCH_FIXTURES) + "/" + name;
}

bytes read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const bytes& data) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

bool contains(const bytes& haystack, std::string_view needle) {
  return std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end()) !=
         haystack.end();
}

// Independent raw reading of the section headers, used to locate and corrupt sections.
struct raw_section {
  Elf64_Shdr hdr;
  std::size_t hdr_offset;
};

std::optional<raw_section> find_section(const bytes& image, std::string_view name) {
  Elf64_Ehdr eh;
  std::memcpy(&eh, image.data(), sizeof eh);
  auto shdr_at = [&](std::size_t i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, image.data() + eh.e_shoff + i * sizeof sh, sizeof sh);
    return sh;
  };
  const Elf64_Shdr names = shdr_at(eh.e_shstrndx);
  for (std::size_t i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr sh = shdr_at(i);
    if (name == reinterpret_cast<const char*>(image.data() + names.sh_offset + sh.sh_name))
      return raw_section{sh, eh.e_shoff + i * sizeof sh};
  }
  return std::nullopt;
}

void set_section_field(bytes& image, const raw_section& s, std::size_t field_offset,
                       const void* value, std::size_t size) {
  std::memcpy(image.data() + s.hdr_offset + field_offset, value, size);
}

struct dynsym {
  std::string name;
  bool undefined;
  GElf_Versym version; // 0 when the file has no .gnu.version
  bool operator==(const dynsym&) const = default;
};

// Reads .dynsym through libelf the way a loader-side tool would, independent of the patcher.
std::vector<dynsym> read_dynsyms(const std::string& path) {
  elf_version(EV_CURRENT);
  std::vector<dynsym> result;
  const int fd = open(path.c_str(), O_RDONLY);
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  Elf_Data* syms = nullptr;
  Elf_Data* versyms = nullptr;
  std::size_t strndx = 0;
  for (Elf_Scn* scn = nullptr; elf && (scn = elf_nextscn(elf, scn)) != nullptr;) {
    GElf_Shdr sh;
    gelf_getshdr(scn, &sh);
    if (sh.sh_type == SHT_DYNSYM) {
      syms = elf_getdata(scn, nullptr);
      strndx = sh.sh_link;
    } else if (sh.sh_type == SHT_GNU_versym) {
      versyms = elf_getdata(scn, nullptr);
    }
  }
  for (int i = 1; syms && i < static_cast<int>(syms->d_size / sizeof(Elf64_Sym)); ++i) {
    GElf_Sym sym;
    gelf_getsym(syms, i, &sym);
    GElf_Versym ver = 0;
    if (versyms)
      gelf_getversym(versyms, i, &ver);
    result.push_back({elf_strptr(elf, strndx, sym.st_name), sym.st_shndx == SHN_UNDEF, ver});
  }
  elf_end(elf);
  close(fd);
  return result;
}

const dynsym* find_sym(const std::vector<dynsym>& syms, std::string_view name) {
  auto it = std::find_if(syms.begin(), syms.end(), [&](auto& s) { return s.name == name; });
  return it == syms.end() ? nullptr : &*it;
}

class PatchTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "strata_patch_test.XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const char* name) const { return dir_ + "/" + name; }

  // Every refusal must name the input, say what is wrong, and leave no output behind.
  void expect_refused(const std::string& in, std::string_view phrase) {
    const auto out = path("refused.so");
    const auto r = patch_file(in, out);
    EXPECT_FALSE(r.ok);
    EXPECT_TRUE(r.renamed.empty());
    EXPECT_NE(r.error.find(phrase), std::string::npos) << r.error;
    EXPECT_NE(r.error.find(in), std::string::npos) << r.error;
    for (const auto& entry : fs::directory_iterator(dir_)) // neither output nor temporary
      EXPECT_FALSE(entry.path().filename().string().starts_with("refused.so")) << entry.path();
  }

  void expect_analyze_error(const bytes& image, std::string_view phrase) {
    const auto r = analyze(image);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find(phrase), std::string::npos) << r.error;
  }

  std::string dir_;
};

const std::map<std::string, std::string> expected_renames = {
    {"PMPI_Barrier", "ZMPI_Barrier"},
    {"PMPI_Comm_rank", "ZMPI_Comm_rank"},
    {"PMPI_Send", "ZMPI_Send"},
};

std::map<std::string, std::string> rename_map(const strata::patch::patch_result& r) {
  std::map<std::string, std::string> m;
  for (const auto& s : r.renamed)
    m[s.from] = s.to;
  return m;
}

TEST_F(PatchTest, RenamesOnlyImportedPmpiSymbols) {
  const auto in = fixture("tool.so");
  const auto out = path("tool.so");
  const bytes before = read_bytes(in);
  const auto r = patch_file(in, out);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(rename_map(r), expected_renames);
  EXPECT_EQ(r.fortran_kept, std::vector<std::string>{"pmpi_send_"});
  for (const auto& s : r.renamed)
    EXPECT_FALSE(s.version_cleared) << s.from;
  EXPECT_EQ(read_bytes(in), before);

  const auto in_memory = analyze(before);
  ASSERT_TRUE(in_memory.ok) << in_memory.error;
  EXPECT_EQ(rename_map(in_memory), expected_renames);

  // Symbol for symbol, only the imported PMPI names changed.
  const auto original = read_dynsyms(in);
  const auto patched = read_dynsyms(out);
  ASSERT_EQ(original.size(), patched.size());
  for (std::size_t i = 0; i < original.size(); ++i) {
    auto expected = original[i];
    if (expected.undefined && expected_renames.contains(expected.name))
      expected.name = expected_renames.at(expected.name);
    EXPECT_EQ(patched[i], expected) << original[i].name;
  }
  for (const char* name : {"ZMPI_Send", "ZMPI_Barrier", "ZMPI_Comm_rank", "pmpi_send_"}) {
    const auto* s = find_sym(patched, name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_TRUE(s->undefined) << name;
  }
  for (const char* name : {"MPI_Send", "MPI_Barrier", "mpi_send_", "PMPI_Tool_defined"}) {
    const auto* s = find_sym(patched, name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_FALSE(s->undefined) << name;
  }
  for (const auto& s : patched)
    EXPECT_FALSE(s.undefined && s.name.starts_with("PMPI_")) << s.name;

  // One byte per renamed symbol, inside .dynstr; literals elsewhere untouched.
  const bytes after = read_bytes(out);
  ASSERT_EQ(after.size(), before.size());
  const auto dynstr = find_section(before, ".dynstr");
  ASSERT_TRUE(dynstr);
  std::size_t diffs = 0;
  for (std::size_t i = 0; i < before.size(); ++i) {
    if (before[i] == after[i])
      continue;
    ++diffs;
    EXPECT_GE(i, dynstr->hdr.sh_offset);
    EXPECT_LT(i, dynstr->hdr.sh_offset + dynstr->hdr.sh_size);
    EXPECT_TRUE(before[i] == 'P' && after[i] == 'Z');
  }
  EXPECT_EQ(diffs, r.renamed.size());
  EXPECT_TRUE(contains(after, "PMPI_Send is wrapped"));
}

TEST_F(PatchTest, ClearsVersionOfVersionedImports) {
  const auto in = fixture("tool_versioned.so");
  const auto original = read_dynsyms(in);
  const auto* send = find_sym(original, "PMPI_Send");
  ASSERT_NE(send, nullptr);
  ASSERT_GE(send->version, 2) << "fixture should import PMPI_Send@STRATA_FAKE_MPI_1.0";
  const auto* puts_sym = find_sym(original, "puts");
  ASSERT_NE(puts_sym, nullptr);
  ASSERT_GE(puts_sym->version, 2) << "fixture should import puts@GLIBC_x";

  const auto out = path("tool_versioned.so");
  const auto r = patch_file(in, out);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(rename_map(r), expected_renames);
  EXPECT_EQ(r.fortran_kept, std::vector<std::string>{"pmpi_send_"});
  for (const auto& s : r.renamed)
    EXPECT_TRUE(s.version_cleared) << s.from;

  const auto patched = read_dynsyms(out);
  ASSERT_EQ(original.size(), patched.size());
  std::size_t versym_byte_changes = 0;
  for (std::size_t i = 0; i < original.size(); ++i) {
    auto expected = original[i];
    if (expected.undefined && expected_renames.contains(expected.name)) {
      expected.name = expected_renames.at(expected.name);
      expected.version = VER_NDX_GLOBAL;
      versym_byte_changes +=
          ((original[i].version & 0xff) != 1) + ((original[i].version >> 8) != 0);
    }
    EXPECT_EQ(patched[i], expected) << original[i].name; // puts keeps its GLIBC version
  }

  const bytes before = read_bytes(in);
  const bytes after = read_bytes(out);
  ASSERT_EQ(before.size(), after.size());
  const auto versym = find_section(before, ".gnu.version");
  ASSERT_TRUE(versym);
  std::size_t diffs = 0, in_versym = 0;
  for (std::size_t i = 0; i < before.size(); ++i) {
    if (before[i] == after[i])
      continue;
    ++diffs;
    in_versym += i >= versym->hdr.sh_offset && i < versym->hdr.sh_offset + versym->hdr.sh_size;
  }
  EXPECT_EQ(in_versym, versym_byte_changes);
  EXPECT_EQ(diffs, r.renamed.size() + versym_byte_changes);
}

TEST_F(PatchTest, PatchedToolBindsToZmpi) {
  // Unpatched, the PMPI imports have no definition here, so loading must fail.
  EXPECT_EQ(dlopen(fixture("tool.so").c_str(), RTLD_NOW | RTLD_LOCAL), nullptr);

  const auto out = path("tool.so");
  const auto r = patch_file(fixture("tool.so"), out);
  ASSERT_TRUE(r.ok) << r.error;
  void* zmpi = dlopen(fixture("libzmpi.so").c_str(), RTLD_NOW | RTLD_GLOBAL);
  ASSERT_NE(zmpi, nullptr) << dlerror();
  void* tool = dlopen(out.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(tool, nullptr) << dlerror();

  using send_fn = int (*)(const void*, int, void*, int, int, void*);
  using barrier_fn = int (*)(void*);
  using fsend_fn = void (*)(const void*, int*, int*, int*, int*, int*, int*);
  auto send = reinterpret_cast<send_fn>(dlsym(tool, "MPI_Send"));
  auto barrier = reinterpret_cast<barrier_fn>(dlsym(tool, "MPI_Barrier"));
  auto fsend = reinterpret_cast<fsend_fn>(dlsym(tool, "mpi_send_"));
  ASSERT_TRUE(send && barrier && fsend);
  EXPECT_EQ(send(nullptr, 5, nullptr, 0, 0, nullptr), 1005 + 7); // ZMPI_Send + ZMPI_Comm_rank
  EXPECT_EQ(barrier(nullptr), 2000);
  int count = 4, zero = 0, ierr = -1;
  fsend(nullptr, &count, &zero, &zero, &zero, &zero, &ierr);
  EXPECT_EQ(ierr, 3004);
  dlclose(tool);
  dlclose(zmpi);
}

TEST_F(PatchTest, VersionedToolLoadsAgainstVersionedZmpi) {
  const auto out = path("tool_versioned.so");
  const auto r = patch_file(fixture("tool_versioned.so"), out);
  ASSERT_TRUE(r.ok) << r.error;
  // Satisfies the tool's DT_NEEDED (matched by soname) and its remaining version requirement.
  void* mpi = dlopen(fixture("libstrata_fake_mpi.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(mpi, nullptr) << dlerror();
  void* zmpi = dlopen(fixture("libzmpi_versioned.so").c_str(), RTLD_NOW | RTLD_GLOBAL);
  ASSERT_NE(zmpi, nullptr) << dlerror();

  // Had the versym entries kept STRATA_FAKE_MPI_1.0, the loader would demand ZMPI_X at that
  // version, which the versioned core does not define.
  bytes stale = read_bytes(out);
  const bytes original = read_bytes(fixture("tool_versioned.so"));
  const auto versym = find_section(original, ".gnu.version");
  ASSERT_TRUE(versym);
  std::copy_n(original.begin() + static_cast<std::ptrdiff_t>(versym->hdr.sh_offset),
              versym->hdr.sh_size,
              stale.begin() + static_cast<std::ptrdiff_t>(versym->hdr.sh_offset));
  const auto stale_path = path("stale_versions.so");
  write_bytes(stale_path, stale);
  ASSERT_EQ(dlopen(stale_path.c_str(), RTLD_NOW | RTLD_LOCAL), nullptr);
  const std::string why = dlerror();
  EXPECT_NE(why.find("version STRATA_FAKE_MPI_1.0"), std::string::npos) << why;

  void* tool = dlopen(out.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(tool, nullptr) << dlerror();
  auto barrier = reinterpret_cast<int (*)(void*)>(dlsym(tool, "MPI_Barrier"));
  ASSERT_NE(barrier, nullptr);
  EXPECT_EQ(barrier(nullptr), 2000);
  dlclose(tool);
  dlclose(zmpi);
  dlclose(mpi);
}

TEST_F(PatchTest, PreservesPermissionsAndNeverPatchesInPlace) {
  const auto in = path("tool_in.so");
  fs::copy_file(fixture("tool.so"), in);
  ASSERT_EQ(chmod(in.c_str(), 0751), 0);
  const bytes before = read_bytes(in);

  auto r = patch_file(in, in);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("refusing to patch in place"), std::string::npos) << r.error;
  EXPECT_EQ(read_bytes(in), before);

  const auto out = path("tool_out.so");
  r = patch_file(in, out);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(fs::status(out).permissions(), fs::perms(0751));
  EXPECT_EQ(read_bytes(in), before);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 2)
      << "temporary file left behind";

  // Patching is not repeatable: the result imports ZMPI_ and no C PMPI functions any more.
  expect_refused(out, "already patched");
}

TEST_F(PatchTest, RefusesBadFiles) {
  const auto text = path("notes.txt");
  write_bytes(text, bytes{'h', 'e', 'l', 'l', 'o', '\n'});
  expect_refused(text, "not an ELF file");
  expect_refused(path("missing.so"), "cannot open");
  expect_refused(fixture("tool.o"), "not a shared object");
  expect_refused(fixture("pie_tool"), "position-independent executable");
  expect_refused(fixture("no_pmpi.so"), "imports no PMPI functions");

  const bytes so = read_bytes(fixture("tool.so"));
  const auto elf32 = path("elf32.so");
  bytes flipped = so;
  flipped[EI_CLASS] = ELFCLASS32;
  write_bytes(elf32, flipped);
  expect_refused(elf32, "32-bit");

  const auto head = path("head.so");
  write_bytes(head, bytes(so.begin(), so.begin() + 200));
  expect_refused(head, "truncated");
  const auto half = path("half.so");
  write_bytes(half, bytes(so.begin(), so.begin() + static_cast<std::ptrdiff_t>(so.size() / 2)));
  expect_refused(half, "truncated");
}

TEST_F(PatchTest, RefusesWhenImportNameIsShared) {
  const bytes image = read_bytes(fixture("tail_shared.so"));
  const auto dynstr = find_section(image, ".dynstr");
  ASSERT_TRUE(dynstr);
  const bytes strings(image.begin() + static_cast<std::ptrdiff_t>(dynstr->hdr.sh_offset),
                      image.begin() +
                          static_cast<std::ptrdiff_t>(dynstr->hdr.sh_offset + dynstr->hdr.sh_size));
  if (contains(strings, std::string_view("\0PMPI_Send", 10)))
    GTEST_SKIP() << "the linker did not tail-merge PMPI_Send into XPMPI_Send";
  expect_refused(fixture("tail_shared.so"), "XPMPI_Send");
  expect_analyze_error(image, "cannot rename PMPI_Send");
}

TEST_F(PatchTest, RefusesCorruptImages) {
  const bytes so = read_bytes(fixture("tool.so"));
  {
    bytes image = so;
    const Elf64_Half machine = EM_AARCH64;
    std::memcpy(image.data() + offsetof(Elf64_Ehdr, e_machine), &machine, sizeof machine);
    expect_analyze_error(image, "built for ELF machine 183");
  }
  for (auto [name, phrase] :
       {std::pair{".dynamic", "no .dynamic section"}, std::pair{".dynsym", "no .dynsym section"}}) {
    bytes image = so;
    const auto s = find_section(image, name);
    ASSERT_TRUE(s) << name;
    const Elf64_Word type = SHT_PROGBITS;
    set_section_field(image, *s, offsetof(Elf64_Shdr, sh_type), &type, sizeof type);
    expect_analyze_error(image, phrase);
  }
  {
    bytes image = so;
    const auto s = find_section(image, ".dynstr");
    ASSERT_TRUE(s);
    const Elf64_Off far = image.size() - 4;
    set_section_field(image, *s, offsetof(Elf64_Shdr, sh_offset), &far, sizeof far);
    expect_analyze_error(image, "section .dynstr");
  }
  {
    bytes image = so;
    const auto s = find_section(image, ".dynsym");
    ASSERT_TRUE(s);
    const Elf64_Word name = 0x7fffff;
    std::memcpy(image.data() + s->hdr.sh_offset + sizeof(Elf64_Sym), &name, sizeof name);
    expect_analyze_error(image, "outside .dynstr");
  }
  // The section header table sits at the end, so every proper prefix must be rejected.
  for (std::size_t n = 0; n < so.size(); ++n)
    ASSERT_FALSE(analyze(std::span(so.data(), n)).ok) << n;
}

} // namespace
