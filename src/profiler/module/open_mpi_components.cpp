// Open MPI's components loaded ahead of MPI_T_init_thread (open_mpi_components.hpp).
#include "open_mpi_components.hpp"

#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <functional>
#include <link.h>
#include <map>
#include <string_view>
#include <vector>

namespace strata::profiler::open_mpi {

namespace {

// The framework of a component's file name (mca_<framework>_<component>.so); "" for any other.
std::string_view framework_of(std::string_view file) {
  constexpr std::string_view prefix = "mca_", suffix = ".so";
  if (!file.starts_with(prefix) || !file.ends_with(suffix))
    return {};
  const std::string_view name =
      file.substr(prefix.size(), file.size() - prefix.size() - suffix.size());
  const size_t underscore = name.find('_');
  return underscore == std::string_view::npos ? std::string_view{} : name.substr(0, underscore);
}

std::string_view file_of(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Whether the process's Open MPI libraries define the framework: the MPI layer's, the runtime's
// or the portability layer's frameworks are the ones MPI_T_init_thread registers.
bool framework_of_mpi(std::string_view framework, std::map<std::string, bool, std::less<>>& known) {
  if (const auto it = known.find(framework); it != known.end())
    return it->second;
  bool defined = false;
  for (const char* layer : {"ompi", "orte", "opal"})
    defined = defined ||
              dlsym(RTLD_DEFAULT, fmt::format("{}_{}_base_framework", layer, framework).c_str()) !=
                  nullptr;
  known.emplace(framework, defined);
  return defined;
}

std::string real_path(const char* path) {
  char* resolved = realpath(path, nullptr);
  std::string out = resolved != nullptr ? resolved : "";
  std::free(resolved);
  return out;
}

// Where Open MPI takes its components from: the variable that names them, else the directory
// of the Open MPI Strata was built against, when this process runs that very libmpi (the
// directory's components were built for it). Components in a user's own directory
// (~/.openmpi/components) are not loaded ahead: MPI_T loads them as before.
std::vector<std::string> component_directories() {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("OMPI_MCA_mca_base_component_path"); path != nullptr) {
    const std::string_view all = path;
    for (size_t begin = 0; begin <= all.size();) {
      const size_t end = std::min(all.find(':', begin), all.size());
      if (end > begin)
        dirs.emplace_back(all.substr(begin, end - begin));
      begin = end + 1;
    }
    return dirs;
  }
  if (std::getenv("OPAL_PREFIX") != nullptr || std::getenv("OPAL_PKGLIBDIR") != nullptr ||
      std::strlen(STRATA_OPEN_MPI_COMPONENTS) == 0)
    return dirs; // a relocated installation (its own directories), or none known at build time
  Dl_info info{};
  void* const init = dlsym(RTLD_DEFAULT, "ompi_mpi_init");
  if (init == nullptr || dladdr(init, &info) == 0 || info.dli_fname == nullptr)
    return dirs;
  const std::string library = real_path(info.dli_fname);
  if (!library.empty() && library == real_path(STRATA_OPEN_MPI_LIBRARY))
    dirs.emplace_back(STRATA_OPEN_MPI_COMPONENTS);
  return dirs;
}

} // namespace

std::set<std::string> loaded_components() {
  std::set<std::string> names;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        if (info->dlpi_name != nullptr && !framework_of(file_of(info->dlpi_name)).empty())
          static_cast<std::set<std::string>*>(out)->emplace(info->dlpi_name);
        return 0;
      },
      &names);
  return names;
}

std::set<std::string> load_ahead() {
  std::set<std::string> loaded;
  std::map<std::string, bool, std::less<>> frameworks;
  for (const std::string& dir : component_directories()) {
    DIR* const listing = opendir(dir.c_str());
    if (listing == nullptr)
      continue;
    while (const dirent* entry = readdir(listing)) {
      const std::string_view framework = framework_of(entry->d_name);
      if (framework.empty() || !framework_of_mpi(framework, frameworks))
        continue;
      std::string path = fmt::format("{}/{}", dir, entry->d_name);
      if (dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL) != nullptr)
        loaded.insert(std::move(path));
      else
        dlerror(); // Open MPI loads it itself, and says why it cannot, as it would without us
    }
    closedir(listing);
  }
  return loaded;
}

} // namespace strata::profiler::open_mpi
