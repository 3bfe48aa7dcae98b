S="2048x2048x2048 4096x4096x4096 8192x8192x8192"
python3 bench/tc_bench.py --out $OUT/a --variants 8 8late --batch 10 > $OUT/a.log 2>&1; tail -16 $OUT/a.log
python3 bench/tc_bench.py --out $OUT/b --variants 8late 8 --batch 10 --time-shapes $S > $OUT/b.log 2>&1; tail -8 $OUT/b.log
python3 bench/tc_bench.py --out $OUT/c --variants 8 8late --batch 10 --time-shapes $S > $OUT/c.log 2>&1; tail -8 $OUT/c.log
python3 bench/tc_bench.py --out $OUT/d --variants 8trace 8latetrace --batch 10 --time-shapes 4096x4096x4096 > $OUT/d.log 2>&1
grep "trace f16" $OUT/d.log | python3 -c "
import sys, json
for l in sys.stdin:
    d = json.loads(l.split(': ',1)[1]); print(l.split(']')[0], {k: d.get(k) for k in ('previous_grid_done','producer_ready','first_empty','first_copy','first_data','first_data_after_wait','total','entry_to_wait_release_ns','wait_release_spread_ns')}, d['items'][0])"
