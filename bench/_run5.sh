S="2048x2048x2048 4096x4096x4096 8192x8192x8192"
python3 bench/tc_bench.py --out $OUT/a --variants 8 8h 8hdr4 --batch 10 > $OUT/a.log 2>&1; grep -A5 "=== correctness" $OUT/a.log; grep "FAIL" $OUT/a.log | head; grep -A20 "=== timing" $OUT/a.log | tail -13
python3 bench/tc_bench.py --out $OUT/b --variants 8hdr4 8h 8 --batch 10 --time-shapes $S > $OUT/b.log 2>&1; grep -A22 "=== timing" $OUT/b.log | tail -19
python3 bench/tc_bench.py --out $OUT/d --variants 8trace 8htrace --batch 10 --time-shapes 4096x4096x4096 > $OUT/d.log 2>&1
grep "trace f16" $OUT/d.log | python3 -c "
import sys, json
for l in sys.stdin:
    d = json.loads(l.split(': ',1)[1]); print(l.split(']')[0], d.get('total'), d['items'])"
