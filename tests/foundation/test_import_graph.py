"""The project's module graph: no import circles, and inside the evaluator no import that runs back up its layers.

Every `import` and `from ... import` of the project's packages counts, those inside functions and `try` blocks
included (a lazy import is still a dependency; it only hides the circle until run time). `from pkg import name`
counts as an import of the module `pkg.name` when that is a module, else of `pkg`. Importing `a.b.c` is an edge to
`a.b.c` only: the parents' `__init__` files run too, but they are packages' doors, not dependencies.

1. No circles: every strongly connected component of the graph is one module.
2. The apps depend one way (tests/foundation/test_app_layers.py): catalogue <- evaluator <- leaderboard <- inspector,
   and `config` (settings, URLs, the Celery app, the project's signal wiring) sits above them all: no app imports it.
3. In every app, selectors read and services write: a selector imports no service and no task, and reaches no
   template tag library, however indirectly (what a page and a selector share, a tag imports from below it).
4. Inside the evaluator, a module imports only its own layer or those below (EVALUATOR_LAYERS, bottom to top):

   - harness: the evaluation itself, run in subprocesses; imports nothing else of the evaluator (its own folders'
     rules are in tests/harness/test_import_boundary.py);
   - values, host, orphans, hardware, results_version, webhook_addresses, verdict_label, service_user: plain
     helpers (finite JSON values, the host's driver, processes left behind, hardware labels, the cache counter that
     boards key on, which addresses a webhook may call, the one-line verdict of an evaluation, the app's processes
     dropping root before the app is imported);
   - audit, runner: the static audit's rules and the LLM judges (no models); the runner that starts the harness;
   - models;
   - selectors, dataset, enqueue, record_projection: reads, the published dataset, sending a task by its name, and the
     projection of a result record onto the models;
   - services: writes; they send tasks through evaluator.enqueue, never by importing evaluator.tasks;
   - tasks: Celery adapters over the services;
   - api, views_*, admin, admin_actions, urls, management, apps: the doors.

   A new top-level module or folder of the evaluator must be given a layer here.
5. The Django side (every package here but the harness itself) imports from the harness only its shared door
   (HARNESS_DOOR: the record, the spec and options, the seeds), and the few modules that drive the harness import
   the one part of it each needs (HARNESS_EXCEPTIONS, exactly). Pages import no orchestrator/, workers/ or sandbox/
   module: code of the privileged process or of the torch processes is no page's business.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ["catalogue", "evaluator", "leaderboard", "inspector", "config", "client"]
APPS = ["catalogue", "evaluator", "leaderboard", "inspector"]  # bottom to top; config above them all
SKIPPED = ("migrations", "leaderboard/demo/problems")  # migrations are generated; the demo problems are data

EVALUATOR_LAYERS: list[set[str]] = [  # bottom to top: the first part of the module name below `evaluator.`
    {"harness"},
    {"values", "host", "orphans", "hardware", "results_version", "webhook_addresses", "verdict_label", "service_user"},
    {"audit", "runner"},
    {"models"},
    {"selectors", "dataset", "enqueue", "record_projection"},
    {"services"},
    {"tasks"},
    {"api", "views_profiles", "views_review", "admin", "admin_actions", "urls", "management", "apps"},
]

Graph = dict[str, dict[str, int]]  # module -> {imported module: line of the first such import}


def _modules(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root)
            if any(skip in relative.as_posix() for skip in SKIPPED):
                continue
            parts = list(relative.with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imported_names(module: str, path: Path) -> Iterable[tuple[int, str]]:
    """(line, absolute dotted name) of every import in the file, relative ones resolved, function bodies included."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            yield node.lineno, source
            for alias in node.names:
                yield node.lineno, f"{source}.{alias.name}"


def build_graph(root: Path, packages: Iterable[str]) -> Graph:
    modules = _modules(root, packages)

    def owner(name: str) -> str | None:  # the longest project module that `name` is or lies in
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: Graph = {}
    for module, path in modules.items():
        edges = graph.setdefault(module, {})
        for line, name in _imported_names(module, path):
            target = owner(name)
            if target is not None and target != module:
                edges.setdefault(target, line)
    return graph


