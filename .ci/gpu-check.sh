#!/usr/bin/env bash
# One call on a GPU machine with no registry: install as the README says (offline), run the GPU tests, then the study.
# Usage: bash .ci/gpu-check.sh [STAGES] [config items for the study, e.g. 'sizes=[256]' ...]
# STAGES: one word or several in quotes, of tests, shapes, sweep, study; all = "tests study".
# sweep: a small study in a scratch copy of the repo (the main results stay as they are), with the config items in
# $SWEEP_CONFIG (default: every dtype, int32 included, every method, at 1000x1200x800 and 17x65x33); its results
# come back as $OUT/sweep.tar.gz.
# tests: TEST_PROCESSES=N (N > 1) runs the GPU suite in N processes at once, in TEST_PARTS parts, all within
# TEST_TIMEOUT seconds (below).
# Extra snakemake flags (e.g. --forcerun benchmark_gpu) go in $SNAKEMAKE_FLAGS. The study uses every GPU of the
# host (--resources gpu=N, N from nvidia-smi) unless $GPUS says how many.
# A study longer than one call resumes from the last call's study.tar.gz: copy it into an ignored folder that
# travels (carry), and set RESUME_FROM to it; finished jobs are kept, only the missing ones run (the shape suite:
# SHAPES_RESUME_FROM, the last call's shapes.tar.gz; SHAPES_TIMEOUT as STUDY_TIMEOUT). Keep
# STUDY_TIMEOUT a minute or more inside the call's limit: snakemake gets SIGTERM, then SIGKILL 20 s later.
# Everything worth keeping lands in $OUT (logs, and study.tar.gz with tables, figures, report and result files).
# The jobs record the project's commit. On a copied tree whose git metadata is not the commit sent (the device
# tool's copy), name it: MATMUL_STUDY_COMMIT=$(git rev-parse --short=12 HEAD), run where the commit was made.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-check-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
stage=" ${1:-all} "
[[ $stage == " all " ]] && stage=" tests study "
shift || true
has() { [[ $stage == *" $1 "* ]]; }

