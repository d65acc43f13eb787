#!/bin/sh
# Skiff host installer (Debian and Ubuntu), served by a Skiff controller at
# GET /skiff-host. It installs the `skiff` binary and the pinned gVisor runsc
# from that controller (each checked against its sha256), writes a systemd
# unit and starts `skiff host`, which redeems the one-time code and then only
# dials out. Running it again upgrades the binaries and restarts the host;
# the host keeps its credential in its data dir, so no new code is needed.
#
#   (umask 077; printf '%s\n' cek_... > /root/skiff-code)
#   curl -fsSL https://CONTROLLER/skiff-host | sudo sh -s -- --code-file /root/skiff-code \
#       --skiff-sha256 HEX --runsc-sha256 HEX [--cpus N] [--memory-gb G] [--gpus K]
#
# The code goes to the host through a file only root reads (DATA_DIR/
# enrollment-code, mode 0600), never on a command line or in the unit.
# --skiff-sha256 and --runsc-sha256 are the sums `skiff admin
# create-enrollment` printed for the operator, passed on out of band: the
# downloads are checked against them, not only against what the controller
# answers. The controller must be https (redirects to http are refused),
# or plain http on this machine (loopback); --insecure-http accepts plain
# http on a network the owner trusts.
#
# --prefix DIR installs everything under DIR instead (DIR/bin/skiff,
# DIR/lib/skiff/runsc, DIR/etc/systemd/system/skiff-host.service, data in
# DIR/var/lib/skiff-host), needs no root to install and leaves systemd alone.
# --foreground runs the host in the foreground instead of under systemd (a
# machine or container without systemd; the script then never returns).
set -eu

CONTROLLER='@CONTROLLER@'
CODE=''
CODE_FILE=''
INSECURE=''
SKIFF_SUM=''
RUNSC_SUM=''
PREFIX=''
DATA_DIR=''
FOREGROUND=''
# Flags passed on to `skiff host` as given.
HOST_FLAGS=''

die() {
	echo "skiff-host: $*" >&2
	exit 1
}

usage() {
	echo 'usage: sh -s -- --code-file FILE [--skiff-sha256 HEX --runsc-sha256 HEX] [--cpus N] [--memory-gb G] [--gpus K]' >&2
	echo '       [--gpu-memory-mb M] [--storage-gb G] [--slots N] [--image-cache-gb G] [--controller URL[,URL...]] [--data-dir DIR] [--prefix DIR]' >&2
	echo '       [--foreground] [--insecure-http]' >&2
	exit 2
}

# number FLAG VALUE: VALUE must be a plain decimal number, since it is
# written into the unit's command line.
number() {
	case $2 in
	'' | *[!0-9.]*) die "$1 takes a number, not '$2'" ;;
	esac
}

while [ $# -gt 0 ]; do
	case "$1" in
	--foreground)
		FOREGROUND=1
		shift
		continue
		;;
	--insecure-http)
		INSECURE=1
		shift
		continue
		;;
	esac
	[ $# -ge 2 ] || usage
	case "$1" in
	--code) die "--code puts the enrollment code in the process list; write it to a file only root reads (umask 077; printf '%s\\n' cek_... > /root/skiff-code) and pass --code-file /root/skiff-code" ;;
	--code-file) CODE_FILE=$2 ;;
	--skiff-sha256) SKIFF_SUM=$2 ;;
	--runsc-sha256) RUNSC_SUM=$2 ;;
	--cpus | --memory-gb | --gpus | --gpu-memory-mb | --storage-gb | --slots | --image-cache-gb)
		number "$1" "$2"
		HOST_FLAGS="$HOST_FLAGS $1 $2"
		;;
	--controller) CONTROLLER=$2 ;;
	--data-dir) DATA_DIR=$2 ;;
	--prefix) PREFIX=$2 ;;
	*) usage ;;
	esac
	shift 2
done

# Only what is safe unquoted in a unit's command line: these are written
# into it as words.
for v in "$CONTROLLER" "$PREFIX" "$DATA_DIR"; do
	case $v in
	*[!A-Za-z0-9_.:/,@%+=-]*) die "'$v' holds characters this installer does not write into a command line" ;;
	esac
done

