// Where the example's inputs and weights come from: a documented seeded
// generator (reproducible from Python, see README.md) or .npy files.
#ifndef HECTOR_EXAMPLES_CPP_VALUES_H
#define HECTOR_EXAMPLES_CPP_VALUES_H

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace example {

struct ValueError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The splitmix64 finaliser (all arithmetic modulo 2^64).
uint64_t mix64(uint64_t z);

// Fills data[0..count) for the argument at position `argIndex` of the entry:
//   key   = mix64(seed + G * (argIndex + 1))
//   bits  = mix64(key + G * (i + 1))          i = row-major element index
//   value = float32(((bits >> 40) * 2^-24 * 2 - 1) * scale)   (in double)
// with G = 0x9E3779B97F4A7C15: uniform in [-scale, scale).
void fillSeeded(float *data, int64_t count, uint64_t seed, int argIndex,
                double scale);

// One class in [0, classes) per element i < count, from the same stream as
// fillSeeded at position -1 (classes > 0):
//   key = mix64(seed),  bits = mix64(key + G * (i + 1)),
//   label = ((bits >> 40) * classes) >> 24      (floor(unit * classes))
std::vector<int64_t> seededLabels(int64_t count, uint64_t seed, int64_t classes);

// Writes `data` (count = the product of `shape`) as a little-endian float32,
// C-order .npy file (format version 1); throws ValueError.
void writeNpyFloat32(const std::string &path, const float *data,
                     const std::vector<int64_t> &shape);

// Reads a little-endian float32, C-order .npy file whose shape must equal
// `shape`; throws ValueError naming `path` and `what`.
std::vector<float> readNpyFloat32(const std::string &path,
                                  const std::vector<int64_t> &shape,
                                  const std::string &what);

} // namespace example

#endif // HECTOR_EXAMPLES_CPP_VALUES_H
