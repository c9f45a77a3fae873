#!/usr/bin/env bash
# Idempotent set-up for loadcmp on a Debian/Ubuntu machine.
#   - a venv in .venv with loadcmp installed (editable, with test extras), its
#     compiled fast path built with gcc and the Python headers (installed with
#     apt if missing; without them loadcmp runs its pure-Python loop)
#   - a Docker engine: if `docker info` fails, install Debian's docker.io and
#     debootstrap with apt and start dockerd in the background with a raised
#     open-file limit, then wait until it answers;
#   - a larger connection-tracking table with a shorter TIME_WAIT (as root), which
#     Docker's iptables rules turn on for loopback connections too.
# Running it twice does nothing the second time that is already done.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[setup] %s\n' "$*" >&2; }
VENV=${VENV:-.venv}
PY=${PYTHON:-python3}

need_apt=()
apt_ready=0
apt_install() {
    if [ "$(id -u)" != 0 ]; then
        log "need root to install: $* (or install them yourself)"; exit 1
    fi
    if [ "$apt_ready" = 0 ]; then
        log "apt-get update"
        apt-get update -q >/dev/null
        apt_ready=1
    fi
    log "apt-get install $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >/dev/null
}

# --- Python venv -----------------------------------------------------------
if ! "$PY" -c 'import venv, ensurepip' 2>/dev/null; then
    apt_install python3-venv
fi
if [ ! -x "$VENV/bin/python" ]; then
    log "creating venv $VENV"
    "$PY" -m venv "$VENV"
fi

# --- a C compiler and the Python headers: the compiled fast path --------------
# (loadcmp/load/h1/_cloop.pyx and _ctally.pyx, built by pip below). Optional: without them the
# install still succeeds and loadcmp runs its pure-Python loop.
build_deps=()
if ! command -v cc >/dev/null 2>&1; then
    build_deps+=(gcc libc6-dev)
elif ! printf '#include <sys/epoll.h>\n' | cc -E -x c - >/dev/null 2>&1; then
    build_deps+=(libc6-dev)
fi
if ! "$VENV/bin/python" -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then
    build_deps+=(python3-dev)
fi
if ! printf '#include <openssl/ssl.h>\n' | cc -E -x c - >/dev/null 2>&1; then
    build_deps+=(libssl-dev)  # https in the compiled loop (_ctls.pyx); without it https runs the pure-Python loop
fi
if ! printf '#include <nghttp2/nghttp2.h>\n' | cc -E -x c - >/dev/null 2>&1; then
    build_deps+=(libnghttp2-dev)  # h2 and h2c in the compiled loop (_ch2.pyx); without it h2 runs the `h2` package
