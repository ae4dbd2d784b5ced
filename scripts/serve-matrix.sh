#!/usr/bin/env bash
# serve-matrix.sh: issue 14's end-to-end matrix of the Mega-KV server, in
# about 7 minutes, with warpkv's own "bench serve":
#
#   every Mega-KV workload a-d (8/8, 16/64, 32/512, 128/1024 B),
#   95:5 and 100:0 GET:SET, uniform and Zipf 0.99 keys,
#   single gets and 10-key multi-gets,
#   memcached, warpkv's GPU engine and warpkv's CPU engine,
#   each server alone in its own process on the server CPUs (-t = their
#   number), the load generator in another process on the load CPUs,
#   throughput, p50/p99/p99.9, server CPU time per million operations, and
#   the p99 at 80% of each server's peak (a paced run);
#   then, with the stage profile on, a few workloads on the GPU engine (both
#   search modes) and the CPU engine; a memaslap cross-check; and the table
#   of the issue's targets.
#
# Usage:
#   scripts/serve-matrix.sh pack   # here (with Go): .gpu/warpkv and .gpu/bin/
#                                  # (memcached and memcaslap with their
#                                  # libraries), to carry to the GPU machine;
#                                  # PACK_DIR packs elsewhere, BEFORE_REF (a
#                                  # git ref) also builds that commit's
#                                  # warpkv as warpkv-before
#   scripts/serve-matrix.sh [run]  # on the GPU machine: writes to $OUT (or
#                                  # .gpu/serve-matrix/) serve-get1.{txt,json},
#                                  # serve-get10.{txt,json}, serve-profile.*,
#                                  # targets.txt
#   scripts/serve-matrix.sh unpipelined
#                                  # issue 19's matrix, about 6 minutes: one
#                                  # request in flight per connection at 64,
#                                  # 512 and 4096 connections, 100:0 and 95:5,
#                                  # loadgen and memaslap, memcached first,
#                                  # every server also paced at 80% of
#                                  # memcached's peak; the stage profile of
#                                  # one unpipelined request with warpkv-before
#                                  # (if packed) and warpkv; a short pipelined
#                                  # and 10-key multi-get check. Writes
#                                  # serve-unpipelined.{txt,json},
#                                  # profile-{before,after}.txt, pipelined-get{1,10}.txt;
#                                  # WARPKV_FLAGS (e.g. "--loops 32") go to
#                                  # every warpkv server of the matrix and
#                                  # the pipelined check
#
# Environment (run): SERVER_CPUS, LOAD_CPUS (default: the first and second
# half of the CPUs), ENGINES (gpu,cpu), DURATION (1200ms), WARMUP (300ms),
# CONNS (32), PIPELINE (16), KEYS (100000), MEM_MB (2048), WORKLOADS
# (a,b,c,d), MIXES (95:5,100:0), DISTS (uniform,zipf), WARPKV (the
# binary, default .gpu/warpkv), MEMCACHED (default .gpu/bin/memcached, else
# memcached on PATH).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mode=${1:-run}

pack() {
	cd "$root"
	export GOOS=linux GOARCH=amd64 CGO_ENABLED=0
	local dir=${PACK_DIR:-$root/.gpu}
	mkdir -p "$dir/bin/lib"
	echo "build cmd/warpkv -> $dir/warpkv"
	go build -ldflags='-s -w' -o "$dir/warpkv" ./cmd/warpkv
	if [[ -n ${BEFORE_REF:-} ]]; then
		local src
		src=$(mktemp -d)
		git archive "$BEFORE_REF" | tar -x -C "$src"
		echo "build $BEFORE_REF's cmd/warpkv -> $dir/warpkv-before"
		(cd "$src" && go build -ldflags='-s -w' -o "$dir/warpkv-before" ./cmd/warpkv)
		rm -rf "$src"
	fi
	cd "$dir"
	for tool in memcached memcaslap; do
		src=$(command -v "$tool" || true)
		if [[ -z $src ]]; then
			echo "no $tool here: not packed" >&2
			continue
		fi
		cp -f "$src" "bin/$tool.bin"
		# Every library but the C library and the loader, so that the
		# binary runs where they are missing.
		ldd "$src" | awk '/=> \// {print $3}' | while read -r lib; do
			case $(basename "$lib") in
			libc.so.* | libm.so.* | ld-linux*) ;;
			*) cp -fL "$lib" bin/lib/ ;;
			esac
		done
		cat >"bin/$tool" <<EOF
