#!/usr/bin/env bash
# Makes a throwaway CA, a server certificate for "localhost" and a client
# certificate in directory $1 (for the TLS tests; nothing is committed).
set -euo pipefail
D="$1"
mkdir -p "$D"
cd "$D"
quiet() { "$@" >/dev/null 2>&1; }
quiet openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=mlbridge test CA" \
  -keyout ca.key -out ca.pem
for who in server client; do
  quiet openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
    -keyout "$who.key" -out "$who.csr"
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > "$who.ext"
  quiet openssl x509 -req -in "$who.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
    -days 2 -extfile "$who.ext" -out "$who.pem"
done
echo "$D"
