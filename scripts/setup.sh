#!/usr/bin/env bash
# Installs what Skiff needs on a Debian 12 machine, as root, and only what is
# missing: `make setup` runs it before every build and test, so when all is
# present it changes nothing and says so in one line.
#
# - Debian packages: buildah and its network stack (netavark, aardvark-dns,
#   iptables: RUN steps get buildah's private bridge), crun, umoci, skopeo,
#   debootstrap (the tests' local Debian base image), iproute2 (multi-host
#   tests), postgresql (the PostgreSQL store tests), prometheus (promtool;
#   its server is kept stopped), chromium (the browser test), tmux (the
#   terminal test of `skiff run`), python3 and python3-pip (the Python SDK's
#   tests). `apt-get
#   update` runs only when one is missing.
# - The pinned runsc at /usr/local/lib/skiff/runsc, built with `go install`
#   (about 3 minutes cold). Debian's runsc is from 2022: it cannot run buildah's
#   RUN steps and lacks systrap. A version stamp beside the binary records which
#   version it is, so a rebuild happens only when the pin changes.
# - versitygw at /usr/local/lib/skiff/versitygw, an S3-compatible server with a
#   posix backend that the artifact tests start (internal/artifact/s3test),
#   built with `go install` and stamped like runsc.
# - /etc/containers/policy.json and registries.conf when absent, and the
#   overlay file system that buildah's storage uses.
#
# - Node.js and npm from Debian when `node` is missing, and the npm test
#   harnesses installed by `npm ci` from their committed package-lock.json:
#   test/payments (anvil, solc, @x402/*, mppx, viem), test/sse (eventsource)
#   and test/openapi (Redocly, openapi-typescript, openapi-fetch,
#   html-validate). A stamp of each lockfile's hash makes it run only when
#   the lock changes.
#
# Only Debian's mirrors, the Go module proxy and the npm registry are
# reachable from CI, and that is all this uses.
set -euo pipefail

RUNSC_MODULE="gvisor.dev/gvisor/runsc"
RUNSC_VERSION="v0.0.0-20260905035102-160fafc42237"
RUNSC_DIR="/usr/local/lib/skiff"
RUNSC_BIN="$RUNSC_DIR/runsc"
RUNSC_STAMP="$RUNSC_DIR/runsc.version"

VERSITYGW_MODULE="github.com/versity/versitygw/cmd/versitygw"
VERSITYGW_VERSION="v1.8.0"
VERSITYGW_BIN="$RUNSC_DIR/versitygw"
VERSITYGW_STAMP="$RUNSC_DIR/versitygw.version"

APT_PACKAGES=(
	buildah crun umoci skopeo netavark aardvark-dns iptables uidmap
	debootstrap iproute2 postgresql ca-certificates
)
# promtool (Debian's prometheus) checks GET /metrics in internal/metrics' tests.
APT_PACKAGES+=(prometheus)
# chromium drives the browser test of the landing page and the docs.
APT_PACKAGES+=(chromium)
# tmux runs `skiff run` in a real terminal (internal/cli); python3 (3.11) and
# pip run the Python SDK's tests and install it (sdk/python).
APT_PACKAGES+=(tmux python3 python3-pip)
# shellcheck checks the host installer served at /skiff-host (internal/httpapi).
APT_PACKAGES+=(shellcheck)

# Go usually lives here on CI machines without being on root's PATH.
if [[ -d /usr/local/go/bin ]]; then
	PATH="$PATH:/usr/local/go/bin"
fi

did=() # what this run changed, for the closing line

