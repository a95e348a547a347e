"""Imports point one way: cli -> app -> services -> core/adapters -> records/errors/settings.

Checked on the source with `ast`, so a wrong import fails here before it tangles the layers.
"""

from __future__ import annotations

import ast
import functools
import re
import tokenize
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "daemon" / "askvault"


def nodes_of(path: Path) -> tuple[ast.AST, ...]:
    """Every node of `path`'s syntax tree, in `ast.walk`'s order (the module first). A file
    of the package is parsed once per process, for every check: they only read the trees,
    and a parse of the package costs about a second (three under load) that each check
    paid again. A test's own module (a check's check) is parsed each time."""
    if path.is_relative_to(PACKAGE):
        return _package_nodes(path)
    return tuple(ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


@functools.cache
def _package_nodes(path: Path) -> tuple[ast.AST, ...]:
    return tuple(ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


# What each layer may import from askvault (besides itself).
ALLOWED: dict[str, set[str]] = {
    "base": set(),
    "core": {"base"},
    "adapters": {"base", "core"},
    "services": {"base", "core", "adapters"},
    "app": {"base", "core", "adapters", "services"},
    "cli": {"base", "core", "adapters", "services", "app"},
}
BASE_MODULES = {"records", "errors", "settings", "__init__"}


def layer_of(module: str) -> str:
    """`askvault.core.links` -> core; records, errors, settings -> base."""
    parts = module.split(".")
    if len(parts) < 2 or parts[1] in BASE_MODULES:
        return "base"
    return parts[1] if parts[1] in ALLOWED else "base"


def imports_of(path: Path) -> list[str]:
    found = []
    for node in nodes_of(path):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
    return [m for m in found if m == "askvault" or m.startswith("askvault.")]


def test_imports_point_one_way() -> None:
    violations = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        module = ".".join(rel.parts)
        if module == "askvault.__main__":
            continue
        layer = layer_of(module)
        for target in imports_of(path):
            target_layer = layer_of(target)
            if target_layer != layer and target_layer not in ALLOWED[layer]:
                violations.append(f"{module} ({layer}) imports {target} ({target_layer})")
    assert violations == []


def test_core_touches_no_outside_system() -> None:
    forbidden = {
        "sqlean",
        "sqlite3",
        "sqlite_vec",
        "ollama",
        "httpx",
        "socket",
        "watchdog",
        "subprocess",
        "time",
        "os",
    }
    violations = []
    for path in sorted((PACKAGE / "core").rglob("*.py")):
        for node in nodes_of(path):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module.split(".")[0]]
            violations += [f"{path.name} imports {n}" for n in names if n in forbidden]
    assert violations == []


def test_nothing_imports_the_cli() -> None:
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if "cli" not in path.relative_to(PACKAGE).parts
        and path.name != "__main__.py"
        and any(m.startswith("askvault.cli") for m in imports_of(path))
    ]
    assert offenders == []


# SQL keywords as statements begin with them, upper case as every query here is written, so
# that prose ("select a note", "update the index") is not taken for SQL.
SQL_STATEMENT = re.compile(
    r"\b(SELECT\b.+\bFROM|INSERT (OR \w+ )?INTO|UPDATE \w+ SET|DELETE FROM|REPLACE INTO"
    r"|(CREATE|DROP|ALTER) (TABLE|INDEX|VIEW|TRIGGER|VIRTUAL TABLE)|PRAGMA \w+|BEGIN IMMEDIATE"
    r"|VACUUM\b)",
    re.DOTALL,
)
SQL_METHODS = {"execute", "executemany", "executescript"}
# Modules outside adapters/ that may run SQL, each with why: none.
SQL_ALLOWED_OUTSIDE_ADAPTERS: set[str] = set()


def sql_in(path: Path) -> list[str]:
    """Where a module runs SQL: a call of `.execute(` and kin, or a string literal (an
    f-string's literal parts included) that reads as an SQL statement; docstrings aside."""
    nodes = nodes_of(path)
    docstrings = {
        id(node.body[0].value)
        for node in nodes
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in nodes:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in SQL_METHODS
        ):
            found.append(f"line {node.lineno}: .{node.func.attr}(")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and SQL_STATEMENT.search(node.value)
        ):
            found.append(f"line {node.lineno}: {node.value[:60]!r}")
    return found


