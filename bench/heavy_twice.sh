#!/usr/bin/env bash
# On the GPU machine (the `device` tool, carry .devkit): the jobs nearest the power limit (cuBLAS, dmma, the
# wgmma and warptiled rungs at 2048-8192) as two scratch studies one after the other, then their comparison
# ($OUT/compare.md) and each job's burst bookkeeping (samples at the fastest level, cool-downs and their wait).
# A quick check of the burst rule on one machine before a full study on two.  bash bench/heavy_twice.sh
set -u
source .devkit/install.sh >/dev/null 2>&1 || exit 1
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . > $OUT/install.log 2>&1 || exit 1
items=('methods=[cublas,dmma,wgmma_warp_specialized,warptiled]' 'dtypes=[float16,bfloat16,float32,float64]' 'sizes=[2048,4096,8192]')
for run in A B; do
  d=/tmp/check-$run; rm -rf $d; mkdir -p $d
  tar --exclude=./results/reference --exclude=./.snakemake --exclude=./results/runs --exclude=./results/tables -cf - . | tar -xf - -C $d
  (cd $d && timeout 280 python3 -m snakemake --cores 4 --resources gpu=1 --keep-going --config threads=4 "${items[@]}" > $OUT/snakemake-$run.log 2>&1; echo "exit $?" >> $OUT/snakemake-$run.log)
  cp $d/results/tables/results.csv $OUT/results-$run.csv 2>/dev/null
  tail -2 $OUT/snakemake-$run.log
done
python3 -m matmul_study compare $OUT/results-A.csv $OUT/results-B.csv --markdown $OUT/compare.md > $OUT/compare.txt 2>&1; tail -20 $OUT/compare.txt
python3 - <<'PY'
import os, pandas as pd
out = os.environ["OUT"]
for run in "AB":
    d = pd.read_csv(f"{out}/results-{run}.csv")
    d = d[d.env_device_kind == "gpu"]
    cols = ["method", "dtype", "m", "timing_launches_per_sample", "burst_gflops", "burst_samples_kept", "burst_samples_at_fastest",
            "burst_samples_total", "burst_cool_downs", "burst_recovery_s", "burst_settle_s", "overhead_job_s", "burst_note"]
    print(run); print(d[[c for c in cols if c in d]].to_string())
PY
