#include "graph_file.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace example {
namespace {

// The runtime builds int32 arrays: every count and id must stay below 2^31.
constexpr int64_t kMaxCount = (int64_t(1) << 31) - 1;

// The integers of one line, comments and surrounding blanks removed.
struct Line {
  int64_t number = 0;
  std::vector<std::string> tokens;
};

class Reader {
public:
  Reader(const std::string &path) : path(path), in(path) {
    if (!in)
      throw GraphFileError(path + ": cannot open the graph file");
  }

  // The next line that holds something; false at the end of the file.
  bool next(Line &line) {
    std::string text;
    while (std::getline(in, text)) {
      ++lineNumber;
      if (size_t hash = text.find('#'); hash != std::string::npos)
        text.resize(hash);
      std::istringstream words(text);
      line.number = lineNumber;
      line.tokens.clear();
      for (std::string word; words >> word;)
        line.tokens.push_back(word);
      if (!line.tokens.empty())
        return true;
    }
    if (in.bad())
      throw GraphFileError(path + ": cannot read the graph file (after line " +
                           std::to_string(lineNumber) + ")");
    return false;
  }

  [[noreturn]] void fail(int64_t line, const std::string &what) const {
    throw GraphFileError(path + ":" + std::to_string(line) + ": " + what);
  }
  [[noreturn]] void failAtEnd(const std::string &what) const {
    throw GraphFileError(path + ":" + std::to_string(lineNumber) +
                         ": unexpected end of file: " + what);
  }

  // `token` as an integer in [lo, hi]; `what` names it in the message.
  int64_t integer(const Line &line, const std::string &token, int64_t lo,
                  int64_t hi, const std::string &what) const {
    const char *text = token.c_str();
    char *end = nullptr;
    errno = 0;
    long long value = std::strtoll(text, &end, 10);
    bool digits = !token.empty() &&
                  (std::isdigit(static_cast<unsigned char>(token[0])) ||
                   (token.size() > 1 && (token[0] == '-' || token[0] == '+')));
    if (!digits || *end != '\0')
      fail(line.number, "expected an integer for " + what + ", got '" + token + "'");
    if (errno == ERANGE || value < lo || value > hi)
      fail(line.number, what + " is " + token + ", outside [" + std::to_string(lo) +
                            ", " + std::to_string(hi) + "]");
    return value;
  }

private:
  std::string path;
  std::ifstream in;
  int64_t lineNumber = 0;
};

} // namespace

GraphData readGraphFile(const std::string &path) {
  Reader reader(path);
  GraphData graph;
  Line line;

  // Header: N E T R.
  if (!reader.next(line))
    reader.failAtEnd("expected the header line 'N E T R' (nodes, edges, node "
                     "types, edge types)");
  if (line.tokens.size() != 4)
    reader.fail(line.number, "expected the header line 'N E T R' (nodes, edges, "
                             "node types, edge types), got " +
                                 std::to_string(line.tokens.size()) + " values");
  int64_t n = reader.integer(line, line.tokens[0], 0, kMaxCount, "N (nodes)");
  int64_t e = reader.integer(line, line.tokens[1], 0, kMaxCount, "E (edges)");
  graph.numNodeTypes =
      reader.integer(line, line.tokens[2], 0, kMaxCount, "T (node types)");
  graph.numEdgeTypes =
      reader.integer(line, line.tokens[3], 0, kMaxCount, "R (edge types)");
  if (n > 0 && graph.numNodeTypes == 0)
    reader.fail(line.number, "T (node types) is 0 but the graph has " +
                                 std::to_string(n) + " nodes");
  if (e > 0 && n == 0)
    reader.fail(line.number, "the graph has " + std::to_string(e) +
                                 " edges but no nodes");
  if (e > 0 && graph.numEdgeTypes == 0)
    reader.fail(line.number, "R (edge types) is 0 but the graph has " +
                                 std::to_string(e) + " edges");

  // N node types, any number per line. Vectors grow as values arrive (never
  // reserved from the header), so a lying header cannot allocate much.
  while (int64_t(graph.nodeType.size()) < n) {
    std::string expected = "the types of nodes " +
                           std::to_string(graph.nodeType.size()) + ".." +
                           std::to_string(n - 1) + " (values in [0, " +
                           std::to_string(graph.numNodeTypes) + "))";
    if (!reader.next(line))
      reader.failAtEnd("expected " + expected);
    for (const std::string &token : line.tokens) {
      if (int64_t(graph.nodeType.size()) == n)
        reader.fail(line.number, "the " + std::to_string(n) +
                                     " node types end here, but the line goes "
                                     "on with '" + token +
                                     "'; put each edge on its own line");
      std::string what =
          "the type of node " + std::to_string(graph.nodeType.size());
      graph.nodeType.push_back(
          reader.integer(line, token, 0, graph.numNodeTypes - 1, what));
    }
  }

  // E edges, one per line.
  for (int64_t k = 0; k < e; ++k) {
    std::string edge = "edge " + std::to_string(k);
    if (!reader.next(line))
      reader.failAtEnd("expected " + std::to_string(e) + " edges (lines 'src dst "
                       "etype'), got " + std::to_string(k));
    if (line.tokens.size() != 3)
      reader.fail(line.number, "expected " + edge + " as 'src dst etype', got " +
                                   std::to_string(line.tokens.size()) + " values");
    graph.src.push_back(
        reader.integer(line, line.tokens[0], 0, n - 1, "the source of " + edge));
    graph.dst.push_back(reader.integer(line, line.tokens[1], 0, n - 1,
                                       "the destination of " + edge));
    graph.etype.push_back(reader.integer(line, line.tokens[2], 0,
                                         graph.numEdgeTypes - 1,
                                         "the type of " + edge));
  }

  if (reader.next(line))
    reader.fail(line.number, "the header declares " + std::to_string(e) +
                                 " edges, but more lines follow");
  return graph;
}

} // namespace example
