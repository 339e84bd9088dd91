"""docs/ARCHITECTURE.md kept true, checked on the source:

- every module of ``src/delta_downgrade`` is named in the map's source tree, under the folder that
  holds it (a module in a sub-folder also needs the sub-folder's name there);
- every module the map names exists;
- every home the table "Rules and where they live" names (``folder/module.symbol``) exists, and
  the symbol has a caller outside its own module - a rule nobody asks is no rule;
- no source or test file cites a document outside the repository (the shared design notes, a
  reference document's sections, issue numbers): a comment cites Delta's PROTOCOL.md, an RFC or a
  class of another project by name, which a reader can find.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import delta_downgrade

PACKAGE_DIR = Path(delta_downgrade.__file__).resolve().parent
REPO = PACKAGE_DIR.parents[1]
MAP = REPO / "docs" / "ARCHITECTURE.md"

# A top-level folder's block in the tree starts with two spaces and the folder's name.
_SECTION = re.compile(r"^  ([a-z_]+)/")
_MODULE = re.compile(r"(?<![\w.])([a-z_][a-z0-9_]*\.py)\b")
_RULE_HOME = re.compile(r"`([a-z_]+(?:/[a-z_]+)+)(?:\.py\b|\.([A-Za-z_][\w.]*))?")


def _tree_sections() -> dict[str, str]:
    """The text of each top-level folder's block in the map's ``src/delta_downgrade/`` tree."""
    text = MAP.read_text()
    tree = text[text.index("src/delta_downgrade/\n"):]
    tree = tree[:tree.index("```")]
    tree = tree.split("\ntools/src/", 1)[0]  # the repository-only tools follow the package
    sections: dict[str, list[str]] = {"": []}
    current = ""
    for line in tree.splitlines()[1:]:
        match = _SECTION.match(line)
        if match:
            current = match.group(1)
            sections.setdefault(current, [])
        sections[current].append(line)
    return {name: "\n".join(lines) for name, lines in sections.items()}


def _modules() -> list[Path]:
    return sorted(p.relative_to(PACKAGE_DIR) for p in PACKAGE_DIR.rglob("*.py")
                  if p.name != "__init__.py" and "__pycache__" not in p.parts)


def test_every_module_is_on_the_map():
    sections = _tree_sections()
    missing = []
    for module in _modules():
        folder = module.parts[0] if len(module.parts) > 1 else ""
        block = sections.get(folder, "")
        names = set(_MODULE.findall(block))
        subfolders = module.parts[1:-1]
        if module.name not in names or any(f"{sub}/" not in block for sub in subfolders):
            missing.append(str(module))
    assert missing == [], f"modules docs/ARCHITECTURE.md does not name under their folder: {missing}"


def test_every_module_on_the_map_exists():
    sections = _tree_sections()
    present = {m.name for m in _modules()}
    named = {name for block in sections.values() for name in _MODULE.findall(block)} - {"__init__.py"}
    # the map also names the folder's package files of other kinds (clients.toml) - .py only here
    assert sorted(named - present) == [], "docs/ARCHITECTURE.md names modules that do not exist"


def _rule_homes() -> list[tuple[str, str]]:
    text = MAP.read_text()
    table = text[text.index("## Rules and where they live"):]
    table = table[:table.index("\n## ", 5)]
    homes = []
    for line in table.splitlines():
        if not line.startswith("| ") or line.startswith("| rule") or line.startswith("|---"):
            continue
        code = line.rsplit("|", 2)[-2]
        homes += [(m.group(1), m.group(2) or "") for m in _RULE_HOME.finditer(code)]
    return homes


def _defines(tree: ast.Module, dotted: str) -> bool:
    names = dotted.split(".")
    body: list[ast.stmt] = tree.body
    for name in names:
        found = None
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
                found = node
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                    found = node
        if found is None:
            return False
        body = getattr(found, "body", [])
    return True


def test_every_rule_home_exists_and_is_called():
    homes = _rule_homes()
    assert len(homes) >= 10, "the rules table lost its homes"
    sources = {p: p.read_text() for p in PACKAGE_DIR.rglob("*.py") if "__pycache__" not in p.parts}
    problems = []
    for module_path, symbol in homes:
        path = PACKAGE_DIR / f"{module_path}.py"
        if not path.exists():
            # a package named by its folder (features.removable -> features/__init__.py)
            path = PACKAGE_DIR / module_path / "__init__.py"
        if not path.exists():
            problems.append(f"{module_path}: no such module")
            continue
        if not symbol:
            continue
        if not _defines(ast.parse(sources[path]), symbol):
            problems.append(f"{module_path}.{symbol}: not defined there")
            continue
        leaf = re.escape(symbol.split(".")[-1])
        # a caller elsewhere, or (a private step of an operation) a use in its own module
        called = any(re.search(rf"\b{leaf}\b", text) for p, text in sources.items() if p != path)
        called = called or len(re.findall(rf"\b{leaf}\b", sources[path])) > 1
        if not called:
            problems.append(f"{module_path}.{symbol}: nothing calls it")
    assert problems == [], problems


_OUTSIDE = re.compile(
    r"DESIGN\.md|/work/shared|\.\./shared/(?!golden)|drop-feature-semantics|deltars-oracle"
    r"|databricks-conventions|[Ii]ssue #?\d+\b(?! of delta)|§ ?\d|\bgroup [A-H]\b|\bitem \d+\b(?=[:),])")


def test_no_citation_of_documents_outside_the_repository():
    roots = [PACKAGE_DIR, REPO / "tests", REPO / "tools" / "src", REPO / "bench"]
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if "__pycache__" in path.parts or path == Path(__file__).resolve():
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                match = _OUTSIDE.search(line)
                # an issue of another project, named with it, is a public reference
                if match and not re.search(r"[\w-]+/[\w-]+(,| issue| pull)? *#?$", line[:match.start()].rstrip(" #")):
                    found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()[:100]}")
    assert found == [], "\n".join(found)