fi
if [ ${#build_deps[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt_install "${build_deps[@]}"
    else
        log "not installing ${build_deps[*]} (not root, or no apt): the compiled fast path may not build"
    fi
fi

stamp="$VENV/.loadcmp-installed"
newer=
# the compiled modules' sources, in load's rooms (h1/, h2/, tls/, core/): a change to any builds them again
[ -f "$stamp" ] && newer=$(find pyproject.toml setup.py loadcmp/load \( -name '*.pyx' -o -name '*.pxd' -o -name '*.pxi' \
    -o -name '_c*.h' \) -newer "$stamp")
if [ ! -f "$stamp" ] || [ -n "$newer" ]; then
    log "installing loadcmp into $VENV"
    "$VENV/bin/pip" install -q --upgrade pip >/dev/null
    "$VENV/bin/pip" install -q -e '.[test]'
    touch "$stamp"
fi
if ! "$VENV/bin/python" -c 'import loadcmp.load.h1._cloop' 2>/dev/null; then
    log "note: the compiled fast path did not build; loadcmp runs its pure-Python loop (\`$VENV/bin/pip install -v -e .\` says why)"
fi

# --- Toxiproxy: the proxy `--net` puts between the clients and the server (loadcmp/net/) ---------------------
# Built once from the Go module proxy into the venv's bin (about a minute), as toxiproxy-server; skipped when built.
TOXIPROXY_VERSION=v2.5.0
if [ ! -x "$VENV/bin/toxiproxy-server" ] || ! grep -q "$TOXIPROXY_VERSION" "$VENV/.toxiproxy-version" 2>/dev/null; then
    GO=$(command -v go || echo /usr/local/go/bin/go)
    if [ -x "$GO" ]; then
        log "building toxiproxy-server $TOXIPROXY_VERSION (go install, about a minute)"
        gobin=$(mktemp -d)
        GOBIN="$gobin" "$GO" install "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION"
        mv "$gobin/server" "$VENV/bin/toxiproxy-server"
        rmdir "$gobin"
        echo "$TOXIPROXY_VERSION" >"$VENV/.toxiproxy-version"
    else
        log "note: no Go toolchain: toxiproxy-server is not built, and --net refuses to run"
    fi
fi

# --- tools the benchmarks and the report, live-page and https tests use -------
# (the live page's tests drive this chromium through Playwright, installed by pip above: no browser is downloaded;
# h2load, of nghttp2-client: the https rows of bench/compare.py run `h2load --h1`, its h2 rows plain h2load;
# Debian's prometheus and promtool: the export tests scrape a load and load an export, as a user's Prometheus would)
for pair in debootstrap:debootstrap wrk:wrk ab:apache2-utils h2load:nghttp2-client chromium:chromium openssl:openssl \
            prometheus:prometheus promtool:prometheus; do
    cmd=${pair%%:*}; pkg=${pair#*:}
    command -v "$cmd" >/dev/null 2>&1 || need_apt+=("$pkg")
done

# --- Docker engine -----------------------------------------------------------
docker_ok() { timeout 10 docker info >/dev/null 2>&1; }
if ! docker_ok; then
    if ! command -v dockerd >/dev/null 2>&1; then
        need_apt+=(docker.io)
    fi
fi
if [ ${#need_apt[@]} -gt 0 ]; then
    apt_install "${need_apt[@]}" ca-certificates
fi
if ! docker_ok; then
    if [ "$(id -u)" != 0 ]; then
        log "no Docker engine answers and I am not root: start dockerd, or run this as root"; exit 1
    fi
    # A dockerd that was killed leaves a pid file and a socket behind; a new
    # dockerd refuses to start over the pid file.
    if [ -f /var/run/docker.pid ] && ! kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
        log "removing stale /var/run/docker.pid"
        rm -f /var/run/docker.pid
    fi
    pgrep -x dockerd >/dev/null && { log "dockerd runs but does not answer; killing it"; pkill -x dockerd; sleep 2; }
    pgrep -x containerd >/dev/null && ! pgrep -x dockerd >/dev/null && true
    rm -f /var/run/docker.sock
    log "starting dockerd (log: /var/log/loadcmp-dockerd.log)"
    # Raise the open-file limit as far as this machine lets root (containers
    # cannot get more than dockerd has; some sandboxes cap the hard limit).
    ulimit -Hn 1048576 2>/dev/null || true
    ulimit -n "$(ulimit -Hn)"
    nofile=$(ulimit -n)
    # With no descriptor of ours beyond 0-2: one it inherited (a `flock FILE make setup`'s lock) would stay held
    # for as long as dockerd and containerd run, and every later flock on that file would wait for ever.
    (
        for fd in /proc/self/fd/*; do
            n=${fd##*/}
            [ "$n" -gt 2 ] 2>/dev/null && eval "exec $n>&-"
        done
        exec nohup setsid dockerd --default-ulimit "nofile=$nofile:$nofile" >/var/log/loadcmp-dockerd.log 2>&1 </dev/null
    ) &
    for _ in $(seq 1 60); do
        docker_ok && break
        sleep 1
    done
    docker_ok || { log "dockerd did not answer within 60 s; see /var/log/loadcmp-dockerd.log"; tail -5 /var/log/loadcmp-dockerd.log >&2; exit 1; }
fi
log "docker engine: $(docker version --format '{{.Server.Version}}' 2>/dev/null)"

# --- the kernel's connection tracking -----------------------------------------
# Docker's iptables rules make the kernel track every connection, loopback ones
# too, and keep each closed one for 120 s: 18,000 new connections a second (the
# fast engine without keep-alive here) fill the default table of 262,144 in 15 s,
# and then new connections' packets are dropped (a SYN is retried after 1 s: a
# server that looks slow). A larger table and a 10 s TIME_WAIT hold ~50,000
# connections a second. loadcmp says after a load when packets were dropped.
ct=/proc/sys/net/netfilter
if [ -w "$ct/nf_conntrack_max" ]; then
    if [ "$(cat "$ct/nf_conntrack_max")" -lt 1048576 ] || [ "$(cat "$ct/nf_conntrack_tcp_timeout_time_wait")" -gt 10 ]; then
        log "connection tracking: table 1048576, TIME_WAIT 10 s (was $(cat "$ct/nf_conntrack_max"), $(cat "$ct/nf_conntrack_tcp_timeout_time_wait") s)"
        echo 1048576 >"$ct/nf_conntrack_max"
        echo 10 >"$ct/nf_conntrack_tcp_timeout_time_wait"
    fi
elif [ -e "$ct/nf_conntrack_max" ]; then
    log "note: cannot raise net.netfilter.nf_conntrack_max (not root): fast loads without keep-alive may fill it"
fi

# --- leftovers of an earlier run --------------------------------------------
left=$(docker ps -aq --filter label=loadcmp=1)
if [ -n "$left" ]; then
    log "removing $(echo "$left" | wc -w) leftover loadcmp container(s)"
    docker rm -f $left >/dev/null
fi
log "ready"
