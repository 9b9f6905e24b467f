"""Two finished result sets side by side (two machines, two days, two commits): each comparison's ratio in both, the
change, and a warning where the two were measured on different CPUs, CPU counts or kernels.

    .venv/bin/python scripts/compare_results.py A/reports/overall/results.csv B/reports/overall/results.csv
    .venv/bin/python scripts/compare_results.py A/reports/compare B/reports/compare --all

Each argument is a results.csv, a results.json or a reports/<scope> folder holding them
(docs/architecture.md#results-to-take-away). Only rows found in one of the two are listed as such.
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nodebench.analysis import results  # noqa: E402


def results_file(given: str) -> Path:
    """The results file an argument names: the file itself, or results.csv in a folder."""
    path = Path(given)
    return path / "results.csv" if path.is_dir() else path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", help="the first result set (results.csv, results.json or reports/<scope>)")
    parser.add_argument("b", help="the second, compared with the first (change = B / A - 1)")
    parser.add_argument("--all", action="store_true", help="every figure, the cells' medians too, not only the "
                        "comparisons of the headline figure (config's headline) and the scores")  # fmt: skip
    args = parser.parse_args(argv)
    paths = [results_file(args.a), results_file(args.b)]
    for path in paths:
        if not path.is_file():
            parser.error(f"{path}: no such results file (a finished target writes reports/<scope>/results.csv)")
    a, b = (results.read(p) for p in paths)
    print(f"A: {paths[0]}: {results.describe_set(a)}")
    print(f"B: {paths[1]}: {results.describe_set(b)}")
    for line in results.machine_warnings(a, b):
        print(line)
    pairs = results.side_by_side(a, b, kinds=None, figures=None) if args.all else results.side_by_side(a, b)
    print(results.render(pairs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