#!/usr/bin/env bash
# $tool packed by serve-matrix.sh pack, with its libraries
dir=\$(cd "\$(dirname "\${BASH_SOURCE[0]}")" && pwd)
export LD_LIBRARY_PATH="\$dir/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
exec "\$dir/$tool.bin" "\$@"
EOF
		chmod +x "bin/$tool"
		echo "packed $tool -> $dir/bin/$tool"
	done
	du -sh "$dir"/warpkv* "$dir/bin"
}

# unpipelined runs issue 19's matrix (see the usage above); PACK_DIR is
# where pack put the binaries, BUDGET the seconds after which the later
# steps are skipped (default 400).
unpipelined() {
	local dir=${PACK_DIR:-$root/.gpu}
	local bin=${WARPKV:-$dir/warpkv}
	local out=${OUT:-$dir/serve-matrix}
	mkdir -p "$out"
	local mc n scpus lcpus
	find_tools "$dir"
	cpu_sets
	local engines=${ENGINES:-gpu,cpu}
	local budget=${BUDGET:-400}
	local start=$SECONDS
	echo "# unpipelined matrix: $(date -u +%FT%TZ), $("$bin" version 2>/dev/null | head -n 1), $n CPUs, servers $scpus, load $lcpus"
	"$bin" devices || true
	"$bin" bench serve --unpipelined --memcached "$mc" --engines "$engines" --server-cpus "$scpus" --load-cpus "$lcpus" \
		--warpkv-flags "${WARPKV_FLAGS:-}" \
		-m "${MEM_MB:-1024}" --p99-at 0.8 --profile --crosscheck auto --unpipelined-conns "${CONNS_LIST:-64,512,4096}" \
		--unpipelined-duration "${DURATION:-2s}" --json "$out/serve-unpipelined.json" 2>&1 | tee "$out/serve-unpipelined.txt"
	local lg=(--workloads b --dist uniform --keys 100000 --duration 2s --warmup 500ms --quiet)
	for v in before after; do
		local b=$bin
		[[ $v == before ]] && b=$dir/warpkv-before
		if [[ ! -x $b ]]; then
			echo "## no $b: no $v profile"
			continue
		fi
		if ((SECONDS - start > budget)); then
			echo "## out of time: no $v profile"
			continue
		fi
		echo "## stage profile, $v ($((SECONDS - start)) s so far)"
		"$b" bench serve --warpkv "$b" --memcached none --engines "$engines" --server-cpus "$scpus" --load-cpus "$lcpus" \
			-m "${MEM_MB:-1024}" --p99-at 0 --profile --crosscheck none -- "${lg[@]}" --mix 100:0 --conns 64 --pipeline 1 \
			--multiget 1 2>&1 | tee "$out/profile-$v.txt"
	done
	for g in 1 10; do
		if ((SECONDS - start > budget)); then
			echo "## out of time: no pipelined check with $g-key gets"
			continue
		fi
		echo "## pipelined, $g-key gets ($((SECONDS - start)) s so far)"
		"$bin" bench serve --memcached "$mc" --engines "$engines" --server-cpus "$scpus" --load-cpus "$lcpus" \
			--warpkv-flags "${WARPKV_FLAGS:-}" \
			-m "${MEM_MB:-1024}" --p99-at 0 --crosscheck none -- "${lg[@]}" --mix 95:5 --conns 32 --pipeline 16 \
			--multiget "$g" 2>&1 | tee "$out/pipelined-get$g.txt"
	done
	echo "## done in $((SECONDS - start)) s"
}

