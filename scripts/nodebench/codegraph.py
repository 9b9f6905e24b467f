"""Which files a rule's code depends on, computed from the code itself (standard library only).

The workflow makes these files inputs of each rule, so editing a module reruns exactly
the rules whose entry scripts import it, directly or not, and nothing else:

- python_modules(script): the nodebench modules a script imports, transitively
  (import statements anywhere in a module, including inside functions), with the
  package __init__ files that importing them runs;
- js_files(file): the files a Node.js file loads with require('./...'), transitively
  (package imports are covered by the lockfile); from nodebench/jsrequire.py.
"""

import ast
import functools
import json
import os
from pathlib import Path

# A measurement job's own code needs js_files too (the open-loop client's version hashes the files it requires), so
# it lives in a module of its own: this one, the rule layer's, is no input of any measurement.
from nodebench.jsrequire import js_files  # noqa: F401  (codegraph.js_files, as the workflow calls it)

PACKAGE = "nodebench"
#: Parsing every module takes ~0.1 s of each Snakemake start; what each file imports is kept here,
#: keyed by the file's size and mtime, so an unchanged file is not parsed again.
CACHE = Path(".snakemake") / "nodebench-imports.json"
_PARSED: set[str] = set()


def _module_file(root: Path, name: str) -> Path | None:
    """scripts/nodebench/a/b.py or scripts/nodebench/a/b/__init__.py for 'nodebench.a.b', if it exists."""
    base = root.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@functools.cache
def _cache() -> dict:
    try:
        return json.loads(CACHE.read_text())
    except (OSError, ValueError):
        return {}


def _save_cache() -> None:
    """Write the import cache (atomically: another Snakemake may read it meanwhile); best effort."""
    if not CACHE.parent.is_dir():
        return
    tmp = CACHE.with_name(f"{CACHE.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(_cache()))
        tmp.replace(CACHE)
    except OSError:
        tmp.unlink(missing_ok=True)


@functools.cache
def _imported_names(path: Path, module: str) -> frozenset[str]:
    """Dotted names a module imports (for `from a import b`, both a and a.b: b may be a module)."""
    stat = path.stat()
    key, stamp = f"{path}:{module}", [stat.st_size, stat.st_mtime_ns]
    cached = _cache().get(key)
    if cached is not None and cached[0] == stamp:
        return frozenset(cached[1])
    names = _parse_imports(path, module)
    _cache()[key] = [stamp, sorted(names)]
    _PARSED.add(key)
    return names


def _parse_imports(path: Path, module: str) -> frozenset[str]:
    names = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                origin = f"{base}.{node.module}" if node.module else base
            else:
                origin = node.module or ""
            names.add(origin)
            names.update(f"{origin}.{alias.name}" for alias in node.names)
    return frozenset(names)


@functools.cache
def python_modules(script: str, root: str = "scripts") -> tuple[str, ...]:
    """The package's files that `script` imports, transitively, as sorted paths like root/nodebench/x.py."""
    root_path = Path(root)
    seen: dict[str, Path] = {}
    todo = [(Path(script), "__main__")]
    while todo:
        path, module = todo.pop()
        for name in _imported_names(path, module):
            if name != PACKAGE and not name.startswith(PACKAGE + "."):
                continue
            parts = name.split(".")
            # Importing a.b.c runs a/__init__, a/b/__init__ and a/b/c.
            for i in range(1, len(parts) + 1):
                prefix = ".".join(parts[:i])
                if prefix in seen:
                    continue
                found = _module_file(root_path, prefix)
                if found is not None:
                    seen[prefix] = found
                    todo.append((found, prefix))
    if _PARSED:  # written once per script, and only when a file had to be parsed
        _save_cache()
        _PARSED.clear()
    return tuple(sorted(str(p) for p in seen.values()))
