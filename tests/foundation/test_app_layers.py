"""Apps depend one way (README, "The house"): catalogue <- evaluator <- leaderboard <- inspector.

Every import in an app's package (functions and `try` blocks included) and every `{% load %}` in an app's
templates may name only its own app or one listed before it. `config` sits above them all and is not checked."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ["catalogue", "evaluator", "leaderboard", "inspector"]  # bottom to top
LOAD_RE = re.compile(r"{%\s*load\s+(.*?)\s*%}")


def _rank(name: str) -> int | None:
    top = name.split(".")[0]
    return LAYERS.index(top) if top in LAYERS else None


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every import in a file; relative imports stay inside the package."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def _upward_imports() -> list[str]:
    bad = []
    for rank, app in enumerate(LAYERS):
        for path in sorted((ROOT / app).rglob("*.py")):
            for line, module in _imports(path):
                target = _rank(module)
                if target is not None and target > rank:
                    bad.append(f"{path.relative_to(ROOT)}:{line} imports {module} ({LAYERS[target]} is above {app})")
    return bad


def _libraries() -> dict[str, int]:
    """Template tag library name -> rank of the app that provides it."""
    return {
        path.stem: rank
        for rank, app in enumerate(LAYERS)
        for path in (ROOT / app / "templatetags").glob("*.py")
        if path.stem != "__init__"
    }


def _loaded(text: str) -> list[str]:
    names = []
    for args in LOAD_RE.findall(text):
        words = args.split()
        names += words[words.index("from") + 1 :] if "from" in words else words
    return names


def test_no_app_imports_an_app_above_it():
    assert _upward_imports() == []


def test_the_check_sees_imports_inside_functions():
    # A sanity check on the parser itself, so the test above cannot pass by reading nothing.
    source = "def f():\n    try:\n        from inspector.views import x\n    except ImportError:\n        pass\n"
    tree = ast.parse(source)
    modules = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert modules == ["inspector.views"]
    assert sum(len(_imports(p)) for p in (ROOT / "leaderboard").rglob("*.py")) > 100


def test_no_template_loads_a_tag_library_of_an_app_above_it():
    libraries = _libraries()
    assert "kb_format" in libraries
    bad = []
    for template in sorted((ROOT / "templates").rglob("*.html")):
        folder = template.relative_to(ROOT / "templates").parts[0]
        # Project-wide templates (base.html, errors, registration) sit below every app.
        rank = LAYERS.index(folder) if folder in LAYERS else -1
        for name in _loaded(template.read_text()):
            if libraries.get(name, -1) > rank:
                bad.append(f"{template.relative_to(ROOT)} loads {name} ({LAYERS[libraries[name]]})")
    assert bad == []


def test_the_layers_are_the_installed_apps_in_order():
    from django.conf import settings

    assert [app for app in settings.INSTALLED_APPS if app in LAYERS] == LAYERS
