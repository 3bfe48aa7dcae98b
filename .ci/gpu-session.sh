#!/usr/bin/env bash
# One call on the GPU machine (the `device` tool): install the device kit, run the GPU tests, then the study.
# Usage: bash .ci/gpu-session.sh [tests|study|all] [config items, e.g. 'sizes=[256]' ...]
# Extra snakemake flags (e.g. --forcerun benchmark_gpu) go in $SNAKEMAKE_FLAGS.
# A study longer than one call resumes from the last call's study.tar.gz: copy it into an ignored folder that
# travels (carry), and set RESUME_FROM to it; finished jobs are kept, only the missing ones run. Keep
# STUDY_TIMEOUT a minute or more inside the call's limit: snakemake gets SIGTERM, then SIGKILL 20 s later.
# Everything worth keeping lands in $OUT (logs, and study.tar.gz with tables, figures, report and result files).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-session-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
stage=${1:-all}
shift || true

source .devkit/install.sh || exit 1
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >"$OUT/install.log" 2>&1 \
    || { cat "$OUT/install.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv \
    | tee "$OUT/gpu-state-before.csv"
status=0

if [[ $stage == tests || $stage == all ]]; then
    echo "== pytest -m gpu"
    python3 -m pytest -m gpu -q -p no:cacheprovider 2>&1 | tee "$OUT/pytest-gpu.log" | tail -25
    [[ ${PIPESTATUS[0]} == 0 ]] || status=1
fi

if [[ -n ${RESUME_FROM:-} ]]; then
    echo "== resuming from $RESUME_FROM"
    tar xzf "$RESUME_FROM" || exit 1
fi

archive() {
    tar czf "$OUT/study.tar.gz.part" results/tables results/figures results/runs results/benchmarks results/kernels \
        report logs .snakemake/log 2>/dev/null
    mv -f "$OUT/study.tar.gz.part" "$OUT/study.tar.gz"
}

if [[ $stage == study || $stage == all ]]; then
    # A call cut off at its time limit still returns what is under $OUT: archive the finished jobs every minute,
    # so that they come back even then (2026-11-22: a cut-off call returned nothing but its logs).
    (while sleep 60; do archive; done) &
    archiver=$!
    echo "== snakemake study"
    start=$(date +%s)
    timeout -k 20 "${STUDY_TIMEOUT:-86400}" python3 -m snakemake --cores 16 --resources gpu=1 --keep-going --rerun-incomplete ${SNAKEMAKE_FLAGS:-} --config threads=16 "$@" \
        >"$OUT/snakemake.log" 2>&1
    rc=$?
    echo "snakemake exit $rc after $(( $(date +%s) - start )) s" | tee -a "$OUT/snakemake.log"
    [[ $rc == 0 ]] || { status=1; tail -40 "$OUT/snakemake.log"; }
    kill "$archiver" 2>/dev/null
    archive
fi
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/gpu-state-after.csv"
exit $status
