"""The disturbance of a run, measured from outside the server, and measuring a disturbed run again."""

import os
import threading
from pathlib import Path

import pytest

from nodebench.harness import hostsample, remeasure
from nodebench.harness.hostsample import Snapshot, disturbance

PID = 4000
SCRIPTS = Path(__file__).parents[2] / "scripts"
TICK_MS = 1000.0 / hostsample.CLK_TCK


def ticks(ms: float) -> int:
    return round(ms / TICK_MS)


def cpu(user_ms=0.0, steal_ms=0.0, idle_ms=0.0) -> dict:
    return {**dict.fromkeys(hostsample.CPU_FIELDS, 0), "user": ticks(user_ms), "steal": ticks(steal_ms),
            "idle": ticks(idle_ms)}  # fmt: skip


def snaps(window_ms, main, helpers, idle_ms, steal_ms=0.0, born=()):
    """Two snapshots window_ms apart: the main thread (on-CPU ms, wait ms), helper threads, the CPU's idle time."""
    ns = lambda ms: round(ms * 1e6)  # noqa: E731
    t0 = {PID: (ns(1000), ns(50)), **{PID + 1 + i: (ns(100), ns(5)) for i in range(len(helpers))}}
    t1 = {PID: (ns(1000 + main[0]), ns(50 + main[1]))}
    t1 |= {PID + 1 + i: (ns(100 + run), ns(5 + wait)) for i, (run, wait) in enumerate(helpers)}
    t1 |= {PID + 100 + i: (ns(run), ns(wait)) for i, (run, wait) in enumerate(born)}
    # user + system as the kernel's tick samples them: a tenth short (they play no part in the figures).
    busy_ms = window_ms - idle_ms - steal_ms
    s0 = Snapshot(10_000.0, 0, 0, None, t0, cpu(), (0,))
    s1 = Snapshot(10_000.0 + window_ms, 0, 0, None, t1, cpu(busy_ms * 0.9, steal_ms, idle_ms), (0,))
    return s0, s1


def test_an_undisturbed_saturated_server_lost_nothing():
    got = disturbance(*snaps(5000, main=(4900, 60), helpers=[(40, 1)], idle_ms=60), PID)
    assert got["main_oncpu_ms"] == pytest.approx(4900) and got["main_wait_ms"] == pytest.approx(60)
    assert got["threads_oncpu_ms"] == pytest.approx(4940) and got["server_threads_seen"] == 2
    assert got["server_cpu_others_ms"] == pytest.approx(0, abs=TICK_MS)
    # It waited 60 ms, 40 of them while its helper thread ran: 20 ms, 0.4 %, lost to others.
    assert got["stolen_share"] == pytest.approx(0.004)


def test_waiting_behind_its_own_gc_threads_is_not_a_disturbance():
    # Express on one CPU: its main thread waits 15 % of the window behind its own helper threads.
    got = disturbance(*snaps(5000, main=(4200, 750), helpers=[(700, 30), (60, 2)], idle_ms=40), PID)
    assert got["main_wait_ms"] == pytest.approx(750)
    assert got["stolen_share"] == 0.0 and got["server_cpu_others_ms"] == pytest.approx(0, abs=TICK_MS)


def test_a_cpu_hog_on_the_servers_cpu_is_measured():
    # Another task took 500 ms of the CPU and the main thread waited for it: 10 % of the window lost.
    got = disturbance(*snaps(5000, main=(4400, 560), helpers=[(50, 1)], idle_ms=50), PID)
    assert got["server_cpu_others_ms"] == pytest.approx(500, abs=TICK_MS)
    assert got["stolen_share"] == pytest.approx(0.102)


def test_others_time_while_the_loop_was_idle_is_not_counted_as_lost():
    # An idle server (25 % load): the hog's 500 ms cost the loop only the 20 ms it waited.
    got = disturbance(*snaps(5000, main=(1250, 20), helpers=[], idle_ms=3250), PID)
    assert got["server_cpu_others_ms"] == pytest.approx(500, abs=TICK_MS)
    assert got["stolen_share"] == pytest.approx(20 / 5000)


def test_steal_counts_as_lost():
    got = disturbance(*snaps(5000, main=(4800, 0), helpers=[], idle_ms=50, steal_ms=150), PID)
    assert got["server_cpu_steal_ms"] == pytest.approx(150, abs=TICK_MS)
    assert got["stolen_share"] == pytest.approx(0.03, abs=0.003)


