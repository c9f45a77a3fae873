<?php
// WordPress's drop-in for a database it cannot reach (wp-content/db-error.php): one line in the
// server's log saying why (loadcmp counts it by cause), and a 500 with WordPress's own words.
error_log('loadcmp wordpress: the database refused: ' . (mysqli_connect_error() ?: 'no connection'));
http_response_code(500);
echo "<h1>Error establishing a database connection</h1>\n";
