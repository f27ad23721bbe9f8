//===- EntryABI.h - entry kinds and argument roles --------------*- C++ -*-===//
//
// The kinds of entry point and the roles of their arguments, from the one
// definition the compiler shares with the runtime's users and Python
// (runtime/include/hector/entry_abi.def).
//
//===----------------------------------------------------------------------===//

#ifndef HECTOR_ENTRYABI_H
#define HECTOR_ENTRYABI_H

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace hector::abi {

/// What an argument of a role is in an entry of a kind.
enum class Access { NONE, READ, WRITTEN };

/// The entry kinds, in the definition's order.
inline constexpr llvm::StringLiteral kEntryKinds[] = {
#define HECTOR_ENTRY_KIND(ID, name) #name,
#include "hector/entry_abi.def"
#undef HECTOR_ENTRY_KIND
};

struct Role {
  llvm::StringLiteral name;
  /// Per entry kind, in kEntryKinds' order.
  Access access[std::size(kEntryKinds)];
};

inline constexpr Role kRoles[] = {
#define HECTOR_ARG_ROLE(ID, name, inference, forward, backward)                \
  {#name, {Access::inference, Access::forward, Access::backward}},
#include "hector/entry_abi.def"
#undef HECTOR_ARG_ROLE
};

/// The role names, in the definition's order.
inline llvm::SmallVector<llvm::StringRef> roleNames() {
  llvm::SmallVector<llvm::StringRef> names;
  for (const Role &role : kRoles)
    names.push_back(role.name);
  return names;
}

/// The roles an argument (`results` false) or a result of an hgraph.func
/// may declare with `hgraph.role`: those some entry reads (but graph, the
/// preprocessing's arrays, which no hgraph argument holds), and those some
/// entry writes.
inline llvm::SmallVector<llvm::StringRef> hgraphRoles(bool results) {
  llvm::SmallVector<llvm::StringRef> names;
  for (const Role &role : kRoles) {
    Access wanted = results ? Access::WRITTEN : Access::READ;
    if (role.name != "graph" && llvm::is_contained(role.access, wanted))
      names.push_back(role.name);
  }
  return names;
}

inline bool isEntryKind(llvm::StringRef kind) {
  return llvm::is_contained(kEntryKinds, kind);
}

/// The entry kinds for a message: `a, b or c`, each in `quote`.
inline std::string entryKindList(llvm::StringRef quote = "") {
  std::string text;
  for (auto [index, kind] : llvm::enumerate(kEntryKinds)) {
    if (index)
      text += index + 1 == std::size(kEntryKinds) ? " or " : ", ";
    text += (quote + kind + quote).str();
  }
  return text;
}

} // namespace hector::abi

#endif // HECTOR_ENTRYABI_H
