# Sourced by scripts/demo and scripts/test: create .venv (if needed) and install bridgepack with its extras.
# CPU machines: constraints-cpu.txt pins torch==2.13.0 (an unpinned torch pulls a multi-GB CUDA build).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The interpreter that makes .venv and whose pip installs into it; resolved now, before .venv is first on PATH.
PY="$(command -v "${PYTHON:-python3}")"
if [ ! -x "$ROOT/.venv/bin/python" ]; then
  # Without pip: ensurepip's copy took ~4 s, and pip is installed with the rest below.
  "$PY" -m venv --without-pip "$ROOT/.venv"
fi
# shellcheck disable=SC1091
. "$ROOT/.venv/bin/activate"
# Bytecode is written where the scripts run (some machines set PYTHONDONTWRITEBYTECODE), and the install compiles
# none: compiling every module of torch, transformers and ray costs ~40 s of a fresh install,
# while the demo and the suite import a fraction of them, each compiled once, on first import.
unset PYTHONDONTWRITEBYTECODE
STAMP="$ROOT/.venv/.bridgepack-installed"
EXTRAS="$ROOT[${BRIDGEPACK_EXTRAS:-all,dev}]"

# torch through pip, which takes the CPU build from the machine's own pip configuration (find-links) where it
# has one; uv would not look there and could pull a multi-GB CUDA build. The interpreter's own pip installs it
# and uv into .venv (--python: the venv needs no pip of its own for that). Everything else through uv, which
# downloads and unpacks in parallel (6-8 s with an empty cache on 2 cores, where pip took 29 s) and, as pip's
# --no-compile, writes no bytecode; torch is named there again, so its requirements are installed whatever the
# extras (the constraint keeps the build that is there). --native-tls: the system's certificates, as pip uses.
install_with_uv() {
  "$PY" -m pip --python "$ROOT/.venv/bin/python" install --quiet --no-compile --no-deps \
    -c "$ROOT/constraints-cpu.txt" torch "uv==0.13.9" || return 1
  "$ROOT/.venv/bin/uv" pip install --quiet --native-tls --python "$ROOT/.venv/bin/python" \
    -c "$ROOT/constraints-cpu.txt" --upgrade-package pip pip torch -e "$EXTRAS"
}

# What is left where uv cannot reach an index pip can, or the interpreter's pip cannot install into .venv.
install_with_pip() {
  python -m pip --version >/dev/null 2>&1 || python -m ensurepip --upgrade >/dev/null
  python -m pip install --quiet --upgrade pip
  python -m pip install --quiet --no-compile -c "$ROOT/constraints-cpu.txt" torch -e "$EXTRAS"
}

if [ ! -f "$STAMP" ] || [ "$ROOT/pyproject.toml" -nt "$STAMP" ] || [ "$ROOT/constraints-cpu.txt" -nt "$STAMP" ]; then
  install_with_uv || install_with_pip
  touch "$STAMP"
fi
