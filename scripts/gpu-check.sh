#!/bin/bash
# gpu-check.sh: checks Skiff's GPU support on a machine with an NVIDIA GPU and no network
# (no apt, no registry, no Go toolchain). It needs only what is carried to it: a static
# bin/skiff (CGO_ENABLED=0) and the pinned runsc (plain or xz-compressed), plus the machine's
# own driver and a python with PyTorch (the task's CUDA workload; the machine's root
# filesystem serves as the task's root, read-only). Run it as root:
#
#   scripts/gpu-check.sh [SKIFF [RUNSC]]
#
# SKIFF (default bin/skiff, else bin/skiff.xz) and RUNSC (default bin/runsc.xz, else
# .device/runsc.xz, else /usr/local/lib/skiff/runsc); either may be xz-compressed (name.xz)
# may also come from the environment, as may PYTHON (default /opt/torch/.venv/bin/python3,
# else python3), GPU_DRIVER_DIR (default: the loader cache finds the driver) and OUT (logs,
# default /tmp/gpu-out). It ends with "N passed, M failed" and exits non-zero when one failed.
# Budget: well under 5 minutes (each step has its own timeout).
# A && pass || fail is safe here: pass always succeeds.
# shellcheck disable=SC2015,SC2016
set -u
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
# Decompressed binaries go beside, not under $OUT: only logs travel back.
BINDIR=$(mktemp -d)
exec > >(tee "$OUT/gpu-check.log") 2>&1

SKIFF=${1:-${SKIFF:-}}
if [ -z "$SKIFF" ]; then
	if [ -f bin/skiff ]; then SKIFF=bin/skiff; else SKIFF=bin/skiff.xz; fi
fi
RUNSC=${2:-${RUNSC:-}}
if [ -z "$RUNSC" ]; then
	for r in bin/runsc.xz .device/runsc.xz /usr/local/lib/skiff/runsc; do
		if [ -f "$r" ]; then RUNSC=$r; break; fi
	done
fi
PYTHON=${PYTHON:-}
if [ -z "$PYTHON" ]; then
	if [ -x /opt/torch/.venv/bin/python3 ]; then PYTHON=/opt/torch/.venv/bin/python3; else PYTHON=$(command -v python3); fi
fi
DRIVER_FLAG=()
if [ -n "${GPU_DRIVER_DIR:-}" ]; then DRIVER_FLAG=(--gpu-driver-dir "$GPU_DRIVER_DIR"); fi

passed=0
failed=0
pass() { echo "PASS: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
skip() { echo "SKIP: $*"; }
finish() {
	echo
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit $?
}
# json EXPR FILE: evaluates a python expression over the JSON lines of FILE (list j).
# A file that is one (pretty-printed) JSON document is a list of one.
json() { python3 -c '
import json, sys
t = open(sys.argv[2]).read()
try:
    j = [json.loads(t)]
except ValueError:
    j = [json.loads(l) for l in t.splitlines() if l.strip().startswith("{")]
print(eval(sys.argv[1]))' "$1" "$2" 2>/dev/null; }

echo "== machine"
uname -r
nproc
nvidia-smi -L
nvidia-smi --query-gpu=driver_version,memory.total --format=csv,noheader
ls -la /dev/nvidia* 2>&1
echo "python: $PYTHON"

echo "== binaries"
if [ ! -f "$SKIFF" ]; then echo "no skiff binary at $SKIFF"; fail "skiff binary"; finish; fi
case "$SKIFF" in
*.xz)
	xz -dc "$SKIFF" >"$BINDIR/skiff" && chmod +x "$BINDIR/skiff" && SKIFF=$BINDIR/skiff || { fail "decompress $SKIFF"; finish; }
	;;
esac
chmod +x "$SKIFF" 2>/dev/null
SKIFF=$(readlink -f "$SKIFF")
case "$RUNSC" in
*.xz)
	xz -dc "$RUNSC" >"$BINDIR/runsc" && chmod +x "$BINDIR/runsc" && RUNSC=$BINDIR/runsc || { fail "decompress $RUNSC"; finish; }
	;;
