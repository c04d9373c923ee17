"""The code generator that meters a template: its parsed tree rewritten before compiling.

Every template the sandbox compiles goes through `MeteredCodeGenerator`, which rewrites the
parsed tree before any code is generated (whatever compiles it: `render`,
`compile_expression`):

- each `for` body starts by counting one step, and a loop's `if` filter counts one per item
  tested: nested and recursive loops count every iteration, as they run the same body;
- every `{{ }}` and every piece of text goes through `emit`, which counts the characters
  written, captured ones (`set` blocks, macro bodies) included;
- list, tuple and dict literals and `~` are checked against the `value` limit *before* they
  are built (a `~` of a thousand megabyte strings is refused, not allocated).

The rewritten tree calls this module's helpers by their import path; the environment runs
them directly (`HELPERS`), uncounted as calls, since each counts itself.
"""

from __future__ import annotations

from typing import Any

from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.visitor import NodeTransformer

from blitz.workflows._meter import CHARS_PER_STEP, current

__all__ = ["HELPERS", "MeteredCodeGenerator", "built", "concat", "emit", "tick"]

# Helpers the rewritten tree calls (`nodes.ImportedName`); `environment.call` runs them
# directly. `_loop_vars` and `_block_vars` are what Jinja2 adds to calls in loops and blocks.


def tick(**_: Any) -> bool:
    """One step (a loop iteration, a loop filter's test)."""
    current().charge()
    return True


def emit(value: Any, **_: Any) -> str:
    """Output: counted, and written as Jinja2 writes it."""
    budget = current()
    if isinstance(value, str):
        return budget.write(value)
    budget.size(value)  # a container within `value`: its text is within a few times that
    return budget.write(str(value))


def built(value: Any, **_: Any) -> Any:
    """A list, tuple or dict literal, measured."""
    current().size(value)
    return value


def concat(*parts: Any, **_: Any) -> str:
    """`a ~ b ~ …`, refused before the join when it would be too large."""
    budget = current()
    texts, total = [], 0
    for part in parts:
        if not isinstance(part, str):
            budget.size(part)
            part = str(part)
        total += len(part)
        budget.check(total, "the template joins a string too large (`~`)")
        texts.append(part)
    budget.charge(1 + total // CHARS_PER_STEP)
    return "".join(texts)


HELPERS = frozenset({tick, emit, built, concat})


def _helper(name: str, *args: nodes.Expr, lineno: int) -> nodes.Call:
    call = nodes.Call(nodes.ImportedName(f"{__name__}.{name}"), list(args), [], None, None)
    call.set_lineno(lineno)  # on the new nodes only: the arguments keep their own
    return call


class _Metering(NodeTransformer):
    """The rewriting of the module doc."""

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.body.insert(0, nodes.ExprStmt(_helper("tick", lineno=node.lineno)))
        if node.test is not None:
            node.test = nodes.And(_helper("tick", lineno=node.lineno), node.test)
        return node

    def visit_Output(self, node: nodes.Output) -> nodes.Node:
        self.generic_visit(node)
        node.nodes = [
            _helper(
                "emit",
                nodes.Const(child.data) if isinstance(child, nodes.TemplateData) else child,
                lineno=child.lineno or node.lineno,
            )
            for child in node.nodes
        ]
        return node

    def _built(self, node: nodes.Expr) -> nodes.Node:
        self.generic_visit(node)
        return _helper("built", node, lineno=node.lineno)

    visit_List = visit_Dict = _built

    def visit_Tuple(self, node: nodes.Tuple) -> nodes.Node:
        if node.ctx != "load":
            return self.generic_visit(node)  # type: ignore[no-any-return]
        return self._built(node)

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        return _helper("concat", *node.nodes, lineno=node.lineno)


class MeteredCodeGenerator(CodeGenerator):
    def visit_Template(self, node: nodes.Template, frame: Frame | None = None) -> None:
        _Metering().visit(node)
        node.set_environment(self.environment)
        super().visit_Template(node, frame)
