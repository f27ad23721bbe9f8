// Command-line handling shared by the example programs: options as
// "--name VALUE" or "--name=VALUE", numbers checked in full, and a main()
// wrapper that turns every exception into one "<program>: error: ..." line.
#ifndef HECTOR_EXAMPLES_CPP_COMMAND_LINE_H
#define HECTOR_EXAMPLES_CPP_COMMAND_LINE_H

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace example {

// What both programs take: <lib.so> <graph-file> [--entry NAME] [--seed S]
// [--arg NAME=FILE.npy]...
struct CommonOptions {
  std::string library, graphFile, entry;
  uint64_t seed = 0;
  std::map<std::string, std::string> argFiles; // --arg NAME -> FILE
};

// Parses argv into `common` and returns the options named in `extra`
// ("--name"), as (name, value) in the order given. Every option takes a
// non-empty value; "-h"/"--help" prints `usage` and exits with status 0.
// Throws Error (entry_call.h) for unknown options, missing values and a
// positional count other than two.
std::vector<std::pair<std::string, std::string>>
parseCommandLine(int argc, char **argv, const std::set<std::string> &extra,
                 const char *usage, CommonOptions &common);

uint64_t parseUnsigned(const std::string &option, const std::string &text);
double parsePositive(const std::string &option, const std::string &text);

// Runs `body`, printing any exception as "<program>: error: <what>" on
// stderr; returns the exit status (1 after an error).
int runProgram(const char *program, int (*body)(int, char **), int argc,
               char **argv);

} // namespace example

#endif // HECTOR_EXAMPLES_CPP_COMMAND_LINE_H
