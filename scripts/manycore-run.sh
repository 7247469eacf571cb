#!/usr/bin/env bash
# The prepared many-core run (docs/manycore.md), one command: the project's own parts at
# more threads, each under its own time limit, everything under DIR:
#   (a) bench.efficiency: thread scans of Aircraft 800, PCS 1600 (cost_us=10) and the
#       PCS hotspot of peak 8, every runtime, with the ceiling at each thread count;
#   (b) bench.switches: the A/B of every switch (per-worker copies, steal back-off) at 4,
#       8 and 16 threads on PCS 1600 (cost_us=10), each beside the ceiling independent:T;
#   (c) bench.compare --perf: Linux perf profiles of seer(16) and independent(16) on PCS
#       (skipped, and said so, where perf is not installed);
#   (d) bench.efficiency --balance: per-thread CPU at 16 threads, Aircraft and PCS;
#   (e) seer stpa collect: the STPA configurations the shipped 16-core rows lack.
# About 8.5 minutes in all (--tiny: about 40 s), under the device's 10 minutes per command.
# Then, here: python -m bench.report --manycore DIR.
#
#   dist/bundle/run.sh bash scripts/manycore-run.sh "$OUT/manycore"          # 16 cores
#   PYTHON=.venv/bin/python bash scripts/manycore-run.sh /tmp/mc --tiny      # a check, 2 cores
set -uo pipefail
DIR=${1:?usage: scripts/manycore-run.sh DIR [--tiny]}
TINY=${2:-}
PY=${PYTHON:-python}
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
mkdir -p "$DIR"
status=0
if [ "$TINY" = "--tiny" ]; then
    SCAN=(--smoke --threads 1 2 --only aircraft pcs10); SCAN_LIMIT=90
    COPIES=(--smoke --threads 2 --only pcs10); COPIES_LIMIT=60
    PERF=(--workload pcs --entities 64 --cost 10 --steps 2); PERF_T=2; PERF_LIMIT=60
    BAL=(--smoke --threads 2); BAL_LIMIT=40
    STPA=(--quick --t-max 2 --budget 1); STPA_LIMIT=60
else
    SCAN=(--threads 1 2 4 8 16 --only aircraft pcs10 pcs_gain8 --rounds 2 --steps 4)
    SCAN_LIMIT=180
    COPIES=(--threads 4 8 16 --only pcs10 --rounds 2 --steps 4); COPIES_LIMIT=120
    PERF=(--workload pcs --entities 1600 --cost 10 --steps 20); PERF_T=16; PERF_LIMIT=80
    BAL=(--threads 16 --steps 10); BAL_LIMIT=25
    STPA=(--missing-from seer/stpa/data/dataset-16core.npz --budget 45); STPA_LIMIT=60
fi
part() {  # name, limit, command...: one part under its limit; its log in DIR/name.log
    local name=$1 limit=$2; shift 2
    echo "[prepared] $name, limit ${limit}s" >&2
    timeout -k 10 "$limit" "$@" > "$DIR/$name.log" 2>&1 || {
        echo "[prepared] $name: exit $?" >&2; status=1; }
    tail -n 2 "$DIR/$name.log" >&2
}
part efficiency "$SCAN_LIMIT" "$PY" -m bench.efficiency "${SCAN[@]}" --out "$DIR/efficiency.json"
part switches "$COPIES_LIMIT" "$PY" -m bench.switches "${COPIES[@]}" --out "$DIR/switches.json"
if command -v perf > /dev/null; then
    part perf "$PERF_LIMIT" "$PY" -m bench.compare --perf "seer:$PERF_T" "independent:$PERF_T" \
        "${PERF[@]}" --out "$DIR/perf.json"
else
    echo "[prepared] perf: not installed here, skipped" >&2
    echo "perf not installed: no profile" > "$DIR/perf.log"
fi
for w in aircraft pcs; do
    only=$w; [ "$w" = pcs ] && only=pcs_gain8
    part "load_balance_$w" "$BAL_LIMIT" "$PY" -m bench.efficiency --balance --only "$only" \
        "${BAL[@]}" --out "$DIR/load_balance_$w.json"
done
part stpa_collect "$STPA_LIMIT" "$PY" -m seer.cli stpa collect "${STPA[@]}" \
    --out "$DIR/stpa_collect.npz"
echo "[prepared] done (status $status): $DIR" >&2
exit $status
