S="4096x4096x4096 8192x8192x8192"
python3 bench/tc_bench.py --out $OUT/a --variants 12 12dr2 --batch 10 > $OUT/a.log 2>&1; grep -A4 "=== correctness" $OUT/a.log; grep -A20 "=== timing" $OUT/a.log | tail -5
python3 bench/tc_bench.py --out $OUT/b --variants 12dr2 12 8dr2 8 --batch 10 --time-shapes 2048x2048x2048 $S > $OUT/b.log 2>&1; grep -A20 "=== timing" $OUT/b.log | tail -19
python3 bench/tc_bench.py --out $OUT/c --variants 8 8dr2 --batch 10 --time-shapes 2048x2048x2048 $S > $OUT/c.log 2>&1; grep -A20 "=== timing" $OUT/c.log | tail -13
