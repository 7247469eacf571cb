#!/usr/bin/env bash
# The prepared many-core run (docs/manycore.md, "The prepared run"), one command:
#   (a) the STPA configurations bench.manycore plans that the committed session lacks,
#   (b) bench.efficiency at 4, 8 and 16 threads (docs/manycore.md, "Next"),
#   (c) the shipped predictor against fresh scans of two configurations it never saw
#       (python -m seer.stpa.holdout).
# Everything goes under DIR. Each part has its own time limit, so the whole run stays
# under the device's 10 minutes per command (about 8.5 minutes; --tiny: about 2).
#
#   dist/bundle/run.sh bash scripts/manycore-run.sh "$OUT/prepared"          # 16 cores
#   .venv/bin/python -m ... is not needed: PYTHON=.venv/bin/python bash scripts/manycore-run.sh /tmp/p --tiny
set -uo pipefail
DIR=${1:?usage: scripts/manycore-run.sh DIR [--tiny]}
TINY=${2:-}
PY=${PYTHON:-python}
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
mkdir -p "$DIR/manycore"
status=0
if [ "$TINY" = "--tiny" ]; then
    STPA=(--smoke --budget 30); STPA_LIMIT=60
    EFF=(--smoke --threads 2 --only pcs); EFF_LIMIT=90
    HOLD=(--tiny); HOLD_LIMIT=120
else
    STPA=(--budget 150); STPA_LIMIT=190
    EFF=(--threads 4 8 16 --only aircraft pcs --rounds 2 --steps 4); EFF_LIMIT=220
    HOLD=(); HOLD_LIMIT=100
fi
# (a) bench.manycore skips what a session in its folder holds: start from the committed one.
cp bench/results/manycore/session-*.json "$DIR/manycore/"
ls "$DIR/manycore" > "$DIR/manycore/.committed"
echo "[prepared] (a) STPA configurations, limit ${STPA_LIMIT}s" >&2
timeout -k 10 "$STPA_LIMIT" "$PY" -m bench.manycore --only stpa --out "$DIR/manycore" \
    "${STPA[@]}" > "$DIR/stpa.log" 2>&1 || { echo "[prepared] (a) exit $?" >&2; status=1; }
echo "[prepared] (b) bench.efficiency, limit ${EFF_LIMIT}s" >&2
timeout -k 10 "$EFF_LIMIT" "$PY" -m bench.efficiency "${EFF[@]}" --out "$DIR/efficiency.json" \
    > "$DIR/efficiency.log" 2>&1 || { echo "[prepared] (b) exit $?" >&2; status=1; }
echo "[prepared] (c) predictor against fresh scans, limit ${HOLD_LIMIT}s" >&2
timeout -k 10 "$HOLD_LIMIT" "$PY" -m seer.stpa.holdout "${HOLD[@]}" --out "$DIR/holdout.json" \
    > "$DIR/holdout.log" 2>&1 || { echo "[prepared] (c) exit $?" >&2; status=1; }
for f in stpa efficiency holdout; do tail -n 3 "$DIR/$f.log" >&2; done
echo "[prepared] done (status $status): $DIR" >&2
exit $status
