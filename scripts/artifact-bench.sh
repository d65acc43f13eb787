#!/usr/bin/env bash
# Artifact transfer benchmark (docs/artifacts.md, "Performance"): a throwaway
# `skiff server` on 127.0.0.1 over the embedded store, then
#   1. the machine's own disk copy rate: cat SRC > DST, then sync;
#   2. one SIZE_MIB upload (curl -T, streamed) and its download, timed the
#      same way (the upload includes the server's fsync), with the server's
#      resident memory sampled every 50 ms during each transfer;
#   3. PAR parallel uploads of PAR_MB MB each (distinct content), counting
#      errors.
# Usage: make build && bash scripts/artifact-bench.sh   (SIZE_MIB=2048 PAR=100 PAR_MB=100)
set -euo pipefail

BIN=${BIN:-bin/skiff}
SIZE_MIB=${SIZE_MIB:-2048}
PAR=${PAR:-100}
PAR_MB=${PAR_MB:-100}
WORK=$(mktemp -d /var/tmp/skiff-artbench.XXXXXX)
PID=""
cleanup() {
	[[ -n "$PID" ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT

now() { date +%s.%N; }
rate() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.1f", b / 1048576 / s }'; }
rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$PID/status"; }

# sample_rss FILE: the highest VmRSS seen until the file .stop appears.
sample_rss() {
	local max=0 v
	while [[ ! -e "$1.stop" ]]; do
		v=$(rss_kib || echo 0)
		((v > max)) && max=$v
		sleep 0.05
	done
	echo "$max" >"$1"
}

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$port"
"$BIN" server --data-dir "$WORK/data" --no-local-host --listen "127.0.0.1:$port" --log-level warn 2>"$WORK/server.log" &
PID=$!
for _ in $(seq 100); do curl -fsS "$URL/health" >/dev/null 2>&1 && break; sleep 0.1; done
KEY=$("$BIN" admin create-key --account bench --data-dir "$WORK/data")
AUTH="Authorization: Bearer $KEY"
idle=$(rss_kib)

echo "generating ${SIZE_MIB} MiB of random data" >&2
head -c "$((SIZE_MIB << 20))" /dev/urandom >"$WORK/src"
BYTES=$((SIZE_MIB << 20))
sync

t0=$(now); cat "$WORK/src" >"$WORK/copy"; sync; t1=$(now)
copy_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
rm -f "$WORK/copy"; sync

sample_rss "$WORK/rss_up" & S=$!
t0=$(now)
curl -fsS -X POST -T "$WORK/src" -H "$AUTH" -H 'X-Artifact-Filename: big.bin' "$URL/api/v1/artifacts" >"$WORK/up.json"
t1=$(now)
touch "$WORK/rss_up.stop"; wait $S
up_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$WORK/up.json")

sample_rss "$WORK/rss_down" & S=$!
t0=$(now)
curl -fsS -H "$AUTH" -o "$WORK/down" "$URL/api/v1/artifacts/$id"; sync
t1=$(now)
touch "$WORK/rss_down.stop"; wait $S
down_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
cmp -s "$WORK/src" "$WORK/down" || { echo "download differs from the upload" >&2; exit 1; }
rm -f "$WORK/down" "$WORK/src"

echo "uploading ${PAR} x ${PAR_MB} MB in parallel" >&2
head -c "$((PAR_MB * 1000000 - 16))" /dev/urandom >"$WORK/part"
sample_rss "$WORK/rss_par" & S=$!
t0=$(now)
fails=0
for i in $(seq "$PAR"); do
	( { printf '%016d' "$i"; cat "$WORK/part"; } |
		curl -fsS -X POST -T - -H "$AUTH" "$URL/api/v1/artifacts" -o "$WORK/par.$i.json" ) &
done
for job in $(jobs -p); do
	[[ "$job" == "$S" || "$job" == "$PID" ]] && continue
	wait "$job" || fails=$((fails + 1))
done
t1=$(now)
touch "$WORK/rss_par.stop"; wait $S
par_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
stored=$(grep -l '"sha256"' "$WORK"/par.*.json 2>/dev/null | wc -l)
used=$(curl -fsS -H "$AUTH" "$URL/api/v1/artifacts?limit=1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["quota"]["used_bytes"])')
hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$PID/status")

cat <<OUT
size_mib=$SIZE_MIB
disk_copy_s=$copy_s disk_copy_mib_s=$(rate "$BYTES" "$copy_s")
upload_s=$up_s upload_mib_s=$(rate "$BYTES" "$up_s") upload_vs_copy=$(awk -v a="$copy_s" -v b="$up_s" 'BEGIN { printf "%.2f", a / b }')
download_s=$down_s download_mib_s=$(rate "$BYTES" "$down_s") download_vs_copy=$(awk -v a="$copy_s" -v b="$down_s" 'BEGIN { printf "%.2f", a / b }')
rss_idle_mib=$((idle / 1024)) rss_peak_upload_mib=$(($(cat "$WORK/rss_up") / 1024)) rss_peak_download_mib=$(($(cat "$WORK/rss_down") / 1024))
parallel=$PAR x ${PAR_MB}MB in ${par_s}s: failed=$fails stored=$stored quota_used_bytes=$used rss_peak_parallel_mib=$(($(cat "$WORK/rss_par") / 1024)) vm_hwm_mib=$((hwm / 1024))
OUT
