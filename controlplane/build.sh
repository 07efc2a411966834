#!/usr/bin/env bash
# Builds planner-controlplane (the throwaway Kubernetes control plane) with its Go module and build
# caches under the user's cache directory, so that a second build is seconds.
#
#   controlplane/build.sh            build (or refresh) the binary; prints its path
#   controlplane/build.sh --print    print the binary's path only
#
# Environment: PLANNER_CONTROLPLANE_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/planner-controlplane)
# holds mod/ (GOMODCACHE), build/ (GOCACHE) and bin/planner-controlplane.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${PLANNER_CONTROLPLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/planner-controlplane}"
binary="$cache/bin/planner-controlplane"
if [[ "${1:-}" == "--print" ]]; then
    echo "$binary"
    exit 0
fi

# go.mod asks for go 1.26.0; the machine's Go (1.26.8) is enough, so no toolchain is downloaded.
export GOTOOLCHAIN=local
export GOMODCACHE="$cache/mod"
export GOCACHE="$cache/build"
export GOFLAGS="-trimpath -mod=readonly"
mkdir -p "$GOMODCACHE" "$GOCACHE" "$cache/bin"

cd "$here"
# go build always links (about a minute and 3 GB on 2 cores): skip it when the sources, the module
# graph, the Go version and the flags are those the binary was built from.
stamp="$( { go version; echo "$GOFLAGS"; cat go.mod go.sum; ls *.go | LC_ALL=C sort | xargs cat; } | sha256sum | cut -d' ' -f1)"
if [[ -x "$binary" && -f "$binary.stamp" && "$(cat "$binary.stamp")" == "$stamp" ]]; then
    echo "$binary"
    exit 0
fi
go build -ldflags="-s -w" -o "$binary.tmp" .
mv -f "$binary.tmp" "$binary"
echo "$stamp" > "$binary.stamp"
echo "$binary"