def circles(graph: Graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph.get(child, {}))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def _evaluator_layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "evaluator":
        return None
    if len(parts) == 1:
        return 0  # the package's door (empty)
    for rank, layer in enumerate(EVALUATOR_LAYERS):
        if parts[1] in layer:
            return rank
    raise AssertionError(f"{module}: no layer for evaluator.{parts[1]} (add it to EVALUATOR_LAYERS)")


def upward_in_evaluator(graph: Graph) -> list[str]:
    bad = []
    for module, edges in sorted(graph.items()):
        rank = _evaluator_layer(module)
        if rank is None:
            continue
        for target, line in sorted(edges.items()):
            target_rank = _evaluator_layer(target)
            if target_rank is not None and target_rank > rank:
                bad.append(f"{module}:{line} imports {target} (a higher layer)")
    return bad


def _is_part(module: str, folder: str) -> bool:
    return folder in module.split(".")[1:]


def selectors_importing_writers(graph: Graph) -> list[str]:
    return [
        f"{module}:{line} imports {target}"
        for module, edges in sorted(graph.items())
        if _is_part(module, "selectors")
        for target, line in sorted(edges.items())
        if _is_part(target, "services") or _is_part(target, "tasks")
    ]


def selectors_reaching_template_tags(graph: Graph) -> list[str]:
    """Selectors whose imports lead, directly or not, to a templatetags module (with the first one on the way)."""
    bad = []
    for module in sorted(graph):
        if not _is_part(module, "selectors"):
            continue
        seen, todo = {module}, [(module, "")]
        while todo:
            current, via = todo.pop()
            for target in sorted(graph.get(current, {})):
                if target in seen:
                    continue
                seen.add(target)
                if _is_part(target, "templatetags"):
                    bad.append(f"{module} reaches {target}{f' through {via}' if via else ''}")
                todo.append((target, via or target))
    return bad


def apps_importing_config(graph: Graph) -> list[str]:
    return [
        f"{module}:{line} imports {target}"
        for module, edges in sorted(graph.items())
        if module.split(".")[0] in APPS
        for target, line in sorted(edges.items())
        if target.split(".")[0] == "config"
    ]


# What Django-side code may import from the harness (rule 5): the shared door, for any module...
HARNESS_DOOR = {
    "evaluator.harness",  # the package itself (`from evaluator.harness import seeds`)
    "evaluator.harness.record",  # the result record's one definition; its parts are re-exported there
    "evaluator.harness.protocol",  # the spec, options and tolerances the site passes to and reads from the harness
    "evaluator.harness.seeds",  # seeds: commit before the run, reveal after
}
# ... and, for these modules only, exactly these parts of it.
HARNESS_EXCEPTIONS = {
    "evaluator.runner": {  # asks the launcher to start the harness inside its sandbox
        "evaluator.harness.sandbox.disk",
        "evaluator.harness.sandbox.launching",
        "evaluator.harness.sandbox.namespaces",
    },
    # the app's processes dropping root: the launcher's zygote started first, the app's folders handed over by
    # descriptors in bounded walks
    "evaluator.service_user": {
        "evaluator.harness.sandbox.beneath",
        "evaluator.harness.sandbox.launching",
        "evaluator.harness.sandbox.privileges",
        "evaluator.harness.sandbox.trees",
    },
    "evaluator.orphans": {"evaluator.harness.sandbox.beneath"},  # a dead worker's work folder read by descriptor
    "evaluator.services.work": {"evaluator.harness.workers.flops"},  # counts a trusted problem file on the meta device
    "evaluator.services.reproduction": {  # compares a re-run's record with the stored one
        "evaluator.harness.orchestrator",
        "evaluator.harness.orchestrator.reproduce",
    },
    "evaluator.management.commands.reproduce": {"evaluator.harness.orchestrator.reproduce"},
}


def harness_imports_beyond_the_door(graph: Graph) -> dict[str, set[str]]:
    """{Django-side module: the harness modules it imports that are not HARNESS_DOOR}."""
    found: dict[str, set[str]] = {}
    for module, edges in graph.items():
        if module == "evaluator.harness" or module.startswith("evaluator.harness."):
            continue
        beyond = {t for t in edges if t.split(".")[:2] == ["evaluator", "harness"] and t not in HARNESS_DOOR}
        if beyond:
            found[module] = beyond
    return found


