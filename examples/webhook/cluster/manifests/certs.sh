#!/usr/bin/env bash
# certs.sh makes a CA and a serving certificate for gavel.gavel.svc, stores
# them in the Secret gavel/gavel-tls, and prints webhooks.yaml with the CA
# filled in:  bash certs.sh | kubectl apply -f -
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
openssl req -x509 -newkey rsa:2048 -nodes -days 365 -subj /CN=gavel-ca \
	-keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=gavel.gavel.svc \
	-keyout "$dir/tls.key" -out "$dir/tls.csr" 2>/dev/null
printf 'subjectAltName=DNS:gavel.gavel.svc,DNS:gavel.gavel.svc.cluster.local\n' > "$dir/ext"
openssl x509 -req -in "$dir/tls.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
	-days 365 -extfile "$dir/ext" -out "$dir/tls.crt" 2>/dev/null
kubectl -n gavel create secret tls gavel-tls --cert="$dir/tls.crt" --key="$dir/tls.key" \
	--dry-run=client -o yaml | kubectl apply -f - >&2
sed "s|CA_BUNDLE|$(base64 -w0 < "$dir/ca.crt")|" "$here/webhooks.yaml"
