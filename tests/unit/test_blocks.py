"""Every ratio's two runs come from one block: the same peer group of the same round, measured back to back.

Built from the shipped config.yaml and experiments.yaml, so a new experiment that shares cells
across blocks, or a plan that interleaves peer groups, fails here.
"""

from collections import defaultdict

import pytest
from test_configcheck import shipped

from nodebench import plan, targets
from nodebench.runs import Run


@pytest.fixture(scope="module")
def shipped_targets() -> targets.Targets:
    return targets.Targets(plan.with_ab(shipped()))


def _scope_runs(t: targets.Targets, scope: str) -> list[tuple]:
    if scope in t.experiments:
        return [(t.block_of(scope), *run) for run in t.experiment_runs(scope)]
    return [(plan.MAIN_BLOCK, *run) for run in t.main_runs() if scope == targets.OVERALL or run[0] == scope]


def test_every_pair_a_scope_can_take_is_measured_in_one_peer_group_of_one_block(shipped_targets):
    t = shipped_targets
    checked = 0
    for scope in t.scopes:
        groups = defaultdict(set)
        for run in _scope_runs(t, scope):
            _, workload, server, connections, client, stop, round_ = run
            block = t.plan.as_measured(Run(*run)).block
            groups[(workload, connections, client, stop, round_)].add((block, server))
        for key, members in groups.items():
            blocks = {block for block, _ in members}
            assert len(blocks) == 1, f"{scope} {key}: its servers were measured in blocks {sorted(blocks)}"
            checked += len(members) * (len(members) - 1) // 2
    assert checked > 1000


def test_a_peer_group_runs_back_to_back_in_its_round(shipped_targets):
    """The runs of one peer group in one block's round hold consecutive places in the plan."""
    groups = defaultdict(list)
    for (block, workload, _, connections, client, stop, round_), (index, _, _) in shipped_targets.plan.runs.items():
        groups[(block, workload, connections, client, stop, round_)].append(index)
    assert len(groups) > 100
    for key, indices in groups.items():
        assert max(indices) - min(indices) == len(indices) - 1, f"{key} is interleaved with other groups"


def test_an_experiment_shares_a_block_only_where_that_block_measured_its_whole_peer_group():
    config = shipped() | {
        "servers": ["node-http", "express", "fastify"],
        "workloads": {"empty": {"connections": [50]}},
        "rounds": 3,
        "control": None,
        "duration_s": 4,
    }
    subset = {"servers": ["express", "fastify"], "workloads": ["empty"], "connections": [50],
              "clients": ["wrk"], "durations_s": [4]}  # fmt: skip
    wider = subset | {"servers": ["express", "hono"]}
    config["experiments"] = {"subset": {"rounds": 5, "matrices": [subset]}, "wider": {"rounds": 2, "matrices": [wider]}}
    p = targets.Targets(config).plan
    # Rounds 1-3 of the subset are the main matrix's runs; its rounds 4 and 5 are its own.
    assert [p.as_measured(Run("subset", "empty", "express", 50, "wrk", "4s", r)).block for r in range(1, 6)] == [
        "main", "main", "main", "subset", "subset"
    ]  # fmt: skip
    # hono is not in the main matrix: the whole group is measured again, express included.
    assert {p.as_measured(Run("wider", "empty", s, 50, "wrk", "4s", 1)).block for s in ("express", "hono")} == {"wider"}
    assert p.find(Run("wider", "empty", "express", 50, "wrk", "4s", 1)) is not None
    # As a path or a wildcard spells it (text), the same run.
    assert p.find(Run("wider", "empty", "express", "50", "wrk", "4s", "1")) == p.find(
        Run.of("wider", "empty", "express", 50, "wrk", "4s", 1)
    )


def test_peer_groups_are_shuffled_from_the_seed_and_differ_between_rounds():
    cells = [(w, s, 50, "wrk", "5s") for w in ("empty", "list", "point-lookup") for s in ("a", "b", "c", "d")]
    one, again = plan.back_to_back(cells, 1, 1), plan.back_to_back(cells, 1, 1)
    assert one == again
    assert one != plan.back_to_back(cells, 1, 2)
    assert all(len({c[0] for c in group}) == 1 for group in one)
    assert sorted(c for g in one for c in g) == sorted(cells)
