#!/usr/bin/env bash
# One-time setup on a fresh machine: the sandbox tool, a virtualenv, the CPU build of torch, code-gym.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}

if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing bubblewrap (the sandbox for agent commands)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null
  else
    echo "setup: bubblewrap is missing; install it (e.g. 'sudo apt-get install bubblewrap') for full isolation" >&2
  fi
fi

# JavaScript tasks run node (18 or newer) and build their node_modules with npm; Debian's packages
# give node 18, which the grader's reporters support.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing nodejs and npm (JavaScript tasks)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
  else
    echo "setup: node and npm are missing; install them (e.g. 'sudo apt-get install nodejs npm') for JavaScript tasks" >&2
  fi
fi

# Dafny tasks run Debian's verifier (dafny 2.3, with Boogie, Z3 and the Mono runtime).
if ! command -v dafny >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing dafny (Dafny tasks)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dafny >/dev/null
  else
    echo "setup: dafny is missing; install it (e.g. 'sudo apt-get install dafny') for Dafny tasks" >&2
  fi
fi

# Go and Rust tasks build with Debian's toolchains (golang-go 1.19; cargo and rustc 1.63, which
# match the packaged crates); their libraries come from Debian's golang-*-dev and librust-*-dev
# packages, downloaded and unpacked per task environment (never installed, no maintainer scripts).
# A rustup toolchain elsewhere on PATH is not used: code-gym calls /usr/bin/go and /usr/bin/cargo.
# Their environments come from apt's package lists (apt-cache, apt-get download): fetch the lists
# once where the machine has none.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && ! ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1; then
  echo "setup: fetching apt's package lists (Go and Rust environments are Debian packages)"
  apt-get update -qq
fi
for tool in go:golang-go:Go cargo:cargo:Rust; do
  IFS=: read -r program package language <<<"$tool"
  if [ ! -x "/usr/bin/$program" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "setup: installing $package ($language tasks)"
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >/dev/null
    else
      echo "setup: /usr/bin/$program is missing; install it (e.g. 'sudo apt-get install $package') for $language tasks" >&2
    fi
  fi
done

if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip
# torch first, pinned: the CPU build (an unpinned torch would pull a multi-GB CUDA build).
"$VENV/bin/python" -m pip install -q "torch==2.13.0"
# deepspeed (in the `openrlhf` extra) builds from its sdist: DS_BUILD_OPS=0 builds no CUDA ops and
# makes it pick its CPU accelerator (about 15 s here).
DS_BUILD_OPS=0 "$VENV/bin/python" -m pip install -q -e ".[test,openrlhf]"
# OpenRLHF and vLLM without their requirements (CUDA torch, flash-attn): the tests import OpenRLHF's
# executor, samples generator, experience maker, PPOTrainer and train_ppo_ray, which need only the
# `openrlhf` extra above plus tests/openrlhf_shim for flash-attn's helpers (docs/openrlhf.md).
"$VENV/bin/python" -m pip install -q --no-deps "openrlhf==0.11.2" "vllm==0.29.0"
# verl 0.9.1 for tests/test_verl.py: the `verl` extra (the modules it imports), then verl itself without its
# requirements (transformers<5.11 against the project's 5.15, loggers, GPU stacks; docs/verl.md)
"$VENV/bin/python" -m pip install -q -e ".[verl]" && "$VENV/bin/python" -m pip install -q --no-deps "verl==0.9.1"
echo "setup: done ($VENV)"