def test_only_adapters_run_sql() -> None:
    violations = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("adapters/") or rel in SQL_ALLOWED_OUTSIDE_ADAPTERS:
            continue
        violations += [f"{rel} {where}" for where in sql_in(path)]
    assert violations == [], "SQL belongs in a named function of an adapter (adapters/)"


def test_the_sql_check_sees_queries_and_not_prose(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        '"""SELECT x FROM y in a docstring is documentation."""\n'
        'HINT = "select a note, then update the index"\n'
        "def f(conn, t):\n"
        '    conn.execute(f"DELETE FROM {t} WHERE id = ?", (1,))\n'
        'Q = "SELECT path\\n FROM notes"\n',
        encoding="utf-8",
    )
    assert sorted(w.split(":")[0] for w in sql_in(module)) == ["line 4", "line 4", "line 5"]


def test_only_the_meta_adapter_reads_the_meta_table() -> None:
    table = re.compile(r"\b(FROM|INTO|UPDATE) meta\b")
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).as_posix() != "adapters/meta.py"
        and table.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], "name the key in adapters/meta.py and use its accessors"


COMPOSITION_ROOT = "askvault.app.clients"
CLIENT_MODULE = "askvault.adapters.ollama"
# The embedder over the standard library (the search's query embedder, issue 22) is a
# client like the others: built by the composition root only, defined beside its transport.
HTTP_CLIENT_MODULE = "askvault.adapters.ollama_embed"
CLIENT_CLASSES = {"OllamaEmbedder", "OllamaGenerator", "HttpEmbedder", "ModelEmbedder"}


def test_only_the_composition_root_builds_ollama_clients() -> None:
    """Services receive their clients as Protocols (records.ModelClients, Embedder,
    Generator); one module, app/clients.py, imports the client modules and builds them
    (the official client's, adapters/ollama.py, and the standard library's embedder,
    adapters/ollama_embed.py, which the client module builds on)."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if module in (COMPOSITION_ROOT, CLIENT_MODULE, HTTP_CLIENT_MODULE):
            continue
        nodes = nodes_of(path)
        names = {n.id for n in nodes if isinstance(n, ast.Name)}
        names |= {n.attr for n in nodes if isinstance(n, ast.Attribute)}
        from_adapters = [
            a.name
            for n in nodes
            if isinstance(n, ast.ImportFrom) and n.module == "askvault.adapters"
            for a in n.names
        ]
        imported = set(imports_of(path)) | {f"askvault.adapters.{a}" for a in from_adapters}
        if imported & {CLIENT_MODULE, HTTP_CLIENT_MODULE} or names & CLIENT_CLASSES:
            offenders.append(module)
    assert offenders == []


def _doubles(node: ast.AST) -> bool:
    """`x * 2`, `2 * x` or `2 ** n`: the step of a doubling delay."""
    if not isinstance(node, ast.BinOp):
        return False
    two = [
        side
        for side in (node.left, node.right)
        if isinstance(side, ast.Constant) and side.value == 2
    ]
    return bool(two) and (
        isinstance(node.op, ast.Mult) or (isinstance(node.op, ast.Pow) and node.left in two)
    )


def test_core_backoff_is_the_one_backoff_formula() -> None:
    """Every retry delay (daemon, embedding, connections, the inbox) comes from
    core/backoff.Backoff: no other module caps a doubling delay or defines its bounds."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).as_posix() == "core/backoff.py":
            continue
        for node in nodes_of(path):
            capped = (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "min"
                and any(_doubles(n) for arg in node.args for n in ast.walk(arg))
            )
            bounds = isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id.startswith("BACKOFF_") for t in node.targets
            )
            if capped or bounds:
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert offenders == []


# The signals a reply's publication rests on: asked only by the one decision.
DECISION_SIGNALS = {"is_no_answer", "too_far"}