# The README's offline install: the GPU machine reaches no registry, so the wheels the image lacks (PyCUDA, Snakemake
# and its dependencies) come from a folder that travels with the tree ($WHEELS), then the project itself.
WHEELS=${WHEELS:-.devkit/wheels}
[[ -d $WHEELS ]] || { echo "no wheels at $WHEELS: copy them into an ignored folder that travels (README, install)"; exit 1; }
{ python3 -m pip install -q --no-index --no-deps "$WHEELS"/*.whl \
    && python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . ; } \
    >"$OUT/install.log" 2>&1 || { cat "$OUT/install.log"; exit 1; }
# The GPU image sets PYTHONDONTWRITEBYTECODE=1, so every job's Python would compile this package from source again
# (an editable install writes no bytecode): compile it once, as the first import does on an ordinary machine.
python3 -m compileall -q matmul_study workflow/scripts >/dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv \
    | tee "$OUT/gpu-state-before.csv"
status=0
echo "commit the jobs record: $(python3 -c 'from matmul_study.measure.environment import git_commit; print(git_commit())')"

if has tests; then
    processes=${TEST_PROCESSES:-1}
    if (( processes > 1 )); then
        # The GPU suite in TEST_PROCESSES processes at once, all within TEST_TIMEOUT seconds: the GPU tests outside
        # tests/test_gpu_kernels.py in one, and that file's tests in TEST_PARTS contiguous parts (default: four for
        # each of the other TEST_PROCESSES - 1 processes; MATMUL_STUDY_TEST_SHARD, so that one build's tests stay
        # together and are compiled once) that those processes take in turn, each the next part as it finishes one: a
        # part of slow builds holds one process, not the call. The processes take the host's GPUs in turn and share one
        # build cache. Their logs come back as $OUT/pytest-gpu.tar.gz, their last lines in $OUT/pytest-gpu.log, with
        # the parts the timeout cut off or never started, to run in the next call (MATMUL_STUDY_TEST_SHARD=i/n).
        workers=$(( processes - 1 ))
        parts=${TEST_PARTS:-$(( 4 * workers ))}
        echo "== pytest -m gpu in $processes processes, tests/test_gpu_kernels.py in $parts parts"
        gpus=${GPUS:-$(nvidia-smi -L | grep -c '^GPU')}
        (( gpus > 0 )) || gpus=1
        export MATMUL_STUDY_BUILD_CACHE=${MATMUL_STUDY_BUILD_CACHE:-/tmp/matmul-study-builds}
        logs=/tmp/pytest-gpu-logs && rm -rf "$logs" && mkdir -p "$logs"
        deadline=$(( $(date +%s) + ${TEST_TIMEOUT:-86400} ))
        # run_part I: the I-th of the parts, within what is left of TEST_TIMEOUT (none left: not started)
        run_part() {
            local name left=$(( deadline - $(date +%s) ))
            name=$(printf "part%03d-of-%d" "$1" "$parts")
            if (( left <= 0 )); then
                echo "not started: TEST_TIMEOUT had passed" >"$logs/pytest-gpu-$name.log"
                return 1
            fi
            CUDA_VISIBLE_DEVICES=$(( $1 % gpus )) MATMUL_STUDY_TEST_SHARD="$1/$parts" timeout -k 20 "$left" \
                python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_kernels.py \
                >"$logs/pytest-gpu-$name.log" 2>&1
        }
        export -f run_part
        export deadline parts gpus logs
        CUDA_VISIBLE_DEVICES=$(( workers % gpus )) timeout -k 20 "${TEST_TIMEOUT:-86400}" \
            python3 -m pytest -m gpu -q -p no:cacheprovider --ignore=tests/test_gpu_kernels.py \
            >"$logs/pytest-gpu-outside.log" 2>&1 &
        outside=$!
        seq 1 "$parts" | xargs -P "$workers" -I{} bash -c 'run_part {}' || status=1
        wait "$outside" || status=1
        # Each log's last line; a part's pytest that finished ends on its summary ("... in 12.34s"), the other parts
        # are to run again.
        unfinished=()
        for log in "$logs"/*.log; do
            last=$(tail -n 1 "$log")
            echo "$(basename "$log"): $last"
            if [[ $log == */pytest-gpu-part* && ! $last =~ \ in\ [0-9.]+s ]]; then
                unfinished+=("$(basename "$log" .log | sed 's/^pytest-gpu-part0*\([0-9]*\)-of-/\1\//')")
            fi
        done >"$OUT/pytest-gpu.log"
        cat "$OUT/pytest-gpu.log"
        grep -h '^FAILED\|^ERROR' "$logs"/*.log | tee -a "$OUT/pytest-gpu.log" | head -40
        (( ${#unfinished[@]} == 0 )) \
            || echo "parts not finished (MATMUL_STUDY_TEST_SHARD): ${unfinished[*]}" | tee -a "$OUT/pytest-gpu.log"
        tar czf "$OUT/pytest-gpu.tar.gz" -C "$logs" .
    else
        echo "== pytest -m gpu"
        python3 -m pytest -m gpu -q -p no:cacheprovider 2>&1 | tee "$OUT/pytest-gpu.log" | tail -25
        [[ ${PIPESTATUS[0]} == 0 ]] || status=1
    fi
fi

# resume ARCHIVE: unpack a cut-off run's archive (below) into the current folder, a copy of the repo newer than the
# archived outputs, and date every other file a day back, so that Snakemake's mtime trigger reruns nothing that
# finished (its metadata, in the archive, covers the rest); only the missing jobs run.
resume() {
    echo "== resuming from $1 in $PWD"
    tar tzf "$1" | sed 's|/$||' >/tmp/resumed-files || exit 1
    tar xzf "$1" || exit 1
    find . -path ./.git -prune -o -path ./.devkit -prune -o -type f -print | sed 's|^\./||' \
        | grep -vxFf /tmp/resumed-files | xargs -d '\n' touch -d "@$(( $(date +%s) - 86400 ))"
}
# archive_run FOLDER ARCHIVE: what a run in FOLDER has finished, as one archive that `resume` takes up again.
archive_run() {
    tar czf "$2.part" -C "$1" results/tables results/figures results/runs results/benchmarks results/kernels \
        report logs .snakemake/log .snakemake/metadata 2>/dev/null
    mv -f "$2.part" "$2"
}
archive() { archive_run . "$OUT/study.tar.gz"; }

[[ -n ${RESUME_FROM:-} ]] && resume "$RESUME_FROM"

if has shapes; then
    # The shape suite (shapes.yaml) in a scratch copy, so that the default study's results stay as they are.
    echo "== shape suite in a scratch copy"
    # A suite longer than one call resumes as the study does: SHAPES_RESUME_FROM names the last call's shapes.tar.gz,
    # carried in an ignored folder.
    suite=/tmp/shape-suite
    rm -rf "$suite" && mkdir -p "$suite"
    tar --exclude=./results --exclude=./.snakemake --exclude=./.devkit -cf - . | tar -xf - -C "$suite"
    resume_from=${SHAPES_RESUME_FROM:+$(realpath "$SHAPES_RESUME_FROM")}
    [[ -z $resume_from ]] || (cd "$suite" && resume "$resume_from") || exit 1
    s=$(date +%s)
    (cd "$suite" && timeout -k 20 "${SHAPES_TIMEOUT:-540}" python3 -m snakemake --cores "$(nproc)" --resources gpu=1 \
        --keep-going --configfile shapes.yaml >"$OUT/shapes-snakemake.log" 2>&1)
    echo "shape suite exit $? after $(( $(date +%s) - s )) s" | tee -a "$OUT/shapes-snakemake.log"
    archive_run "$suite" "$OUT/shapes.tar.gz"
fi

if has sweep; then
    echo "== sweep study in a scratch copy"
    sweep=/tmp/sweep-study
    rm -rf "$sweep" && mkdir -p "$sweep"
    tar --exclude=./results/reference --exclude=./.snakemake --exclude=./results/runs --exclude=./results/tables \
        -cf - . | tar -xf - -C "$sweep"
    if [[ -n ${SWEEP_CONFIG:-} ]]; then read -r -a items <<<"$SWEEP_CONFIG"; else
        items=('dtypes=[float16,bfloat16,tf32,float32,float64,int32]' 'sizes=[{m: 1000, k: 1200, n: 800},{m: 17, k: 65, n: 33}]')
    fi
    (cd "$sweep" && timeout -k 20 "${SWEEP_TIMEOUT:-300}" python3 -m snakemake --cores "$(nproc)" \
        --resources gpu="${GPUS:-1}" --keep-going --config threads="$(nproc)" "${items[@]}" \
        >"$OUT/sweep-snakemake.log" 2>&1)
    echo "sweep exit $?" | tee -a "$OUT/sweep-snakemake.log"
    tar czf "$OUT/sweep.tar.gz" -C "$sweep" results/tables results/runs report logs 2>/dev/null
    [[ -f $sweep/results/tables/results.csv ]] && python3 - "$sweep/results/tables/results.csv" <<'PY'
import sys, pandas as pd
d = pd.read_csv(sys.argv[1])
print(d.groupby(["dtype", "status"]).size().unstack(fill_value=0).to_string())
print("methods:", sorted(d["method"].unique()))
PY
fi

if has study; then
    # A call cut off at its time limit still returns what is under $OUT: archive the finished jobs every minute,
    # so that they come back even then (2026-11-22: a cut-off call returned nothing but its logs).
    (while sleep 60; do archive; done) &
    archiver=$!
    gpus=${GPUS:-$(nvidia-smi -L | grep -c '^GPU')}
    cores=${CORES:-$(nproc)}  # CORES=1: the README's plain `snakemake --cores 1`, timed
    echo "== snakemake study on $gpus GPU(s), $cores cores"
    start=$(date +%s)
    timeout -k 20 "${STUDY_TIMEOUT:-86400}" python3 -m snakemake --cores "$cores" --resources gpu="$gpus" --keep-going \
        ${SNAKEMAKE_FLAGS:-} "$@" >"$OUT/snakemake.log" 2>&1
    rc=$?
    echo "snakemake exit $rc after $(( $(date +%s) - start )) s" | tee -a "$OUT/snakemake.log"
    [[ $rc == 0 ]] || { status=1; tail -40 "$OUT/snakemake.log"; }
    kill "$archiver" 2>/dev/null
    archive
    if [[ -f results/tables/results.csv ]]; then
        # which GPU each job held, and whether two jobs ever shared one (exit 1 if so)
        python3 -m matmul_study gpus results/tables/results.csv 2>&1 | tee "$OUT/gpus.txt" | tail -3
        # the pipeline's cuBLAS rows against CuPy's own gemmEx, measured now on the same card
        python3 bench/cublas_check.py results/tables/results.csv >"$OUT/cublas-check.txt" 2>&1
        tail -12 "$OUT/cublas-check.txt"
    fi
fi
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/gpu-state-after.csv"
exit $status
