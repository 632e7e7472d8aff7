#!/usr/bin/env bash
# The Docker engine for the Docker sandbox backend: Debian's docker.io (and debootstrap, which
# `code-gym image build` uses), and a running dockerd. Root only; no registry is needed.
# dockerd flags: no iptables/bridge (containers run with --network none), overlay2 (vfs makes each
# container start cost ~11 s).
set -euo pipefail

if [ "$(id -u)" != 0 ]; then
  echo "setup-docker: needs root (apt-get and dockerd)" >&2
  exit 1
fi
if ! command -v dockerd >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
  echo "setup-docker: installing docker.io and debootstrap"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io debootstrap >/dev/null
fi
ready() { timeout 5 docker version >/dev/null 2>&1 || \
  timeout 5 python3 -c "import socket; s = socket.socket(socket.AF_UNIX); s.connect('/var/run/docker.sock'); \
s.sendall(b'GET /_ping HTTP/1.0\r\n\r\n'); assert b'OK' in s.recv(1024)" 2>/dev/null; }
if ! ready; then
  echo "setup-docker: starting dockerd"
  mkdir -p /var/log
  nohup dockerd --iptables=false --ip6tables=false --bridge=none --storage-driver=overlay2 \
    >/var/log/code-gym-dockerd.log 2>&1 &
  for _ in $(seq 60); do
    ready && break
    sleep 0.5
  done
  ready || { echo "setup-docker: dockerd did not start; see /var/log/code-gym-dockerd.log" >&2; tail -20 /var/log/code-gym-dockerd.log >&2; exit 1; }
fi
echo "setup-docker: dockerd is up"
