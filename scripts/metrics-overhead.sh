#!/bin/bash
# metrics-overhead.sh [WARPKV_BINARY] measures what Prometheus scraping
# costs warpkv serve (--device cpu): the server's CPU time per /metrics
# scrape (its own process_cpu_seconds_total over 2000 scrapes, no load),
# then loadgen's throughput and p99 in alternating 5 s rounds without and
# with a scraper polling /metrics every 100 ms.
set -eu
W=${1:-warpkv}
MPORT=${MPORT:-19322}
log=$(mktemp)
"$W" serve -p 0 --device cpu --metrics-addr 127.0.0.1:$MPORT >"$log" 2>&1 &
SP=$!
trap 'kill $SP 2>/dev/null; rm -f "$log" /tmp/metrics-overhead.$$.json' EXIT
sleep 1
ADDR=$(grep -o 'protocols" addr=[0-9.:]*' "$log" | sed 's/.*addr=//')
URL=http://127.0.0.1:$MPORT/metrics
cpu() { curl -s $URL | awk '/^process_cpu_seconds_total/{print $2}'; }
"$W" loadgen --addr "$ADDR" --workloads b --mix 95:5 --dist uniform --duration 1s --warmup 200ms --quiet >/dev/null
c0=$(cpu)
t0=$(date +%s.%N)
for i in $(seq 2000); do curl -s -o /dev/null $URL; done
t1=$(date +%s.%N)
c1=$(cpu)
echo "2000 scrapes of $(curl -s $URL | wc -c) bytes: server CPU $(echo "$c1 - $c0" | bc) s, wall $(echo "$t1 - $t0" | bc) s"
run() {
	"$W" loadgen --addr "$ADDR" --workloads b --mix 95:5 --dist uniform --duration 5s --warmup 1s --preload once --quiet --json /tmp/metrics-overhead.$$.json >/dev/null
	python3 -c "
import json; r=json.load(open('/tmp/metrics-overhead.$$.json'))[0]['Result']
print('%.0f ops/s, p99 %.0f us' % (r['OpsPerSec'], r['Latency']['P99']/1e3))"
}
for round in 1 2 3 4 5; do
	echo "round $round, no scraper:   $(run)"
	(while true; do curl -s -o /dev/null $URL; sleep 0.1; done) &
	CP=$!
	echo "round $round, scraper 10/s: $(run)"
	kill $CP
	wait $CP 2>/dev/null || true
done
