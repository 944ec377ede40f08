#!/usr/bin/env bash
# build.sh builds the e2e suite's servers, kube-apiserver and etcd, and the
# helm command that renders and installs charts/gavel, from the Go module
# proxy into a cache keyed by version, and prints the cache directory.
# A binary already in the cache is not built again: the apiserver takes about
# six minutes of two cores, so CI and developers build it once per version.
#
# The cache is ${GAVEL_E2E_CACHE:-$HOME/.cache/gavel-e2e}/<version>/.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${GAVEL_E2E_CACHE:-$HOME/.cache/gavel-e2e}

KUBE_VERSION=v1.37.2
ETCD_VERSION=v3.7.3
HELM_VERSION=v3.22.0

build() { # build <tool dir> <binary> <version> [package]
	local dir=$1 bin=$2 version=$3 pkg=${4:-.}
	local out=$cache/$version/$bin
	if [[ -x $out ]]; then
		echo "build.sh: $out is cached" >&2
		return
	fi
	mkdir -p "$cache/$version"
	echo "build.sh: building $bin $version (this takes minutes)" >&2
	local start=$SECONDS
	(cd "$here/tools/$dir" && GOWORK=off CGO_ENABLED=0 nice -n 19 go build -trimpath -ldflags=-s -o "$out.tmp" "$pkg")
	mv "$out.tmp" "$out"
	echo "build.sh: built $bin in $((SECONDS - start))s" >&2
}

build etcd etcd "$ETCD_VERSION"
build apiserver kube-apiserver "$KUBE_VERSION"
# helm's version is the tool of tools/helm/go.mod
build helm helm "$HELM_VERSION" helm.sh/helm/v3/cmd/helm

echo "$cache"