def test_only_core_decision_decides_whether_a_reply_is_published() -> None:
    """Every reason a reply is or is not published lives in core/decision.decide: no other
    module of the package asks whether a reply refuses or the question is too far to
    choose a status (core/abstention defines them)."""
    owners = {"core/decision.py", "core/abstention.py"}
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).as_posix() in owners:
            continue
        for node in nodes_of(path):
            name = (
                node.id
                if isinstance(node, ast.Name)
                else node.attr
                if isinstance(node, ast.Attribute)
                else None
            )
            if name in DECISION_SIGNALS:
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {name}")
    assert offenders == []


SCHEMA_GENERATOR = "core/schema.py"
SCHEMA_TYPES = {"object", "array", "string", "integer", "number", "boolean", "null"}
SCHEMA_KEYWORDS = {"properties", "additionalProperties", "required", "items", "minLength"}


def hand_written_schemas(path: Path) -> list[str]:
    """Dict literals that read as JSON Schema: a `type` naming a JSON type (or a list of
    them), or a schema keyword (`properties`, `items`, ...) beside a `type`."""
    found = []
    for node in nodes_of(path):
        if not isinstance(node, ast.Dict):
            continue
        keys = {
            k.value: v
            for k, v in zip(node.keys, node.values, strict=True)
            if isinstance(k, ast.Constant)
        }
        kind = keys.get("type")
        names = (
            [kind.value]
            if isinstance(kind, ast.Constant)
            else [e.value for e in kind.elts if isinstance(e, ast.Constant)]
            if isinstance(kind, ast.List)
            else []
        )
        if (names and set(names) <= SCHEMA_TYPES) or (
            kind is not None and SCHEMA_KEYWORDS & set(keys)
        ):
            found.append(f"line {node.lineno}")
    return found


def test_no_json_schema_is_written_by_hand() -> None:
    """Every schema an agent sees (the MCP tools' inputs and results) is derived from the
    typed document it describes by core/schema.py, so it cannot drift from what is sent."""
    offenders = [
        f"{path.relative_to(PACKAGE)} {where}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).as_posix() != SCHEMA_GENERATOR
        for where in hand_written_schemas(path)
    ]
    assert offenders == [], "declare a @document class and derive its schema (core/schema.py)"


def test_the_schema_check_sees_a_schema_and_not_other_dicts(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        'A = {"type": "object", "properties": {}}\n'
        'B = {"type": ["string", "null"]}\n'
        'C = {"type": "text", "text": "hello"}\n'
        'D = {"role": "user", "content": "x"}\n'
        'E = {"type": kind, "items": []}\n',
        encoding="utf-8",
    )
    assert hand_written_schemas(module) == ["line 1", "line 2", "line 5"]


def _services_bases(path: Path, module: str) -> list[str]:
    """`Class(Base)` in `path` where Base is a class of another module of services/ (by
    name or through its module): an inheritance chain spread over files."""
    names: dict[str, str] = {}  # a class name bound by an import -> its services module
    modules: set[str] = set()  # names bound to a services module
    nodes = nodes_of(path)
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "askvault.services":
                modules |= {alias.asname or alias.name for alias in node.names}
            elif node.module.startswith("askvault.services."):
                names |= {alias.asname or alias.name: node.module for alias in node.names}
        elif isinstance(node, ast.Import):
            modules |= {
                alias.asname
                for alias in node.names
                if alias.asname and alias.name.startswith("askvault.services.")
            }
    found = []
    for node in nodes:
        if not isinstance(node, ast.ClassDef):
            continue
        for base in node.bases:
            written = ast.unparse(base)
            if isinstance(base, ast.Name) and names.get(base.id, module) != module:
                found.append(f"{node.name}({written}) from {names[base.id]}")
            elif isinstance(base, ast.Attribute) and (
                written.startswith("askvault.services.") or written.split(".")[0] in modules
            ):
                found.append(f"{node.name}({written})")
    return found


