<?php
// Allocates ?mb=N MiB (default 2, at most 64) and touches every byte, like a
// page that builds a large result in memory; the 2014 cnblogs test's PHP page.
$mb = isset($_GET['mb']) ? (int) $_GET['mb'] : 2;
$mb = max(0, min(64, $mb));
$block = str_repeat("x", $mb * 1024 * 1024);
$sum = 0;
for ($i = 0; $i < strlen($block); $i += 4096) {
    $sum += ord($block[$i]);
}
header('Content-Type: text/plain');
printf("loadcmp-mem-ok %d MiB %d\n", $mb, $sum);
