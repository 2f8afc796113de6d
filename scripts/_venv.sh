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
# Bytecode is written where the scripts run (some machines set PYTHONDONTWRITEBYTECODE), and the install compiles
# none: compiling every module of torch, transformers and ray costs ~40 s of a fresh install,
# while the demo and the suite import a fraction of them, each compiled once, on first import.
unset PYTHONDONTWRITEBYTECODE
STAMP="$ROOT/.venv/.bridgepack-installed"
if [ ! -f "$STAMP" ] || [ "$ROOT/pyproject.toml" -nt "$STAMP" ] || [ "$ROOT/constraints-cpu.txt" -nt "$STAMP" ]; then
  # torch alone through pip, which takes the CPU build from the machine's own pip configuration (find-links)
  # where it has one; uv would not look there and could pull a multi-GB CUDA build. Its dependencies come
  # with the rest (torch is named there again: whatever the extras, what it requires is installed; the
  # constraint keeps the build that is there).
  python -m pip install --quiet --no-compile --no-deps -c "$ROOT/constraints-cpu.txt" torch
  # Everything else through uv: it downloads and unpacks in parallel (6-8 s with an empty cache on 2 cores,
  # where pip took 29 s with a warm one) and, as --no-compile above, writes no bytecode. --native-tls: the
  # system's certificates, as pip uses. pip is what is left where uv cannot reach an index pip can.
  extras="$ROOT[${BRIDGEPACK_EXTRAS:-all,dev}]"
  if ! { python -m pip install --quiet "uv==0.13.9" &&
    uv pip install --quiet --native-tls -c "$ROOT/constraints-cpu.txt" --upgrade-package pip \
      pip torch -e "$extras"; }; then
    python -m pip install --quiet --upgrade pip
    python -m pip install --quiet --no-compile -c "$ROOT/constraints-cpu.txt" torch -e "$extras"
  fi
  touch "$STAMP"
fi