def test_no_class_of_services_inherits_from_a_class_of_another_module() -> None:
    """STYLE rule 16: an object of several jobs holds its parts by name (the inbox has
    `files`, `upkeep`, `schedule`...) and calls their public methods; no base-class chain
    spread over the files of services/."""
    offenders = []
    for path in sorted((PACKAGE / "services").rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        offenders += [f"{module}: {found}" for found in _services_bases(path, module)]
    assert offenders == []


def test_the_inheritance_check_sees_a_base_class_from_another_module(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import askvault.services.index.indexer\n"
        "from askvault.services import status\n"
        "from askvault.services.inbox.files import AnswerFiles\n"
        "import askvault.services.inbox.upkeep as upkeep\n"
        "from askvault.errors import AskvaultError\n"
        "class Local:\n    pass\n"
        "class A(AnswerFiles):\n    pass\n"
        "class B(upkeep.AnswerUpkeep):\n    pass\n"
        "class C(Local, AskvaultError):\n    pass\n"
        "class D(status.Status, askvault.services.index.indexer.Indexer):\n    pass\n",
        encoding="utf-8",
    )
    found = _services_bases(module, "askvault.services.m")
    assert found == [
        "A(AnswerFiles) from askvault.services.inbox.files",
        "B(upkeep.AnswerUpkeep)",
        "D(status.Status)",
        "D(askvault.services.index.indexer.Indexer)",
    ]


def _private_calls(path: Path) -> list[str]:
    """Calls of another object's private method (`x._name(...)` where x is not `self` or
    `cls`): a private method called from outside its class."""
    found = []
    for node in nodes_of(path):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        name, owner = node.func.attr, node.func.value
        if not name.startswith("_") or name.startswith("__"):
            continue
        if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
            continue
        found.append(f"line {node.lineno}: .{name}(")
    return found


def test_the_inbox_calls_no_private_method_of_another_object() -> None:
    """The inbox's parts talk through their public methods only (STYLE rule 16)."""
    offenders = []
    for path in sorted((PACKAGE / "services" / "inbox").rglob("*.py")):
        offenders += [f"{path.name} {where}" for where in _private_calls(path)]
    assert offenders == []


def test_the_private_call_check_sees_a_call_through_a_part(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "class A:\n"
        "    def f(self, other):\n"
        "        self._mine()\n"
        "        self.files._own_answer()\n"
        "        other._peek()\n"
        "        super().__init__()\n",
        encoding="utf-8",
    )
    assert _private_calls(module) == ["line 4: ._own_answer(", "line 5: ._peek("]


# Modules outside app/ that start a thread, each with why. An adapter may run the threads
# of the outside system it owns; services and core never start one.
THREADS_OUTSIDE_APP = {
    "adapters/watcher.py": "watchdog's observer and the debounce thread that flushes it",
    "adapters/mcp_server.py": "the MCP SDK runs each tool call in a worker thread",
    "adapters/parse_pool.py": "each parsing pool worker process watches for its parent's death",
}
THREAD_STARTERS = {"Thread", "Timer", "ThreadPoolExecutor", "start_new_thread", "to_thread"}


def threads_started_in(path: Path) -> list[str]:
    """Where a module starts a thread: `Thread(`, `Timer(`, `ThreadPoolExecutor(`,
    `_thread.start_new_thread(`, `anyio.to_thread`, by name or as an attribute."""
    found: list[tuple[int, str]] = []
    for node in nodes_of(path):
        name = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
        elif isinstance(node, ast.Attribute):
            name = node.attr
        if name in THREAD_STARTERS:
            found.append((node.lineno, name))
    return [f"line {line}: {name}" for line, name in sorted(found)]


def test_threads_are_started_only_in_app() -> None:
    """The daemon's threads live in app/ (STYLE rule 14): services are driven by them, so
    that a service runs in a test without a thread (the inbox: `tick()` and `process()`
    under a clock moved by hand)."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("app/") or rel in THREADS_OUTSIDE_APP:
            continue
        offenders += [f"{rel} {where}" for where in threads_started_in(path)]
    assert offenders == [], "start the thread in app/ and hand the service its work"
    stale = [rel for rel in THREADS_OUTSIDE_APP if not threads_started_in(PACKAGE / rel)]
    assert stale == [], "an exception that starts no thread any more: remove it"


def test_the_thread_check_sees_every_way_to_start_one(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import threading, anyio\n"
        "from threading import Thread\n"
        "from concurrent.futures import ThreadPoolExecutor\n"
        "threading.Thread(target=print).start()\n"
        "Thread(target=print)\n"
        "threading.Timer(1, print)\n"
        "ThreadPoolExecutor(2)\n"
        "anyio.to_thread.run_sync(print)\n"
        "threading.Event().wait(1)\n",
        encoding="utf-8",
    )
    assert [w.split(": ")[1] for w in threads_started_in(module)] == [
        "Thread",
        "Thread",
        "Timer",
        "ThreadPoolExecutor",
        "to_thread",
    ]


# The rooms of services/, in the order their imports point: a room imports only the rooms
# before it (docs/architecture.md, "Rooms of services/").
ROOMS = ("index", "retrieval", "answer", "inbox", "documents", "admin", "agent")


def loose_modules(services: Path) -> list[str]:
    """What sits in `services` outside a room: a module beside `__init__.py`, or a folder
    that is not one of ROOMS."""
    return sorted(
        entry.name
        for entry in services.iterdir()
        if entry.name not in ("__init__.py", "__pycache__")
        and not (entry.is_dir() and entry.name in ROOMS)
        and (entry.suffix == ".py" or entry.is_dir())
    )


def test_every_module_of_services_is_in_a_room() -> None:
    assert loose_modules(PACKAGE / "services") == [], "place the module in a room (ROOMS)"


def test_the_room_check_sees_a_loose_module_and_an_unknown_room(tmp_path: Path) -> None:
    services = tmp_path / "services"
    for room in ("index", "answer"):
        (services / room).mkdir(parents=True)
        (services / room / "__init__.py").write_text("", encoding="utf-8")
    (services / "__init__.py").write_text("", encoding="utf-8")
    (services / "helpers.py").write_text("", encoding="utf-8")
    (services / "misc").mkdir()
    (services / "notes.txt").write_text("", encoding="utf-8")
    assert loose_modules(services) == ["helpers.py", "misc"]


def room_of(module: str) -> str | None:
    """`askvault.services.inbox.files` -> inbox; None outside services/ (or for the
    package itself)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["askvault", "services"] else None


def imported_rooms(path: Path) -> set[str]:
    """The rooms `path` imports from: `askvault.services.<room>...`, and the rooms named
    by `from askvault.services import <room>`."""
    found = {room_of(m) for m in imports_of(path)}
    for node in nodes_of(path):
        if isinstance(node, ast.ImportFrom) and node.module == "askvault.services":
            found |= {alias.name for alias in node.names}
    return {room for room in found if room is not None}


def room_violations(services: Path) -> list[str]:
    """Imports from a room to a room at or after it in ROOMS (a room beyond ROOMS counts
    as the last)."""
    order = {room: i for i, room in enumerate(ROOMS)}
    found = []
    for path in sorted(services.rglob("*.py")):
        parts = path.relative_to(services).parts
        if len(parts) < 2:
            continue
        room = parts[0]
        for target in sorted(imported_rooms(path) - {room}):
            if order.get(target, len(ROOMS)) >= order.get(room, len(ROOMS)):
                found.append(f"{'/'.join(parts)} ({room}) imports {target}")
    return found


def test_rooms_import_only_the_rooms_before_them() -> None:
    assert room_violations(PACKAGE / "services") == []


def test_the_room_order_check_sees_an_import_back(tmp_path: Path) -> None:
    services = tmp_path / "services"
    for room in ("index", "answer", "inbox"):
        (services / room).mkdir(parents=True)
    (services / "index" / "a.py").write_text(
        "from askvault.services.answer.pipeline import answer_question\n", encoding="utf-8"
    )
    (services / "answer" / "b.py").write_text(
        "from askvault.services.index import calibration\n"
        "from askvault.services import inbox\n"
        "import askvault.services.answer.result\n",
        encoding="utf-8",
    )
    (services / "inbox" / "c.py").write_text(
        "from askvault.services.answer import answer_question\n", encoding="utf-8"
    )
    assert room_violations(services) == [
        "answer/b.py (answer) imports inbox",
        "index/a.py (index) imports answer",
    ]


def _runtime_imports(path: Path, modules: set[str]) -> set[str]:
    """The package's modules `path` imports when it runs, inside functions too (a lazy
    import closes a circle as well), but not under `if TYPE_CHECKING:` (a type alone)."""
    nodes = nodes_of(path)
    typing_only: set[int] = set()
    for node in nodes:
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            typing_only |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    found = set()
    for node in nodes:
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if full in modules else node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found & modules


def import_cycles(package: Path) -> list[list[str]]:
    """The circles of imports among the modules of `package` (each a sorted list of
    modules that reach each other), found by Tarjan's strongly connected components."""
    paths = {}
    for path in package.rglob("*.py"):
        name = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        paths[name.removesuffix(".__init__")] = path
    graph = {m: _runtime_imports(p, set(paths)) - {m} for m, p in paths.items()}
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for target in sorted(graph[module]):
            if target not in order:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], order[target])
        if low[module] == order[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return sorted(cycles)


def test_no_module_imports_one_that_imports_it_back() -> None:
    """No circle of imports, lazy ones included: the CLI's command modules once imported
    the group from cli/main, which imported them to register them."""
    assert import_cycles(PACKAGE) == []


def test_the_cycle_check_sees_a_lazy_circle_and_not_a_typing_one(tmp_path: Path) -> None:
    package = tmp_path / "askvault"
    (package / "cli").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "cli" / "__init__.py").write_text("", encoding="utf-8")
    (package / "cli" / "main.py").write_text(
        "def _register():\n    from askvault.cli import status_cmd\n", encoding="utf-8"
    )
    (package / "cli" / "status_cmd.py").write_text(
        "from askvault.cli.main import cli\n", encoding="utf-8"
    )
    (package / "db.py").write_text("import askvault.migrations\n", encoding="utf-8")
    (package / "migrations.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from askvault.db import C\n",
        encoding="utf-8",
    )
    assert import_cycles(package) == [["askvault.cli.main", "askvault.cli.status_cmd"]]


