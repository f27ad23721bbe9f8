// Reading a heterogeneous graph from the text format of README.md:
//
//   # comments run from '#' to the end of the line; blank lines are ignored
//   N E T R         one line: nodes, edges, node types, edge types
//   t0 t1 ...       N node types in [0, T), on one or more lines
//   s d r           E lines, one edge each: source, destination, edge type
//
// Every problem is reported as a GraphFileError whose message starts with
// "<file>:<line>:" and says what was expected.
#ifndef HECTOR_EXAMPLES_CPP_GRAPH_FILE_H
#define HECTOR_EXAMPLES_CPP_GRAPH_FILE_H

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace example {

struct GraphFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A graph as the file gives it (edges in file order).
struct GraphData {
  int64_t numNodeTypes = 0; // T
  int64_t numEdgeTypes = 0; // R
  std::vector<int64_t> nodeType; // [N]
  std::vector<int64_t> src, dst, etype; // [E]
};

// Parses `path`; throws GraphFileError.
GraphData readGraphFile(const std::string &path);

} // namespace example

#endif // HECTOR_EXAMPLES_CPP_GRAPH_FILE_H
