"""src/ and workers/ use only the public names of the packages they import (issue 28).

A name with a leading underscore is a package's private business: it may change or vanish in any
release, so code that reaches for one cannot take a framework's security release without a rewrite.
This test reads every .py file under src/ and workers/ (an AST scan, nothing imported) and reports:

- an import of a private name or from a private module of a package that is not ours:
  `from fastapi.routing import _IncludedRouter`, `from starlette._utils import get_route_path`,
  `import x._y`;
- `getattr`, `hasattr`, `setattr` or `delattr` with a literal private name, on anything but `self`,
  `cls` or a name imported from moneyrail or workers: code that spells an attribute as a string
  reaches into something it does not own, and hides where it came from (`adapted: Any =
  pooled.dbapi_connection`, then `getattr(adapted, "_start_transaction", None)`);
- a private attribute read from something the scan can tell comes from such a package
  (`state._commit_all`), where "comes from" means, within one function (and the module's top
  level for every function in it):
  * a name imported from a package that is not moneyrail or workers (`import asyncpg`,
    `from sqlalchemy.orm import instance_state`), the standard library included;
  * a parameter, or a variable, annotated with such a name (`session: AsyncSession`,
    `owned: AsyncConnection | None`); `typing` and `collections.abc` names (`Any`, `Mapping`) do
    not count, since they say nothing about where a value comes from;
  * a variable assigned (also by `with ... as`, `for`, walrus) an expression built from one of the
    above by attribute access, calling, awaiting, subscripting (`session.sync_session.identity_map`,
    `instance_state(instance)`, `await session.connection()`);
  * `super()` in a class with a base imported from such a package, and `self` in such a class for
    an underscored attribute the class itself does not define (a hook of the framework's own).

Not seen, by design: values that cross one of our functions' returns, attributes of `self` holding
a framework object, string keys of a scope or a dict. Dunder names (`__init__`, `__name__`) are not
private, nor are a named tuple's documented `_replace`, `_asdict`, `_fields`, `_field_defaults`,
`_make`; our own underscored names (moneyrail's and workers' module-private helpers) are fine.

`ALLOWED` lists what is still there on purpose, each with its reason; the aim is an empty list.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.harness import ROOT

OUR_PACKAGES = {"moneyrail", "workers"}
# Names from these modules describe a shape (`Any`, `Mapping[str, Any]`), not where a value comes from.
TYPING_MODULES = {"typing", "typing_extensions", "collections.abc", "types", "__future__"}
ATTRIBUTE_BY_NAME = {"getattr", "hasattr", "setattr", "delattr"}
# The documented methods of the standard library's named tuples (`urlsplit(url)._replace(query=...)`):
# underscored only so as not to clash with field names.
NAMED_TUPLE_API = {"_replace", "_asdict", "_fields", "_field_defaults", "_make"}

# (file relative to the root, the private name as reported) -> why it is still there
ALLOWED: dict[tuple[str, str], str] = {}


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__") and len(name) > 4)


def is_private_attribute(name: str) -> bool:
    return is_private(name) and name not in NAMED_TUPLE_API


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    name: str  # as reported and allowed: `module._name` for an import, `value._name` for an attribute
    how: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.name} ({self.how})"


@dataclass
class ModuleImports:
    foreign: set[str] = field(default_factory=set)  # names bound to something from a package not ours
    ours: set[str] = field(default_factory=set)  # names imported from moneyrail or workers


def is_ours(module: str | None, level: int) -> bool:
    return level > 0 or (module or "").split(".")[0] in OUR_PACKAGES


def described(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{described(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return f"{described(node.func)}()"
    if isinstance(node, ast.Await):
        return described(node.value)
    if isinstance(node, ast.Subscript):
        return f"{described(node.value)}[]"
    return type(node).__name__


class Scanner:
    def __init__(self, path: str, tree: ast.Module) -> None:
        self.path = path
        self.tree = tree
        self.findings: list[Finding] = []
        self.imports = ModuleImports()

    def scan(self) -> list[Finding]:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                self._import(node)
        self._scope(self.tree.body, set(self.imports.foreign), params=[], foreign_class=None)
        return self.findings

    def _report(self, node: ast.AST, name: str, how: str) -> None:
        self.findings.append(Finding(self.path, getattr(node, "lineno", 0), name, how))

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if is_ours(alias.name, 0):
                    self.imports.ours.add(alias.asname or alias.name.split(".")[0])
                    continue
                private = [part for part in alias.name.split(".") if is_private(part)]
                if private:
                    self._report(node, alias.name, "import of a private module")
                bound = alias.asname or alias.name.split(".")[0]
                if alias.name not in TYPING_MODULES:
                    self.imports.foreign.add(bound)
            return
        if is_ours(node.module, node.level):
            self.imports.ours.update(alias.asname or alias.name for alias in node.names)
            return
        module = node.module or ""
        if any(is_private(part) for part in module.split(".")):
            self._report(node, module, "import from a private module")
        for alias in node.names:
            if is_private(alias.name):
                self._report(node, f"{module}.{alias.name}", "import of a private name")
            bound = alias.asname or alias.name
            if module not in TYPING_MODULES:
                self.imports.foreign.add(bound)

    # --- which values come from a package not ours -------------------------------------------------

    def _is_foreign(self, node: ast.expr | None, foreign: set[str]) -> bool:
        if node is None:
            return False
        if isinstance(node, ast.Name):
            return node.id in foreign
        if isinstance(node, ast.Attribute | ast.Subscript | ast.Starred):
            return self._is_foreign(node.value, foreign)
        if isinstance(node, ast.Call):
            return self._is_foreign(node.func, foreign)
        if isinstance(node, ast.Await):
            return self._is_foreign(node.value, foreign)
        if isinstance(node, ast.NamedExpr):
            return self._is_foreign(node.value, foreign)
        if isinstance(node, ast.IfExp):
            return self._is_foreign(node.body, foreign) or self._is_foreign(node.orelse, foreign)
        if isinstance(node, ast.BoolOp):
            return any(self._is_foreign(value, foreign) for value in node.values)
        return False

    def _is_ours(self, node: ast.expr) -> bool:
        """`self`, `cls`, or a name imported from moneyrail or workers (or an attribute of one)."""
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and (node.id in {"self", "cls"} or node.id in self.imports.ours)

    def _annotation_is_foreign(self, annotation: ast.expr | None) -> bool:
        """An annotation naming a class of a package not ours (`AsyncSession`, `AsyncConnection | None`,
        "InstanceState[Any]"); `Any`, `Mapping[...]` and friends alone do not count."""
        if annotation is None:
            return False
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:
                annotation = ast.parse(annotation.value, mode="eval").body
            except SyntaxError:
                return False
        for node in ast.walk(annotation):
            if isinstance(node, ast.Name) and node.id in self.imports.foreign:
                return True
            if isinstance(node, ast.Attribute) and self._is_foreign(node, self.imports.foreign):
                return True
        return False

    @staticmethod
    def _targets(target: ast.expr) -> list[str]:
        if isinstance(target, ast.Name):
            return [target.id]
        if isinstance(target, ast.Tuple | ast.List):
            return [name for element in target.elts for name in Scanner._targets(element)]
        if isinstance(target, ast.Starred):
            return Scanner._targets(target.value)
        return []

    def _local_foreign(self, body: list[ast.stmt], foreign: set[str]) -> set[str]:
        """The names of a scope bound to a foreign value anywhere in it (flow-insensitive, fixed point)."""
        statements = [node for statement in body for node in _walk_scope(statement)]
        foreign = set(foreign)
        while True:
            before = len(foreign)
            for node in statements:
                foreign.update(self._bound_to_foreign(node, foreign))
            if len(foreign) == before:
                return foreign

    def _bound_to_foreign(self, node: ast.AST, foreign: set[str]) -> list[str]:
        """The names this node binds to a foreign value (none if it binds nothing foreign)."""
        if isinstance(node, ast.Assign):
            targets = [name for target in node.targets for name in self._targets(target)]
            return targets if self._is_foreign(node.value, foreign) else []
        if isinstance(node, ast.AnnAssign):
            marked = self._annotation_is_foreign(node.annotation) or self._is_foreign(node.value, foreign)
            return self._targets(node.target) if marked else []
        if isinstance(node, ast.NamedExpr):
            return self._targets(node.target) if self._is_foreign(node.value, foreign) else []
        if isinstance(node, ast.For | ast.AsyncFor):
            return self._targets(node.target) if self._is_foreign(node.iter, foreign) else []
        if isinstance(node, ast.withitem) and node.optional_vars is not None:
            return self._targets(node.optional_vars) if self._is_foreign(node.context_expr, foreign) else []
        return []

    # --- the scan, scope by scope ------------------------------------------------------------------

    def _scope(
        self,
        body: list[ast.stmt],
        inherited: set[str],
        params: list[ast.arg],
        foreign_class: ClassInfo | None,
    ) -> None:
        foreign = set(inherited)
        for param in params:
            if self._annotation_is_foreign(param.annotation):
                foreign.add(param.arg)
            else:
                foreign.discard(param.arg)  # a parameter shadows a module-level name
        foreign = self._local_foreign(body, foreign)
        for statement in body:
            for node in _walk_scope(statement):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                    arguments = node.args
                    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
                    every += [arg for arg in (arguments.vararg, arguments.kwarg) if arg is not None]
                    inner: list[ast.stmt] = (
                        node.body if isinstance(node.body, list) else [ast.Expr(value=node.body)]
                    )
                    self._scope(inner, foreign, every, foreign_class)
                elif isinstance(node, ast.ClassDef):
                    self._scope(node.body, foreign, [], self._class_info(node))
                else:
                    self._check(node, foreign, foreign_class)

    def _class_info(self, node: ast.ClassDef) -> ClassInfo | None:
        if not any(self._is_foreign(base, self.imports.foreign) for base in node.bases):
            return None
        defined: set[str] = set()
        for inner in ast.walk(node):
            if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                defined.add(inner.name)
            elif isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
                defined.add(inner.id)
            elif (
                isinstance(inner, ast.Attribute)
                and isinstance(inner.ctx, ast.Store)
                and isinstance(inner.value, ast.Name)
                and inner.value.id == "self"
            ):
                defined.add(inner.attr)
        return ClassInfo(node.name, defined)

    def _check(self, node: ast.AST, foreign: set[str], foreign_class: ClassInfo | None) -> None:
        if isinstance(node, ast.Attribute) and is_private_attribute(node.attr):
            value = node.value
            if self._is_foreign(value, foreign):
                self._report(
                    node, f"{described(value)}.{node.attr}", "private attribute of a package's value"
                )
            elif foreign_class is not None and _is_super_call(value):
                self._report(node, f"super().{node.attr}", f"private hook of {foreign_class.name}'s base")
            elif (
                foreign_class is not None
                and isinstance(value, ast.Name)
                and value.id == "self"
                and node.attr not in foreign_class.defined
            ):
                self._report(node, f"self.{node.attr}", f"private hook of {foreign_class.name}'s base")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ATTRIBUTE_BY_NAME
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and is_private_attribute(node.args[1].value)
            and not self._is_ours(node.args[0])
        ):
            name = f"{described(node.args[0])}.{node.args[1].value}"
            self._report(node, name, f"{node.func.id} of a private name")


@dataclass(frozen=True)
class ClassInfo:
    name: str
    defined: set[str]  # every attribute the class's own code defines (its methods, `self.x = ...`)


def _is_super_call(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def _walk_scope(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes of one scope: a nested function, lambda or class is yielded, not entered."""
    yield node
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
        # its decorators, defaults and bases run in the enclosing scope
        outer: list[ast.AST] = [*getattr(node, "decorator_list", []), *getattr(node, "bases", [])]
        if not isinstance(node, ast.ClassDef):
            outer += [*node.args.defaults, *[d for d in node.args.kw_defaults if d is not None]]
        for child in outer:
            yield from _walk_scope(child)
        return
    for child in ast.iter_child_nodes(node):
        yield from _walk_scope(child)


