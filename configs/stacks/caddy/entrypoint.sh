#!/bin/sh
# Starts the caddy stack from the configs rendered into /etc/loadcmp: php-fpm
# (daemonized), then Caddy in the foreground so that the container ends when it does.
set -e
case "$1" in
  caddy)
    mkdir -p /run/php
    chown www-data:www-data /run/php
    export PHP_INI_SCAN_DIR=":/etc/loadcmp/php"
    # Settings Caddy takes only from its environment (GOMAXPROCS).
    if [ -f /etc/loadcmp/caddy.env ]; then
      set -a; . /etc/loadcmp/caddy.env; set +a
    fi
    # Caddy keeps its state (autosave.json, certificates) under $HOME / XDG dirs.
    export HOME=/var/lib/caddy XDG_DATA_HOME=/var/lib/caddy XDG_CONFIG_HOME=/var/lib/caddy
    mkdir -p /var/lib/caddy
    php-fpm8.2 --fpm-config /etc/loadcmp/php-fpm.conf
    exec caddy run --config /etc/loadcmp/Caddyfile --adapter caddyfile ;;
  versions)
    caddy version; php -v | head -1; exit 0 ;;
  *)
    echo "loadcmp-entrypoint: unknown role '$1' (this image runs: caddy)" >&2; exit 64 ;;
esac