# --- The project -------------------------------------------------------------------------------------------------


def _project() -> Graph:
    return build_graph(ROOT, PACKAGES)


def test_the_graph_reads_the_whole_project():
    graph = _project()
    assert {module.split(".")[0] for module in graph} == set(PACKAGES)
    assert len(graph) > 200
    # Lazy imports count: evaluate_kernel imports the services inside its body.
    assert "evaluator.services.evaluations" in graph["evaluator.tasks.evaluation"]


def test_no_import_circles():
    assert circles(_project()) == []


def test_no_evaluator_module_imports_a_layer_above_its_own():
    assert upward_in_evaluator(_project()) == []


def test_selectors_import_no_services_or_tasks():
    assert selectors_importing_writers(_project()) == []


def test_selectors_reach_no_template_tag_library():
    assert selectors_reaching_template_tags(_project()) == []


def test_no_app_imports_config():
    assert apps_importing_config(_project()) == []


def test_django_side_code_imports_from_the_harness_only_what_is_allowed():
    """Exactly: a new import beyond the door fails, and so does an exception no module needs any more."""
    assert harness_imports_beyond_the_door(_project()) == HARNESS_EXCEPTIONS


# --- The checks themselves, on planted packages ----------------------------------------------------------------


def _plant(root: Path, files: dict[str, str]) -> Graph:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return build_graph(root, ["pkg"])


def test_a_planted_circle_is_found(tmp_path):
    graph = _plant(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "def f():\n    from pkg.sub import b\n",  # lazy, inside a function
            "pkg/sub/__init__.py": "",
            "pkg/sub/b.py": "from ..c import x\n",  # relative
            "pkg/c.py": "try:\n    from pkg import a\nexcept ImportError:\n    pass\n",
            "pkg/d.py": "import pkg.a\n",  # outside the circle
        },
    )
    assert circles(graph) == [["pkg.a", "pkg.c", "pkg.sub.b"]]
    assert circles({**graph, "pkg.c": {}}) == []


def test_a_planted_upward_import_is_found():
    graph: Graph = {
        "evaluator.services.x": {"evaluator.tasks.y": 3, "evaluator.models": 4},
        "evaluator.harness.z": {"evaluator.runner": 7},
        "evaluator.tasks.y": {"evaluator.services.x": 1},
        "leaderboard.selectors.q": {"leaderboard.services.w": 2},
        "inspector.views": {"config.settings": 5},
    }
    assert upward_in_evaluator(graph) == [
        "evaluator.harness.z:7 imports evaluator.runner (a higher layer)",
        "evaluator.services.x:3 imports evaluator.tasks.y (a higher layer)",
    ]
    assert selectors_importing_writers(graph) == ["leaderboard.selectors.q:2 imports leaderboard.services.w"]
    tags: Graph = {
        "inspector.selectors": {"inspector.cpu_noise": 3},
        "inspector.cpu_noise": {"leaderboard.templatetags.kb_format": 15},
        "leaderboard.selectors.problem_sets": {"leaderboard.templatetags.kb_format": 15},
    }
    assert selectors_reaching_template_tags(tags) == [
        "inspector.selectors reaches leaderboard.templatetags.kb_format through inspector.cpu_noise",
        "leaderboard.selectors.problem_sets reaches leaderboard.templatetags.kb_format",
    ]
    assert apps_importing_config(graph) == ["inspector.views:5 imports config.settings"]


def test_a_page_importing_orchestrator_code_is_found():
    graph: Graph = {
        "inspector.selectors": {"evaluator.harness.orchestrator.roofline": 18, "evaluator.harness.record": 20},
        "evaluator.harness.orchestrator.evaluation": {"evaluator.harness.orchestrator.roofline": 3},
        "leaderboard.views": {"evaluator.harness.workers.flops": 9},
    }
    assert harness_imports_beyond_the_door(graph) == {
        "inspector.selectors": {"evaluator.harness.orchestrator.roofline"},
        "leaderboard.views": {"evaluator.harness.workers.flops"},
    }
