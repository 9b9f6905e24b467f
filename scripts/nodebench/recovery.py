"""A run after a hard kill: manifests that name files which no longer exist are false, and are removed.

Snakemake rebuilds a missing file only for a job that has to run anyway: when a job that
re-measures a cell is killed (kill -9, a reboot) after Snakemake removed the cell's old
record, the manifests and tables after it are still newer than everything that exists,
so the next run finds "Nothing to be done" and the manifest lists a record that is gone.
Removing such a manifest makes its own job due; Snakemake then rebuilds every missing
file it lists (the record: the cell is measured again) and everything after it. A dry run
(or any command that runs no job) removes nothing: the workflow plans the manifest's job as
due instead (list_outputs' `due` param), which plans the same jobs.
"""

import json
import os
from pathlib import Path

from nodebench.catalogue.figures import DEFAULT_HEADLINE, HEADLINE_COLUMN

#: What a look from before a declared key existed was made for.
LOOK_DEFAULTS = {HEADLINE_COLUMN: DEFAULT_HEADLINE}


def missing_files(manifest: Path, exists=os.path.exists) -> list[str]:
    """The files a manifest lists that do not exist (relative to the working directory, as listed)."""
    try:
        lines = Path(manifest).read_text().splitlines()
    except OSError:
        return []
    return [line for line in (raw.strip() for raw in lines) if line and not exists(line)]


def drop_false_manifests(manifests, say=lambda line: None, dry_run: bool = False) -> list[Path]:
    """Remove each existing manifest that lists a missing file; returns those removed (with dry_run, those it
    would remove, left in place: the workflow plans their jobs as due, so that the plan is the one a real run makes)."""
    seen: dict[str, bool] = {}

    def exists(path: str) -> bool:
        if path not in seen:
            seen[path] = os.path.exists(path)
        return seen[path]

    removed = []
    for manifest in map(Path, manifests):
        if not manifest.is_file():
            continue
        missing = missing_files(manifest, exists)
        if not missing:
            continue
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        if dry_run:
            say(
                f"{manifest} lists {missing[0]}{more}, which does not exist (a job killed while it re-measured, "
                "or a file removed by hand): a run would remove it and rebuild what it lists (this dry run "
                "removes nothing and plans that)"
            )
            removed.append(manifest)
            continue
        try:
            manifest.unlink()
        except OSError as e:
            say(f"{manifest} lists {missing[0]}{more}, which does not exist, and cannot be removed: {e}")
            continue
        say(
            f"{manifest} listed {missing[0]}{more}, which does not exist (a job killed while it re-measured, "
            "or a file removed by hand): removed it, so that this run rebuilds what it lists"
        )
        removed.append(manifest)
    return removed


def drop_stale_looks(blocks: dict, say=lambda line: None, dry_run: bool = False) -> list[Path]:
    """Remove each adaptive block's look that no longer holds, and every later look of that block; then, where a
    block's looks do not reach a decision, the products that its decision feeds.

    blocks maps a block to (looks, declared, paths, inputs, products): its declared looks, what else a look is
    made for (a look's keys and their values: the half-width target, the headline figure), a function of n giving
    a look's file, one giving the files it was computed from, and the files made from the rounds it stopped at (a
    scope's runs table, summary, page and manifest). A look holds while it was made for the same looks and
    declared values and no input is missing or newer than it.

    Two ways Snakemake (9.27) would otherwise keep a stale answer: it hands an input function an existing
    checkpoint's output even when that checkpoint is about to run again (its params changed), so a stale look
    would decide the rounds before its rerun could; and it does not follow a checkpoint that an existing
    output's input function waits for, so a product made before the looks were complete would stand. Removed,
    they are due. A dry run says what it would remove and removes nothing. Returns what was removed (on a dry
    run, what would be: the workflow then plans as if it were gone).
    """
    removed = []
    for block, (looks, declared, path_of, inputs_of, products) in blocks.items():
        removed += _drop_looks(block, looks, declared, path_of, inputs_of, say, dry_run)
        if _decided(looks, path_of, removed):
            continue
        for product in map(Path, products):
            if not product.is_file():
                continue
            if dry_run:
                say(f"would remove {product}: the looks of {block} have not decided its rounds yet")
                removed.append(product)
                continue
            try:
                product.unlink()
            except OSError as e:
                say(f"{product} is made from rounds the looks of {block} have not decided, and cannot be removed: {e}")
                continue
            removed.append(product)
        if not dry_run and any(Path(p) in removed for p in products):
            say(f"the looks of {block} have not decided its rounds yet: removed what was made from them before")
    return removed


def _decided(looks: list[int], path_of, gone=()) -> bool:
    """Whether a block's existing looks reach one that says stop, with none missing before it (`gone`: looks
    removed, or on a dry run to be removed, count as missing)."""
    for n in looks:
        if Path(path_of(n)) in gone:
            return False
        try:
            if json.loads(Path(path_of(n)).read_text()).get("stop"):
                return True
        except (OSError, ValueError):
            return False
    return False


def _drop_looks(block, looks, declared, path_of, inputs_of, say, dry_run) -> list[Path]:
    """The first look that no longer holds and every later one (made on its word)."""
    removed = []
    stale = None
    for n in looks:
        path = Path(path_of(n))
        if not path.is_file():
            continue
        if stale is None:
            stale = _why_stale(path, looks, declared, inputs_of(n))
            if stale is None:
                continue
        if dry_run:
            say(f"{path} is stale ({stale}): would remove it")
            removed.append(path)
            continue
        try:
            path.unlink()
        except OSError as e:
            say(f"{path} is stale ({stale}) and cannot be removed: {e}")
            continue
        say(f"{path} is stale ({stale}): removed, so that the look after {n} rounds of {block} is made again")
        removed.append(path)
    return removed


def _why_stale(path: Path, looks: list[int], declared: dict, inputs) -> str | None:
    try:
        look = json.loads(path.read_text())
        made = path.stat().st_mtime
    except (OSError, ValueError) as e:
        return f"unreadable: {e}"
    if look.get("looks") != list(looks):
        return f"made for looks {look.get('looks')}"
    for key, value in declared.items():
        # A look from before a key existed was made for its default (LOOK_DEFAULTS).
        if look.get(key, LOOK_DEFAULTS.get(key)) != value:
            return f"made for looks {look.get('looks')} and {key} {look.get(key, LOOK_DEFAULTS.get(key))}"
    for p in inputs:
        try:
            if os.stat(p).st_mtime > made:
                return f"{p} is newer"
        except FileNotFoundError:
            return f"{p} is missing"
    return None
