#include "config/config.hpp"
#include "config/options.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <unistd.h>

using strata::config::parse_config;
using strata::config::parse_tool_list;

TEST(ToolList, ModulesInOrderWithArguments) {
  auto s = parse_tool_list("profile, delay:usec=5:every=2 ,empty", "--tools");
  ASSERT_TRUE(s.ok()) << s.error;
  ASSERT_EQ(s.modules.size(), 3u);
  EXPECT_EQ(s.modules[0].name, "profile");
  EXPECT_EQ(s.modules[1].name, "delay");
  ASSERT_EQ(s.modules[1].args.size(), 2u);
  EXPECT_EQ(s.modules[1].args[0], (std::pair<std::string, std::string>{"usec", "5"}));
  EXPECT_EQ(s.modules[1].args[1], (std::pair<std::string, std::string>{"every", "2"}));
  EXPECT_EQ(s.modules[2].name, "empty");
}

TEST(ToolList, BlankIsAnEmptyStack) {
  auto s = parse_tool_list("  ", "STRATA_TOOLS");
  EXPECT_TRUE(s.ok());
  EXPECT_TRUE(s.modules.empty());
}

TEST(ToolList, ErrorsNameTheProblem) {
  EXPECT_EQ(parse_tool_list("a,,b", "--tools").error, "--tools: empty module name in 'a,,b'");
  EXPECT_EQ(parse_tool_list("delay:usec", "--tools").error,
            "--tools: expected KEY=VALUE after module 'delay', got 'usec'");
  EXPECT_EQ(parse_tool_list("de$lay", "--tools").error, "--tools: bad module name 'de$lay'");
  EXPECT_EQ(parse_tool_list("delay:=3", "--tools").error,
            "--tools: bad argument name '' for module 'delay'");
}

TEST(ConfigFile, LinesCommentsAndQuotes) {
  auto s = parse_config("# stack\n\nprofile out=\"my report.txt\"  # trailing\n"
                        "  delay usec=10\n/opt/tools/x.so k=\"a\\\"b\"\n",
                        "site.conf");
  ASSERT_TRUE(s.ok()) << s.error;
  ASSERT_EQ(s.modules.size(), 3u);
  EXPECT_EQ(s.modules[0].args[0].second, "my report.txt");
  EXPECT_EQ(s.modules[0].origin, "site.conf:3");
  EXPECT_EQ(s.modules[1].name, "delay");
  EXPECT_EQ(s.modules[2].name, "/opt/tools/x.so");
  EXPECT_EQ(s.modules[2].args[0].second, "a\"b");
}

TEST(ConfigFile, ErrorsCarryFileAndLine) {
  EXPECT_EQ(parse_config("profile\ndelay usec\n", "a.conf").error,
            "a.conf:2: expected KEY=VALUE after module 'delay', got 'usec'");
  EXPECT_EQ(parse_config("x k=\"open\n", "b.conf").error, "b.conf:1: unterminated quoted value");
  EXPECT_EQ(parse_config("ok\n\nbad!name\n", "c.conf").error,
            "c.conf:3: bad module name 'bad!name'");
  EXPECT_EQ(parse_config(std::string_view("a\0b\n", 4), "d.conf").error,
            "d.conf:1: NUL byte in line");
}

namespace {
struct fake_env {
  std::map<std::string, std::string> vars;
  strata::config::getenv_fn fn() const {
    return [this](const char* n) -> const char* {
      auto it = vars.find(n);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};
} // namespace

TEST(Selection, ToolsThenConfigThenLocalThenHome) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("strata_config_test_" + std::to_string(::getpid()));
  fs::create_directories(dir / "home");
  std::ofstream(dir / "explicit.conf") << "a\n";
  std::ofstream(dir / "home" / ".strata.conf") << "c\n";
  const fs::path old = fs::current_path();
  fs::current_path(dir);
  fake_env e;
  std::ofstream(dir / "site.conf") << "s\n";
  EXPECT_TRUE(strata::config::select_stack(e.fn()).modules.empty());
  EXPECT_EQ(strata::config::select_stack(e.fn(), (dir / "site.conf").string()).modules.at(0).name,
            "s");
  e.vars["HOME"] = (dir / "home").string();
  EXPECT_EQ(strata::config::select_stack(e.fn(), (dir / "site.conf").string()).modules.at(0).name,
            "c");
  std::ofstream(dir / ".strata.conf") << "b\n";
  EXPECT_EQ(strata::config::select_stack(e.fn()).modules.at(0).name, "b");
  e.vars["STRATA_CONFIG"] = (dir / "explicit.conf").string();
  EXPECT_EQ(strata::config::select_stack(e.fn()).modules.at(0).name, "a");
  e.vars["STRATA_TOOLS"] = "t";
  EXPECT_EQ(strata::config::select_stack(e.fn()).modules.at(0).name, "t");
  e.vars["STRATA_DISABLE"] = "1";
  EXPECT_TRUE(strata::config::select_stack(e.fn()).modules.empty());
  e.vars.erase("STRATA_DISABLE");
  e.vars.erase("STRATA_TOOLS");
  e.vars["STRATA_CONFIG"] = (dir / "missing.conf").string();
  EXPECT_NE(strata::config::select_stack(e.fn()).error.find("cannot be read"), std::string::npos);
  fs::current_path(old);
  fs::remove_all(dir);
}

TEST(ModuleSearch, PathThenBuiltin) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("strata_mod_test_" + std::to_string(::getpid()));
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  std::ofstream(dir / "b" / "m.so") << "";
  std::ofstream(dir / "a" / "n.so") << "";
  fake_env e;
  e.vars["STRATA_MODULE_PATH"] = (dir / "a").string() + "::" + (dir / "b").string();
  auto dirs = strata::config::module_dirs(e.fn(), "/builtin");
  ASSERT_EQ(dirs.size(), 3u);
  EXPECT_EQ(dirs[2], "/builtin");
  EXPECT_EQ(strata::config::find_module("m", dirs), (dir / "b" / "m.so").string());
  EXPECT_EQ(strata::config::find_module("n", dirs), (dir / "a" / "n.so").string());
  EXPECT_EQ(strata::config::find_module("zz", dirs), "");
  fs::remove_all(dir);
}

