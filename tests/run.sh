#!/usr/bin/env bash
# The whole test suite on a fresh Debian machine (as root) or any Linux box:
# system packages that make features testable (when apt is available), a
# virtual environment with psuite and its test dependencies, lint, pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        gcc g++ gcc-multilib libc6-dev python3-venv python3-dev binutils gfortran libpapi7.0 papi-tools linux-perf openmpi-bin libopenmpi-dev strace libfuse2 libunwind8 golang-go postgresql \
        chromium chromium-driver gnuplot-nox groff-base >/dev/null
    # npm installs speedscope for the export tests; a NodeSource nodejs
    # brings its own npm, which Debian's npm package would conflict with
    command -v npm >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null
fi

python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q -e '.[test]'
ruff check .
python -m pytest "$@"
