"""The one exception class of the frontend."""

from __future__ import annotations


class FrontendError(Exception):
    """A model the frontend cannot translate.

    `str(err)` is ``path:line:col: message`` (line and column 1-based), the
    position of the Python construct at fault. The parts are also available as
    `filename`, `line`, `col` and `message`.
    """

    def __init__(self, message: str, filename: str = "<unknown>", line: int = 0,
                 col: int = 0):
        self.message = message
        self.filename = filename
        self.line = line
        self.col = col
        super().__init__(f"{filename}:{line}:{col}: {message}")