// ---- declared options (options.hpp) ----------------------------------------------------------

namespace {
using strata::config::option_decl;

std::vector<option_decl> delay_like() {
  return {{"usec", "uint", "0", "hold each send this long", {}},
          {"every", "uint", {}, "", {"STRATA_OLD_EVERY"}},
          {"mode", "enum:block|drop", "drop", "", {}},
          {"limit", "size", "1M", "", {}}};
}
} // namespace

TEST(Options, ArgumentThenEnvironmentThenOlderNameThenDefault) {
  using strata::config::resolve_options;
  fake_env env;
  auto r = resolve_options("delay", delay_like(), {}, env.fn());
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.values, (std::vector<std::pair<std::string, std::string>>{
                          {"usec", "0"}, {"mode", "drop"}, {"limit", "1M"}}));
  env.vars["STRATA_OLD_EVERY"] = "3";
  env.vars["STRATA_DELAY_USEC"] = "50";
  r = resolve_options("delay", delay_like(), {}, env.fn());
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.values[0], (std::pair<std::string, std::string>{"usec", "50"}));
  EXPECT_EQ(r.values[1], (std::pair<std::string, std::string>{"every", "3"}));
  env.vars["STRATA_DELAY_EVERY"] = "4"; // the option's own variable before the older name
  r = resolve_options("delay", delay_like(), {{"usec", "7"}}, env.fn());
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.values[0].second, "7");
  EXPECT_EQ(r.values[1].second, "4");
}

TEST(Options, UnknownKeysAndBadValuesAreOneLineNamingThem) {
  using strata::config::resolve_options;
  fake_env env;
  auto r = resolve_options("delay", delay_like(), {{"colour", "red"}}, env.fn());
  EXPECT_EQ(r.error,
            "module 'delay': unknown option 'colour' (its options: usec, every, mode, limit)");
  r = resolve_options("empty", {}, {{"x", "1"}}, env.fn());
  EXPECT_EQ(r.error, "module 'empty': unknown option 'x' (it takes none)");
  r = resolve_options("delay", delay_like(), {{"usec", "-3"}}, env.fn());
  EXPECT_EQ(r.error, "module 'delay': option 'usec': '-3' is not a whole number >= 0");
  env.vars["STRATA_DELAY_MODE"] = "sometimes";
  r = resolve_options("delay", delay_like(), {}, env.fn());
  EXPECT_EQ(r.error, "module 'delay': STRATA_DELAY_MODE: 'sometimes' is not one of block,drop");
}

TEST(Options, VariableNames) {
  EXPECT_EQ(strata::config::option_variable("monitor", "class-events"),
            "STRATA_MONITOR_CLASS_EVENTS");
  EXPECT_EQ(strata::config::option_variable("my.tool", "x"), "STRATA_MY_TOOL_X");
}

TEST(Options, Parsers) {
  namespace c = strata::config;
  EXPECT_EQ(c::parse_size("64K"), 65536u);
  EXPECT_EQ(c::parse_size("2GiB"), 2ull << 30);
  EXPECT_EQ(c::parse_size("12"), 12u);
  EXPECT_FALSE(c::parse_size("12T"));
  EXPECT_FALSE(c::parse_size("K"));
  EXPECT_FALSE(c::parse_size("99999999999999999999G"));
  EXPECT_DOUBLE_EQ(*c::parse_duration("250ms"), 0.25);
  EXPECT_DOUBLE_EQ(*c::parse_duration("2.5"), 2.5);
  EXPECT_DOUBLE_EQ(*c::parse_duration("1h"), 3600);
  EXPECT_FALSE(c::parse_duration("-1s"));
  EXPECT_FALSE(c::parse_duration("3 s"));
  EXPECT_EQ(c::parse_bool("on"), true);
  EXPECT_EQ(c::parse_bool("0"), false);
  EXPECT_FALSE(c::parse_bool("maybe"));
  EXPECT_EQ(c::parse_int("-5"), -5);
  EXPECT_FALSE(c::parse_int(" 5"));
  EXPECT_FALSE(c::parse_uint("-5"));
  EXPECT_FALSE(c::parse_double("nan"));
  EXPECT_EQ(c::type_problem("string", ""), "");
}