def test_a_thread_born_in_the_window_counts_from_zero():
    got = disturbance(*snaps(5000, main=(4000, 0), helpers=[(100, 0)], idle_ms=700, born=[(200, 3)]), PID)
    assert got["threads_oncpu_ms"] == pytest.approx(4300) and got["server_threads_seen"] == 3


def test_no_schedstat_or_no_snapshots_give_nulls():
    s0, s1 = snaps(5000, main=(4000, 0), helpers=[], idle_ms=1000)
    bare0, bare1 = Snapshot(s0.mono_ms, 0, 0, None), Snapshot(s1.mono_ms, 0, 0, None)
    assert set(disturbance(bare0, bare1, PID).values()) == {None}
    assert set(disturbance(None, None, PID).values()) == {None}
    # Threads without /proc/stat's CPU lines: the on-CPU figures, but no stolen share.
    threads_only = (Snapshot(s.mono_ms, 0, 0, None, s.server_threads) for s in (s0, s1))
    half = disturbance(*threads_only, PID)
    assert half["main_oncpu_ms"] == pytest.approx(4000) and half["stolen_share"] is None


def test_the_sampler_reads_this_processs_threads_and_cpus():
    cpus = sorted(os.sched_getaffinity(0))
    stop = threading.Event()
    spin = threading.Thread(target=lambda: stop.wait(0.3))
    spin.start()
    sample = hostsample.WindowSampler(cpus, None, server_pid=os.getpid(), server_cpus=cpus[:1])
    a = sample()
    sum(range(300_000))  # some CPU on the main thread
    b = sample()
    stop.set()
    spin.join()
    got = disturbance(a, b, os.getpid())
    assert got["main_oncpu_ms"] > 0 and got["server_threads_seen"] >= 1
    assert got["server_cpu_busy_ms"] is not None and 0 <= got["stolen_share"] <= 1
    assert hostsample.thread_schedstat(2**22 + 12345) is None  # no such process


def rec(share, **kw):
    return {"stolen_share": share, "disturbed": None if share is None else share > 0.02, "us_per_req_elu": 10.0,
            **kw}  # fmt: skip


def measurer(records):
    it = iter(records)
    calls = []

    def measure():
        calls.append(1)
        return next(it)

    return measure, calls


def test_an_undisturbed_run_is_measured_once():
    measure, calls = measurer([rec(0.001), rec(0.0)])
    got = remeasure.measure_until_clean(measure, 2, lambda _: None)
    assert len(calls) == 1 and got["measurement_count"] == 1 and got["measurement_used"] == 1
    assert got["measurements"][0]["stolen_share"] == 0.001


def test_a_disturbed_run_is_measured_again_and_the_cleanest_is_used():
    said = []
    measure, calls = measurer([rec(0.09, us_per_req_elu=11.0), rec(0.004, us_per_req_elu=10.0), rec(0.0)])
    got = remeasure.measure_until_clean(measure, 2, said.append)
    assert len(calls) == 2 and got["measurement_used"] == 2 and got["us_per_req_elu"] == 10.0
    assert [m["stolen_share"] for m in got["measurements"]] == [0.09, 0.004]
    assert got["disturbed"] is False and "measuring again (1 of 2 more)" in said[0]


def test_a_run_still_disturbed_after_its_attempts_is_kept_and_flagged():
    said = []
    measure, calls = measurer([rec(0.09), rec(0.05), rec(0.07), rec(0.0)])
    got = remeasure.measure_until_clean(measure, 2, said.append)
    assert len(calls) == 3 and got["measurement_count"] == 3 and got["measurement_used"] == 2
    assert got["disturbed"] is True and got["stolen_share"] == 0.05 and "kept and flagged" in said[-1]
    # No attempts: the first measurement is kept, flagged.
    measure, calls = measurer([rec(0.09), rec(0.0)])
    assert remeasure.measure_until_clean(measure, 0, lambda _: None)["disturbed"] is True and len(calls) == 1


def test_a_run_without_a_stolen_share_is_not_measured_again():
    measure, calls = measurer([rec(None), rec(0.0)])
    got = remeasure.measure_until_clean(measure, 2, lambda _: None)
    assert len(calls) == 1 and got["disturbed"] is None


