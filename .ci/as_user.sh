#!/usr/bin/env bash
# CI, second part: the tiny end-to-end run again as an ordinary user, so the non-root path
# (PostgreSQL run as the user itself, a virtual environment under a home of mode 0700,
# the measurement lock shared with root's runs) cannot rot while the suite runs as root.
# The user gets a copy of this checkout's files (tracked and not ignored: what a fresh
# clone has, plus uncommitted edits) in its own home, and sets it up with the README's
# command, as a user would. .ci/run bounds it to what is left of its 60 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "as_user: not root, so this run already was the ordinary user's; nothing more to do"
  exit 0
fi
user=nodebench-ci
id -u "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
home=$(getent passwd "$user" | cut -d: -f6)
chmod 700 "$home"
dest="$home/nodebench"
rm -rf "$dest"
runuser -u "$user" -- mkdir "$dest"
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | runuser -u "$user" -- tar -xf - -C "$dest"
# The tests that the tiny run (conftest's `project`) serves and that need no browser: every
# cell measured and checked, the records, the tables and summary, nothing rerun, and the job's
# database refusing connections without its password.
tests=(
  tests/test_e2e.py::test_every_cell_of_the_matrix_was_measured
  tests/test_e2e.py::test_windows_and_counts_line_up
  tests/test_e2e.py::test_database_did_the_work
  tests/test_e2e.py::test_server_and_client_ran_on_different_cpus
  tests/test_e2e.py::test_records_carry_identity_and_provenance
  tests/test_e2e.py::test_summary_and_manifest
  tests/test_e2e.py::test_rerun_with_nothing_changed_does_nothing
  tests/test_database_private.py::test_a_jobs_database_admits_only_that_job
)
# runuser keeps the environment (a pip index or proxy CI may set) but for HOME and the like;
# root's own Python (e.g. under /root/.pyenv) is out of the user's reach, so setup.sh finds
# the system's python3.
cd "$dest"
runuser -u "$user" -- env HOME="$home" bash scripts/setup.sh
runuser -u "$user" -- env HOME="$home" .venv/bin/python -m pytest "${tests[@]}"
