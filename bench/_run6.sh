S="4096x4096x4096 8192x8192x8192"
python3 bench/tc_bench.py --out $OUT/a --variants 8 8pf 8gn 8p128 8pnone --batch 10 > $OUT/a.log 2>&1; grep -A7 "=== correctness" $OUT/a.log; grep -A30 "=== timing" $OUT/a.log | tail -21
python3 bench/tc_bench.py --out $OUT/b --variants 8pnone 8p128 8gn 8pf 8 --batch 10 --time-shapes $S > $OUT/b.log 2>&1; grep -A30 "=== timing" $OUT/b.log | tail -21