# find_tools sets the caller's mc to $MEMCACHED, else the memcached packed
# in $1/bin, else memcached on PATH, and puts $1/bin (memcaslap) first on
# PATH when it was packed.
find_tools() {
	mc=${MEMCACHED:-}
	if [[ -z $mc ]]; then
		if [[ -x $1/bin/memcached ]]; then
			mc=$1/bin/memcached
		else
			mc=memcached
		fi
	fi
	if [[ -x $1/bin/memcaslap ]]; then
		export PATH="$1/bin:$PATH"
	fi
}

# cpu_sets sets the caller's n (CPUs), scpus and lcpus: $SERVER_CPUS and
# $LOAD_CPUS, else the first and the second half of the CPUs.
cpu_sets() {
	n=$(nproc)
	local half=$((n / 2))
	scpus=${SERVER_CPUS:-0-$((half - 1))}
	lcpus=${LOAD_CPUS:-$half-$((n - 1))}
}

run() {
	local bin=${WARPKV:-$root/.gpu/warpkv}
	[[ -x $bin ]] || {
		echo "no warpkv binary at $bin: run scripts/serve-matrix.sh pack first (or set WARPKV)" >&2
		exit 1
	}
	local out=${OUT:-$root/.gpu/serve-matrix}
	mkdir -p "$out"
	local mc n scpus lcpus
	find_tools "$root/.gpu"
	cpu_sets
	local engines=${ENGINES:-gpu,cpu}
	local common=(--memcached "$mc" --engines "$engines" --server-cpus "$scpus" --load-cpus "$lcpus"
		-m "${MEM_MB:-2048}" --p99-at 0.8)
	local lg=(--workloads "${WORKLOADS:-a,b,c,d}" --mix "${MIXES:-95:5,100:0}" --dist "${DISTS:-uniform,zipf}" --keys "${KEYS:-100000}"
		--conns "${CONNS:-32}" --pipeline "${PIPELINE:-16}" --duration "${DURATION:-1200ms}"
		--warmup "${WARMUP:-300ms}" --quiet)
	local start=$SECONDS
	echo "# serve matrix: $(date -u +%FT%TZ), $("$bin" version 2>/dev/null | head -n 1), $n CPUs, servers $scpus, load $lcpus"
	"$bin" devices || true

	echo "## single gets"
	"$bin" bench serve "${common[@]}" --crosscheck auto --json "$out/serve-get1.json" -- "${lg[@]}" --multiget 1 |
		tee "$out/serve-get1.txt"
	echo "## 10-key multi-gets ($((SECONDS - start)) s so far)"
	"$bin" bench serve "${common[@]}" --crosscheck none --json "$out/serve-get10.json" -- "${lg[@]}" --multiget 10 |
		tee "$out/serve-get10.txt"
	echo "## stage profile ($((SECONDS - start)) s so far)"
	local peng=cpu
	[[ $engines == *gpu* ]] && peng=gpu,gpu/staged,cpu
	"$bin" bench serve --memcached none --engines "$peng" --server-cpus "$scpus" --load-cpus "$lcpus" \
		-m "${MEM_MB:-2048}" --p99-at 0 --profile --crosscheck none --json "$out/serve-profile.json" -- \
		--workloads a,d --mix 95:5 --dist uniform --keys "${KEYS:-100000}" --conns "${CONNS:-32}" \
		--pipeline "${PIPELINE:-16}" --duration "${DURATION:-1200ms}" --warmup "${WARMUP:-300ms}" --quiet --multiget 10 |
		tee "$out/serve-profile.txt"
	echo "## targets ($((SECONDS - start)) s in all)"
	"$bin" bench serve --report "$out/serve-get1.json,$out/serve-get10.json" | tee "$out/targets.txt"
}

case $mode in
pack) pack ;;
run) run ;;
unpipelined) unpipelined ;;
*)
	echo "usage: $0 [pack|run|unpipelined]" >&2
	exit 2
	;;
esac