JOB = """
import json, os, subprocess, sys, threading, time
from nodebench.harness import procs
if sys.argv[2] == "unprivileged":  # Linux would not give the policy back: the threads are moved instead
    procs._may_undo_idle = lambda tid: False
own = subprocess.Popen(["sleep", "30"])
parent, sibling = os.getppid(), int(sys.argv[1])
def state():
    return {name: [sorted(os.sched_getaffinity(pid)), os.sched_getscheduler(pid)] for name, pid in
            (("workflow", parent), ("sibling", sibling), ("own child", own.pid))}
with procs.workflow_off([0]) as changed:
    during = state()
    # A thread the workflow starts meanwhile inherits the change; it is given back too. Waited for, not slept on:
    # the signal is handled whenever the workflow's interpreter next runs, later on a busy machine.
    before = len(os.listdir(f"/proc/{parent}/task"))
    os.kill(parent, 10)
    deadline = time.monotonic() + 30
    while len(os.listdir(f"/proc/{parent}/task")) <= before and time.monotonic() < deadline:
        time.sleep(0.01)
after = state()
tids = map(int, os.listdir(f"/proc/{parent}/task"))
late = [[sorted(os.sched_getaffinity(t)), os.sched_getscheduler(t)] for t in tids]
own.kill()
print(json.dumps({"changed": changed, "during": during, "after": after, "late": late}))
"""

WORKFLOW = """
import signal, subprocess, sys, threading, time
started = []
def start_thread(*_):
    t = threading.Thread(target=time.sleep, args=(60,), daemon=True)
    t.start()
    started.append(t)
signal.signal(signal.SIGUSR1, start_thread)
sibling = subprocess.Popen(["sleep", "30"])
job = subprocess.run([sys.argv[2], "-c", sys.argv[1], str(sibling.pid), sys.argv[3]], capture_output=True, text=True)
sibling.kill()
print(job.stdout, job.stderr)
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs: one for the server, one for the rest")
@pytest.mark.parametrize("who", ["root", "unprivileged"])
def test_the_workflow_that_started_a_job_takes_no_cpu_the_measurement_wants_and_gets_it_back(who):
    import json
    import subprocess
    import sys

    if who == "root" and os.geteuid() != 0:
        pytest.skip("SCHED_IDLE given back needs root or an RLIMIT_NICE that covers it")
    cpus = sorted(os.sched_getaffinity(0))
    rest = [c for c in cpus if c != 0]
    # A process whose command line says snakemake, running a job beside another job (the sibling).
    res = subprocess.run(
        ["bash", "-c", 'exec -a snakemake-under-test "$0" -c "$1" "$2" "$0" "$3"', sys.executable, WORKFLOW, JOB, who],
        capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(SCRIPTS)},
    )  # fmt: skip
    found = json.loads(res.stdout.split("\n")[0])
    idle, moved = found["changed"]
    ordinary = [cpus, os.SCHED_OTHER]
    if who == "root":
        # Idle, and off the server's CPU: they run only where nothing else wants the client's CPU.
        assert idle >= 2 and moved >= 2, res.stdout + res.stderr
        assert found["during"]["workflow"] == [rest, os.SCHED_IDLE] == found["during"]["sibling"]
    else:
        assert idle == 0 and moved >= 2, res.stdout + res.stderr
        assert found["during"]["workflow"] == [rest, os.SCHED_OTHER] == found["during"]["sibling"]
    # The job's own processes (the server, the client, the database) stay as the job made them.
    assert found["during"]["own child"] == ordinary
    assert found["after"]["workflow"] == ordinary == found["after"]["sibling"]
    assert len(found["late"]) >= 2 and all(t == ordinary for t in found["late"]), found["late"]


def test_a_job_that_inherited_an_idle_policy_runs_ordinary_again_or_says_why():
    import subprocess
    import sys

    code = (
        "import os; from nodebench.harness import procs;"
        " os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0));"
        " procs.ordinary_scheduling(); print(os.sched_getscheduler(0))"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30,
                         env={**os.environ, "PYTHONPATH": str(SCRIPTS)})  # fmt: skip
    if os.geteuid() == 0:
        assert res.stdout.strip() == str(os.SCHED_OTHER), res.stderr
    else:
        assert "runs under SCHED_IDLE" in res.stderr


def test_a_job_run_by_hand_moves_nothing():
    from nodebench.harness import procs

    with procs.workflow_off([0]) as changed:
        assert changed == (0, 0)
