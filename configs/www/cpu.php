<?php
// A fixed CPU-bound loop (about 10-20 ms of one core): the cost is in PHP, not I/O.
$n = 200000;
$acc = 0.0;
for ($i = 1; $i <= $n; $i++) {
    $acc += sqrt($i) * sin($i);
}
header('Content-Type: text/plain');
printf("loadcmp-cpu-ok %d %.6f\n", $n, $acc);
