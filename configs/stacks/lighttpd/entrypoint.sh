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
    # --tls: its graceful restart (SIGUSR1, loadcmp's `reload`) starts it again in its own process, already www-data,
    # and reads the run's certificate and key again; root's alone (0600, as copied in), they would stop it. So
    # lighttpd's group may read them (0640, root's still); php-fpm's children, www-data too, can read them as well.
    if [ -d /etc/loadcmp/tls ]; then
      chgrp www-data /etc/loadcmp/tls/*
      chmod 0640 /etc/loadcmp/tls/*
    fi
    # -D: no daemon. lighttpd starts as root (to raise its open-file limit to server.max-fds), then runs as www-data.
    exec lighttpd -D -f /etc/loadcmp/lighttpd.conf ;;
  versions)
    lighttpd -v | head -1; php -v | head -1; exit 0 ;;
  *)
    echo "loadcmp-entrypoint: unknown role '$1' (this image runs: lighttpd)" >&2; exit 64 ;;
esac
