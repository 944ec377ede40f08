#!/usr/bin/env bash
# build.sh builds the e2e suite's servers, kube-apiserver and etcd, and the
# helm command that renders and installs charts/gavel, from the Go module
# proxy into a cache keyed by version, and prints the cache directory.
# A binary already in the cache is not built again: the apiserver takes about
# six minutes of two cores, so CI and developers build it once per version.
#
#	build.sh          etcd and kube-apiserver (the e2e suite)
#	build.sh --judge  also kube-controller-manager, kubectl and chainsaw
#	                  (the chainsaw judge, e2e/chainsaw)
#
# The cache is ${GAVEL_E2E_CACHE:-$HOME/.cache/gavel-e2e}/<version>/.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${GAVEL_E2E_CACHE:-$HOME/.cache/gavel-e2e}

KUBE_VERSION=v1.37.2
ETCD_VERSION=v3.7.3
HELM_VERSION=v3.22.0
CHAINSAW_VERSION=v0.2.12

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

# build_chainsaw builds chainsaw with the one method its release lacks under
# Go 1.26 (tools/chainsaw/patch/modulepath.go): from a copy of the tool
# module with its dependencies vendored, the only place the go command lets
# a build add a file to a dependency. Nothing of chainsaw is kept but the
# binary.
build_chainsaw() ( # a subshell: its EXIT trap removes the copy
	local out=$cache/$CHAINSAW_VERSION/chainsaw
	if [[ -x $out ]]; then
		echo "build.sh: $out is cached" >&2
		return
	fi
	mkdir -p "$cache/$CHAINSAW_VERSION"
	echo "build.sh: building chainsaw $CHAINSAW_VERSION (this takes minutes)" >&2
	local start=$SECONDS work
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	cp "$here/tools/chainsaw/go.mod" "$here/tools/chainsaw/go.sum" "$here/tools/chainsaw/main.go" "$work/"
	(cd "$work" && GOWORK=off go mod vendor)
	local pkg=$work/vendor/github.com/kyverno/chainsaw/pkg/runner/internal
	if grep -q 'ModulePath()' "$pkg"/*.go; then
		echo "build.sh: chainsaw's TestDeps has ModulePath: drop tools/chainsaw/patch" >&2
		return 1
	fi
	cp "$here/tools/chainsaw/patch/modulepath.go" "$pkg/zz_gavel_modulepath.go"
	(cd "$work" && GOWORK=off CGO_ENABLED=0 nice -n 19 go build -mod=vendor -tags gavel_chainsaw_patch -trimpath -ldflags=-s -o "$out.tmp" .)
	mv "$out.tmp" "$out"
	echo "build.sh: built chainsaw in $((SECONDS - start))s" >&2
)

build etcd etcd "$ETCD_VERSION"
build apiserver kube-apiserver "$KUBE_VERSION"
# helm's version is the tool of tools/helm/go.mod
build helm helm "$HELM_VERSION" helm.sh/helm/v3/cmd/helm
if [[ ${1:-} == --judge ]]; then
	build controller-manager kube-controller-manager "$KUBE_VERSION"
	build kubectl kubectl "$KUBE_VERSION"
	build_chainsaw
fi

echo "$cache"
