"""The local files a Node.js file loads with require('./...'), transitively (standard library only).

The workflow makes them inputs of the jobs that run the file (codegraph.py), and the harness hashes the
open-loop client's into its version (harness/record.py). A module of its own, so that a measurement job's code
inputs hold this and not the rule layer's codegraph.py.
"""

import functools
import os
import re
from pathlib import Path

REQUIRE = re.compile(r"""require\(\s*['"](\.{1,2}/[^'"]+)['"]\s*\)""")


@functools.cache
def js_files(file: str) -> tuple[str, ...]:
    """The local files `file` loads with require('./...'), transitively (itself not included), sorted."""
    found: set[Path] = set()
    todo = [Path(file)]
    while todo:
        current = todo.pop()
        for rel in REQUIRE.findall(current.read_text()):
            target = Path(os.path.normpath(current.parent / rel))
            if target.suffix == "" and target.with_suffix(".js").is_file():
                target = target.with_suffix(".js")
            if not target.is_file():
                raise FileNotFoundError(f"{current} requires {rel!r}, which is not a file ({target})")
            if target not in found:
                found.add(target)
                if target.suffix == ".js":
                    todo.append(target)
    return tuple(sorted(str(p) for p in found))
