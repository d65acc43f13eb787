#!/bin/sh
# Skiff host installer (Debian and Ubuntu), served by a Skiff controller at
# GET /skiff-host. It installs the `skiff` binary and the pinned gVisor runsc
# from that controller (each checked against its sha256), writes a systemd
# unit and starts `skiff host`, which redeems the one-time code and then only
# dials out. Running it again upgrades the binaries and restarts the host;
# the host keeps its credential in its data dir, so no new code is needed.
#
#   curl -fsSL CONTROLLER/skiff-host | sudo sh -s -- --code cek_... [--cpus N] [--memory-gb G] [--gpus K]
set -eu

CONTROLLER='@CONTROLLER@'
CODE=''
CPUS=''
MEMORY_GB=''
GPUS=''
DATA_DIR='/var/lib/skiff-host'
BIN_DIR='/usr/local/bin'
RUNSC_DIR='/usr/local/lib/skiff'
UNIT='/etc/systemd/system/skiff-host.service'

die() {
	echo "skiff-host: $*" >&2
	exit 1
}

usage() {
	echo 'usage: sh -s -- --code cek_... [--cpus N] [--memory-gb G] [--gpus K] [--controller URL[,URL...]] [--data-dir DIR]' >&2
	exit 2
}

while [ $# -gt 0 ]; do
	[ $# -ge 2 ] || usage
	case "$1" in
	--code) CODE=$2 ;;
	--cpus) CPUS=$2 ;;
	--memory-gb) MEMORY_GB=$2 ;;
	--gpus) GPUS=$2 ;;
	--controller) CONTROLLER=$2 ;;
	--data-dir) DATA_DIR=$2 ;;
	*) usage ;;
	esac
	shift 2
done

[ "$(id -u)" -eq 0 ] || die 'run as root (curl ... | sudo sh -s -- ...)'
command -v curl >/dev/null 2>&1 || die 'curl is needed'
command -v sha256sum >/dev/null 2>&1 || die 'sha256sum is needed (coreutils)'
if [ ! -f "$DATA_DIR/host-credential.json" ] && [ -z "$CODE" ]; then
	die 'first install: pass --code cek_... (from the operator: skiff admin create-enrollment)'
fi

os=$(uname -s | tr '[:upper:]' '[:lower:]')
case $(uname -m) in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) die "unsupported machine $(uname -m)" ;;
esac
first=${CONTROLLER%%,*}

# fetch NAME DEST: download /skiff-host/bin/NAME and check its sha256.
fetch() {
	tmp=$(mktemp)
	curl -fsSL "$first/skiff-host/bin/$1" -o "$tmp" || {
		rm -f "$tmp"
		die "cannot download $1 from $first"
	}
	want=$(curl -fsSL "$first/skiff-host/bin/$1.sha256") || {
		rm -f "$tmp"
		die "cannot download the sha256 of $1"
	}
	got=$(sha256sum "$tmp" | cut -d ' ' -f 1)
	if [ "$want" != "$got" ]; then
		rm -f "$tmp"
		die "$1: sha256 $got, want $want"
	fi
	install -D -m 0755 "$tmp" "$2"
	rm -f "$tmp"
}

fetch "$os-$arch" "$BIN_DIR/skiff"
fetch "runsc-$os-$arch" "$RUNSC_DIR/runsc"
mkdir -p "$DATA_DIR"
chmod 0700 "$DATA_DIR"

args="host --controller $CONTROLLER --data-dir $DATA_DIR --runsc $RUNSC_DIR/runsc"
[ -z "$CODE" ] || args="$args --code $CODE"
[ -z "$CPUS" ] || args="$args --cpus $CPUS"
[ -z "$MEMORY_GB" ] || args="$args --memory-gb $MEMORY_GB"
[ -z "$GPUS" ] || args="$args --gpus $GPUS"

cat >"$UNIT" <<UNIT
[Unit]
Description=Skiff host (bring-your-own-hardware)
After=network-online.target
Wants=network-online.target

[Service]
ExecStart=$BIN_DIR/skiff $args
Restart=always
RestartSec=5
KillMode=mixed
TimeoutStopSec=60

[Install]
WantedBy=multi-user.target
UNIT
chmod 0644 "$UNIT"

if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
	systemctl daemon-reload
	systemctl enable skiff-host.service >/dev/null
	systemctl restart skiff-host.service
	echo 'skiff-host: installed and started (journalctl -u skiff-host -f)'
else
	echo "skiff-host: installed; no systemd here: run $BIN_DIR/skiff $args"
fi