log() { printf 'setup: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

need_root() {
	[[ $EUID -eq 0 ]] || die "$1 is missing and installing it needs root (run: sudo make setup)"
}

missing_packages() {
	local pkg
	for pkg in "${APT_PACKAGES[@]}"; do
		if [[ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" != "install ok installed" ]]; then
			printf '%s\n' "$pkg"
		fi
	done
}

install_packages() {
	command -v dpkg-query >/dev/null || die "this script installs with apt on Debian 12; install these yourself: ${APT_PACKAGES[*]}"
	local missing
	mapfile -t missing < <(missing_packages)
	((${#missing[@]} == 0)) && return 0
	need_root "Debian packages (${missing[*]})"
	log "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	did+=("packages: ${missing[*]}")
}

install_runsc() {
	if [[ -x "$RUNSC_BIN" && -f "$RUNSC_STAMP" && "$(cat "$RUNSC_STAMP")" == "$RUNSC_VERSION" ]]; then
		return 0
	fi
	need_root "runsc $RUNSC_VERSION"
	command -v go >/dev/null || die "go is needed to build runsc; install Go 1.26 first"
	log "building runsc $RUNSC_VERSION (about 3 minutes the first time)"
	gobin="$(mktemp -d)"
	trap 'rm -rf "$gobin"' EXIT
	# From / with GOFLAGS and GOWORK cleared, so nothing of the caller's
	# module or environment leaks into the build.
	(cd / && CGO_ENABLED=0 GOBIN="$gobin" GOFLAGS= GOWORK=off go install "$RUNSC_MODULE@$RUNSC_VERSION")
	install -d -m 0755 "$RUNSC_DIR"
	# Replace the binary by rename so a running server never sees half of it.
	install -m 0755 "$gobin/runsc" "$RUNSC_BIN.new"
	mv -f "$RUNSC_BIN.new" "$RUNSC_BIN"
	printf '%s\n' "$RUNSC_VERSION" >"$RUNSC_STAMP.new"
	mv -f "$RUNSC_STAMP.new" "$RUNSC_STAMP"
	did+=("runsc $RUNSC_VERSION")
}

install_versitygw() {
	if [[ -x "$VERSITYGW_BIN" && -f "$VERSITYGW_STAMP" && "$(cat "$VERSITYGW_STAMP")" == "$VERSITYGW_VERSION" ]]; then
		return 0
	fi
	need_root "versitygw $VERSITYGW_VERSION"
	command -v go >/dev/null || die "go is needed to build versitygw; install Go 1.26 first"
	log "building versitygw $VERSITYGW_VERSION (a few minutes the first time)"
	local vgwbin
	vgwbin="$(mktemp -d)"
	(cd / && CGO_ENABLED=0 GOBIN="$vgwbin" GOFLAGS= GOWORK=off go install "$VERSITYGW_MODULE@$VERSITYGW_VERSION")
	install -d -m 0755 "$RUNSC_DIR"
	install -m 0755 "$vgwbin/versitygw" "$VERSITYGW_BIN.new"
	mv -f "$VERSITYGW_BIN.new" "$VERSITYGW_BIN"
	rm -rf "$vgwbin"
	printf '%s\n' "$VERSITYGW_VERSION" >"$VERSITYGW_STAMP.new"
	mv -f "$VERSITYGW_STAMP.new" "$VERSITYGW_STAMP"
	did+=("versitygw $VERSITYGW_VERSION")
}

write_if_missing() { # path, contents
	[[ -e "$1" ]] && return 0
	need_root "$1"
	install -d -m 0755 "$(dirname "$1")"
	printf '%s\n' "$2" >"$1"
	did+=("$1")
}

configure_containers() {
	# Debian's containers-common ships both; a machine that lost them cannot
	# push (no signature policy) or resolve names.
	write_if_missing /etc/containers/policy.json '{
    "default": [{"type": "insecureAcceptAnything"}]
}'
	# Base images must be named in full (the build policy allows only the
	# operator's list); nothing is searched for short names.
	write_if_missing /etc/containers/registries.conf 'unqualified-search-registries = []'

	if ! grep -qw overlay /proc/filesystems; then
		need_root "the overlay file system"
		modprobe overlay || die "buildah's storage needs overlayfs: modprobe overlay failed"
		did+=("overlay module")
	fi
}

ROOT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# The npm test harnesses (test/*: the payment clients, the SSE client, the
# OpenAPI linter, generated client and HTML validator) need
# Node.js and npm: Debian's, when they are absent.
install_node() {
	command -v node >/dev/null && command -v npm >/dev/null && return 0
	need_root "Node.js and npm"
	log "installing nodejs npm"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
	did+=("packages: nodejs npm")
}

# npm_ci DIR installs DIR's locked npm dependencies (npm ci from its
# committed package-lock.json), again only when the lockfile changed.
npm_ci() {
	local dir="$ROOT_DIR/$1" stamp want
	stamp="$dir/node_modules/.skiff-lock.sha256"
	want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
	[[ -f $stamp && "$(<"$stamp")" == "$want" ]] && return 0
	log "npm ci in $1"
	(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) || die "npm ci in $1 failed"
	printf '%s\n' "$want" >"$stamp"
	did+=("npm ci $1")
}

# Debian's prometheus package, installed for promtool, also ships a server
# that systemd would start listening on every interface: keep it stopped.
quiet_prometheus() {
	command -v systemctl >/dev/null || return 0
	systemctl is-enabled prometheus >/dev/null 2>&1 || systemctl is-active prometheus >/dev/null 2>&1 || return 0
	systemctl disable --now prometheus >/dev/null 2>&1 || true
	did+=("prometheus service disabled")
}

install_packages
quiet_prometheus
install_runsc
install_versitygw
configure_containers
install_node
npm_ci test/payments
npm_ci test/sse
npm_ci test/openapi

if ((${#did[@]} == 0)); then
	log "nothing to do: packages, runsc $RUNSC_VERSION, versitygw $VERSITYGW_VERSION, container config and the npm test harnesses are in place"
else
	log "done: ${did[*]}"
fi