esac
chmod +x "$RUNSC" 2>/dev/null
RUNSC=$(readlink -f "$RUNSC")
"$SKIFF" version 2>&1 | head -2
"$RUNSC" --version | head -2
export SKIFF_RUNSC=$RUNSC # every skiff subcommand's --runsc

echo "== 1. devices and driver, as skiff host finds them"
timeout 120 "$SKIFF" host gpu-probe "${DRIVER_FLAG[@]}" >"$OUT/probe.json"
rc=$?
cat "$OUT/probe.json"
if [ $rc -eq 0 ] && [ "$(json 'j[0]["ok"]' "$OUT/probe.json")" = True ]; then
	pass "gpu-probe found the GPUs and a supported driver"
else
	fail "gpu-probe (exit $rc)"
fi
want_version=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1 | tr -d ' ')
got_version=$(json 'j[0]["host"]["driver_version"]' "$OUT/probe.json")
[ -n "$got_version" ] && [ "$got_version" = "$want_version" ] && pass "driver version $got_version (nvidia-smi says $want_version)" || fail "driver version: skiff $got_version, nvidia-smi $want_version"
ngpus=$(nvidia-smi -L | grep -c '^GPU ')
got_gpus=$(json 'len(j[0]["host"]["gpus"])' "$OUT/probe.json")
[ "$got_gpus" = "$ngpus" ] && pass "$got_gpus GPU(s), as nvidia-smi -L" || fail "GPUs: skiff $got_gpus, nvidia-smi $ngpus"
dev_ok=1
for d in /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia0; do
	want=$(printf '%d:%d' "0x$(stat -c %t "$d")" "0x$(stat -c %T "$d")")
	got=$(json "[f'{x[\"major\"]}:{x[\"minor\"]}' for x in j[0]['host']['shared_devices']+[g['device'] for g in j[0]['host']['gpus']] if x['path']=='$d'][0]" "$OUT/probe.json")
	echo "$d: stat $want, skiff $got"
	[ "$want" = "$got" ] || dev_ok=0
done
[ $dev_ok = 1 ] && pass "device numbers are stat's" || fail "device numbers differ from stat's"
files=$(json '" ".join(j[0]["host"]["files"])' "$OUT/probe.json")
echo "driver files: $files"
case " $files " in *" lib64/libcuda.so.1 "*"bin/nvidia-smi"*) pass "driver files include libcuda.so.1 and nvidia-smi" ;; *) fail "driver files lack libcuda.so.1 or nvidia-smi" ;; esac

echo "== 2. the sandbox itself (no GPU): the root filesystem and the driver path work"
timeout 120 "$SKIFF" host gpu-run --gpus 0 -- /bin/sh -c 'echo sandbox-ok $(id -u)' >"$OUT/run-nogpu.json"
rc=$?
cat "$OUT/run-nogpu.json"
[ $rc -eq 0 ] && grep -q 'sandbox-ok 65534' "$OUT/run-nogpu.json" && pass "a sandbox runs as nobody on this root" || fail "sandbox without GPU (exit $rc)"

echo "== 3. a one-GPU attempt: what the task sees"
timeout 120 "$SKIFF" host gpu-run --gpus 1 -- /bin/sh -c 'nvidia-smi -L; ls /dev/nvidia*; echo "PATH=$PATH"; echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"; echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"; echo "NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES"' >"$OUT/run-smi.json"
rc=$?
cat "$OUT/run-smi.json"
out=$(json 'j[0]["stdout"]' "$OUT/run-smi.json")
id0=$(json 'j[0]["ids"][0]' "$OUT/run-smi.json")
[ $rc -eq 0 ] && [ "$(printf '%s\n' "$out" | grep -c '^GPU ')" = 1 ] && pass "nvidia-smi -L in the sandbox lists one GPU" || fail "nvidia-smi -L in the sandbox (exit $rc)"
printf '%s\n' "$out" | grep -q "UUID: $id0" && printf '%s\n' "$out" | grep -q "NVIDIA_VISIBLE_DEVICES=$id0" && pass "its UUID is NVIDIA_VISIBLE_DEVICES ($id0)" || fail "UUID and NVIDIA_VISIBLE_DEVICES differ (want $id0)"
printf '%s\n' "$out" | grep -q '^CUDA_VISIBLE_DEVICES=0$' && printf '%s\n' "$out" | grep -q '^LD_LIBRARY_PATH=/usr/local/nvidia/lib64' && pass "CUDA_VISIBLE_DEVICES=0, LD_LIBRARY_PATH starts with /usr/local/nvidia/lib64" || fail "environment"
[ "$(printf '%s\n' "$out" | grep -cE '^/dev/nvidia[0-9]+$')" = 1 ] && pass "one /dev/nvidiaN in the sandbox" || fail "the sandbox sees other GPU nodes"

