"""Load generators and the stopping-rule study: parsers on real outputs, rules, arithmetic, report text."""

import os
import re
import signal
import socket
import time
from pathlib import Path

import pytest

from conftest import REPO, make_project, snakemake
from nodebench.catalogue import clients
from nodebench.harness import loadgen, procs, verify
from nodebench.harness import server as node_server


def experiment_config(matrix: str) -> str:
    return f"""servers: [fastify]
workloads:
  empty: {{connections: [10]}}
warmup_s: 1
duration_s: 1
rounds: 1
control: null
experiments:
  bad:
    matrices:
      - {matrix}
"""


@pytest.mark.parametrize(
    "matrix, phrase",
    [
        (
            "{servers: [fastify], workloads: [empty], connections: [10], clients: [wrk], counts: [1000]}",
            "experiments.bad.matrices[0]: wrk cannot stop after a fixed count ([1000])",
        ),
        (
            "{servers: [fastify], workloads: [empty], connections: [10], clients: [ab], durations_s: [5]}",
            "experiments.bad.matrices[0]: ab cannot stop after a fixed duration ([5])",
        ),
        (
            "{servers: [fastify], workloads: [empty], connections: [10], clients: [autocannon]}",
            "has no stopping rule",
        ),
        (
            "{servers: [fastify], workloads: [empty], connections: [10], clients: [siege], counts: [9]}",
            "config key 'experiments.bad.matrices[0].clients[0]' is 'siege': must be one of",
        ),
    ],
)
def test_experiment_config_is_checked_before_any_job(tmp_path: Path, matrix, phrase):
    proj = make_project(tmp_path / "p", experiment_config(matrix))
    res = snakemake(proj, "--dry-run", "reports/bad/all")
    assert res.returncode != 0 and phrase in res.stdout, res.stdout[-3000:]


def test_a_missing_wrk_fails_at_once_with_the_install_line(tmp_path: Path):
    matrix = "{servers: [fastify], workloads: [empty], connections: [10], clients: [wrk], durations_s: [1]}"
    proj = make_project(tmp_path / "p", experiment_config(matrix))
    # A PATH with every program of this machine except wrk.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for d in os.environ["PATH"].split(os.pathsep):
        for entry in Path(d).glob("*") if Path(d).is_dir() else []:
            link = bin_dir / entry.name
            if entry.name != "wrk" and not link.exists():
                link.symlink_to(entry)
    res = snakemake(proj, "reports/bad/all", env={**os.environ, "PATH": str(bin_dir)})
    assert res.returncode != 0
    assert "load generator 'wrk' is not installed" in res.stdout and "apt-get install wrk" in res.stdout
    # It failed first: no measurement started, and the npm install had not run either.
    assert "[measure] start" not in res.stdout
    assert "rule install_node_packages:" not in res.stdout.split("[probe] FAILED")[0]


# --- The listen queue ---------------------------------------------------------------------------------------------


def test_the_servers_listen_with_the_backlog_the_harness_names():
    contract = (REPO / "servers/contract/serve.js").read_text()
    assert int(re.search(r"const LISTEN_BACKLOG = (\d+);", contract)[1]) == verify.LISTEN_BACKLOG
    assert "backlog: c.LISTEN_BACKLOG" in (REPO / "servers/frameworks/fastify.js").read_text()


def test_wrk_counts_a_timeout_at_autocannons_limit_not_its_own_2_s(tmp_path):
    target = loadgen.Target(host="127.0.0.1", port=1, path="/hello", connections=512, cpus=[0], scratch=tmp_path)
    wrk = loadgen.Wrk(target, clients.Stop("duration", 5), 3, (None, None), None, lua=tmp_path / "r.lua")
    args = wrk.args(clients.Stop("duration", 5))
    assert args[args.index("--timeout") + 1] == f"{loadgen.RESPONSE_TIMEOUT_S}s" == "10s"


@pytest.mark.skipif(verify.listen_overflows() is None, reason="needs Linux's /proc/net/netstat")
@pytest.mark.parametrize("name", ["node-http", "fastify3"])
def test_a_stopped_server_queues_600_connections_without_overflow(name, project, tmp_path):
    # Node's default backlog (511) overflows here: the 512th handshake waits for a SYN retransmit, which a
    # load generator opening 512 connections at once measured as the server's latency.
    port = procs.free_port()
    env = {"PATH": os.environ["PATH"], "PORT": str(port), "PGHOST": "127.0.0.1", "PGPORT": "1", "PGUSER": "x"}
    proc = node_server.start("node", project / "servers" / f"{name}.js", env, procs.job_cpus(), tmp_path / "server.log")
    socks = []
    try:
        node_server.wait_ready(proc, name, tmp_path / "server.log")
        os.kill(proc.pid, signal.SIGSTOP)  # nothing accepts: every connection waits in the listen queue
        before = verify.listen_overflows()
        for _ in range(600):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
            socks.append(s)
        time.sleep(0.5)
        assert verify.listen_overflows() - before == 0
    finally:
        for s in socks:
            s.close()
        os.kill(proc.pid, signal.SIGCONT)
        proc.kill()
        proc.wait(timeout=10)


def test_ab_close_opens_a_connection_per_request_where_ab_keeps_them(tmp_path):
    """Seed 002 ran ab without -k: ab_close sends its requests on a new connection each, ab -k on its few; counted
    by a real server's accepts (Python's, which keeps an HTTP/1.0 keep-alive connection open when asked)."""
    import http.server
    import subprocess
    import threading

    accepted = []

    class Counting(http.server.ThreadingHTTPServer):
        def get_request(self):
            accepted.append(1)
            return super().get_request()

    class Hello(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            body = b'{"hello":"world"}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            if self.headers.get("Connection", "").lower() == "keep-alive":
                self.send_header("Connection", "Keep-Alive")  # ab -k reuses a connection only when told so
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = Counting(("127.0.0.1", 0), Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        target = loadgen.Target("127.0.0.1", server.server_address[1], "/hello", 4, [0], tmp_path)
        stop = clients.Stop("count", 200)
        counts = {}
        for kind in (loadgen.AbClose, loadgen.Ab):
            accepted.clear()
            args = kind(target, stop, 0, (None, None), None).args(stop)
            done = subprocess.run(["ab", *args], capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
            assert loadgen.parse_ab(done.stdout)["requests"] == 200
            counts[kind.name] = len(accepted)
        # At least one connection per request without -k (ab may open one more: 201 was read once in a full
        # suite); with -k no more than its 4 connections.
        assert counts["ab_close"] >= 200 and counts["ab"] <= 4, counts
    finally:
        server.shutdown()
        server.server_close()
