# Sourced by scripts/demo and scripts/test: create .venv (if needed) and install bridgepack with its extras.
# CPU machines: constraints-cpu.txt pins torch==2.13.0 (an unpinned torch pulls a multi-GB CUDA build).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
if [ ! -x "$ROOT/.venv/bin/python" ]; then
  "$PY" -m venv "$ROOT/.venv"
fi
# shellcheck disable=SC1091
. "$ROOT/.venv/bin/activate"
# Bytecode is written where the scripts run (some machines set PYTHONDONTWRITEBYTECODE), and pip compiles none at
# install (--no-compile): compiling every module of torch, transformers and ray costs ~40 s of a fresh install,
# while the demo and the suite import a fraction of them, each compiled once, on first import.
unset PYTHONDONTWRITEBYTECODE
STAMP="$ROOT/.venv/.bridgepack-installed"
if [ ! -f "$STAMP" ] || [ "$ROOT/pyproject.toml" -nt "$STAMP" ] || [ "$ROOT/constraints-cpu.txt" -nt "$STAMP" ]; then
  python -m pip install --quiet --upgrade pip
  python -m pip install --quiet --no-compile -c "$ROOT/constraints-cpu.txt" torch
  python -m pip install --quiet --no-compile -c "$ROOT/constraints-cpu.txt" -e "$ROOT[${BRIDGEPACK_EXTRAS:-all,dev}]"
  touch "$STAMP"
fi
