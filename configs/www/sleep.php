<?php
// Holds a worker for ?ms=N milliseconds (default 500, at most 60000), like a
// page that waits on a database; the 2022 article's test page.
$ms = isset($_GET['ms']) ? (int) $_GET['ms'] : 500;
$ms = max(0, min(60000, $ms));
usleep($ms * 1000);
header('Content-Type: text/plain');
echo "loadcmp-sleep-ok $ms ms\n";
