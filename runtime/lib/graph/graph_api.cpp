// The C entry points of hector/graph.h: build, free and read a preprocessed
// graph.
#include <cstring>
#include <new>

#include "../error.h"
#include "graph_impl.h"

using namespace hector;

namespace {

// Table names, indexed by hector_graph_array_id.
const char* const kArrayNames[HECTOR_GRAPH_NUM_ARRAYS] = {
#define HECTOR_GRAPH_ARRAY(ID, name, length, type, check, range) #name,
#include "hector/graph_arrays.def"
#undef HECTOR_GRAPH_ARRAY
};

}  // namespace

extern "C" int hector_graph_build(const hector_graph_input* in, hector_graph** out) {
  clear_error();
  if (!out) return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_graph_build: out is NULL");
  *out = nullptr;
  if (!in) return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_graph_build: in is NULL");
  hector_graph* g = new (std::nothrow) hector_graph();
  if (!g) return fail(HECTOR_ERROR_OUT_OF_MEMORY, "hector_graph_build: out of host memory");
  if (int s = preprocess_graph(*in, *g)) {
    delete g;
    return s;
  }
  *out = g;
  return HECTOR_OK;
}

extern "C" int hector_graph_free(hector_graph* graph) {
  clear_error();
  delete graph;
  return HECTOR_OK;
}

extern "C" int hector_graph_get_sizes(const hector_graph* graph, hector_graph_sizes* sizes) {
  clear_error();
  if (!graph || !sizes)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_graph_get_sizes: graph and sizes must be non-NULL");
  *sizes = graph->sizes;
  return HECTOR_OK;
}

extern "C" int hector_graph_array(const hector_graph* graph, int id, const void** data,
                                  int64_t* length, int32_t* dtype) {
  clear_error();
  if (!graph || !data || !length)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_graph_array: graph, data and length must be non-NULL");
  *data = nullptr;
  *length = 0;
  if (id < 0 || id >= HECTOR_GRAPH_NUM_ARRAYS)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_graph_array: unknown array id %d (valid: 0 .. %d)", id,
                HECTOR_GRAPH_NUM_ARRAYS - 1);
  if (id == HECTOR_GRAPH_EDGE_NORM) {
    *data = graph->edge_norm.data();  // NULL when empty
    *length = static_cast<int64_t>(graph->edge_norm.size());
    if (dtype) *dtype = HECTOR_GRAPH_FLOAT32;
    return HECTOR_OK;
  }
  const Buffer<int32_t>& v = graph->i32[id];
  *data = v.data();  // NULL when empty
  *length = static_cast<int64_t>(v.size());
  if (dtype) *dtype = HECTOR_GRAPH_INT32;
  return HECTOR_OK;
}

extern "C" const char* hector_graph_array_name(int id) {
  return id >= 0 && id < HECTOR_GRAPH_NUM_ARRAYS ? kArrayNames[id] : nullptr;
}

extern "C" int hector_graph_array_id_of(const char* name, int* id) {
  clear_error();
  if (!name || !id)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_graph_array_id_of: name and id must be non-NULL");
  for (int i = 0; i < HECTOR_GRAPH_NUM_ARRAYS; ++i) {
    if (std::strcmp(kArrayNames[i], name) == 0) {
      *id = i;
      return HECTOR_OK;
    }
  }
  *id = -1;
  return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_graph_array_id_of: unknown array name '%.64s'",
              name);
}
