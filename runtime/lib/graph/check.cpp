// hector_graph_check_array (hector/graph.h): the check a C caller runs on a
// graph array that did not come from hector_graph_build before an entry
// point indexes memory with it. The same rules as the Python entries'
// (python/hector/_graph_checks.py): ids in their range, offset tables
// starting at 0, never decreasing and ending at their size.
#include <algorithm>
#include <vector>

#include "../device.h"
#include "../driver.h"
#include "../error.h"
#include "hector/graph.h"

using namespace hector;

namespace {

enum class Rule { Ids, Offsets, Values };

struct ArrayRule {
  Rule rule;
  char symbol;  // N, E, R, T or P: the range of the ids, or the offsets' end
};

// Indexed by hector_graph_array_id (hector/graph_arrays.def).
constexpr Rule IDS = Rule::Ids, OFFSETS = Rule::Offsets, VALUES = Rule::Values;
const ArrayRule kRules[HECTOR_GRAPH_NUM_ARRAYS] = {
#define HECTOR_GRAPH_ARRAY(ID, name, length, type, check, range) {check, #range[0]},
#include "hector/graph_arrays.def"
#undef HECTOR_GRAPH_ARRAY
};

int64_t size_of(const hector_graph_sizes& s, char symbol) {
  switch (symbol) {
    case 'N': return s.num_nodes;
    case 'E': return s.num_edges;
    case 'R': return s.num_edge_types;
    case 'T': return s.num_node_types;
    case 'P': return s.num_pairs;
  }
  return -1;
}

// Walks the array in chunks of host memory: the array itself, or copies of
// device memory (chunk by chunk, so the host needs little memory).
class Chunks {
 public:
  Chunks(const int32_t* data, int64_t length, Device* device)
      : data_(data), length_(length), device_(device) {}

  // Calls visit(chunk, count, first index) for every chunk; stops at the
  // first non-zero status.
  template <typename Visit>
  int each(Visit visit) {
    if (!device_) return visit(data_, length_, int64_t(0));
    const Driver* cu = nullptr;
    if (int s = driver(&cu)) return s;
    ContextScope scope(device_);
    if (scope.status()) return scope.status();
    constexpr int64_t kChunk = int64_t(1) << 22;
    std::vector<int32_t> buffer;
    for (int64_t first = 0; first < length_; first += kChunk) {
      int64_t count = std::min(kChunk, length_ - first);
      buffer.resize(static_cast<size_t>(count));
      CUresult r = cu->cuMemcpyDtoH(buffer.data(),
                                    reinterpret_cast<CUdeviceptr>(data_ + first),
                                    static_cast<size_t>(count) * sizeof(int32_t));
      if (r != CUDA_SUCCESS) return cu_fail(r, "hector_graph_check_array: cuMemcpyDtoH");
      if (int s = visit(buffer.data(), count, first)) return s;
    }
    return HECTOR_OK;
  }

 private:
  const int32_t* data_;
  int64_t length_;
  Device* device_;
};

}  // namespace

extern "C" int hector_graph_check_array(const char* name, const void* data, int64_t length,
                                        const hector_graph_sizes* sizes, int device) {
  clear_error();
  if (!name || !sizes || length < 0 || (!data && length > 0))
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_graph_check_array: name and sizes must be non-NULL, length >= 0, "
                "data non-NULL unless length is 0");
  int id = -1;
  if (hector_graph_array_id_of(name, &id) != HECTOR_OK)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_graph_check_array: '%.64s' is not a graph array", name);
  const ArrayRule* rule = &kRules[id];
  if (rule->rule == Rule::Values) return HECTOR_OK;  // edge_norm: no ids
  Device* dev = nullptr;
  if (device >= 0)
    if (int s = get_device(device, &dev)) return s;
  const int64_t bound = size_of(*sizes, rule->symbol);  // < 0: not known
  Chunks chunks(static_cast<const int32_t*>(data), length, dev);

  if (rule->rule == Rule::Ids) {
    return chunks.each([&](const int32_t* v, int64_t count, int64_t first) {
      for (int64_t i = 0; i < count; ++i)
        if (v[i] < 0 || (bound >= 0 && v[i] >= bound))
          return fail(HECTOR_ERROR_INDEX_OUT_OF_RANGE,
                      "graph array '%s' holds %d at index %lld, out of range [0, %lld) "
                      "(%c = %lld)",
                      name, v[i], static_cast<long long>(first + i),
                      static_cast<long long>(bound), rule->symbol,
                      static_cast<long long>(bound));
      return int(HECTOR_OK);
    });
  }
  // Offsets: at least one entry, first 0, never decreasing, last = bound.
  if (length == 0)
    return fail(HECTOR_ERROR_INDEX_OUT_OF_RANGE,
                "graph array '%s' is empty; an offset table has at least one entry", name);
  int32_t previous = 0;
  int s = chunks.each([&](const int32_t* v, int64_t count, int64_t first) {
    for (int64_t i = 0; i < count; ++i) {
      if ((first + i == 0 && v[i] != 0) || v[i] < previous)
        return fail(HECTOR_ERROR_INDEX_OUT_OF_RANGE,
                    "graph array '%s' must start at 0 and never decrease (index %lld holds %d)",
                    name, static_cast<long long>(first + i), v[i]);
      previous = v[i];
    }
    return int(HECTOR_OK);
  });
  if (s) return s;
  if (bound >= 0 && previous != bound)
    return fail(HECTOR_ERROR_INDEX_OUT_OF_RANGE, "graph array '%s' ends at %d, expected %c = %lld",
                name, previous, rule->symbol, static_cast<long long>(bound));
  return HECTOR_OK;
}
