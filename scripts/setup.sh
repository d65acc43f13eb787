#!/usr/bin/env bash
# Installs what Skiff needs on a Debian 12 machine, as root, and only what is
# missing: `make setup` runs it before every build and test, so when all is
# present it changes nothing and says so in one line.
#
# - Debian packages: buildah and its network stack (netavark, aardvark-dns,
#   iptables: RUN steps get buildah's private bridge), nftables (nft loads
#   the egress filter of `--build-network filtered`), gcc and libc6-dev (cgo,
#   to build the pinned buildah), crun, umoci, skopeo,
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
# - The pinned buildah at /usr/local/lib/skiff/buildah (upstream v1.42.1),
#   built from the Go module proxy in a throwaway module (about 3-4 minutes
#   cold) and stamped like runsc. Debian's buildah 1.28.2 has CVE-2024-1753
#   (a RUN --mount from a stage's symlink binds the host's /), CVE-2024-9407
#   and CVE-2024-11218 unfixed; Skiff runs the pinned one. The Debian package
#   stays installed for containers-common (policy.json, registries.conf,
#   storage.conf), netavark and aardvark-dns.
# - versitygw at /usr/local/lib/skiff/versitygw, an S3-compatible server with a
#   posix backend that the artifact tests start (internal/artifact/s3test),
#   built with `go install` and stamped like runsc.
# - /etc/containers/policy.json and registries.conf when absent, and the
#   overlay file system that buildah's storage uses.
#
# - Node.js and npm from Debian when `node` is missing, and the npm test
#   harnesses installed by `npm ci` from their committed package-lock.json:
#   test/payments (anvil, solc, @x402/*, mppx, viem), test/sse (eventsource),
#   test/mcp (@modelcontextprotocol/sdk)
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

BUILDAH_MODULE="github.com/containers/buildah"
BUILDAH_VERSION="v1.42.1"
BUILDAH_BIN="$RUNSC_DIR/buildah"
BUILDAH_STAMP="$RUNSC_DIR/buildah.version"
# The build tags: gpgme and the btrfs/devicemapper drivers need C libraries
# that are not installed (the builder uses overlay only and verifies no
# signatures), and without the seccomp tag no libseccomp is needed (RUN steps
# run in gVisor, which filters its own syscalls). The result needs only libc.
BUILDAH_TAGS="containers_image_openpgp exclude_graphdriver_btrfs exclude_graphdriver_devicemapper"

VERSITYGW_MODULE="github.com/versity/versitygw/cmd/versitygw"
VERSITYGW_VERSION="v1.8.0"
VERSITYGW_BIN="$RUNSC_DIR/versitygw"
VERSITYGW_STAMP="$RUNSC_DIR/versitygw.version"

APT_PACKAGES=(
	buildah crun umoci skopeo netavark aardvark-dns iptables uidmap
	debootstrap iproute2 postgresql ca-certificates
	gcc libc6-dev # cgo, for the pinned buildah
	nftables # nft: the egress filter of --build-network filtered
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

# install_buildah builds the pinned buildah. `go install buildah@version`
# does not work through this proxy (it reads the module's version list, which
# answers 403), so the build goes through a throwaway module that requires
# the exact version; its go.sum is resolved here, at install time, from the
# proxy. GOMODCACHE and GOCACHE are Go's defaults, so a rebuild on the same
# machine (a new pin) reuses what it can.
install_buildah() {
	if [[ -x "$BUILDAH_BIN" && -f "$BUILDAH_STAMP" && "$(cat "$BUILDAH_STAMP")" == "$BUILDAH_VERSION" ]]; then
		return 0
	fi
	need_root "buildah $BUILDAH_VERSION"
	command -v go >/dev/null || die "go is needed to build buildah; install Go 1.26 first"
	command -v gcc >/dev/null || die "gcc is needed to build buildah (cgo); apt-get install gcc libc6-dev"
	log "building buildah $BUILDAH_VERSION (about 4 minutes the first time)"
	local mod started
	started=$SECONDS
	mod="$(mktemp -d)"
	cat >"$mod/go.mod" <<-'EOM'
	module skiff.local/buildah

	go 1.24
	EOM
	cat >"$mod/tools.go" <<-'EOM'
	//go:build tools

	// Package tools pins the buildah command that scripts/setup.sh builds.
	package tools

	import _ "github.com/containers/buildah/cmd/buildah"
	EOM
	(
		cd "$mod"
		export GOFLAGS= GOWORK=off GOTOOLCHAIN=local
		go get "$BUILDAH_MODULE/cmd/buildah@$BUILDAH_VERSION" >"$mod/get.log" 2>&1 ||
			{ cat "$mod/get.log" >&2; exit 1; }
		CGO_ENABLED=1 go build -trimpath -tags "$BUILDAH_TAGS" \
			-ldflags "-s -w" -o "$mod/buildah" "$BUILDAH_MODULE/cmd/buildah"
	) || { rm -rf "$mod"; die "building buildah $BUILDAH_VERSION failed"; }
	"$mod/buildah" --version | grep -q "version ${BUILDAH_VERSION#v} " ||
		{ rm -rf "$mod"; die "the built buildah does not say it is $BUILDAH_VERSION"; }
	install -d -m 0755 "$RUNSC_DIR"
	install -m 0755 "$mod/buildah" "$BUILDAH_BIN.new"
	mv -f "$BUILDAH_BIN.new" "$BUILDAH_BIN"
	rm -rf "$mod"
	printf '%s\n' "$BUILDAH_VERSION" >"$BUILDAH_STAMP.new"
	mv -f "$BUILDAH_STAMP.new" "$BUILDAH_STAMP"
	did+=("buildah $BUILDAH_VERSION ($((SECONDS - started)) s)")
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

# The npm test harnesses (test/*: the payment clients, the SSE client, the MCP client, the
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
install_buildah
install_versitygw
configure_containers
install_node
npm_ci test/payments
npm_ci test/sse
npm_ci test/mcp
npm_ci test/openapi

if ((${#did[@]} == 0)); then
	log "nothing to do: packages, runsc $RUNSC_VERSION, buildah $BUILDAH_VERSION, versitygw $VERSITYGW_VERSION, container config and the npm test harnesses are in place"
else
	log "done: ${did[*]}"
fi
