#!/bin/sh
# Starts the lighttpd stack from the configs rendered into /etc/loadcmp: php-fpm
# (daemonized), then lighttpd in the foreground so that the container ends when it does.
set -e
case "$1" in
  lighttpd)
    mkdir -p /run/php
    chown www-data:www-data /run/php
    export PHP_INI_SCAN_DIR=":/etc/loadcmp/php"
    php-fpm8.2 --fpm-config /etc/loadcmp/php-fpm.conf
    # -D: no daemon. lighttpd starts as root (to raise its open-file limit to server.max-fds), then runs as www-data.
    exec lighttpd -D -f /etc/loadcmp/lighttpd.conf ;;
  versions)
    lighttpd -v | head -1; php -v | head -1; exit 0 ;;
  *)
    echo "loadcmp-entrypoint: unknown role '$1' (this image runs: lighttpd)" >&2; exit 64 ;;
esac
