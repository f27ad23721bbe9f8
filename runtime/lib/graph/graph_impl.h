// The built graph behind the opaque hector_graph of hector/graph.h, and the
// preprocessing that fills it.
#ifndef HECTOR_RUNTIME_GRAPH_IMPL_H
#define HECTOR_RUNTIME_GRAPH_IMPL_H

#include <cstddef>
#include <cstdint>

#include "hector/graph.h"

namespace hector {

// n * size bytes (n > 0), huge-page backed when large; throws std::bad_alloc.
void* allocate_bytes(size_t n, size_t size);
void free_bytes(void* p);

// An uninitialised array of trivially copyable T. Unlike std::vector it does
// not zero what is about to be overwritten (a full extra pass over every
// E-sized array), and large arrays ask for transparent huge pages, which keeps
// the radix passes' scattered writes from missing the TLB.
template <typename T>
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t n) { allocate(n); }
  ~Buffer() { release(); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept : data_(o.data_), size_(o.size_) { o.data_ = nullptr, o.size_ = 0; }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = o.data_, size_ = o.size_;
      o.data_ = nullptr, o.size_ = 0;
    }
    return *this;
  }

  // Replaces the contents by n uninitialised elements; throws std::bad_alloc.
  void allocate(size_t n) {
    release();
    if (n == 0) return;
    data_ = static_cast<T*>(allocate_bytes(n, sizeof(T)));
    size_ = n;
  }
  void release() {
    free_bytes(data_);
    data_ = nullptr;
    size_ = 0;
  }
  void swap(Buffer& o) noexcept {
    T* d = data_;
    size_t s = size_;
    data_ = o.data_, size_ = o.size_;
    o.data_ = d, o.size_ = s;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

// Validates `in` and fills `g` (empty). Returns a hector_status with the
// message set on failure; `g` is then partly filled and must be discarded.
// Never throws.
int preprocess_graph(const hector_graph_input& in, hector_graph& g);

}  // namespace hector

struct hector_graph {
  hector_graph_sizes sizes{};
  // Indexed by hector_graph_array_id; the HECTOR_GRAPH_EDGE_NORM slot stays
  // empty (edge_norm is float).
  hector::Buffer<int32_t> i32[HECTOR_GRAPH_NUM_ARRAYS];
  hector::Buffer<float> edge_norm;
};

#endif
