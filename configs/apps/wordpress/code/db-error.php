<?php
// WordPress's drop-in for a database it cannot reach (wp-content/db-error.php): one line in the
// server's log saying why (loadcmp counts it by cause), and a 500 with WordPress's own words.
// Straight to stderr (php-fpm's log, or Apache's with mod_php), not error_log(): under php-fpm that
// also hands it to the web server, which would log it a second time.
file_put_contents('php://stderr', 'loadcmp wordpress: the database refused: '
    . (mysqli_connect_error() ?: 'no connection') . "\n");
http_response_code(500);
echo "<h1>Error establishing a database connection</h1>\n";
