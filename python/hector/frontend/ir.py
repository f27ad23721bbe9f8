"""A small writer of hgraph IR text: SSA names, op lines, float literals.

Result names are chosen when the text is rendered, so that a value can be
named after the variable it is finally stored in (`e["alpha"] = ...` gives
`%alpha`) even though the op was written before the assignment was seen.
"""

from __future__ import annotations

import math
import re
from typing import List, Optional, Union


class Slot:
    """An SSA value whose name is fixed when the function is rendered."""

    __slots__ = ("hint", "name")

    def __init__(self, hint: Optional[str] = None):
        self.hint = sanitize(hint)
        self.name: Optional[str] = None

    def __repr__(self) -> str:  # for debugging only
        return f"Slot({self.name or self.hint})"


Part = Union[str, Slot]


def sanitize(hint: Optional[str]) -> Optional[str]:
    """An MLIR suffix-id made from `hint`, or None when nothing usable is left."""
    if not hint:
        return None
    name = re.sub(r"[^A-Za-z0-9_$.]", "_", hint)
    if name[0].isdigit():
        name = "_" + name
    return name


def float_literal(value: float) -> str:
    """The shortest text that MLIR parses back to exactly `value` (a dot is required)."""
    if not math.isfinite(value):
        raise ValueError(f"{value} is not finite")
    text = repr(float(value))
    mantissa, _, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + ("e" + exponent if exponent else "")


def symbol(name: str) -> str:
    """`@name`, quoted when `name` is not a bare MLIR identifier."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$.]*", name):
        return "@" + name
    return '@"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def string_literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class FunctionWriter:
    """Collects the op lines of one hgraph.func body and renders the function."""

    def __init__(self):
        self._lines: List[List[Part]] = []

    def op(self, parts: List[Part], location: Optional[str] = None) -> None:
        """Appends one line: a list of strings and Slots (operands and results)."""
        if location:
            parts = parts + [" " + location]
        self._lines.append(parts)

    def render(self, header: List[Part], arg_slots: List[Slot], comment: str) -> str:
        used = set()
        counter = 0
        # The next suffix to try per hint, so that a hint given n times
        # costs O(n), not O(n^2).
        next_suffix = {}

        def assign(slot: Slot) -> None:
            nonlocal counter
            if slot.name is not None:
                return
            if slot.hint is None:
                while str(counter) in used:
                    counter += 1
                slot.name = str(counter)
            else:
                k = next_suffix.get(slot.hint, 0)
                name = f"{slot.hint}_{k}" if k else slot.hint
                while name in used:
                    k += 1
                    name = f"{slot.hint}_{k}"
                next_suffix[slot.hint] = k + 1
                slot.name = name
            used.add(slot.name)

        for slot in arg_slots:
            assign(slot)
        # Results are named in order of definition: the first Slot of a line
        # that starts with "%" is the line's result.
        for parts in self._lines:
            if len(parts) > 1 and parts[0] == "%" and isinstance(parts[1], Slot):
                assign(parts[1])

        def text(parts: List[Part]) -> str:
            out = []
            for part in parts:
                if isinstance(part, Slot):
                    if part.name is None:  # never defined: a bug in the translator
                        raise AssertionError(f"value {part!r} used but never defined")
                    out.append(part.name)
                else:
                    out.append(part)
            return "".join(out)

        body = "\n".join("  " + text(parts) for parts in self._lines)
        return f"{comment}{text(header)} {{\n{body}\n}}\n"
