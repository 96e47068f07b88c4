#!/usr/bin/env bash
# Time to ready (docs/performance.md#response-serializers): starts `wsvc serve` of the checkout given
# (default: this one, built with `npm run build:server`) on a new SQLite file, waits until /healthz
# answers, stops it. Time it as a whole process, e.g. with farm-bench against another checkout.
set -euo pipefail
dir=${1:-$(dirname "$0")/..}
port=$((20000 + RANDOM % 20000))
db=$(mktemp -d)
trap 'rm -rf "$db"' EXIT
cd "$dir"
DATABASE_URL="sqlite:$db/ready.db" PORT=$port HOST=127.0.0.1 LOG_LEVEL=silent node bin/wsvc.js serve >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 3000); do
  curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { echo "serve-ready: wsvc serve exited before answering" >&2; exit 1; }
  sleep 0.02
done
kill "$pid"
wait "$pid" 2>/dev/null || true