ISSUE_NUMBER = re.compile(r"\b[Ii]ssues? \d+")
QUOTED = re.compile(r'"[^"]*"')  # a heading cited by its words, which may hold a number


def comments_citing_an_issue(path: Path) -> list[str]:
    """The `#` comments of `path` that give an issue number as their reason: the reason is
    in the docs, and a comment names the heading that holds it (docs/decisions.md, "...")."""
    with path.open("rb") as source:
        comments = [t for t in tokenize.tokenize(source.readline) if t.type == tokenize.COMMENT]
    blocks: list[tuple[int, int, str]] = []  # (first line, last line, text): lines in a row
    for token in comments:
        line, text = token.start[0], token.string.lstrip("#").strip()
        if blocks and blocks[-1][1] == line - 1:
            blocks[-1] = (blocks[-1][0], line, f"{blocks[-1][2]} {text}")
        else:
            blocks.append((line, line, text))
    return [
        f"line {first}" for first, _, text in blocks if ISSUE_NUMBER.search(QUOTED.sub("", text))
    ]


def test_no_code_comment_cites_an_issue_number() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE)} {where}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for where in comments_citing_an_issue(path)
    ]
    assert offenders == [], 'cite the heading instead: (docs/decisions.md, "...")'


def test_the_issue_comment_check_reads_comments_only(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        '"""Built for issue 12: a docstring may tell the history."""\n'
        "X = 1  # the cache (issue 11)\n"
        'Y = "issue 3 in a string"\n'
        "# Issues 14 and 15: two of them\n"
        '# the reason (docs/decisions.md, "Lean and instant")\n'
        "\n"
        '# a heading over two lines (docs/reliability.md, "What was\n'
        '# fixed (issue 15)", F)\n',
        encoding="utf-8",
    )
    assert comments_citing_an_issue(module) == ["line 2", "line 4"]
