#!/usr/bin/env bash
# Installs bench/webshop's peers under ~/.cache/throng-bench, not system-wide:
# Locust (PyPI, with FastHttpUser) in a Python venv, Artillery (npm) in an npm
# prefix (Playwright's browser download skipped: the journeys are HTTP only).
set -euo pipefail
dir=${THRONG_BENCH_CACHE:-$HOME/.cache/throng-bench}
mkdir -p "$dir/art"
[ -x "$dir/venv/bin/locust" ] || { python3 -m venv "$dir/venv" && "$dir/venv/bin/pip" install -q locust; }
[ -x "$dir/art/node_modules/.bin/artillery" ] || (cd "$dir/art" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --no-audit --no-fund artillery@2)
echo "locust:    $dir/venv/bin/locust ($("$dir/venv/bin/locust" --version 2>&1 | head -n 1))"
echo "artillery: $dir/art/node_modules/.bin/artillery"
