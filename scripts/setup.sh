#!/usr/bin/env bash
# Create .venv with a Python >= 3.12 interpreter (egglog 14 needs it) and install the project.
# Usage: scripts/setup.sh [EXTRAS]   (default: no extras)
#   scripts/setup.sh iree   IREE 3.13's tools too, so that explore shows IREE's own plan beside ours
#   scripts/setup.sh test   the test suite's tools (IREE included)
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
find_python() {
  local c
  for c in python3.13 python3.12 \
           "$HOME"/.pyenv/versions/3.13*/bin/python3 "$HOME"/.pyenv/versions/3.12*/bin/python3 \
           /usr/local/bin/python3.1[23] /usr/bin/python3.1[23] python3; do
    if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      command -v "$c"; return 0
    fi
  done
  return 1
}
if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
  py=$(find_python) || { echo "setup.sh: no Python >= 3.12 found (try: pyenv install 3.12)" >&2; exit 1; }
  rm -rf .venv
  "$py" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
if [ -n "$extras" ]; then
  .venv/bin/python -m pip install -q -e ".[$extras]"
else
  .venv/bin/python -m pip install -q -e .
fi
