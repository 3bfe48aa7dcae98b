S="4096x4096x4096 8192x8192x8192 6144x6144x6144"
python3 bench/tc_bench.py --out $OUT/a --variants 8 8gn 8gn2 8gn4 8gn16 12 12gn --batch 10 --time-shapes $S > $OUT/a.log 2>&1; grep -A8 "=== correctness" $OUT/a.log; grep -A40 "=== timing" $OUT/a.log | tail -36
python3 bench/tc_bench.py --out $OUT/b --variants 12gn 12 8gn16 8gn4 8gn2 8gn 8 --batch 10 --time-shapes $S > $OUT/b.log 2>&1; grep -A40 "=== timing" $OUT/b.log | tail -36