if [ -n "$PREFIX" ]; then
	case $PREFIX in
	/*) ;;
	*) die '--prefix must be an absolute path' ;;
	esac
	BIN_DIR="$PREFIX/bin"
	RUNSC_DIR="$PREFIX/lib/skiff"
	UNIT="$PREFIX/etc/systemd/system/skiff-host.service"
	[ -n "$DATA_DIR" ] || DATA_DIR="$PREFIX/var/lib/skiff-host"
else
	[ "$(id -u)" -eq 0 ] || die 'run as root (curl ... | sudo sh -s -- ...), or pass --prefix DIR'
	BIN_DIR='/usr/local/bin'
	RUNSC_DIR='/usr/local/lib/skiff'
	UNIT='/etc/systemd/system/skiff-host.service'
	[ -n "$DATA_DIR" ] || DATA_DIR='/var/lib/skiff-host'
fi
[ -n "$CONTROLLER" ] || die 'pass --controller URL (the address this script was fetched from is unknown)'

# Plain http only to this machine, unless the owner says otherwise: on a
# network, the code, the host's credential and every task's data would
# travel in the clear, and the binaries could be swapped on the way.
# loopback URL: whether the http URL's host is this machine's loopback.
loopback() {
	h=${1#http://}
	h=${h%%/*}
	case $h in
	\[::1\] | \[::1\]:*) return 0 ;;
	esac
	h=${h%:*}
	case $h in
	localhost) return 0 ;;
	127.*[!0-9.]*) return 1 ;;
	127.*) return 0 ;;
	esac
	return 1
}
http_ok=''
for u in $(echo "$CONTROLLER" | tr ',' ' '); do
	case $u in
	https://*) ;;
	http://*)
		if ! loopback "$u" && [ -z "$INSECURE" ]; then
			die "controller $u is plain http off this machine: use https, or pass --insecure-http on a network you trust"
		fi
		http_ok=1
		;;
	*) die "controller $u: want an https:// URL" ;;
	esac
done
# curl follows redirects only to https, unless plain http is accepted.
PROTO='=https'
[ -z "$http_ok" ] || PROTO='=http,https'

for v in "$SKIFF_SUM" "$RUNSC_SUM"; do
	case $v in
	'') ;;
	*[!0-9a-f]*) die "'$v' is not a sha256 (64 lowercase hex digits)" ;;
	*) [ ${#v} -eq 64 ] || die "'$v' is not a sha256 (64 lowercase hex digits)" ;;
	esac
done
if [ -n "$CODE_FILE" ]; then
	[ -r "$CODE_FILE" ] || die "cannot read --code-file $CODE_FILE"
	CODE=$(tr -d ' \t\r\n' <"$CODE_FILE")
	[ -n "$CODE" ] || die "--code-file $CODE_FILE is empty"
fi
case $CODE in
*[!A-Za-z0-9_-]*) die 'the enrollment code holds characters a code never has' ;;
esac
command -v curl >/dev/null 2>&1 || die 'curl is needed'
command -v sha256sum >/dev/null 2>&1 || die 'sha256sum is needed (coreutils)'
if [ ! -f "$DATA_DIR/host-credential.json" ] && [ -z "$CODE" ]; then
	die 'first install: pass --code-file FILE, a file holding the cek_... code from the operator (skiff admin create-enrollment)'
fi

os=$(uname -s | tr '[:upper:]' '[:lower:]')
case $(uname -m) in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) die "unsupported machine $(uname -m)" ;;
esac
first=${CONTROLLER%%,*}

# fetch NAME DEST [SUM]: download /skiff-host/bin/NAME, check its sha256
# (SUM, given out of band, and the controller's) and move it into place in
# one rename, so that a running host's binary is replaced, never half
# written.
fetch() {
	mkdir -p "$(dirname "$2")"
	tmp="$2.download"
	curl -fsSL --proto "$PROTO" --proto-redir "$PROTO" "$first/skiff-host/bin/$1" -o "$tmp" || {
		rm -f "$tmp"
		die "cannot download $1 from $first"
	}
	want=$(curl -fsSL --proto "$PROTO" --proto-redir "$PROTO" "$first/skiff-host/bin/$1.sha256") || {
		rm -f "$tmp"
		die "cannot download the sha256 of $1"
	}
	got=$(sha256sum "$tmp" | cut -d ' ' -f 1)
	if [ "$want" != "$got" ]; then
		rm -f "$tmp"
		die "$1: sha256 $got, want $want"
	fi
	if [ -n "${3:-}" ] && [ "$3" != "$got" ]; then
		rm -f "$tmp"
		die "$1: sha256 $got, not the $3 the operator gave: do not install it, ask the operator"
	fi
	chmod 0755 "$tmp"
	mv -f "$tmp" "$2"
}

fetch "$os-$arch" "$BIN_DIR/skiff" "$SKIFF_SUM"
fetch "runsc-$os-$arch" "$RUNSC_DIR/runsc" "$RUNSC_SUM"
mkdir -p "$DATA_DIR"
chmod 0700 "$DATA_DIR"

args="host --controller $CONTROLLER --data-dir $DATA_DIR --runsc $RUNSC_DIR/runsc$HOST_FLAGS"
[ -z "$INSECURE" ] || args="$args --insecure-http"
# The code is used once: with a credential kept already, it is left out.
# It goes through a file only root reads, which the host removes once it
# has redeemed the code; the unit names the file, never the code.
if [ -n "$CODE" ] && [ ! -f "$DATA_DIR/host-credential.json" ]; then
	(
		umask 077
		printf '%s\n' "$CODE" >"$DATA_DIR/enrollment-code"
	)
	chmod 0600 "$DATA_DIR/enrollment-code"
	args="$args --code-file $DATA_DIR/enrollment-code"
fi

mkdir -p "$(dirname "$UNIT")"
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

if [ -n "$FOREGROUND" ]; then
	echo "skiff-host: installed; running $BIN_DIR/skiff $args" >&2
	# shellcheck disable=SC2086 # args is split into words on purpose
	exec "$BIN_DIR/skiff" $args
fi
if [ -z "$PREFIX" ] && command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
	systemctl daemon-reload
	systemctl enable skiff-host.service >/dev/null
	systemctl restart skiff-host.service
	echo 'skiff-host: installed and started (journalctl -u skiff-host -f)'
else
	echo "skiff-host: installed; no systemd unit started: run $BIN_DIR/skiff $args (or pass --foreground)"
fi
