#include "values.h"

#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>

// .npy data and --out files are little-endian float32, copied as they are.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "this example assumes a little-endian host");

namespace example {

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void fillSeeded(float *data, int64_t count, uint64_t seed, int argIndex,
                double scale) {
  const uint64_t golden = 0x9E3779B97F4A7C15ull;
  uint64_t key = mix64(seed + golden * (uint64_t(argIndex) + 1));
  for (int64_t i = 0; i < count; ++i) {
    uint64_t bits = mix64(key + golden * (uint64_t(i) + 1));
    // 24 random bits: exact in double and in float before scaling.
    double unit = double(bits >> 40) * (1.0 / 16777216.0);
    data[i] = float((unit * 2.0 - 1.0) * scale);
  }
}

std::vector<int64_t> seededLabels(int64_t count, uint64_t seed,
                                  int64_t classes) {
  const uint64_t golden = 0x9E3779B97F4A7C15ull;
  uint64_t key = mix64(seed);
  std::vector<int64_t> labels(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    uint64_t bits = mix64(key + golden * (uint64_t(i) + 1));
    // 24 bits times a class count below 2^39 fits in 64 bits.
    labels[size_t(i)] = int64_t(((bits >> 40) * uint64_t(classes)) >> 24);
  }
  return labels;
}

namespace {

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "(";
  for (size_t k = 0; k < shape.size(); ++k)
    text += (k ? ", " : "") + std::to_string(shape[k]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

// The text after `'key':` in the header dictionary, or npos.
size_t valueOf(const std::string &header, const char *key) {
  for (char quote : {'\'', '"'}) {
    std::string quoted = std::string(1, quote) + key + quote;
    size_t at = header.find(quoted);
    if (at == std::string::npos)
      continue;
    at = header.find_first_not_of(" ", at + quoted.size());
    if (at == std::string::npos || header[at] != ':')
      return std::string::npos;
    return header.find_first_not_of(" ", at + 1);
  }
  return std::string::npos;
}

} // namespace

std::vector<float> readNpyFloat32(const std::string &path,
                                  const std::vector<int64_t> &shape,
                                  const std::string &what) {
  auto bad = [&](const std::string &why) -> ValueError {
    return ValueError(path + " (for " + what + "): " + why);
  };
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw bad("cannot open the file");
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  if (in.bad())
    throw bad("read error");

  // Magic, version, header length (2 bytes in version 1, 4 in 2 and 3).
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    throw bad("not a .npy file (no \\x93NUMPY magic)");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  if (major < 1 || major > 3)
    throw bad(".npy format version " + std::to_string(major) + " is unknown");
  size_t lengthBytes = major == 1 ? 2 : 4;
  size_t headerLength = 0;
  for (size_t k = 0; k < lengthBytes; ++k)
    headerLength |= size_t(static_cast<unsigned char>(bytes[8 + k])) << (8 * k);
  size_t dataStart = 8 + lengthBytes + headerLength;
  if (dataStart > bytes.size())
    throw bad("the header runs past the end of the file");
  std::string header = bytes.substr(8 + lengthBytes, headerLength);

  size_t descr = valueOf(header, "descr");
  if (descr == std::string::npos || header.compare(descr + 1, 3, "<f4") != 0 ||
      (header[descr] != '\'' && header[descr] != '"'))
    throw bad("dtype must be little-endian float32 ('<f4'); header: " + header);
  size_t order = valueOf(header, "fortran_order");
  if (order == std::string::npos || header.compare(order, 5, "False") != 0)
    throw bad("must be in C order (fortran_order False); header: " + header);
  size_t open = valueOf(header, "shape");
  size_t close = open == std::string::npos ? open : header.find(')', open);
  if (open == std::string::npos || header[open] != '(' || close == std::string::npos)
    throw bad("no shape in the header: " + header);
  std::vector<int64_t> fileShape;
  std::string dims = header.substr(open + 1, close - open - 1);
  for (size_t at = 0; at < dims.size();) {
    size_t comma = dims.find(',', at);
    std::string token = dims.substr(at, comma == std::string::npos ? comma : comma - at);
    token.erase(0, token.find_first_not_of(' '));
    token.erase(token.find_last_not_of(' ') + 1);
    if (!token.empty()) {
      if (token.size() > 15 ||
          token.find_first_not_of("0123456789") != std::string::npos)
        throw bad("bad shape in the header: " + header);
      fileShape.push_back(std::stoll(token));
    }
    at = comma == std::string::npos ? dims.size() : comma + 1;
  }
  if (fileShape != shape)
    throw bad("has shape " + shapeText(fileShape) + ", but " + what +
              " needs shape " + shapeText(shape));

  // The shape matched one the caller could allocate, so this cannot overflow.
  size_t count = 1;
  for (int64_t size : shape)
    count *= size_t(size);
  if (bytes.size() - dataStart != count * sizeof(float))
    throw bad("holds " + std::to_string(bytes.size() - dataStart) +
              " bytes of data, expected " + std::to_string(count * sizeof(float)));
  std::vector<float> values(count);
  if (count)
    std::memcpy(values.data(), bytes.data() + dataStart, count * sizeof(float));
  return values;
}

void writeNpyFloat32(const std::string &path, const float *data,
                     const std::vector<int64_t> &shape) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " +
                       shapeText(shape) + ", }";
  // Magic (6) + version (2) + length (2) + header + '\n', padded to 64 bytes.
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  size_t count = 1;
  for (int64_t size : shape)
    count *= size_t(size);
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  char length[2] = {char(header.size() & 0xff), char(header.size() >> 8)};
  out.write(length, 2);
  out << header;
  if (count)
    out.write(reinterpret_cast<const char *>(data),
              std::streamsize(count * sizeof(float)));
  out.close();
  if (!out)
    throw ValueError(path + ": cannot write the .npy file");
}

} // namespace example
