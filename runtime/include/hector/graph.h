/* Hector runtime: per-graph preprocessing.
 *
 * Builds, once per graph, the arrays that generated code reads (the table
 * "Graph preprocessing" of docs/compilation.md): the canonical edge order
 * (sorted by edge type, destination, source; stable), per-type offsets, the
 * per-relation in-degree norm, CSR by destination, nodes grouped by type,
 * the compact (source, edge type) pairs with the edge -> pair map, and
 * pair_eid, the canonical edge ids grouped by pair. It also keeps edge_perm,
 * canonical edge id -> the caller's edge index, so that edge-wise user data
 * can be permuted into canonical order.
 *
 * Plain C, same conventions as runtime.h: every function returns a
 * hector_status (0 = success) and, on failure, hector_last_error() holds a
 * message naming the bad argument (for bad values: the array, the first bad
 * index and its value). Nothing here needs a GPU. Work is O(N + E + T + R)
 * time (counting sorts, no comparison sort) and O(N + E + T + R) memory,
 * single-threaded.
 */
#ifndef HECTOR_GRAPH_H
#define HECTOR_GRAPH_H

#include <stdint.h>

#include "hector/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One input array of integer ids on the host. */
typedef struct hector_index_array {
  const void* data;   /* may be NULL only when length == 0 */
  int64_t length;     /* number of elements, >= 0 */
  int32_t elem_bytes; /* 4 (int32) or 8 (int64) */
  int32_t reserved;   /* must be 0 */
} hector_index_array;

/* A graph as the user has it: edges in any order. N = node_type.length,
 * E = src.length; dst and etype must have length E. Node ids must lie in
 * [0, N), node types in [0, num_node_types), edge types in
 * [0, num_edge_types). N, E, T and R must each be below 2^31 (every output
 * is int32). Self-loops, duplicate edges, isolated nodes and types without
 * nodes or edges are all fine. */
typedef struct hector_graph_input {
  hector_index_array node_type; /* [N] */
  hector_index_array src;       /* [E] source node of each edge */
  hector_index_array dst;       /* [E] destination node of each edge */
  hector_index_array etype;     /* [E] edge type of each edge */
  int64_t num_node_types;       /* T */
  int64_t num_edge_types;       /* R */
} hector_graph_input;

/* The built arrays, one id each in the order of hector/graph_arrays.def
 * (which says what each holds; ids are stable: a new array is appended).
 * All are int32 except edge_norm (float32). */
typedef enum hector_graph_array_id {
#define HECTOR_GRAPH_ARRAY(ID, name, length, type, check, range) HECTOR_GRAPH_##ID,
#include "hector/graph_arrays.def"
#undef HECTOR_GRAPH_ARRAY
  HECTOR_GRAPH_NUM_ARRAYS
} hector_graph_array_id;

/* Element types reported by hector_graph_array. */
#define HECTOR_GRAPH_INT32 0
#define HECTOR_GRAPH_FLOAT32 1

typedef struct hector_graph_sizes {
  int64_t num_nodes;      /* N */
  int64_t num_edges;      /* E */
  int64_t num_node_types; /* T */
  int64_t num_edge_types; /* R */
  int64_t num_pairs;      /* P: unique (source, edge type) pairs */
} hector_graph_sizes;

/* Opaque, immutable once built; safe to read from several threads. */
typedef struct hector_graph hector_graph;

/* Validates `in` and builds every array. On success *out owns the result
 * (release with hector_graph_free); on failure *out is NULL. Errors:
 * INVALID_ARGUMENT (NULL pointers, negative or too large sizes, mismatched
 * lengths, elem_bytes not 4 or 8, reserved not 0), INDEX_OUT_OF_RANGE (a node
 * id, node type or edge type outside its range: the message names the array,
 * the first bad index and its value), OUT_OF_MEMORY (checked before
 * allocating: the arrays need more host memory than is available, e.g. a
 * huge num_edge_types; docs/runtime-graph.md; or an allocation failed). */
HECTOR_API int hector_graph_build(const hector_graph_input* in, hector_graph** out);

/* Releases a graph; NULL is a no-op. Pointers from hector_graph_array die
 * with it. */
HECTOR_API int hector_graph_free(hector_graph* graph);

/* N, E, T, R and P of a built graph. */
HECTOR_API int hector_graph_get_sizes(const hector_graph* graph, hector_graph_sizes* sizes);

/* One built array: *data points into the graph (valid until
 * hector_graph_free; NULL when *length is 0), *length is its number of
 * elements and *dtype (may be NULL) is HECTOR_GRAPH_INT32 or
 * HECTOR_GRAPH_FLOAT32. */
HECTOR_API int hector_graph_array(const hector_graph* graph, int id, const void** data,
                                  int64_t* length, int32_t* dtype);

/* The table name of an array id ("edge_src", "csr_row_ptr", ...), as used in
 * hector.arg and the manifest; NULL for an unknown id. Never fails. */
HECTOR_API const char* hector_graph_array_name(int id);

/* The id of a table name; INVALID_ARGUMENT for an unknown name. */
HECTOR_API int hector_graph_array_id_of(const char* name, int* id);

/* Checks one int32 graph array that an entry point will read (table name
 * `name`, `length` elements at `data`) before the call: generated code
 * indexes memory with these values and does not check them. Arrays from
 * hector_graph_build are valid and need no check; arrays built or changed
 * any other way do. Ids must lie in their range (node ids in [0, N), edge
 * ids in [0, E), edge types in [0, R), node types in [0, T), pair ids in
 * [0, P)); an offset table (etype_offsets, csr_row_ptr, ntype_offsets,
 * compact_offsets) must start at 0, never decrease and end at its size.
 * `sizes` gives N, E, T, R and P; a negative size is not checked against.
 * edge_norm holds no ids and always passes. `device` < 0: `data` is host
 * memory; otherwise it is device memory of that CUDA device, read back in
 * chunks of 16 MiB (synchronous: it waits for the work queued before it).
 * Errors: INVALID_ARGUMENT (NULL pointers, negative length, an unknown
 * name), INDEX_OUT_OF_RANGE (the message names the array, the first bad
 * index and its value), NO_DRIVER / NO_DEVICE / CUDA for device memory. */
HECTOR_API int hector_graph_check_array(const char* name, const void* data, int64_t length,
                                        const hector_graph_sizes* sizes, int device);

#ifdef __cplusplus
}
#endif

#endif /* HECTOR_GRAPH_H */