echo "== 4. a CUDA program (PyTorch) through the gVisor driver, one GPU"
cuda='import torch,json; x=torch.randn(4096,4096,device="cuda"); y=(x@x).sum().item(); print("CUDA", json.dumps({"ok": torch.cuda.is_available(), "n": torch.cuda.device_count(), "name": torch.cuda.get_device_name(0)}))'
timeout 180 "$SKIFF" host gpu-run --gpus 1 -- "$PYTHON" -c "$cuda" >"$OUT/run-cuda.json"
rc=$?
cat "$OUT/run-cuda.json"
json 'j[0]["stdout"]' "$OUT/run-cuda.json" | grep -q '"ok": true, "n": 1' && pass "torch.cuda works in the sandbox and sees 1 device" || fail "CUDA program in the sandbox (exit $rc)"

echo "== 5. limits still hold: 512 MiB, a task that wants 2 GiB"
timeout 120 "$SKIFF" host gpu-run --gpus 1 --memory-mb 512 -- "$PYTHON" -c 'b = bytearray(2 << 30); b[::4096] = b"x" * len(b[::4096]); print("allocated")' >"$OUT/run-oom.json"
cat "$OUT/run-oom.json"
code=$(json 'j[0]["exit_code"]' "$OUT/run-oom.json")
if [ -n "$code" ] && [ "$code" != 0 ] && ! grep -q '"stdout":"allocated' "$OUT/run-oom.json"; then pass "memory limit holds for a GPU attempt (exit $code)"; else fail "memory limit (exit ${code:-none})"; fi

echo "== 6. isolation: two concurrent one-GPU attempts"
if [ "$ngpus" -lt 2 ]; then
	skip "isolation needs two GPUs; this machine has $ngpus"
else
	iso='nvidia-smi -L; '"$PYTHON"' -c "import torch; print(\"TORCH\", torch.cuda.device_count())"; sleep 2'
	timeout 180 "$SKIFF" host gpu-run --gpus 1 --attempts 2 -- /bin/sh -c "$iso" >"$OUT/run-iso.json"
	rc=$?
	cat "$OUT/run-iso.json"
	a=$(json 'j[0]["ids"][0]' "$OUT/run-iso.json")
	b=$(json 'j[1]["ids"][0]' "$OUT/run-iso.json")
	[ $rc -eq 0 ] && [ -n "$a" ] && [ "$a" != "$b" ] && pass "the two attempts got different GPUs ($a, $b)" || fail "the two attempts' GPUs ($a, $b, exit $rc)"
	ok=1
	for i in 0 1; do
		s=$(json "j[$i]['stdout']" "$OUT/run-iso.json")
		own=$(json "j[$i]['ids'][0]" "$OUT/run-iso.json")
		[ "$(printf '%s\n' "$s" | grep -c '^GPU ')" = 1 ] && printf '%s\n' "$s" | grep -q "UUID: $own" && printf '%s\n' "$s" | grep -q '^TORCH 1$' || ok=0
	done
	[ $ok = 1 ] && pass "each attempt sees only its own GPU (nvidia-smi and torch)" || fail "an attempt saw another's GPU"
fi

echo "== 7. skiff bench --gpu"
timeout 240 "$SKIFF" bench --gpu --gpu-python "$PYTHON" --gpu-rounds 2 "${DRIVER_FLAG[@]}" | tee "$OUT/bench-gpu.txt"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] && pass "bench --gpu ran on the host and in the sandbox" || fail "bench --gpu (exit $rc)"

finish
