"""Public entry points: `model`, `emit`, `emit_source`."""

from __future__ import annotations

import ast
import functools
import inspect
from typing import Optional

from .errors import FrontendError
from .translate import Source, Translator


class Model:
    """A function decorated with `@hector.frontend.model`.

    It is never called: `model.emit(**sizes)` (or `emit(model, **sizes)`)
    translates its source into hgraph IR.
    """

    def __init__(self, function):
        if not inspect.isfunction(function):
            raise TypeError(f"@model decorates a function, got {function!r}")
        self.function = function
        functools.update_wrapper(self, function)

    def emit(self, *, locations: bool = False, **sizes: int) -> str:
        return emit(self, locations=locations, **sizes)

    def __call__(self, *args, **kwargs):
        raise TypeError(f"{self.function.__name__} is a Hector model: translate it with "
                        f"hector.frontend.emit({self.function.__name__}, **sizes) and compile "
                        "the IR with hectorc; it cannot be called from Python")

    def __repr__(self) -> str:
        return f"<hector model {self.function.__qualname__}>"


def model(function) -> Model:
    """Marks `function` as a Hector model (see docs/frontend.md)."""
    return Model(function)


def emit(model_or_function, *, locations: bool = False, **sizes: int) -> str:
    """hgraph IR text (one `hgraph.func`) of a model, for the given sizes.

    `sizes` give values to the model's keyword-only size parameters; the
    others keep their defaults. With `locations=True` every op carries the
    `loc("file.py":line:col)` of the Python construct it comes from, so that
    hectorc's diagnostics point into the model's source. Raises FrontendError.
    """
    function = model_or_function.function if isinstance(model_or_function, Model) \
        else model_or_function
    if not inspect.isfunction(function):
        raise TypeError(f"emit() takes a model function, got {model_or_function!r}")
    filename = inspect.getsourcefile(function) or function.__code__.co_filename
    try:
        lines, first_line = inspect.getsourcelines(function)
    except (OSError, TypeError) as err:
        raise FrontendError(f"cannot read the source of {function.__name__} ({err}); "
                            "use emit_source() with its text", filename,
                            function.__code__.co_firstlineno, 1) from None
    # Strip the indentation of the `def` (or decorator) line, so that methods
    # and nested functions parse; columns are shifted back in error messages.
    indent = len(lines[0]) - len(lines[0].lstrip())
    prefix = lines[0][:indent]
    text = "".join(line[indent:] if line.startswith(prefix) else line for line in lines)
    source = Source(filename, first_line - 1, indent)
    try:
        tree = ast.parse(text)
    except SyntaxError as err:
        raise FrontendError(f"cannot parse the model: {err.msg}", filename,
                            (err.lineno or 1) + first_line - 1, (err.offset or 0) + indent) \
            from None
    except RecursionError:
        raise FrontendError(f"cannot parse the model: {_TOO_DEEP}", filename, first_line,
                            indent + 1) from None
    fdef = next((node for node in tree.body if isinstance(node, ast.FunctionDef)), None)
    if fdef is None:
        raise FrontendError(f"{function.__name__} is not a plain `def` function", filename,
                            first_line, indent + 1)
    return Translator(fdef, source, sizes, locations).translate()


def emit_source(text: str, *, filename: str = "<string>", function: Optional[str] = None,
                locations: bool = False, **sizes: int) -> str:
    """Like `emit`, for a model given as source text (a whole module).

    The module is parsed, never run. `function` names the model; without it
    the module must hold exactly one function decorated with `@model`, or
    exactly one function.
    """
    try:
        tree = ast.parse(text, filename)
    except SyntaxError as err:
        raise FrontendError(f"cannot parse the module: {err.msg}", filename,
                            err.lineno or 1, err.offset or 1) from None
    except RecursionError:
        raise FrontendError(f"cannot parse the module: {_TOO_DEEP}", filename, 1, 1) from None
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    if function is not None:
        chosen = [f for f in functions if f.name == function]
        if not chosen:
            names = ", ".join(f.name for f in functions) or "none"
            raise FrontendError(f"no function {function!r} in the module (functions: {names})",
                                filename, 1, 1)
    else:
        chosen = [f for f in functions if any(_is_model_decorator(d) for d in f.decorator_list)]
        chosen = chosen or functions
        if len(chosen) != 1:
            names = ", ".join(f.name for f in chosen) or "none"
            raise FrontendError("name the model to emit: the module holds "
                                f"{len(chosen)} candidate functions ({names})", filename, 1, 1)
    return Translator(chosen[-1], Source(filename), sizes, locations).translate()


# Python's parser recurses once per operator of `v + v + ... + v`.
_TOO_DEEP = ("an expression nests too deeply for Python's parser; split it over several "
             "statements (assign parts to variables)")


def _is_model_decorator(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id == "model") \
        or (isinstance(node, ast.Attribute) and node.attr == "model")
