#include "command_line.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>

#include "entry_call.h"

namespace example {

namespace {

// "--arg NAME=FILE.npy"
void addArgFile(std::map<std::string, std::string> &files,
                const std::string &value) {
  size_t eq = value.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == value.size())
    throw Error("--arg needs NAME=FILE.npy, got '" + value + "'");
  if (!files.emplace(value.substr(0, eq), value.substr(eq + 1)).second)
    throw Error("--arg " + value.substr(0, eq) + " is given twice");
}

} // namespace

std::vector<std::pair<std::string, std::string>>
parseCommandLine(int argc, char **argv, const std::set<std::string> &extra,
                 const char *usage, CommonOptions &common) {
  std::vector<std::string> positional;
  std::vector<std::pair<std::string, std::string>> found;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(usage, stdout);
      std::exit(0);
    }
    if (arg.size() < 2 || arg.compare(0, 2, "--") != 0) {
      positional.push_back(arg);
      continue;
    }
    std::string name = arg, value;
    size_t eq = arg.find('=');
    if (eq != std::string::npos)
      name = arg.substr(0, eq);
    bool isCommon = name == "--entry" || name == "--seed" || name == "--arg";
    if (!isCommon && !extra.count(name))
      throw Error("unknown option '" + arg + "'\n" + usage);
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else {
      if (i + 1 == argc)
        throw Error(name + " needs a value\n" + usage);
      value = argv[++i];
    }
    if (value.empty())
      throw Error(name + " needs a non-empty value");
    if (name == "--entry")
      common.entry = value;
    else if (name == "--seed")
      common.seed = parseUnsigned(name, value);
    else if (name == "--arg")
      addArgFile(common.argFiles, value);
    else
      found.emplace_back(name, value);
  }
  if (positional.size() != 2)
    throw Error("expected <lib.so> and <graph-file>, got " +
                std::to_string(positional.size()) + " arguments\n" + usage);
  common.library = positional[0];
  common.graphFile = positional[1];
  return found;
}

uint64_t parseUnsigned(const std::string &option, const std::string &text) {
  char *end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(text.c_str(), &end, 0);
  if (text.empty() || text[0] == '-' || *end != '\0' || errno == ERANGE)
    throw Error(option + " needs an unsigned 64-bit integer, got '" + text +
                "'");
  return value;
}

double parsePositive(const std::string &option, const std::string &text) {
  char *end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE ||
      !std::isfinite(value) || value <= 0)
    throw Error(option + " needs a positive number, got '" + text + "'");
  return value;
}

int runProgram(const char *program, int (*body)(int, char **), int argc,
               char **argv) {
  try {
    return body(argc, argv);
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "%s: error: out of memory\n", program);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s: error: %s\n", program, e.what());
  }
  return 1;
}

} // namespace example
