#!/bin/sh
# Starts one loadcmp server role from the configs rendered into /etc/loadcmp.
# The web server runs in the foreground so that the container ends when it does.
set -e
mkdir -p /run/php /run/apache2 /var/lock/apache2
chown www-data:www-data /run/php
export PHP_INI_SCAN_DIR=":/etc/loadcmp/php"
# Debian's own apache2.conf (a user's, through --config) reads its paths from envvars.
[ -r /etc/apache2/envvars ] && . /etc/apache2/envvars
case "$1" in
  apache-modphp)
    exec apache2 -DFOREGROUND -f /etc/loadcmp/apache2.conf ;;
  apache-fpm)
    php-fpm8.2 --fpm-config /etc/loadcmp/php-fpm.conf
    exec apache2 -DFOREGROUND -f /etc/loadcmp/apache2.conf ;;
  nginx-fpm)
    php-fpm8.2 --fpm-config /etc/loadcmp/php-fpm.conf
    exec nginx -c /etc/loadcmp/nginx.conf -g 'daemon off;' ;;
  nginx-proxy)
    exec nginx -c /etc/loadcmp/nginx.conf -g 'daemon off;' ;;
  *)
    echo "loadcmp-entrypoint: unknown role '$1'" >&2; exit 64 ;;
esac