def scan(path: Path) -> list[Finding]:
    relative = path.relative_to(ROOT).as_posix()
    return Scanner(relative, ast.parse(path.read_text(), filename=relative)).scan()


def scanned_files() -> list[Path]:
    return sorted(path for folder in ("src", "workers") for path in (ROOT / folder).rglob("*.py"))


def test_src_and_workers_use_no_private_name_of_a_package_not_ours():
    files = scanned_files()
    assert len(files) > 100
    findings = [finding for path in files for finding in scan(path)]
    print(f"\n{len(files)} files scanned; private names of packages not ours:")
    for finding in findings:
        reason = ALLOWED.get((finding.path, finding.name))
        print(f"  {finding}" + (f"\n      allowed: {reason}" if reason else ""))
    found = {(finding.path, finding.name) for finding in findings}
    refused = [finding for finding in findings if (finding.path, finding.name) not in ALLOWED]
    assert not refused, "private names of packages not ours:\n" + "\n".join(map(str, refused))
    stale = sorted(set(ALLOWED) - found)
    assert not stale, f"allowed but no longer found (remove from ALLOWED): {stale}"


def _found(source: str) -> set[str]:
    return {finding.name for finding in Scanner("example.py", ast.parse(source)).scan()}


def test_the_scan_sees_the_known_private_names():
    """The kinds of private use issue 28 lists, as small examples: each is found."""
    source = """
from typing import Any
from fastapi.routing import APIRoute, _IncludedRouter
from starlette._utils import get_route_path
import sqlalchemy._private
from sqlalchemy.ext.asyncio import AsyncSession, AsyncConnection
from sqlalchemy.orm.attributes import instance_state

def attach(session: AsyncSession, instance):
    sync_session = session.sync_session
    identity_map = sync_session.identity_map
    identity_map._add_unpresent(None, None)
    state = instance_state(instance)
    state._commit_all(state.dict, state._instance_dict())

def idle(session: "AsyncSession") -> bool:
    transaction = session.sync_session.get_transaction()
    return bool(transaction._connections)

async def end(session: AsyncSession, commit: bool) -> None:
    owned: AsyncConnection | None = session.info.get("owned")
    adapted = owned.sync_connection.connection.dbapi_connection
    if getattr(adapted, "_start_transaction", None) is not None:
        await adapted._call_and_discard(adapted._transaction.commit)

async def begin(pooled: Any) -> None:
    adapted: Any = pooled.dbapi_connection
    start = getattr(adapted, "_begin_hidden", None)

class Route(APIRoute):
    def get_route_handler(self):
        self._mine = 1
        return self._mine, self._framework_hook, super()._other_hook
"""
    assert _found(source) == {
        "fastapi.routing._IncludedRouter",
        "starlette._utils",
        "sqlalchemy._private",
        "identity_map._add_unpresent",
        "state._commit_all",
        "state._instance_dict",
        "transaction._connections",
        "adapted._start_transaction",
        "adapted._call_and_discard",
        "adapted._transaction",
        "self._framework_hook",
        "super()._other_hook",
        "adapted._begin_hidden",
    }


def test_the_scan_leaves_our_own_private_names_and_dunders_alone():
    source = """
from moneyrail.db.raw import _helper
from . import _sibling
import moneyrail._private
from typing import Any
from dataclasses import dataclass

class Unit:
    def __init__(self, work: Any) -> None:
        self._work = work
        self._work._state = 1  # `Any` says nothing of where it came from

    def run(self):
        return self._work, type(self).__name__, dataclass.__doc__

def use(unit: Unit, value: Any):
    return unit._work, value._anything, _helper._x, getattr(_helper, "_y"), getattr(self, "_z", None)

def address(url: str) -> str:
    from urllib.parse import urlsplit, urlunsplit
    return urlunsplit(urlsplit(url)._replace(query=""))
"""
    assert _found(source) == set()
